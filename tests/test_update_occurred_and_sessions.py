"""Two small verbs behind the memory browser's operator pages: `update` sets when a memory's content happened
(occurred_start/occurred_end), and `sessions` lists a bank's conversations."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memwrap import Memory
from memwrap.errors import InvalidInputError


def test_update_sets_the_occurred_span_and_keeps_the_old_one_in_history(memory: Memory, bank: str) -> None:
    [memory_id] = memory.retain(bank, "Alice's dentist appointment is on 3 March 2026.")
    before = memory.get(bank, memory_id)
    assert before.occurred_start is not None and before.occurred_start.month == 3  # read from the text
    start = datetime(2026, 3, 10, 9, 30, tzinfo=UTC)
    after = memory.update(bank, memory_id, occurred_start=start)
    assert (after.occurred_start, after.occurred_end) == (start, start)  # the end defaults to the start
    end = datetime(2026, 3, 10, 10, 15, tzinfo=UTC)
    after = memory.update(bank, memory_id, occurred_start=start, occurred_end=end)
    assert (after.occurred_start, after.occurred_end) == (start, end)
    history = memory.history(bank, memory_id)
    assert [v.changed for v in history[1:]] == [["occurred"], ["occurred"]]
    assert history[0].occurred_start == before.occurred_start
    # The same span again changes nothing and adds no version.
    memory.update(bank, memory_id, occurred_start=start, occurred_end=end)
    assert len(memory.history(bank, memory_id)) == 3
    # Editing the text keeps a span set by hand only when given again; given, it wins over the text's date.
    after = memory.update(
        bank, memory_id, text="Alice's dentist appointment moved to 5 May 2026.", occurred_start=start
    )
    assert after.occurred_start == start


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"occurred_end": datetime(2026, 1, 1, tzinfo=UTC)}, "occurred_end needs occurred_start"),
        (
            {"occurred_start": datetime(2026, 2, 1, tzinfo=UTC), "occurred_end": datetime(2026, 1, 1, tzinfo=UTC)},
            "is before occurred_start",
        ),
    ],
)
def test_a_bad_occurred_span_is_refused(memory: Memory, bank: str, kwargs: dict, message: str) -> None:
    [memory_id] = memory.retain(bank, "Alice repainted the hallway.")
    with pytest.raises(InvalidInputError, match=message):
        memory.update(bank, memory_id, **kwargs)
    assert len(memory.history(bank, memory_id)) == 1


def test_sessions_lists_conversations_latest_first(memory: Memory, bank: str) -> None:
    memory.retain_many(
        bank,
        [
            {"content": "user: Book a table.", "document_id": "dinner:1", "timestamp": "2026-04-01T18:00:00Z"},
            {"content": "assistant: Booked for 8.", "document_id": "dinner:2", "timestamp": "2026-04-01T18:01:00Z"},
            {
                "content": "Alice: the roof leaks.",
                "metadata": {"session_id": "house"},
                "timestamp": "2026-05-02T09:00:00Z",
            },
            {"content": "A note with no session.", "timestamp": "2026-06-01T09:00:00Z"},
        ],
    )
    sessions = memory.sessions(bank)
    assert [(s.session_id, s.memories, s.speakers) for s in sessions] == [
        ("house", 1, ["Alice"]),
        ("dinner", 2, ["assistant", "user"]),
    ]
    assert sessions[1].first_said_at == datetime(2026, 4, 1, 18, 0, tzinfo=UTC)
    assert sessions[1].last_said_at == datetime(2026, 4, 1, 18, 1, tzinfo=UTC)
    assert [s.session_id for s in memory.sessions(bank, limit=1, offset=1)] == ["dinner"]
    with pytest.raises(InvalidInputError, match="limit"):
        memory.sessions(bank, limit=0)
