"""Recall and list with filters on a big bank: what a filter costs, with an index behind it and without.

    python -m bench.filters                      # 100,000 memories (built once, cached), 40 queries x 3
    python -m bench.filters --size 20000 --queries 20

The bank lives in a cached home (~/.cache/memwrap-bench/filters-home) and is grown to --size on the first run
(`import_memories`, the bulk path; vectors as in the scale bench: the real embeddings of the cached corpus, then
mixtures of two real ones — bench/scale.py). Every memory carries metadata a product would: a project (one of
three), a customer (one of 1,000), a priority 0-4 and, on one memory in a hundred, an `archived_at` key.

Each filter is timed on recall (token_budget 1024, query embedding included) and on list (a page of 50) with
distinct questions, against no filter on the same questions. Before timing, every memory a filtered recall
returns is checked against the filter (a wrong answer would make a fast one meaningless).

Filters and what serves them (memwrap/engine/recall/filters.py): equality and `in` are jsonb containment (the
GIN index on metadata); mentioned_at ranges use (bank_id, mentioned_at); comparisons (`gte`) and `exists` have no
index: they refine what the rest of the query selected.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench.latency import QueryPool, percentile_stats
from bench.scale import Vectors, iter_turns_range
from bench.scale_corpus import Corpus, build, cache_root

BANK = "filters-big"
CHUNK = 10_000
PROJECTS = ("apollo", "gemini", "mercury")
NOW = datetime(2026, 12, 1, tzinfo=UTC)


def metadata_of(index: int) -> dict[str, Any]:
    """Deterministic per row, so a check can recompute what a row holds."""
    meta: dict[str, Any] = {
        "project": PROJECTS[index % 3],
        "customer": f"c-{(index * 7919) % 1000:04d}",
        "priority": (index * 31) % 5,
    }
    if index % 100 == 0:
        meta["archived_at"] = "2026-06-01"
    return meta


FILTERS: dict[str, dict[str, Any]] = {
    "none": {},
    "project = apollo (GIN, 1/3 of the bank)": {"metadata": {"project": "apollo"}},
    "customer = c-0042 (GIN, 1/1000)": {"metadata": {"customer": "c-0042"}},
    "project in (apollo, gemini) (GIN)": {"metadata": {"project": {"in": ["apollo", "gemini"]}}},
    "priority >= 4 (no index, 1/5)": {"metadata": {"priority": {"gte": 4}}},
    "archived_at exists (no index, 1/100)": {"metadata": {"archived_at": {"exists": True}}},
    "said in the last 30 days (btree)": {"mentioned_after": (NOW - timedelta(days=30)).isoformat()},
    "project = apollo and priority >= 3 and not archived": {
        "metadata": {
            "and": [{"project": "apollo"}, {"priority": {"gte": 3}}, {"not": {"archived_at": {"exists": True}}}]
        }
    },
}


def holds(meta: dict[str, Any], mentioned_at: datetime, name: str) -> bool:
    """Whether a returned memory satisfies the filter (recomputed in Python, independently of the SQL)."""
    checks = {
        "none": True,
        "project = apollo (GIN, 1/3 of the bank)": meta.get("project") == "apollo",
        "customer = c-0042 (GIN, 1/1000)": meta.get("customer") == "c-0042",
        "project in (apollo, gemini) (GIN)": meta.get("project") in ("apollo", "gemini"),
        "priority >= 4 (no index, 1/5)": meta.get("priority", -1) >= 4,
        "archived_at exists (no index, 1/100)": "archived_at" in meta,
        "said in the last 30 days (btree)": mentioned_at >= NOW - timedelta(days=30),
        "project = apollo and priority >= 3 and not archived": meta.get("project") == "apollo"
        and meta.get("priority", -1) >= 3
        and "archived_at" not in meta,
    }
    return bool(checks[name])


def rows(vectors: Vectors, start: int, count: int) -> Iterator[Any]:
    from memwrap.engine.transfer.memories_jsonl import ImportedMemory

    turns = list(iter_turns_range(start, count))
    # Scattered over the two years before NOW (deterministically), so "the last 30 days" is a real slice (~4%).
    span = int(timedelta(days=730).total_seconds())
    for offset, (turn, vector) in enumerate(zip(turns, vectors.rows(start, count), strict=True)):
        index = start + offset
        said = NOW - timedelta(seconds=(index * 7_654_321) % span)
        yield ImportedMemory.model_construct(
            text=turn.content,
            mentioned_at=said,
            document_id=turn.document_id,
            metadata=metadata_of(index),
            embedding=vector,
            id=None,
            type="raw",
            occurred_start=None,
            occurred_end=None,
            context=None,
            tags=[],
        )


def grow(memory: Any, vectors: Vectors, size: int, log: Any) -> float:
    """Import the rows the bank is missing; returns the seconds it took."""
    have = next((b.memories for b in memory.banks() if b.bank_id == BANK), 0)
    started = time.perf_counter()
    for start in range(have, size, CHUNK):
        count = min(CHUNK, size - start)
        memory.import_memories(BANK, rows(vectors, start, count))
        log(f"  {start + count:,} memories ({(start + count - have) / (time.perf_counter() - started):.0f}/s)")
    return time.perf_counter() - started


def check(memory: Any, queries: list[str]) -> dict[str, int]:
    """Every memory a filtered recall or list returns satisfies its filter; returns how many were checked."""
    checked: dict[str, int] = {}
    for name, where in FILTERS.items():
        found = [
            m
            for q in queries
            for m in memory.recall(BANK, q, token_budget=1024, filters=where or None, now=NOW).memories
        ]
        found += memory.list(BANK, limit=50, filters=where or None)
        wrong = [m.id for m in found if not holds(m.metadata, m.mentioned_at, name)]
        if wrong:
            raise SystemExit(f"filter {name!r} returned {len(wrong)} memories that do not match it: {wrong[:3]}")
        checked[name] = len(found)
    return checked


def timed(call: Any) -> float:
    started = time.perf_counter()
    call()
    return (time.perf_counter() - started) * 1000


def measure(memory: Any, pool: QueryPool, queries: int, repetitions: int) -> dict[str, Any]:
    results: dict[str, Any] = {}
    for name, where in FILTERS.items():
        recall_reps, list_reps = [], []
        for _ in range(repetitions):
            recall_reps.append(
                [
                    timed(
                        lambda q=q, where=where: memory.recall(
                            BANK, q, token_budget=1024, filters=where or None, now=NOW
                        )
                    )
                    for q in pool.take(queries)
                ]
            )
            # Pages spread through the bank: a filter that keeps few rows must look further for a page.
            list_reps.append(
                [
                    timed(lambda o=o, where=where: memory.list(BANK, limit=50, offset=o, filters=where or None))
                    for o in range(0, queries * 50, 50)
                ]
            )
        results[name] = {"recall_ms": percentile_stats(recall_reps), "list_ms": percentile_stats(list_reps)}
    return results


def main(argv: list[str] | None = None) -> int:
    from memwrap import Memory
    from memwrap.config import load_settings

    parser = argparse.ArgumentParser(prog="python -m bench.filters", description=__doc__.split("\n")[0])
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=40)
    parser.add_argument("--repetitions", type=int, default=3)
    parser.add_argument("--real-vectors", type=int, default=5_000, help="texts embedded for real (cached)")
    parser.add_argument("--home", type=Path, default=cache_root() / "filters-home")
    parser.add_argument("--json", type=Path, help="also write the result here")
    args = parser.parse_args(argv)
    log = print
    memory = Memory(settings=load_settings(home=args.home, worker="off"))
    try:
        engine = memory._run(memory.aio._get_engine())  # the bench owns this memory
        corpus = Corpus.for_model(engine.embedder.model_name, engine.embedder.backend)
        if corpus.available() < args.real_vectors:
            log(f"embedding {args.real_vectors:,} corpus texts (cached for later runs)")
            build(args.real_vectors, model=engine.embedder.model_name, backend=engine.embedder.backend, log=log)
        log(f"growing {BANK} to {args.size:,} memories")
        build_s = grow(memory, Vectors(corpus), args.size, log)
        size = next(b.memories for b in memory.banks() if b.bank_id == BANK)
        pool = QueryPool(seed=23)
        checked = check(memory, pool.take(10))
        for q in pool.take(10):  # warm the caches and the model
            memory.recall(BANK, q, token_budget=1024, now=NOW)
        results = measure(memory, pool, args.queries, args.repetitions)
    finally:
        memory.close()
    print(
        f"\n{size:,} memories (built in {build_s:.0f} s this run); p50 / p95 ms, median of {args.repetitions} "
        f"repetitions of {args.queries} queries; memories checked against their filter: {sum(checked.values())}"
    )
    print(f"{'filter':56} {'recall p50':>10} {'p95':>7} {'list p50':>9} {'p95':>7}")
    for name, r in results.items():
        rec, lst = r["recall_ms"], r["list_ms"]
        print(f"{name:56} {rec['p50']:10.1f} {rec['p95']:7.1f} {lst['p50']:9.1f} {lst['p95']:7.1f}")
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "size": size,
                    "build_s": build_s,
                    "checked": checked,
                    "results": results,
                    "queries": args.queries,
                    "repetitions": args.repetitions,
                },
                indent=2,
            )
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
