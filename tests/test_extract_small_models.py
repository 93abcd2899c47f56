"""Extraction with the failings of small, slow models, scripted on the fake server: nothing lost (a per-item
coverage check keeps what no fact carries), speakers kept through re-extraction, dates from our calendar, no
prompt echo as a memory, raw turns recallable at once while a slow server extracts them in the background."""

from __future__ import annotations

from datetime import UTC, datetime

from extract_support import fact, make_engine, prompt_of, queued, reply, units
from fakes.llm_server import FakeLLMServer, Reply
from llm_fixtures import engine_fixture

from memwrap.engine.engine import Engine
from memwrap.engine.retain.extract import SYSTEM_PROMPT
from memwrap.engine.retain.facts import UNCOVERED

TUESDAY = datetime(2026, 12, 1, 9, 30, tzinfo=UTC)

engine = engine_fixture(make_engine)


def day(y: int, m: int, d: int) -> tuple[datetime, datetime]:
    start = datetime(y, m, d, tzinfo=UTC)
    return start, start.replace(hour=23, minute=59, second=59, microsecond=999999)


async def test_what_no_fact_carries_is_kept_raw_in_the_speakers_words(
    engine: Engine, fake: FakeLLMServer, bank: str
) -> None:
    content = (
        "user: I started a new job at Lumen Labs last month. By the way, I'm allergic to peanuts.\n"
        "assistant: Congratulations! I will avoid peanuts in any suggestion."
    )
    # The model saw the whole exchange, cited turn 1, and dropped the allergy: "some fact cites it" is not enough.
    fake.script(
        [reply([fact("The user started a new job at Lumen Labs.", "world", [1], ["Lumen Labs"], when="last month")])]
    )
    ids = await engine.retain_many(bank, [{"content": content, "timestamp": TUESDAY}])
    rows = await units(engine, bank)
    assert [(r["fact_type"], r["text"]) for r in rows] == [
        ("world", "The user started a new job at Lumen Labs."),
        ("raw", "user: By the way, I'm allergic to peanuts."),
        ("raw", "assistant: I will avoid peanuts in any suggestion."),
    ]
    assert ids == [r["id"] for r in rows]
    assert rows[1]["metadata"]["kept_raw"] == UNCOVERED and rows[1]["occurred_start"] is None
    assert (rows[0]["occurred_start"], rows[0]["occurred_end"]) == (day(2026, 11, 1)[0], day(2026, 11, 30)[1])
    recall = await engine.recall(bank, "What is the user allergic to?", token_budget=200)
    assert recall.memories[0].id == rows[1]["id"]
    assert await queued(engine, bank) == []  # extracted: not waiting for anything


async def test_names_the_model_linked_carry_an_alias(engine: Engine, fake: FakeLLMServer, bank: str) -> None:
    content = "user: My team lead is Zhang Wei; everyone calls him 老张."
    lead = fact("The user's team lead is Zhang Wei.", "world", [1], ["Zhang Wei"])
    fake.script([reply([lead], [{"name": "Zhang Wei", "aliases": ["老张"]}])])
    await engine.retain_many(bank, [{"content": content, "timestamp": TUESDAY}])
    assert [r["fact_type"] for r in await units(engine, bank)] == ["world"]  # 老张 is carried by the alias

    other = f"{bank}-b"
    fake.script([reply([lead])])  # the alias dropped: the sentence's key term 老张 is in no fact
    await engine.retain_many(other, [{"content": content, "timestamp": TUESDAY}])
    rows = await units(engine, other)
    assert [(r["fact_type"], r["text"]) for r in rows] == [
        ("world", "The user's team lead is Zhang Wei."),
        ("raw", content),
    ]
    assert (await engine.recall(other, "老张", token_budget=200)).memories[0].id == rows[1]["id"]


async def test_filler_is_not_kept(engine: Engine, fake: FakeLLMServer, bank: str) -> None:
    fake.script([reply([])])
    ids = await engine.retain_many(
        bank, [{"content": "user: Thanks, sounds good!\nassistant: You're welcome!", "timestamp": TUESDAY}]
    )
    assert ids == [] and await units(engine, bank) == []


async def test_a_fact_that_echoes_the_prompt_is_rejected(engine: Engine, fake: FakeLLMServer, bank: str) -> None:
    echo = "Extract every fact, event, plan, preference, opinion, decision, outcome, relationship."
    assert echo.split(",")[0] in SYSTEM_PROMPT
    placeholder = "The user is called <fullest name>."
    fake.script(
        [
            reply(
                [
                    fact(echo, "world", [1]),
                    fact(placeholder, "world", [1]),
                    fact("The user likes sailing.", "world", [1]),
                ]
            )
        ]
    )
    await engine.retain_many(bank, [{"content": "user: I like sailing.", "timestamp": TUESDAY}])
    assert [r["text"] for r in await units(engine, bank)] == ["The user likes sailing."]


async def test_our_calendar_dates_facts_and_corrects_the_models_date(
    engine: Engine, fake: FakeLLMServer, bank: str
) -> None:
    content = "user: I'm flying to Berlin next Tuesday. I'm allergic to peanuts."
    fake.script(
        [
            reply(
                [
                    # No time phrase quoted, a wrong day written into the fact and given as its dates.
                    fact("The user is flying to Berlin on 2026-12-02.", "world", [1], ["Berlin"], start="2026-12-02"),
                    # Undated, but the model dated it to the day it was said.
                    fact("The user is allergic to peanuts.", "world", [1], start="2026-12-01", end="2026-12-01"),
                ]
            )
        ]
    )
    await engine.retain_many(bank, [{"content": content, "timestamp": TUESDAY}])
    rows = {r["text"]: (r["occurred_start"], r["occurred_end"]) for r in await units(engine, bank)}
    assert rows == {
        "The user is flying to Berlin on 2026-12-08.": day(2026, 12, 8),  # "next Tuesday" by our calendar
        "The user is allergic to peanuts.": (None, None),
    }


async def test_a_slow_server_never_holds_back_the_turn(memwrap_home, fake: FakeLLMServer, bank: str) -> None:
    eng = await make_engine(memwrap_home, fake, extraction_deadline=0.2)
    try:
        # The reply takes 6 s; the turn is written, and retain returns, at the 0.2 s interactive deadline:
        # what retain returns is the raw unit, still raw when we look (the reply has not come yet).
        fake.script(
            [
                Reply(
                    json={"facts": [fact("The user moved to Lisbon.", "world", [1], ["Lisbon"])], "entities": []},
                    delay=6,
                )
            ]
        )
        [raw_id] = await eng.retain_many(bank, [{"content": "user: I moved to Lisbon.", "timestamp": TUESDAY}])
        [row] = await units(eng, bank)
        assert (row["id"], row["fact_type"]) == (raw_id, "raw") and len(fake.requests) == 1
        recall = await eng.recall(bank, "Where does the user live?", token_budget=200)
        assert [m.id for m in recall.memories] == [raw_id] and recall.memories[0].type == "raw"  # recallable now
        assert eng.reextractor is not None and await eng.reextractor.wait_inline(30)
        [row] = await units(eng, bank)
        assert (row["id"], row["fact_type"], row["text"]) == (raw_id, "world", "The user moved to Lisbon.")
        assert await queued(eng, bank) == [] and len(fake.requests) == 1  # nothing cancelled, nothing asked twice
        assert (await eng.get(bank, raw_id)).text == "The user moved to Lisbon."  # the id retain gave still works
    finally:
        await eng.close()


async def test_speakers_survive_reextraction(engine: Engine, fake: FakeLLMServer, bank: str) -> None:
    content = "user: Can you book the 8 am train?\nassistant: I booked the 8 am train to Porto for you."
    fake.script([Reply(status=503, error="down")] * 2)
    raw_id, _answer_id = await engine.retain_many(bank, [{"content": content, "timestamp": TUESDAY}])
    # One raw memory per turn, each with its speaker's label (the retry rebuilds the exchange from them)
    assert [r["text"] for r in await units(engine, bank)] == content.split("\n")
    fake.script(
        [reply([fact("The assistant booked the 8 am train to Porto for the user.", "experience", [2], ["Porto"])])]
    )
    assert await engine.retry_extractions(bank) == 1
    _, user = prompt_of(fake.last())
    assert "[1] user: Can you book the 8 am train?\n[2] assistant: I booked the 8 am train" in user
    [row] = await units(engine, bank)
    assert row["fact_type"] == "experience" and row["id"] == raw_id


async def test_a_single_turn_cut_at_the_output_limit_stays_raw_and_queued(
    engine: Engine, fake: FakeLLMServer, bank: str
) -> None:
    cut = Reply(json={"facts": [fact("The user", "world", [1])], "entities": []}, finish_reason="length")
    fake.script([cut])
    [raw_id] = await engine.retain_many(bank, [{"content": "user: I adopted a cat named Miso.", "timestamp": TUESDAY}])
    [row] = await units(engine, bank)
    assert row["fact_type"] == "raw" and row["id"] == raw_id
    [entry] = await queued(engine, bank)
    assert "cut off" in entry["last_error"]
    assert fake.requests[0].body["max_tokens"] == engine.settings.extraction_output_tokens


async def test_what_the_assistant_only_acknowledged_is_the_users(
    engine: Engine, fake: FakeLLMServer, bank: str
) -> None:
    content = (
        "user: For front-end work I prefer React. My team lead is Zhang Wei.\n"
        "assistant: Good to know: React for front-end work, and Zhang Wei is your team lead. "
        "I also booked you a React course."
    )
    fake.script(
        [
            reply(
                [
                    # A small model cites the assistant's acknowledgement and calls it the assistant's experience.
                    fact("For front-end work, React is preferred.", "experience", [2], ["React"]),
                    fact("Zhang Wei is your team lead.", "experience", [2], ["Zhang Wei"]),
                    fact("The assistant booked the user a React course.", "experience", [2], ["React"]),
                ]
            )
        ]
    )
    await engine.retain_many(bank, [{"content": content, "timestamp": TUESDAY}])
    rows = {r["text"]: r["fact_type"] for r in await units(engine, bank)}
    assert rows == {
        "For front-end work, React is preferred.": "world",
        "Zhang Wei is the user's team lead.": "world",  # "your", from the assistant, is the user
        "The assistant booked the user a React course.": "experience",
    }


async def test_what_the_assistant_recommended_is_its_experience_whatever_the_model_typed(
    engine: Engine, fake: FakeLLMServer, bank: str
) -> None:
    content = (
        "user: I'm flying to Berlin next Tuesday for a conference.\n"
        "assistant: I recommend the Museum Island in Berlin if you have a free evening."
    )
    fake.script(
        [
            reply(
                [
                    fact(
                        "The user is flying to Berlin next Tuesday for a conference.",
                        "world",
                        [1],
                        ["Berlin"],
                        when="next Tuesday",
                    ),
                    # The local model's reply: typed world, and citing the user's turn.
                    fact(
                        "The assistant recommends the Museum Island in Berlin if the user has a free evening.",
                        "world",
                        [1],
                        ["Museum Island", "Berlin"],
                    ),
                ]
            )
        ]
    )
    await engine.retain_many(bank, [{"content": content, "timestamp": TUESDAY}])
    rows = {r["text"]: r["fact_type"] for r in await units(engine, bank)}
    assert rows == {
        "The user is flying to Berlin next Tuesday for a conference.": "world",
        "The assistant recommends the Museum Island in Berlin if the user has a free evening.": "experience",
    }


async def test_the_local_models_copied_turns_keep_their_speakers_and_our_dates(
    engine: Engine, fake: FakeLLMServer, bank: str
) -> None:
    # What the local model answered in the real-model tier: a fact copied with its "user:" label, the assistant's
    # "I recommend …" copied in its first person, and an English fact about a Chinese turn typed experience with
    # a wider time phrase ("next week") than the turn's own (下周三, next Wednesday).
    fake.script(
        [
            reply([fact("user: For front-end work I prefer React.", "world", [1], ["React"])]),
            reply(
                [
                    fact(
                        "I recommend the Museum Island in Berlin if the user has a free evening.",
                        "world",
                        [2],
                        ["Museum Island", "Berlin"],
                    )
                ]
            ),
            reply(
                [
                    fact(
                        "The user plans to go on a trip to Shanghai next week.",
                        "experience",
                        [1, 2],
                        ["Shanghai"],
                        when="next week",
                    )
                ]
            ),
        ]
    )
    await engine.retain_many(
        bank,
        [
            {
                "content": "user: For front-end work I prefer React.\n"
                "assistant: Good to know, React for front-end work.",
                "timestamp": TUESDAY,
            }
        ],
    )
    await engine.retain_many(
        bank,
        [
            {
                "content": "user: I'm flying to Berlin next Tuesday for a conference.\n"
                "assistant: I recommend the Museum Island in Berlin if you have a free "
                "evening.",
                "timestamp": TUESDAY,
            }
        ],
    )
    await engine.retain_many(
        bank, [{"content": "user: 我下周三要去上海出差。\nassistant: 祝你出差顺利！", "timestamp": TUESDAY}]
    )
    rows = {r["text"]: r for r in await units(engine, bank)}
    assert rows["For front-end work the user prefers React."]["fact_type"] == "world"
    museum = rows["The assistant recommends the Museum Island in Berlin if the user has a free evening."]
    assert museum["fact_type"] == "experience"
    shanghai = rows["The user plans to go on a trip to Shanghai next week."]
    assert shanghai["fact_type"] == "world" and (shanghai["occurred_start"], shanghai["occurred_end"]) == day(
        2026, 12, 9
    )
    assert not any(t.startswith(("user:", "The user:")) for t in rows if rows[t]["fact_type"] != "raw")


async def test_a_users_plan_the_model_called_experience_is_the_users(
    engine: Engine, fake: FakeLLMServer, bank: str
) -> None:
    # The local model's fact of run F: half translated, no subject, typed experience, citing the assistant's reply
    # (which shares only 出差 with it). The user's turn carries it as well, so it is the user's, dated by 下周三.
    fake.script([reply([fact("Shanghai出差 next week", "experience", [2], ["上海"], when="next week")])])
    await engine.retain_many(
        bank, [{"content": "user: 我下周三要去上海出差。\nassistant: 祝你出差顺利！", "timestamp": TUESDAY}]
    )
    facts = [r for r in await units(engine, bank) if r["fact_type"] != "raw"]
    assert [r["fact_type"] for r in facts] == ["world"]
    trip = facts[0]
    assert (trip["occurred_start"], trip["occurred_end"]) == day(2026, 12, 9)


async def test_what_the_assistant_wished_stays_its_experience(engine: Engine, fake: FakeLLMServer, bank: str) -> None:
    # The other side: a fact the assistant's turn carries better than the user's stays the assistant's.
    fake.script(
        [reply([fact("Wished the user a good business trip and suggested the Bund at night.", "experience", [2], [])])]
    )
    await engine.retain_many(
        bank,
        [
            {
                "content": "user: 我下周三要去上海出差。\n"
                "assistant: Have a good business trip! The Bund at night is lovely.",
                "timestamp": TUESDAY,
            }
        ],
    )
    facts = [r for r in await units(engine, bank) if r["fact_type"] != "raw"]
    assert [r["fact_type"] for r in facts] == ["experience"]
