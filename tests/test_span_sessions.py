"""Questions that span sessions in long technical talk (issue 36, recall/sessions.py): the block covers the
sessions that mention the subject, in time order, even when each mention sits inside a long answer."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from memwrap import Memory, RetainItem
from memwrap.engine.recall.pack import GAP
from memwrap.engine.recall.sessions import candidate_cut, excerpt, span_block, subject_terms
from memwrap.engine.recall.span import span_rules
from memwrap.models import RecalledMemory

START = datetime(2026, 1, 5, 10, 0, tzinfo=UTC)
NOW = datetime(2026, 11, 30, tzinfo=UTC)

# Long assistant answers about other things, each with one sentence about the subject somewhere in the middle.
FILLER = (
    "The configuration loader reads the YAML file once at start-up and caches the parsed tree in memory. "
    "Environment variables override the file, which keeps secrets out of the repository. "
    "Validation happens in one place so a typo fails fast with the key's full path in the message. "
)
CODE = "```python\n" + "\n".join(f"settings_{i} = load('conf/{i}.yaml')  # part {i}" for i in range(8)) + "\n```"
STEPS = [
    ("s-jan", "For the invoice renderer we added a composite index on (account_id, created_at)."),
    ("s-mar", "For the invoice renderer we moved the PDF rendering into a background task."),
    ("s-may", "For the invoice renderer we replaced the N+1 lookups with a single batched query."),
    ("s-aug", "For the invoice renderer we cached the tax tables in Redis for an hour."),
]
QUESTION = "In what order did we try the speed-ups on the invoice renderer?"


def _answer(statement: str, n: int) -> str:
    return f"assistant: {FILLER * 2}\n\n{CODE}\n\n{statement} {FILLER} Run number {n} is noted in the changelog."


def _bank(memory: Memory, bank: str) -> None:
    """Four sessions months apart, each a short user prompt and a long answer carrying one step; then a last
    session that talks about the renderer at length (five long answers naming it in every sentence)."""
    items: list[RetainItem] = []
    for n, (session, statement) in enumerate(STEPS):
        day = START + timedelta(days=50 * n)
        for k, content in enumerate(["user: Can you look at the config loader again?", _answer(statement, n)]):
            items.append(
                RetainItem(
                    content=content,
                    timestamp=day + timedelta(minutes=k),
                    document_id=f"{session}:{k}",
                    metadata={"session_id": session},
                )
            )
    busy = START + timedelta(days=260)
    for k in range(5):
        talk = (
            "assistant: " + f"The invoice renderer speed-ups are measured by the invoice renderer benchmark {k}. " * 6
        )
        items.append(
            RetainItem(
                content=talk,
                timestamp=busy + timedelta(minutes=k),
                document_id=f"s-busy:{k}",
                metadata={"session_id": "s-busy"},
            )
        )
    memory.retain_many(bank, items)


def test_a_span_question_covers_every_session_in_time_order_within_a_tight_budget(memory: Memory, bank: str) -> None:
    _bank(memory, bank)
    recall = memory.recall(bank, QUESTION, token_budget=400, now=NOW)
    steps_shown = [statement for _session, statement in STEPS if statement in recall.context]
    assert steps_shown == [statement for _session, statement in STEPS], recall.context
    # In time order: January's step before March's before May's before August's.
    places = [recall.context.index(statement) for statement in steps_shown]
    assert places == sorted(places)
    dates = re.findall(r"^- \[(\d{4}-\d{2}-\d{2})", recall.context, re.MULTILINE)
    assert dates == sorted(dates)
    # Each step is shown as its sentence, not the whole answer (the filler is left out, marked).
    assert GAP in recall.context and "Validation happens in one place" not in recall.context


def test_a_question_about_one_thing_keeps_whole_lines(memory: Memory, bank: str) -> None:
    _bank(memory, bank)
    recall = memory.recall(bank, "What index did we add to the invoice renderer?", token_budget=2000, now=NOW)
    assert any("Validation happens in one place" in m.text for m in recall.memories)


def test_subject_terms_leave_out_the_span_cue() -> None:
    assert subject_terms(QUESTION) == {"try", "speed-up", "invoic", "renderer"}
    assert {"search", "relevanc"} <= subject_terms("Summarise how the search relevance work progressed.")


def test_an_excerpt_keeps_the_sentences_naming_the_subject_and_never_code() -> None:
    text = _answer(STEPS[0][1], 0)
    short = excerpt(text, subject_terms(QUESTION))
    assert short is not None
    assert short == f"{GAP} {STEPS[0][1]} {GAP}"
    assert excerpt("assistant: a short answer about the invoice renderer.", subject_terms(QUESTION)) is None
    assert excerpt(FILLER * 3, subject_terms(QUESTION)) is None  # no sentence names it: stays whole


def test_ordering_phrases_are_span_questions() -> None:
    assert "earliest-first" in span_rules("List the performance changes to the rate limiter, earliest first.")
    assert "earliest-first" in span_rules("Show the deploys in chronological order")
    assert span_rules("What is the earliest deploy?") == ()


def test_only_a_span_question_widens_the_cut_and_is_excerpted() -> None:
    assert candidate_cut(QUESTION, 85) > 85
    assert candidate_cut("What index did we add?", 85) == 85
    long = RecalledMemory(
        id="00000000-0000-0000-0000-000000000001", text=_answer(STEPS[0][1], 0), type="raw", score=1.0
    )
    assert span_block([long], "What index did we add?")[0].text == long.text
    assert span_block([long], QUESTION)[0].text == f"{GAP} {STEPS[0][1]} {GAP}"
    assert long.text == _answer(STEPS[0][1], 0)  # the ranked memory itself is not changed
