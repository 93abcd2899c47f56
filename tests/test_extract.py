"""Retain with an LLM: scripted extractions through the real SDKs land in the database as specified.

The fake HTTP server is the only fake: the scripted reply stands for the model's decision, and the tests check
our part — what reaches the prompt (roles, dates, order), what we validate (types follow roles, relative times
are resolved by our calendar code, sources and causes exist), and what is written (facts, entities, aliases,
causal links, provenance) in one transaction.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from database import Database
from extract_support import fact, links, make_engine, prompt_of, reply, retained, units
from fakes.llm_server import FakeLLMServer
from llm_fixtures import engine_fixture

from memwrap.engine.engine import Engine
from memwrap.engine.retain.extract import SYSTEM_PROMPT

MONDAY = datetime(2026, 11, 30, 10, 0, tzinfo=UTC)  # "last Friday" is 2026-11-27


engine = engine_fixture(make_engine)
claude = engine_fixture(make_engine, "anthropic")


def by_text(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {r["text"]: r for r in rows}


CHAT = [
    {"content": "user: Hi there!", "document_id": "chat-1:1", "timestamp": MONDAY},
    {
        "content": "user: I changed the DB config last Friday because the connection pool kept timing out.",
        "document_id": "chat-1:2",
        "timestamp": MONDAY,
    },
    {
        "content": "assistant: I changed the config and it succeeded; PostgreSQL now keeps 20 connections.",
        "document_id": "chat-1:3",
        "timestamp": MONDAY,
    },
]
POOL = "The connection pool of the user's PostgreSQL database kept timing out."
CHANGED = "The user changed the PostgreSQL config on Friday because the connection pool kept timing out."
FIXED = "The assistant changed the PostgreSQL config and it succeeded; it now keeps 20 connections."
ASKED = "The user wants the timeouts fixed."
CHAT_FACTS = [
    fact(POOL, "world", [2], ["PostgreSQL"]),
    # The model's date is wrong on purpose: the quoted phrase, resolved by our calendar, must win.
    fact(
        CHANGED, "world", [2], ["PostgreSQL"], when="last Friday", start="2026-11-20", end="2026-11-20", caused_by=[0]
    ),
    fact(FIXED, "experience", [3], ["PostgreSQL"], caused_by=[1]),
    # Claimed "experience", but only the user said it: our validation makes it world.
    fact(ASKED, "experience", [2]),
]


async def test_facts_types_times_entities_and_causes_land_in_the_database(
    engine: Engine, fake: FakeLLMServer, db: Database, bank: str
) -> None:
    fake.script([reply(CHAT_FACTS)])
    ids = await engine.retain_many(bank, CHAT)

    # The prompt: the stable system prompt first, the dated, numbered, role-labelled turns last.
    assert len(fake.requests) == 1
    request = fake.last("openai.chat")
    system, user = prompt_of(request)
    assert system == SYSTEM_PROMPT and request.body["messages"][0]["role"] == "system"
    assert request.body["response_format"]["json_schema"]["strict"] is True
    assert user.endswith(
        "Turns:\nDate: 2026-11-30 Mon 10:00\n[1] user: Hi there!\n"
        "[2] user: I changed the DB config last Friday because the connection pool kept timing out.\n"
        "[3] assistant: I changed the config and it succeeded; PostgreSQL now keeps 20 connections."
    )

    rows = by_text(await units(engine, bank))
    assert set(rows) == {POOL, CHANGED, FIXED, ASKED}  # no raw units, the greeting made no fact
    assert {t: r["fact_type"] for t, r in rows.items()} == {
        POOL: "world",
        CHANGED: "world",
        FIXED: "experience",
        ASKED: "world",
    }
    changed = rows[CHANGED]
    assert changed["occurred_start"] == datetime(2026, 11, 27, tzinfo=UTC)
    assert changed["occurred_end"].date() == datetime(2026, 11, 27).date()
    # Undated by the model, but taken from the sentence "last Friday" dates: our calendar dates it so.
    assert rows[POOL]["occurred_start"] == datetime(2026, 11, 27, tzinfo=UTC)
    assert rows[FIXED]["occurred_start"] is None  # its turn names no time
    assert rows[FIXED]["document_id"] == "chat-1:3" and rows[FIXED]["metadata"]["source_ids"] == ["chat-1:3"]
    assert changed["document_id"] == "chat-1:2" and changed["metadata"]["source_ids"] == ["chat-1:2"]
    assert changed["metadata"]["extracted_by"] == "fake-extractor"

    assert set(await links(engine, bank, "causal")) == {
        (rows[POOL]["id"], changed["id"]),
        (changed["id"], rows[FIXED]["id"]),
    }
    entity_rows = await db.fetch("SELECT name, mention_count FROM entities WHERE bank_id = $1", bank)
    assert [(r["name"], r["mention_count"]) for r in entity_rows] == [("PostgreSQL", 3)]
    listed = {m.text: m for m in await engine.list(bank)}
    assert listed[FIXED].entities == ["PostgreSQL"] and listed[FIXED].type == "experience"

    # retain's ids, in item order: nothing for the greeting, the owned facts for the others.
    assert ids == [rows[POOL]["id"], changed["id"], rows[ASKED]["id"], rows[FIXED]["id"]]
    records = await retained(engine, bank)
    assert sorted(len(v) for v in records.values()) == [0, 1, 3]

    # Re-retaining the same items costs no LLM call and returns the same ids.
    again = await engine.retain_many(bank, CHAT)
    assert again == ids and len(fake.requests) == 1

    recall = await engine.recall(
        bank, "What did the assistant change in the config?", token_budget=500, types=["world", "experience"]
    )
    assert recall.memories[0].text == FIXED and recall.memories[0].type == "experience"


async def test_roles_reach_the_prompt_and_decide_the_type(engine: Engine, fake: FakeLLMServer, bank: str) -> None:
    items = [
        {"content": "I changed the DB config.", "metadata": {"role": "user"}, "timestamp": MONDAY},
        {"content": "I changed the config and it succeeded.", "metadata": {"role": "assistant"}, "timestamp": MONDAY},
        {"content": "Caroline: I went to a support group yesterday.", "timestamp": MONDAY},
        {"content": "Paris is the capital of France.", "metadata": {"role": "assistant"}, "timestamp": MONDAY},
    ]
    fake.script(
        [
            reply(
                [
                    fact("The user changed the DB config.", "experience", [1]),  # the model got it wrong
                    fact("The assistant changed the config and it succeeded.", "experience", [2]),
                    fact(
                        "Caroline went to a support group on 2026-11-29.",
                        "experience",
                        [3],
                        ["Caroline"],
                        when="yesterday",
                    ),
                    fact(
                        "Paris is the capital of France.", "world", [4], ["Paris", "France"]
                    ),  # world from the assistant is fine
                ]
            )
        ]
    )
    await engine.retain_many(bank, items)
    _, user = prompt_of(fake.last())
    assert "[1] user: I changed the DB config.\n[2] assistant: I changed the config and it succeeded." in user
    assert "[3] Caroline: I went to a support group yesterday." in user
    types = {r["text"]: r["fact_type"] for r in await units(engine, bank)}
    assert types == {
        "The user changed the DB config.": "world",
        "The assistant changed the config and it succeeded.": "experience",
        "Caroline went to a support group on 2026-11-29.": "world",
        "Paris is the capital of France.": "world",
    }


async def test_a_wrapper_exchange_is_split_into_role_turns(engine: Engine, fake: FakeLLMServer, bank: str) -> None:
    content = (
        "user: Can you restart the worker?\nIt keeps crashing.\nassistant: I restarted the worker; it is up again."
    )
    fake.script(
        [reply([fact("The assistant restarted the user's crashing worker; it is up again.", "experience", [2])])]
    )
    await engine.retain_many(bank, [{"content": content, "document_id": "w:1", "timestamp": MONDAY}])
    _, user = prompt_of(fake.last())
    assert "[1] user: Can you restart the worker?\nIt keeps crashing.\n[2] assistant: I restarted the worker" in user
    [row] = await units(engine, bank)
    assert row["fact_type"] == "experience" and row["metadata"]["source_ids"] == ["w:1"]


async def test_times_are_resolved_by_our_calendar(engine: Engine, fake: FakeLLMServer, bank: str) -> None:
    said = (
        "user: Last Friday I moved. The other day I found a flat and signed the lease. On 2026-11-20 I packed. "
        "上周五我搬家了。"
    )
    fake.script(
        [
            reply(
                [
                    fact("The user moved on Friday.", "world", [1], when="last Friday"),  # no dates from the model
                    # "the other day" is the past week to us: the model's day inside it narrows it ...
                    fact("The user signed the lease.", "world", [1], when="the other day", start="2026-11-25"),
                    # ... a day outside it is a mistake, and our span stands.
                    fact("The user found the flat.", "world", [1], when="the other day", start="2026-10-01"),
                    fact("The user packed on 2026-11-20.", "world", [1]),
                    fact("用户上周五搬家了。", "world", [1], when="上周五", start="2026-11-13"),
                    fact("The user likes boxes.", "world", [1], start="not a date"),
                ]
            )
        ]
    )
    await engine.retain_many(bank, [{"content": said, "timestamp": MONDAY}])
    days = {r["text"]: (r["occurred_start"], r["occurred_end"]) for r in await units(engine, bank)}

    def day(y: int, m: int, d: int) -> tuple[datetime, datetime]:
        start = datetime(y, m, d, tzinfo=UTC)
        return start, start.replace(hour=23, minute=59, second=59, microsecond=999999)

    assert days["The user moved on Friday."] == day(2026, 11, 27)
    assert days["The user signed the lease."] == day(2026, 11, 25)
    assert days["The user found the flat."] == (day(2026, 11, 23)[0], day(2026, 11, 29)[1])
    assert days["The user packed on 2026-11-20."] == day(2026, 11, 20)  # from the fact's own text
    assert days["用户上周五搬家了。"] == day(2026, 11, 27)  # ours wins over the model's 11-13
    assert days["The user likes boxes."] == (None, None)


async def test_anthropic_extraction_uses_a_forced_tool(claude: Engine, fake: FakeLLMServer, bank: str) -> None:
    fake.script([reply(CHAT_FACTS, provider="anthropic")])
    await claude.retain_many(bank, CHAT)
    request = fake.last("anthropic.messages")
    assert request.body["tool_choice"] == {"type": "tool", "name": "extraction"}
    assert request.body["system"][0]["cache_control"] == {"type": "ephemeral"}
    system, user = prompt_of(request)
    assert system == SYSTEM_PROMPT and "[3] assistant: I changed the config" in user
    rows = by_text(await units(claude, bank))
    assert rows[FIXED]["fact_type"] == "experience" and rows[ASKED]["fact_type"] == "world"
    assert rows[CHANGED]["occurred_start"] == datetime(2026, 11, 27, tzinfo=UTC)
    assert len(await links(claude, bank, "causal")) == 2


async def test_a_fact_from_several_turns_keeps_every_source(engine: Engine, fake: FakeLLMServer, bank: str) -> None:
    items = [
        {"content": "Melanie: Which city did you move to?", "document_id": "D1:1", "timestamp": MONDAY},
        {"content": "Caroline: Lisbon, two weeks ago!", "document_id": "D1:2", "timestamp": MONDAY},
    ]
    fake.script(
        [
            reply(
                [fact("Caroline moved to Lisbon.", "world", [2, 1, 2, 9], ["Caroline", "Lisbon"], when="two weeks ago")]
            )
        ]
    )
    ids = await engine.retain_many(bank, items)
    [row] = await units(engine, bank)
    assert row["document_id"] == "D1:1" and row["metadata"]["source_ids"] == ["D1:1", "D1:2"]  # turn 9 does not exist
    assert ids == [row["id"]]  # owned by the first source item
    assert row["occurred_start"] == datetime(2026, 11, 13, tzinfo=UTC)  # 16 Nov +- 3 days


async def test_facts_citing_no_turn_and_forward_causes_are_dropped(
    engine: Engine, fake: FakeLLMServer, bank: str
) -> None:
    fake.script(
        [
            reply(
                [
                    fact("First.", "world", [1], caused_by=[1, 5]),  # causes must be earlier facts
                    fact("Ghost.", "world", [7]),
                    fact("Second.", "world", [1], caused_by=[0, 1]),  # 1 was dropped
                    fact("second.", "world", [1]),  # a repeat
                ]
            )
        ]
    )
    await engine.retain_many(bank, [{"content": "user: Something happened, then more.", "timestamp": MONDAY}])
    rows = by_text(await units(engine, bank))
    assert set(rows) == {"First.", "Second."}
    assert await links(engine, bank, "causal") == [(rows["First."]["id"], rows["Second."]["id"])]


async def test_chunks_at_turn_boundaries_with_stable_prefix(memwrap_home: Path, fake: FakeLLMServer, bank: str) -> None:
    eng = await make_engine(memwrap_home, fake, extraction_turns_per_call=4, llm_max_concurrency=1)
    try:
        fake.responder = lambda request: reply([])
        items = [
            {
                "content": f"{'Alice' if i % 2 else 'Bob'}: message number {i}",
                "document_id": f"c9:{i}",
                "timestamp": MONDAY,
            }
            for i in range(10)
        ]
        ids = await eng.retain_many(bank, items)
        # The model found nothing worth keeping, but each turn says something: no fact carries it, it stays raw.
        assert [(r["id"], r["fact_type"]) for r in await units(eng, bank)] == [(i, "raw") for i in ids]
        assert len(ids) == 10
        prompts = [prompt_of(r) for r in fake.requests]
        assert len(prompts) == 3  # 4 + 4 + 2 turns
        assert {system for system, _ in prompts} == {SYSTEM_PROMPT}
        first, second, third = (user for _, user in prompts)
        assert "[4] Alice: message number 3" in first and "message number 4" not in first
        assert second.startswith("Earlier:\nBob: message number 2\nAlice: message number 3\nTurns:")
        assert "[1] Bob: message number 4" in second and "[1] Bob: message number 8" in third
        assert len(await retained(eng, bank)) == 10  # every item recorded: retaining them again is free
        await eng.retain_many(bank, items)
        assert len(fake.requests) == 3
    finally:
        await eng.close()


async def test_earlier_memories_of_the_session_give_context(engine: Engine, fake: FakeLLMServer, bank: str) -> None:
    fake.script([reply([fact("Bob adopted a dog named Rex.", "world", [1], ["Bob", "Rex"])])])
    await engine.retain_many(
        bank, [{"content": "Bob: I adopted a dog, Rex.", "document_id": "s5:1", "timestamp": MONDAY}]
    )
    fake.script([reply([fact("Rex, Bob's dog, is three years old.", "world", [1], ["Rex", "Bob"])])])
    await engine.retain_many(bank, [{"content": "Bob: He is three.", "document_id": "s5:2", "timestamp": MONDAY}])
    _, user = prompt_of(fake.last())
    assert user.startswith("Earlier:\nBob adopted a dog named Rex.\nTurns:")
