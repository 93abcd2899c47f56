"""A home for interleaved A/B timing of recall (issue 36): built once, measured many times.

    .venv/bin/python -m bench.long_session.ab_home build --home /tmp/DIR [--others 50] [--sizes 2000,10000]
    .venv/bin/python -m bench.long_session.ab_home measure --home /tmp/DIR [--rounds 6] [--per-round 10] [--load 2]
    .venv/bin/python -m bench.long_session.ab_home relayout --home /tmp/DIR --layout toasted|whole

`build` lays out what bench/long_session/latency.py times (50 other banks of 500 memories of long technical
messages, bulk-imported with vectors near real ones; one target bank per size, its last messages retained through
`retain_many`) and leaves the home on disk. `measure` reopens it and, per round, first retains a few new messages
into each target (so recall runs right after a retain, statistics behind), then asks fresh questions, each once
under both variants in turn (before, after, before, after, ...: `variant`), so both see the same load and the same
database state; per step the p50/p95 of `Recall.timings_ms` and the wall time.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from bench.long_session.latency import QueryPool, _messages, _take, busy_load, import_rows

OTHER_SIZE = 500
VARIANTS = ("before", "after")


def _open(home: Path) -> Any:
    from memwrap import Memory
    from memwrap.config import load_settings

    return Memory(settings=load_settings(home=home, worker="off"))


def _vector_pool(memory: Any) -> np.ndarray:
    from bench.long_session.generator import generate_bank
    from bench.long_session.latency import chunk_texts
    from memwrap.engine.embed.embedder import shared_embedder

    embedder = shared_embedder(memory.settings.embedding_model)
    texts = [t for m in generate_bank(77, 20_000).messages for t in chunk_texts(m)]
    return np.asarray(embedder.encode(texts), dtype=np.float32)


def build(args: argparse.Namespace) -> None:
    from memwrap import RetainItem

    memory = _open(args.home)
    pool = _vector_pool(memory)
    t0 = time.perf_counter()
    for i in range(args.others):
        _, rows = _take(_messages(2000 + 13 * i), OTHER_SIZE)
        import_rows(memory, f"other-{i:02d}", rows, pool, 70_000 + i)
    print(f"{args.others} other banks in {time.perf_counter() - t0:.0f}s", flush=True)
    for size in args.sizes:
        stream = _messages(5000 + size)
        messages, rows = _take(stream, size)
        tail = messages[-args.tail :]
        tail_ids = {m.id for m in tail}
        import_rows(memory, f"target-{size}", [r for r in rows if r["document_id"] not in tail_ids], pool, size)
        items = [RetainItem(content=m.content, timestamp=m.timestamp, document_id=m.id) for m in tail]
        for i in range(0, len(items), 50):
            memory.retain_many(f"target-{size}", items[i : i + 50])
        print(f"target-{size} built ({time.perf_counter() - t0:.0f}s)", flush=True)
    memory.close()


def relayout(args: argparse.Namespace) -> None:
    """Rewrite a home's memories in the layout before schema v24 ("toasted": embeddings of rows past 2 kB moved out
    of line) or after it ("whole"), and say how the table and its TOAST relation then measure."""
    memory = _open(args.home)
    engine = memory._run(memory.aio._get_engine())

    async def run() -> dict[str, Any]:
        async with engine.store.pool.acquire() as conn:
            if args.layout == "toasted":
                await conn.execute("ALTER TABLE memory_units RESET (toast_tuple_target)")
                await conn.execute("ALTER TABLE memory_units ALTER COLUMN embedding SET STORAGE DEFAULT")
            else:
                await conn.execute("ALTER TABLE memory_units SET (toast_tuple_target = 8160)")
                await conn.execute("ALTER TABLE memory_units ALTER COLUMN embedding SET STORAGE MAIN")
            await conn.execute("VACUUM FULL memory_units")
            await conn.execute("ANALYZE memory_units")
            row = await conn.fetchrow(
                "SELECT pg_relation_size(c.oid) AS heap, pg_relation_size(c.reltoastrelid) AS toast "
                "FROM pg_class c WHERE c.oid = 'memory_units'::regclass"
            )
            return {"layout": args.layout, "heap_mb": row["heap"] / 2**20, "toast_mb": row["toast"] / 2**20}

    print(json.dumps(memory._run(run())))
    memory.close()


def _stats(values: dict[str, list[float]]) -> dict[str, dict[str, float]]:
    return {
        step: {f"p{q}": round(float(np.percentile(v, q)), 2) for q in (50, 95, 99)} | {"n": len(v)}
        for step, v in sorted(values.items())
    }


@contextmanager
def variant(name: str) -> Iterator[None]:
    """The recall code as it is ("after"), or with the graph arm finding its own seeds ("before": a second scan of
    the bank's nearest memories beside the semantic arm's, as before 2026-12-07). The rows' layout (schema v24,
    embeddings kept in the row) is a property of the home, not of the code: compare two homes for it
    (`relayout`)."""
    if name == "after":
        yield
        return
    from memwrap.engine.recall.arm_runs import ArmRuns

    async def own_seeds(self: Any, *args: Any) -> None:
        return None  # the graph arm scans for its seeds itself

    saved = ArmRuns._shared_seeds
    ArmRuns._shared_seeds = own_seeds  # type: ignore[method-assign]
    try:
        yield
    finally:
        ArmRuns._shared_seeds = saved  # type: ignore[method-assign]


def _forget_query_embeddings() -> None:
    """Empty the loaded models' caches of recent questions (the second variant would find the first's vector)."""
    from memwrap.engine.embed import embedder

    for loaded in embedder._shared.values():
        with loaded._cache_lock:
            loaded._query_cache.clear()


def measure(args: argparse.Namespace) -> dict[str, Any]:
    from memwrap import RetainItem

    memory = _open(args.home)
    queries = QueryPool(seed=args.seed)
    streams = {size: _messages(7000 + size + args.seed) for size in args.sizes}
    report: dict[str, Any] = {"load_start": os.getloadavg(), "busy_loops": args.load, "sizes": {}}
    for size in args.sizes:
        bank = f"target-{size}"
        steps: dict[str, dict[str, list[float]]] = {name: defaultdict(list) for name in VARIANTS}
        for q in queries.take(3):
            memory.recall(bank, q, token_budget=1024)
        for _round in range(args.rounds):
            messages, _ = _take(streams[size], 40)
            items = [RetainItem(content=m.content, timestamp=m.timestamp, document_id=m.id) for m in messages]
            memory.retain_many(bank, items)  # recall right after a retain: statistics behind
            with busy_load(args.load):
                for i, q in enumerate(queries.take(args.per_round)):
                    # The same question under each, one after the other, which goes first alternating (the
                    # second finds the pages the first read in the cache).
                    for name in VARIANTS if i % 2 == 0 else VARIANTS[::-1]:
                        _forget_query_embeddings()  # each variant embeds the question itself
                        with variant(name):
                            t0 = time.perf_counter()
                            result = memory.recall(bank, q, token_budget=1024)
                            steps[name]["wall"].append((time.perf_counter() - t0) * 1000)
                        for step, ms in result.timings_ms.items():
                            steps[name][step].append(float(ms))
        report["sizes"][size] = {name: _stats(s) for name, s in steps.items()}
    report["load_end"] = os.getloadavg()
    memory.close()
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("action", choices=["build", "measure", "relayout"])
    parser.add_argument("--layout", choices=["toasted", "whole"], default="whole")
    parser.add_argument("--home", type=Path, required=True)
    parser.add_argument("--others", type=int, default=50)
    parser.add_argument("--sizes", default="2000,10000")
    parser.add_argument("--tail", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--per-round", type=int, default=10)
    parser.add_argument("--load", type=int, default=0)
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    args.sizes = [int(s) for s in args.sizes.split(",")]
    if args.action == "build":
        build(args)
        return
    if args.action == "relayout":
        relayout(args)
        return
    report = measure(args)
    text = json.dumps(report, indent=1)
    if args.json:
        args.json.write_text(text + "\n", encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
