"""The vector index is in half precision: the queries of big banks are answered by it, and still come back
ordered by the exact distance; it is built again where it is missing."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from memwrap import Memory
from memwrap.engine.recall import arms
from memwrap.engine.recall.arms import Filters
from memwrap.store.vector_index import VECTOR_INDEX, indexed_distance, vector_dim

WHEN = datetime(2026, 5, 1, tzinfo=UTC)
TOPICS = [
    "cello lessons with João",
    "a sourdough starter named Bubbles",
    "the marathon in Porto",
    "tax forms due",
    "a cat that hates the vacuum",
    "learning Rust on weekends",
    "the roof leak in March",
    "Grandma's 90th",
]


def test_big_banks_use_the_half_precision_index_and_sort_by_the_exact_distance(tmp_path: Path) -> None:
    with Memory(home=tmp_path) as memory:
        memory.retain_many(
            "big", [{"content": f"Note {i}: {TOPICS[i % len(TOPICS)]} ({i}).", "timestamp": WHEN} for i in range(240)]
        )
        engine = memory._run(memory.aio._get_engine())
        pool = engine.store.pool
        vector = engine.embedder.encode(["How are the cello lessons going?"])[0]

        async def check() -> tuple[str, list, list, list]:
            async with pool.acquire() as conn, conn.transaction():
                dim = await vector_dim(conn)
                indexdef = await conn.fetchval("SELECT indexdef FROM pg_indexes WHERE indexname = $1", VECTOR_INDEX)
                for setting in ("enable_seqscan", "enable_bitmapscan", "enable_sort"):  # a tiny table: show the index
                    await conn.execute(f"SET LOCAL {setting} = off")
                plan = "\n".join(
                    r[0]
                    for r in await conn.fetch(
                        f"EXPLAIN SELECT id FROM memory_units WHERE bank_id = $1 "
                        f"ORDER BY {indexed_distance('embedding', '$2', dim)} LIMIT 10",
                        "big",
                        vector,
                    )
                )
                assert dim == len(vector) and "halfvec" in indexdef
                indexed = await arms.semantic(conn, Filters("big"), vector, 20, 10**6)  # as if past the exact size
                exact = await arms.semantic(conn, Filters("big"), vector, 20, 240)
                seeds = await arms.graph(conn, Filters("big"), vector, [], 20, 10**6)
            return plan, indexed, exact, seeds

        plan, indexed, exact, seeds = memory._run(check())
        assert VECTOR_INDEX in plan
        scores = [s for _, s in indexed]
        assert scores == sorted(scores, reverse=True)  # re-sorted by the exact distance
        assert [i for i, _ in indexed[:5]] == [i for i, _ in exact[:5]]
        assert np.allclose(scores[:5], [s for _, s in exact[:5]], atol=1e-6)  # exact scores, not half precision
        assert seeds and seeds[0][0] in {i for i, _ in exact[:5]}
