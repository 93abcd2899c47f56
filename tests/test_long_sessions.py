"""Long technical conversations (issue 36): long messages stay whole where it matters, questions that span
sessions cover them, standing instructions come back for their tasks, and technical changes are changes.

Each test builds its own small bank of long messages on the real PostgreSQL of the test run."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest

from memwrap import Memory, RetainItem
from memwrap.engine.language.changes import Statement, change_rule
from memwrap.engine.language.instructions import standing_domain, task_domains
from memwrap.engine.language.tech_changes import technical_rules
from memwrap.engine.recall.pack import GAP, plan
from memwrap.engine.recall.span import cover_sessions, span_rules
from memwrap.engine.retain.split import code_spans, split_units
from memwrap.models import RecalledMemory
from memwrap.tokens import encoding_for_model

ENC = encoding_for_model(None)
START = datetime(2026, 1, 5, 10, 0, tzinfo=UTC)
NOW = datetime(2026, 11, 30, tzinfo=UTC)

# A line of code with sentence enders inside it: a splitter that reads prose would cut after "save(). "
CODE_LINES = [f"    result_{i} = store.save(). Then(retry={i}) # attempt {i}. Backoff doubles here" for i in range(40)]
LONG_ANSWER = (
    "The retry loop lives in worker/queue.py. It retries a failed job five times before giving up. "
    "Each attempt waits twice as long as the one before, starting at 200 ms. "
    * 4
    + "\n\n```python\n"
    + "\n".join(CODE_LINES)
    + "\n```\n\n"
    + "The backoff is capped at 30 seconds so a dead database does not stall the queue forever. " * 6
)


def _flat(text: str) -> str:
    return " ".join(text.split())


def test_a_code_block_is_cut_only_between_its_lines() -> None:
    units = split_units(LONG_ANSWER)
    assert len(units) >= 3
    for line in CODE_LINES:
        holding = [u for u in units if _flat(line) in _flat(u)]
        assert len(holding) == 1, f"{line!r} was cut: {[u[-80:] for u in units]}"
    # The prose before the code ends its own unit: the snippet starts a unit with its fence.
    assert any(u.startswith("```python") for u in units)
    assert code_spans("a\n```\nx = 1\n```\nb") == [(2, 15)]


def test_a_code_line_longer_than_a_unit_is_the_only_thing_cut_inside_a_line() -> None:
    huge = "```\n" + "x = " + " + ".join(f"v{i}" for i in range(400)) + "\nshort_line = 1\n```"
    units = split_units(huge, max_chars=300)
    assert sum("short_line = 1" in u for u in units) == 1
    assert "".join(units).replace(" ", "").replace("\n", "") == huge.replace(" ", "").replace("\n", "")


def _long_message_bank(memory: Memory, bank: str) -> None:
    memory.retain_many(
        bank,
        [
            RetainItem(
                content="How should the job queue retry failed jobs?",
                timestamp=START,
                document_id="s1:0",
                metadata={"role": "user", "session_id": "s1"},
            ),
            RetainItem(
                content=LONG_ANSWER,
                timestamp=START + timedelta(minutes=1),
                document_id="s1:1",
                metadata={"role": "assistant", "session_id": "s1"},
            ),
        ],
    )


def test_chunks_keep_their_provenance_and_show_merged_in_message_order(memory: Memory, bank: str) -> None:
    _long_message_bank(memory, bank)
    recall = memory.recall(
        bank, "retry loop worker/queue.py backoff capped 30 seconds dead database", token_budget=4000, now=NOW
    )
    chunks = [m for m in recall.memories if m.part is not None]
    assert len(chunks) >= 3
    assert {m.message_id for m in chunks} != {None} and len({m.message_id for m in chunks}) == 1
    assert {m.parts for m in chunks} == {max(m.part for m in chunks if m.part is not None) + 1}
    assert {(m.document_id, m.speaker, m.session_id, m.mentioned_at) for m in chunks} == {
        ("s1:1", "assistant", "s1", START + timedelta(minutes=1))
    }
    # The block: one line for the message, its chunks in message order whatever their ranks.
    lines = [line for line in recall.context.splitlines() if "retry loop lives" in line or "capped at 30" in line]
    assert len(lines) == 1, recall.context
    line = lines[0]
    assert line.startswith("- [2026-01-05] assistant: The retry loop")
    assert line.index("retry loop lives") < line.index("result_0 =") < line.index("result_39 =")
    assert line.index("result_39 =") < line.index("capped at 30")
    assert recall.tokens == len(ENC.encode(recall.context))


def _chunk(part: int, text: str, score: float, message: str = "m1") -> RecalledMemory:
    from uuid import uuid4

    return RecalledMemory(
        id=uuid4(),
        bank_id="b",
        text=text,
        type="raw",
        document_id="s:1",
        speaker="assistant",
        mentioned_at=START,
        message_id=message,
        part=part,
        parts=4,
        score=score,
    )


def test_the_packer_joins_a_messages_chunks_and_marks_the_gaps() -> None:
    ranked = [
        _chunk(2, "Part two says the cap is 30 s.", 0.9),
        RecalledMemory(id=_chunk(0, "", 0).id, text="user: unrelated whole turn", type="raw", mentioned_at=START),
        _chunk(0, "assistant: Part zero opens the answer.", 0.5),
    ]
    packing = plan(ranked, max_tokens=400, now=NOW, encoding=ENC)
    body = [line for line in packing.context.splitlines() if line.startswith("- ")]
    assert (
        body[0] == f"- [2026-01-05] assistant: Part zero opens the answer. {GAP} Part two says the cap is 30 s. {GAP}"
    )
    assert body[1] == "- [2026-01-05] user: unrelated whole turn"
    assert packing.tokens == len(ENC.encode(packing.context)) <= 400
    assert sorted(packing.chosen) == [0, 1, 2]
    # A chunk shown alone says it is an excerpt; adjacent chunks join without a gap.
    alone = plan([_chunk(1, "Middle.", 1.0)], max_tokens=400, now=NOW, encoding=ENC)
    assert f"assistant: {GAP} Middle. {GAP}" in alone.context
    both = plan([_chunk(1, "One.", 1.0), _chunk(2, "Two.", 0.9)], max_tokens=400, now=NOW, encoding=ENC)
    assert f"{GAP} One. Two. {GAP}" in both.context


def test_rest_and_mcp_carry_a_chunks_provenance(memory: Memory, bank: str) -> None:
    # REST returns Recall as its JSON (memwrap_server routes): the fields are the model's.
    _long_message_bank(memory, bank)
    recall = memory.recall(bank, "backoff capped at 30 seconds", token_budget=2000, now=NOW)
    dumped = recall.model_dump(mode="json")["memories"]
    chunk = next(m for m in dumped if m["part"] is not None)
    assert chunk["document_id"] == "s1:1" and chunk["speaker"] == "assistant" and chunk["session_id"] == "s1"
    assert chunk["parts"] >= 3 and chunk["message_id"]
    from memwrap_server.mcp import VIEWS

    view = VIEWS["recall"](recall)["memories"]
    shown = next(m for m in view if m["part"] is not None)
    assert shown["document_id"] == "s1:1" and shown["speaker"] == "assistant" and shown["parts"] == chunk["parts"]
    assert "text" not in shown


# --- Questions that span sessions -----------------------------------------------------------------------------

SUBJECT = "the flaky payments integration test"


def _sessions_bank(memory: Memory, bank: str) -> list[str]:
    """Session "deep" talks about the subject at length; three later sessions mention it once each."""
    items: list[RetainItem] = []
    day = START
    for i in range(8):
        items.append(
            RetainItem(
                content=f"user: {SUBJECT} failed again on run {i}; the payments integration test times out in CI "
                f"when the payments sandbox is slow (attempt {i}).",
                timestamp=day + timedelta(minutes=i),
                document_id=f"deep:{i}",
                metadata={"session_id": "deep"},
            )
        )
    later = [
        ("s-feb", "user: I added a retry decorator to the flaky payments integration test."),
        ("s-apr", "user: We quarantined the flaky payments integration test behind a CI flag."),
        ("s-jun", "user: Finally deleted the flaky payments integration test and replaced it with a contract test."),
    ]
    for n, (session, text) in enumerate(later, start=1):
        for k, filler in enumerate(["user: The dashboard colours look off.", text, "user: Lunch was great."]):
            items.append(
                RetainItem(
                    content=filler,
                    timestamp=day + timedelta(days=40 * n, minutes=k),
                    document_id=f"{session}:{k}",
                    metadata={"session_id": session},
                )
            )
    memory.retain_many(bank, items)
    return ["deep", "s-feb", "s-apr", "s-jun"]


def _sessions_in_block(context: str, recall_memories: list[RecalledMemory]) -> list[str]:
    by_text = {m.text.split(": ", 1)[-1][:40]: m.session_id for m in recall_memories}
    found = []
    for line in context.splitlines():
        for head, session in by_text.items():
            if head in line and session not in found:
                found.append(session or "")
    return found


def test_an_ordering_question_covers_the_sessions_in_time_order(memory: Memory, bank: str) -> None:
    _sessions_bank(memory, bank)
    plain = memory.recall(bank, f"What did I say about {SUBJECT}?", token_budget=260, now=NOW)
    spanning = memory.recall(bank, f"In what order did I bring up {SUBJECT}?", token_budget=260, now=NOW)
    plain_sessions = {m.session_id for m in plain.memories}
    sessions = _sessions_in_block(spanning.context, spanning.memories)
    assert len({m.session_id for m in spanning.memories}) >= 3 > len(plain_sessions), (plain.context, spanning.context)
    dates = re.findall(r"^- \[(\d{4}-\d{2}-\d{2})", spanning.context, re.MULTILINE)
    assert dates == sorted(dates) and len(sessions) >= 3


@pytest.mark.parametrize(
    ("question", "rule"),
    [
        ("In what order did I bring up the three database options?", "in-what-order"),
        ("Summarise how the migration to Postgres progressed", "summarise"),
        ("How has the build time changed over the months?", "progression"),
        ("How many times did the deploy fail?", "how-many-times"),
        ("Which did I set up first, the CI or the linter?", "which-first"),
    ],
)
def test_span_questions_are_named_by_their_rule(question: str, rule: str) -> None:
    assert rule in span_rules(question)


@pytest.mark.parametrize("question", ["What port does the API listen on?", "Where is the retry logic?", "Why?"])
def test_a_question_about_one_thing_is_left_alone(question: str) -> None:
    assert span_rules(question) == ()
    ranked = [_chunk(0, "x", 0.5, "a"), _chunk(1, "y", 0.4, "a")]
    assert cover_sessions(ranked, question) == ranked


# --- Standing instructions ------------------------------------------------------------------------------------


def test_a_stated_preference_comes_back_for_a_matching_request(memory: Memory, bank: str) -> None:
    items = [
        RetainItem(
            content="user: Always format Python code with black, and I prefer minimal dependencies.",
            timestamp=START,
            document_id="prefs:0",
        )
    ]
    items += [
        RetainItem(
            content=f"user: Note {i}: the staging cluster had {i} pods restarted during the night shift.",
            timestamp=START + timedelta(days=i + 1),
            document_id=f"noise:{i}",
        )
        for i in range(30)
    ]
    memory.retain_many(bank, items)
    task = memory.recall(bank, "Write a function that deduplicates the log lines", token_budget=300, now=NOW)
    assert "format Python code with black" in task.context
    assert task.memories[0].arms.get("standing") == 1
    question = memory.recall(bank, "How many pods restarted during the night shift?", token_budget=300, now=NOW)
    assert all("standing" not in m.arms for m in question.memories)


@pytest.mark.parametrize(
    ("text", "speaker", "domain"),
    [
        ("Always format code with black.", "user", "code"),
        ("I prefer minimal dependencies", "user", "code"),
        ("From now on, answer in bullet points.", "user", "any"),
        ("Never use emojis in my emails.", "user", "writing"),
        ("Always format code with black.", "assistant", None),  # the assistant instructs nobody
        ("I always go hiking on Sundays.", "user", None),  # a habit, not an instruction
        ("The build failed twice yesterday.", "user", None),
    ],
)
def test_standing_instructions_are_recognised_at_retain(text: str, speaker: str, domain: str | None) -> None:
    assert standing_domain(text, speaker) == domain


def test_task_requests_have_domains() -> None:
    assert task_domains("Write a pytest for the parser") == ["code", "any"]
    assert task_domains("Could you draft an email to the landlord?") == ["writing", "any"]
    assert task_domains("What did I have for lunch?") == []


# --- Technical changes ----------------------------------------------------------------------------------------

TECH_CHANGES = [
    (
        "The search endpoint's p95 latency is 350 ms.",
        "After the index fix the p95 latency is now averaging 250 ms.",
        "metric-now",
    ),
    ("Search p95 latency sits at 350 ms.", "Search p95 latency dropped to 250 ms after caching.", "metric-moved"),
    ("We keep the job queue in SQLite.", "We migrated the job queue from SQLite to Postgres.", "migrated-from-to"),
    ("All the helpers live in utils.py.", "Today I renamed utils.py to helpers.py.", "renamed"),
    ("The cron entry point is fetch_all.", "fetch_all is now called load_all.", "now-called"),
    ("CI runs on Python 3.11.", "We upgraded CI to Python 3.12.", "version-bump"),
    ("The UI state lives in Redux.", "We replaced Redux with Zustand.", "replaced-with"),
    ("We run on SQLite for the database at the moment.", "Migration done: Postgres replaces SQLite as our database.",
     "replaces"),
    ("Nightly jobs start from cron.py.", "`cron.py` has been superseded by `scheduler.py`.", "replaced-by"),
    ("WORKER_CONCURRENCY is 4 in production.", "Raised the worker concurrency to 12 after the backlog.", "setting-to"),
    ("The request timeout is 30 s.", "The request timeout is now set to 60 s.", "setting-is-set-to"),
    ("Load test: p95 for search is 340 ms, way too slow.", "That brings the search p95 to 220 ms.", "metric-brings"),
    ("We're pinned to httpx==0.26.0 for the plugin.", "The lock file now resolves httpx 0.27.2.", "now-on-version"),
    ("The build agents run Node 18.", "Updated Node from 18 to 20 on the build agents.", "version-bump"),
]  # fmt: skip


@pytest.mark.parametrize(("older", "newer", "rule"), TECH_CHANGES)
def test_a_technical_change_is_named_by_its_rule(older: str, newer: str, rule: str) -> None:
    early, late = Statement(older, "user", START), Statement(newer, "user", START + timedelta(days=30))
    assert change_rule(late, early) == rule
    assert change_rule(Statement(older, "user", late.said_at), Statement(newer, "user", START)) is None


@pytest.mark.parametrize(
    ("older", "newer"),
    [
        ("Our cache hit rate is 80%.", "Postgres now handles 500 connections."),  # another unit, another thing
        ("The test suite has 120 tests and takes 40 seconds.", "I wrote 3 new tests today."),  # no change cue
        ("I ran 5 km yesterday.", "The endpoint now returns 20 items per page."),
        ("We use Redis for sessions.", "We moved from SQLite to Postgres."),  # a move of something else
        ("The worker uses 4 cores.", "Lunch now takes 45 minutes."),
    ],
)
def test_unrelated_numbers_and_moves_are_no_change(older: str, newer: str) -> None:
    assert change_rule(Statement(newer, "user", START + timedelta(days=30)), Statement(older, "user", START)) is None


@pytest.mark.parametrize(("older", "newer", "rule"), TECH_CHANGES)
def test_recall_puts_the_newer_technical_statement_first_and_marks_the_older(
    memory: Memory, bank: str, older: str, newer: str, rule: str
) -> None:
    memory.retain_many(
        bank,
        [
            RetainItem(content=f"user: {older}", timestamp=START, document_id="a:0"),
            RetainItem(content=f"user: {newer}", timestamp=START + timedelta(days=60), document_id="b:0"),
        ],
    )
    recall = memory.recall(bank, older.rstrip("."), token_budget=500, now=NOW)
    texts = [m.text for m in recall.memories]
    assert [t.split(": ", 1)[1] for t in texts[:2]] == [newer, older], rule
    assert recall.memories[1].replaced_by == recall.memories[0].id
    assert any(older in line and "(earlier; changed" in line for line in recall.context.splitlines())


# Look-alikes of each rule's cue that state no change (issue 36: "it is called from the daemon" was a rename, 4,048
# false marks on two generated long technical banks; "St Albans is named after ..." on s_3q).
NOT_CUES = [
    ("now-called", "Please make `retry_cursor` async, it is called from the sync daemon."),
    ("now-called", "St Albans is named after the Roman martyr, St Alban."),
    ("now-called", "The Church is called to worship, fellowship and discipleship."),
    ("renamed", "I renamed it to something shorter."),
    ("renamed", "Yesterday I renamed the folder to archive."),
    ("replaces", "Other legislation\nReplaces Data Protection Directive"),
    ("replaces", "EDPB thus replaces the Article 29 Working Party."),
    ("replaced-by", "A right to be forgotten was replaced by a more limited right of erasure."),
    ("replaced-with", "We replaced it with something sturdier."),
    ("migrated-from-to", "We moved it from here to there."),
    ("migrated-from-to", "The shift changed from 9 to 5."),
    ("version-bump", "We moved to 3 servers in March."),
    ("version-bump", "Bumped memory to 4 GB."),
    ("version-bump", "I upgraded it to 2.0 last night."),
    ("now-on-version", "We are now on 3 calls a day."),
    ("setting-to", "I set it to 5 before lunch."),
    ("setting-to", "Set up to 5 alarms."),
    ("setting-is-set-to", "It is set to 5 by default."),
    ("metric-now", "I now have 3 kids."),
    ("metric-brings", "She brought her kids to 3 classes."),
    ("metric-moved", "The mood went up to 11."),
]


@pytest.mark.parametrize(("rule", "text"), NOT_CUES)
def test_a_look_alike_is_no_cue_of_the_rule(rule: str, text: str) -> None:
    assert rule not in technical_rules(text)


@pytest.mark.parametrize(("older", "newer", "rule"), TECH_CHANGES)
def test_each_rule_finds_its_own_cue(older: str, newer: str, rule: str) -> None:
    assert rule in technical_rules(newer)
    assert not technical_rules(older)


@pytest.mark.parametrize(
    ("older", "newer"),
    [
        ("We use Redis for sessions.", "Postgres replaces SQLite as our database."),  # replaces something else
        ("We use Redis for sessions.", "SQLite was replaced by Postgres."),
        ("The cache holds 500 items.", "Raised the worker concurrency to 12."),  # another setting
        ("The worker pool is 4 in production.", "Raised the worker concurrency to 12."),  # one word of two in common
        ("Can you add retries around the celery client?", "Bumped celery to 2.14.5."),  # names celery, no version
        ("The cache hit rate is 80%.", "That brings the search p95 to 220 ms."),  # another unit
        ("The page size is 50 rows.", "The request timeout is now set to 60 s."),
        # A long message: the number of the same unit is in a sentence about something else.
        (
            "The nightly backup takes 40 ms per table. The search index lives on the second disk.",
            "Postgres latency is now averaging 250 ms on the primary.",
        ),
    ],
)
def test_a_cue_about_something_else_is_no_change(older: str, newer: str) -> None:
    assert change_rule(Statement(newer, "user", START + timedelta(days=30)), Statement(older, "user", START)) is None


def test_bumped_memory_is_a_setting_not_a_version() -> None:
    assert technical_rules("Bumped memory to 4 GB.") == ("setting-to",)
