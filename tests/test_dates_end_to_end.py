"""Dates through the whole engine: what retain stores for "in March" said in December, and what recall finds.

A month named without a year is placed by tense: said on 2026-12-01, "I moved to Lisbon in March." is March 2026
(not the coming March 2027), so "What did I do last spring?" finds it; "I'll visit Tokyo in March." is 2027.
Embedded engine, real PostgreSQL, no LLM (the heuristic retain path).
"""

from __future__ import annotations

from datetime import UTC, date, datetime

from memwrap import Memory, RetainItem

SAID = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)  # a Tuesday; winter and December begin today
NOW = datetime(2026, 12, 1, 18, 0, tzinfo=UTC)

PAST_SPRING = ["I moved to Lisbon in March.", "I started a new job in May.", "我三月搬到了里斯本。"]
AHEAD = "I'll visit Tokyo in March."
ELSEWHERE = "I went to Oslo in August."


def _span(memory: Memory, bank: str, memory_id: object) -> tuple[date, date]:
    record = memory.get(bank, memory_id)  # type: ignore[arg-type]  # memory_id is typed object here
    assert record.occurred_start is not None and record.occurred_end is not None
    return record.occurred_start.date(), record.occurred_end.date()


def test_a_month_said_in_december_is_stored_by_tense(memory: Memory, bank: str) -> None:
    ids = memory.retain_many(bank, [RetainItem(content=t, timestamp=SAID) for t in [*PAST_SPRING, AHEAD]])
    assert [_span(memory, bank, i) for i in ids] == [
        (date(2026, 3, 1), date(2026, 3, 31)),
        (date(2026, 5, 1), date(2026, 5, 31)),
        (date(2026, 3, 1), date(2026, 3, 31)),
        (date(2027, 3, 1), date(2027, 3, 31)),  # future tense: the March ahead
    ]


def test_last_spring_finds_in_march_said_in_december(memory: Memory, bank: str) -> None:
    texts = [*PAST_SPRING, AHEAD, ELSEWHERE]
    retained = memory.retain_many(bank, [RetainItem(content=t, timestamp=SAID) for t in texts])
    ids = dict(zip(texts, retained, strict=True))

    recall = memory.recall(bank, "What did I do last spring?", now=NOW)

    assert recall.time_window is not None
    assert (recall.time_window.start.date(), recall.time_window.end.date()) == (date(2026, 3, 1), date(2026, 5, 31))
    found = {m.id: m for m in recall.memories}
    for text in PAST_SPRING:
        assert ids[text] in found, f"{text!r} was not recalled"
        assert "temporal" in found[ids[text]].arms, f"{text!r} did not come from the temporal arm"
    # The plan for next March and the August trip lie outside the window: the temporal arm must not bring them.
    ranked = [m.text for m in recall.memories]
    for text in (AHEAD, ELSEWHERE):
        if ids[text] in found:
            assert "temporal" not in found[ids[text]].arms
            assert ranked.index(text) > max(ranked.index(t) for t in PAST_SPRING)


def test_an_undecided_month_keeps_both_years(memory: Memory, bank: str) -> None:
    """No tense and neither May clearly nearer: the stored interval covers both, so either question finds it."""
    memory_id = memory.retain(bank, "My sister Maya visits in May.", timestamp=SAID)[0]
    assert _span(memory, bank, memory_id) == (date(2026, 5, 1), date(2027, 5, 31))
    for question in ("What happened last May?", "What is happening next May?"):
        recall = memory.recall(bank, question, now=NOW)
        hit = next(m for m in recall.memories if m.id == memory_id)
        assert "temporal" in hit.arms, question
