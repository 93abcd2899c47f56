"""`memwrap reembed`: every stored vector recomputed with the configured embedding model, in place.

Each unit is embedded from the same text retain used (a raw unit with the end of the unit before it in its
session: `embedding_text`), so a re-embedded store holds the vectors a store built afresh with this model would.
The vector column is resized when the model's dimension differs. The HNSW index is dropped for the run and
built once at the end (memwrap/store/vector_index.py).

Which memories need it (`reembed_plan`): a store holds the vectors of one model, the one its store_meta names
(`embedding_model`, `embedding_dim`). Nothing writes another model's vector into it: `Store.open` refuses a store
whose meta names another model (EmbeddingModelMismatchError) unless it opens for reembed, retain and update embed
with the configured model, `import_bank` re-embeds an export made with another model, and a vector given to
`import_memories` must have the column's dimension. The meta is written only after every row was re-embedded, so
a reembed cut short still names the old model and the next run starts over. So per-memory bookkeeping would
record the same model on every row: when the meta names the configured model and dimension, every vector is
already that model's, and only memories without a vector (NULL) are left to embed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass

import asyncpg
import numpy as np

from memwrap.engine.embed.embedder import Embedder
from memwrap.engine.embed.unit_text import embedding_text
from memwrap.errors import InvalidInputError
from memwrap.store.db import Store
from memwrap.store.vector_index import index_down

# reembed: every unit with what retain embedded it with — a raw unit's previous unit in its session (by seq).
UNITS_TO_REEMBED = """
SELECT m.bank_id, m.id, m.seq, m.text, m.turn_parts,
       CASE WHEN m.fact_type = 'raw' AND m.session_key IS NOT NULL THEN
           (SELECT CASE WHEN p.turn_parts IS NULL THEN p.text END FROM memory_units p  -- unit_text.context_of
            WHERE p.bank_id = m.bank_id AND p.session_key = m.session_key AND p.seq < m.seq
            ORDER BY p.seq DESC LIMIT 1)
       END AS previous
FROM memory_units m
WHERE m.seq > $1 AND ($3 OR m.embedding IS NULL)
ORDER BY m.seq
LIMIT $2
"""


@dataclass(frozen=True)
class ReembedPlan:
    """What `memwrap reembed` would do: the store's model against the configured one, and the memories to embed."""

    stored_model: str | None
    stored_dim: int | None
    model: str
    dim: int
    memories: int  # in the whole store
    without_vector: int  # memories with no vector at all

    @property
    def model_changed(self) -> bool:
        return self.stored_model != self.model or self.stored_dim != self.dim

    def to_embed(self, *, force: bool = False) -> int:
        """How many memories a run embeds: all of them when the model changed (or `force`), else those without one."""
        return self.memories if force or self.model_changed else self.without_vector


async def reembed_plan(store: Store, embedder: Embedder, model: str) -> ReembedPlan:
    stored_dim = await store.get_meta("embedding_dim")
    row = await store.pool.fetchrow(
        "SELECT count(*) AS memories, count(*) FILTER (WHERE embedding IS NULL) AS without_vector FROM memory_units"
    )
    assert row is not None  # an aggregate always has its row
    return ReembedPlan(
        stored_model=await store.get_meta("embedding_model"),
        stored_dim=int(stored_dim) if stored_dim and stored_dim.isdigit() else None,
        model=model,
        dim=embedder.dim,
        memories=int(row["memories"]),
        without_vector=int(row["without_vector"]),
    )


Progress = Callable[[int], None]


async def reembed_store(
    store: Store,
    embedder: Embedder,
    model: str,
    *,
    batch_size: int = 256,
    only_missing: bool = False,
    progress: Progress | None = None,
) -> int:
    """Re-embed every memory of every bank; returns how many. Records the model and dimension in store_meta.

    `only_missing`: embed only the memories that have no vector, when the store's vectors are already the
    configured model's (`reembed_plan`); refused when they are not. `progress` is told how many memories each
    batch embedded."""
    dim = embedder.dim
    pool = store.pool
    if only_missing:
        plan = await reembed_plan(store, embedder, model)
        if plan.model_changed:
            raise InvalidInputError(
                f"only_missing needs a store embedded with {model} ({dim}); it has {plan.stored_model}"
            )
        return await _reembed_rows(pool, embedder, dim, batch_size, every=False, progress=progress)
    # Every vector changes: the index is dropped and built once at the end (faster than updating the graph row
    # by row, and a clean graph rather than one full of dead versions).
    async with index_down(pool, memory_cap=store.index_memory_cap):
        done = await _reembed_rows(pool, embedder, dim, batch_size, every=True, progress=progress)
    async with pool.acquire() as conn, conn.transaction():
        await store.set_meta("embedding_model", model, conn)
        await store.set_meta("embedding_dim", str(dim), conn)
    return done


async def _reembed_rows(
    pool: asyncpg.Pool, embedder: Embedder, dim: int, batch_size: int, *, every: bool, progress: Progress | None
) -> int:
    async with pool.acquire() as conn, conn.transaction():
        stored_dim = await conn.fetchval("SELECT value FROM store_meta WHERE key = 'embedding_dim'")
        if stored_dim != str(dim):
            await conn.execute(f"ALTER TABLE memory_units ALTER COLUMN embedding TYPE vector({int(dim)}) USING NULL")

    def embed(rows: list[asyncpg.Record]) -> asyncio.Future[np.ndarray]:
        return asyncio.ensure_future(
            embedder.embed([embedding_text(r["text"], r["previous"], chunk=r["turn_parts"] is not None) for r in rows])
        )

    # The next batch embeds while this one is written (as retain does): the model, not the database, sets the pace.
    done = 0
    rows = await pool.fetch(UNITS_TO_REEMBED, 0, batch_size, every)
    embedding = embed(rows) if rows else None
    while rows:
        assert embedding is not None
        vectors = await embedding
        following = await pool.fetch(UNITS_TO_REEMBED, rows[-1]["seq"], batch_size, every)
        embedding = embed(following) if following else None
        try:
            await pool.executemany(
                "UPDATE memory_units SET embedding = $3 WHERE bank_id = $1 AND id = $2",
                [(r["bank_id"], r["id"], v) for r, v in zip(rows, vectors, strict=True)],
            )
        except BaseException:
            if embedding is not None:
                embedding.cancel()
            raise
        done += len(rows)
        if progress is not None:
            progress(len(rows))
        rows = following
    return done
