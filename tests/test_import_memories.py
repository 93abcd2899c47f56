"""Bulk import (Memory.import_memories): JSONL or dicts, precomputed vectors written as given, with COPY."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from memwrap import Memory
from memwrap.engine.transfer.memories_jsonl import ImportedMemory, memory_line, read_jsonl
from memwrap.errors import InvalidInputError

WHEN = datetime(2024, 5, 2, 9, 0, tzinfo=UTC)

ROWS = [
    {
        "text": "Alice: I ran the river 10k on Sunday with Bob.",
        "mentioned_at": WHEN.isoformat(),
        "document_id": "S1:1",
        "tags": ["running"],
        "metadata": {"speaker": "Alice"},
    },
    {"text": "Bob: Your pace was great, Alice!", "timestamp": WHEN.isoformat(), "document_id": "S1:2"},
    {"text": "Carmen adopted a rescue dog named Pepper.", "mentioned_at": WHEN.isoformat()},
]


def _engine(memory: Memory):
    return memory._run(memory.aio._get_engine())


def test_import_writes_what_retain_would_and_uses_given_vectors(memory: Memory, bank: str, tmp_path: Path) -> None:
    engine = _engine(memory)
    vector = engine.embedder.encode(["a vector from elsewhere"])[0]
    rows = [dict(ROWS[0], embedding=[float(x) for x in vector]), ROWS[1], ROWS[2]]
    path = tmp_path / "bank.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n\n", encoding="utf-8")

    assert memory.import_memories(bank, str(path)) == 3
    assert memory.import_memories(bank, path) == 0  # the same rows again: nothing twice

    stored = {m.text: m for m in memory.list(bank)}
    assert set(stored) == {r["text"] for r in ROWS}
    alice = stored[ROWS[0]["text"]]
    assert alice.tags == ["running"] and alice.metadata == {"speaker": "Alice"} and alice.mentioned_at == WHEN
    assert "Bob" in alice.entities
    saved = memory._run(
        engine.store.pool.fetchval("SELECT embedding FROM memory_units WHERE bank_id = $1 AND id = $2", bank, alice.id)
    )
    assert np.allclose(saved.to_numpy(), vector, atol=1e-6)  # written as given, not embedded again
    # The others were embedded here; keyword, graph and session links work as for retained memories.
    links = memory._run(
        engine.store.pool.fetchval("SELECT count(*) FROM memory_links WHERE bank_id = $1 AND kind = 'next'", bank)
    )
    assert links == 1  # S1:1 -> S1:2
    assert next(b for b in memory.banks() if b.bank_id == bank).memories == 3
    hits = memory.recall(bank, "Who has a rescue dog?", now=WHEN).memories
    assert hits and hits[0].text == ROWS[2]["text"]
    # A retain of an imported item finds it (same item hash).
    again = memory.retain(bank, ROWS[2]["text"], timestamp=WHEN)
    assert again == [stored[ROWS[2]["text"]].id]


def test_import_checks_rows_before_writing(memory: Memory, bank: str) -> None:
    with pytest.raises(InvalidInputError, match="3 dimensions"):
        memory.import_memories(bank, [{"text": "short vector", "embedding": [0.1, 0.2, 0.3]}])
    with pytest.raises(InvalidInputError, match="Not a memory"):
        memory.import_memories(bank, [{"txt": "no text field"}])
    with pytest.raises(InvalidInputError, match="line 2"):
        list(read_jsonl(['{"text": "fine"}', "{not json"]))
    assert memory.list(bank) == []


def test_jsonl_line_round_trip() -> None:
    memory = ImportedMemory(text="Grace: we hiked the ridge trail", tags=["hiking"], mentioned_at=WHEN, embedding=[0.5])
    assert list(read_jsonl([memory_line(memory)])) == [memory]


def test_a_bulk_load_drops_the_vector_index_and_builds_it_once(tmp_path: Path) -> None:
    from memwrap.store.vector_index import LOCK_KEY, ensure_vector_index, vector_index_exists

    rows = [
        {
            "text": f"Note {i}: the user measured {i} litres of rain in garden plot {i % 7}.",
            "mentioned_at": WHEN.isoformat(),
        }
        for i in range(299)
    ]
    rows.insert(150, {"text": "João has taught the user the cello since March.", "mentioned_at": WHEN.isoformat()})
    with Memory(home=tmp_path) as memory:
        engine = _engine(memory)
        pool = engine.store.pool
        seen: list[bool] = []

        async def watched():
            for row in rows:
                if len(seen) < 1:  # while the load runs (its first batch is being read), the index is down
                    seen.append(await vector_index_exists(pool))
                yield row

        assert memory.import_memories("plots", watched(), batch_size=100, rebuild_vector_index=True) == 300
        assert seen == [False] and memory._run(vector_index_exists(pool))
        hits = memory.recall("plots", "Who gives the user music lessons?", now=WHEN).memories
        assert hits and "cello" in hits[0].text and hits[0].arms.get("semantic") == 1
        # A load refused on a bad row (after a batch went in) still builds the index again.
        bad = [{"text": f"Extra note {i}.", "mentioned_at": WHEN.isoformat()} for i in range(5)] + [{"txt": "no text"}]
        with pytest.raises(InvalidInputError):
            memory.import_memories("other", bad, batch_size=5, rebuild_vector_index=True)
        assert memory._run(vector_index_exists(pool))

        # A load still under way (its shared lock held): a store opening meanwhile does not build the index.
        memory._run(pool.execute("DROP INDEX memory_units_embedding_hnsw"))

        async def under_a_load() -> float:
            async with pool.acquire() as conn:
                await conn.execute("SELECT pg_advisory_lock_shared($1)", LOCK_KEY)
                try:
                    return await ensure_vector_index(pool)
                finally:
                    await conn.execute("SELECT pg_advisory_unlock_shared($1)", LOCK_KEY)

        assert memory._run(under_a_load()) == 0.0 and not memory._run(vector_index_exists(pool))
    # A load that died with the index down: the next start builds it again.
    with Memory(home=tmp_path) as memory:
        assert memory._run(vector_index_exists(_engine(memory).store.pool))
        hits = memory.recall("plots", "Who gives the user music lessons?", now=WHEN).memories
        assert hits and "cello" in hits[0].text


def test_a_file_imported_again_is_not_embedded_again(memory: Memory, bank: str) -> None:
    """What the bank holds is looked up before the model runs: a re-import costs a read, not the embedding."""
    from memwrap.engine.transfer.import_memories import BulkLoadReport, import_batch

    engine = _engine(memory)
    embedded: list[str] = []

    async def embed(texts: list[str]) -> np.ndarray:
        embedded.extend(texts)
        return await engine.embedder.embed(texts)

    rows = [ImportedMemory.model_validate(r) for r in ROWS + [ROWS[2]]]  # the last one twice in the batch

    async def load() -> tuple[int, int]:
        report = BulkLoadReport()
        async with engine.store.pool.acquire() as conn:
            written = await import_batch(
                conn, bank, rows, dim=engine.embedder.dim, embed=embed, defense_policy="off", report=report
            )
        return len(written), report.embedded

    assert memory._run(load()) == (3, 3)  # the repeated row embedded once
    embedded.clear()
    assert memory._run(load()) == (0, 0) and embedded == []
