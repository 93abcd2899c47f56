"""`memwrap reembed`: every stored vector recomputed with the configured embedding model, in place.

Each unit is embedded from the same text retain used (a raw unit with the end of the unit before it in its
session: `embedding_text`), so a re-embedded store holds the vectors a store built afresh with this model would.
The vector column is resized when the model's dimension differs. The HNSW index is dropped for the run and
built once at the end (memwrap/store/vector_index.py).
"""

from __future__ import annotations

import asyncpg
import numpy as np

from memwrap.engine.embed.embedder import Embedder
from memwrap.engine.embed.unit_text import embedding_text
from memwrap.store.db import Store
from memwrap.store.vector_index import index_down

# reembed: every unit with what retain embedded it with — a raw unit's previous unit in its session (by seq).
UNITS_TO_REEMBED = """
SELECT m.bank_id, m.id, m.seq, m.text,
       CASE WHEN m.fact_type = 'raw' AND m.session_key IS NOT NULL THEN
           (SELECT p.text FROM memory_units p
            WHERE p.bank_id = m.bank_id AND p.session_key = m.session_key AND p.seq < m.seq
            ORDER BY p.seq DESC LIMIT 1)
       END AS previous
FROM memory_units m
WHERE m.seq > $1
ORDER BY m.seq
LIMIT $2
"""


async def reembed_store(store: Store, embedder: Embedder, model: str, *, batch_size: int = 256) -> int:
    """Re-embed every memory of every bank; returns how many. Records the model and dimension in store_meta."""
    dim = embedder.dim
    pool = store.pool
    # Every vector changes: the index is dropped and built once at the end (faster than updating the graph row
    # by row, and a clean graph rather than one full of dead versions).
    async with index_down(pool, memory_cap=store.index_memory_cap):
        done = await _reembed_rows(pool, embedder, dim, batch_size)
    async with pool.acquire() as conn, conn.transaction():
        await store.set_meta("embedding_model", model, conn)
        await store.set_meta("embedding_dim", str(dim), conn)
    return done


async def _reembed_rows(pool: asyncpg.Pool, embedder: Embedder, dim: int, batch_size: int) -> int:
    async with pool.acquire() as conn, conn.transaction():
        stored_dim = await conn.fetchval("SELECT value FROM store_meta WHERE key = 'embedding_dim'")
        if stored_dim != str(dim):
            await conn.execute(f"ALTER TABLE memory_units ALTER COLUMN embedding TYPE vector({int(dim)}) USING NULL")
    done = 0
    last_seq = 0
    while True:
        rows = await pool.fetch(UNITS_TO_REEMBED, last_seq, batch_size)
        if not rows:
            break
        vectors: np.ndarray = await embedder.embed([embedding_text(r["text"], r["previous"]) for r in rows])
        await pool.executemany(
            "UPDATE memory_units SET embedding = $3 WHERE bank_id = $1 AND id = $2",
            [(r["bank_id"], r["id"], v) for r, v in zip(rows, vectors, strict=True)],
        )
        done += len(rows)
        last_seq = rows[-1]["seq"]
    return done
