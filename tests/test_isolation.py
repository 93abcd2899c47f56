"""Nothing from bank A is ever returned for bank B, on any API."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest

from memwrap import Memory, MemoryNotFoundError

NOW = datetime(2026, 11, 30, tzinfo=UTC)


def test_banks_are_isolated(memory: Memory) -> None:
    a, b = f"iso-a-{uuid.uuid4().hex[:8]}", f"iso-b-{uuid.uuid4().hex[:8]}"
    a_ids = memory.retain_many(
        a,
        [
            {"content": "Alice's secret project is called Nightingale.", "document_id": "s:1", "tags": ["x"]},
            {
                "content": "Alice met Zoe in Berlin last spring.",
                "document_id": "s:2",
                "tags": ["x"],
                "timestamp": datetime(2026, 4, 1, tzinfo=UTC),
            },
        ],
    )
    b_ids = memory.retain_many(b, [{"content": "Bob likes tennis.", "document_id": "s:1"}])
    # The same document id and content in B stays B's own.
    shared = memory.retain_many(b, [{"content": "Alice's secret project is called Nightingale.", "document_id": "s:1"}])
    assert set(shared).isdisjoint(a_ids)

    for query in ["Nightingale", "What is Alice's secret project?", "Who did Alice meet last spring?", "Zoe Berlin"]:
        recall = memory.recall(b, query, token_budget=4000, now=NOW)
        assert {m.id for m in recall.memories} <= set(b_ids) | set(shared)
        assert "Zoe" not in recall.context
    assert {r.id for r in memory.list(b, limit=1000)} == set(b_ids) | set(shared)
    assert memory.list(b, tags=["x"]) == []
    for memory_id in a_ids:
        with pytest.raises(MemoryNotFoundError):
            memory.get(b, memory_id)
        with pytest.raises(MemoryNotFoundError):
            memory.delete(b, memory_id)
    assert len(memory.list(a)) == 2  # the failed deletes through B touched nothing of A
    memory.delete_bank(b)
    assert len(memory.list(a)) == 2
    assert {m.id for m in memory.recall(a, "Nightingale", now=NOW).memories} <= set(a_ids)
