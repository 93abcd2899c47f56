"""`python -m bench --scale`: one big bank and many small banks on one database (bench/README.md, *Scale*).

    python -m bench --scale --big 1000000 --banks 10000 --time-budget 90

The database lives in a cached home (~/.cache/memwrap-bench/scale-home) and grows between runs: a run imports
what is missing (`Memory.import_memories`, vectors from the cached corpus: bench/scale_corpus.py), as far as its
time budget allows, then measures at the size reached. Build time is summed over runs (build_log.json).

Measured: recall p50/p95/p99 of the big bank (query embedding included); a small bank among the others against a
lone bank with the same 100 memories in a database of its own (alternating calls, same queries); the semantic
arm's recall@20 against an exact scan, in small banks and the big bank; retain_many throughput into the big
bank; disk bytes per memory (tables and every index); python RSS and postgres PSS.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import statistics
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from bench.latency import QueryPool, percentile_stats, postgres_pss_mb, process_rss_mb
from bench.scale_corpus import Corpus, cache_root
from bench.synthetic import iter_turns

BIG = "scale-big"
SMALL = "scale-small-{:05d}"
LONE = "scale-lone"
BANK_SIZE = 100
IMPORT_CHUNK = 10_000
MEMORY_TABLES = ("memory_units", "unit_entities", "entities", "entity_aliases", "memory_links", "retained_items")


@dataclass
class ScaleConfig:
    big: int = 1_000_000
    banks: int = 10_000
    home: Path = field(default_factory=lambda: cache_root() / "scale-home")
    out: Path = Path(__file__).resolve().parent / "results"
    time_budget_s: float = 90 * 60
    queries: int = 50
    repetitions: int = 3
    recall_probes: int = 40


# --- the corpus as rows -----------------------------------------------------------------------------------------


class Vectors:
    """Vectors of the corpus: the cached real embeddings where they exist; past them, mixtures of two real ones
    plus a little noise (deterministic), because this machine embedded only ~19 texts/s under its load."""

    def __init__(self, corpus: Corpus) -> None:
        self.corpus = corpus
        self.real = corpus.available()
        if self.real == 0:
            raise SystemExit("no cached corpus vectors: run `python -m bench.scale_corpus --count 20000` first")
        self.base = corpus.vectors(0, self.real)

    def mixed(self, seed: int, count: int) -> np.ndarray:
        rng = np.random.default_rng(seed)
        a = self.base[rng.integers(0, self.real, count)]
        b = self.base[rng.integers(0, self.real, count)]
        v = 0.75 * a + 0.25 * b + rng.normal(0, 0.015, a.shape).astype(np.float32)
        return v / np.linalg.norm(v, axis=1, keepdims=True)

    def rows(self, start: int, count: int) -> np.ndarray:
        """Vectors of big-bank rows [start, start + count)."""
        real_end = min(start + count, self.real)
        parts = [self.base[start:real_end]] if start < self.real else []
        if start + count > self.real:
            first = max(start, self.real)
            parts.append(self.mixed(first, start + count - first))
        return np.concatenate(parts) if len(parts) > 1 else parts[0]


def _memories(turns: list[Any], vectors: np.ndarray) -> Iterator[Any]:
    from memwrap.engine.transfer.memories_jsonl import ImportedMemory

    for turn, vector in zip(turns, vectors, strict=True):
        yield ImportedMemory.model_construct(
            text=turn.content,
            mentioned_at=turn.timestamp,
            document_id=turn.document_id,
            metadata={"speaker": turn.speaker},
            embedding=vector,
            id=None,
            type="raw",
            occurred_start=None,
            occurred_end=None,
            context=None,
            tags=[],
        )


def small_bank_rows(vectors: Vectors, index: int) -> Iterator[Any]:
    turns = list(iter_turns(BANK_SIZE, seed=10_000 + index))
    return _memories(turns, vectors.mixed(5_000_000 + index, BANK_SIZE))


# --- the run ----------------------------------------------------------------------------------------------------


class ScaleRun:
    def __init__(self, config: ScaleConfig, log: Any = print) -> None:
        from memwrap import Memory
        from memwrap.config import load_settings

        self.config = config
        self.log = log
        self.deadline = time.monotonic() + config.time_budget_s
        self.memory = Memory(settings=load_settings(home=config.home, worker="off"))
        self.engine = self.memory._run(self.memory.aio._get_engine())
        self.vectors = Vectors(Corpus.for_model(self.engine.embedder.model_name, self.engine.embedder.backend))
        self.build_log_path = config.home / "build_log.json"
        self.build_log: dict[str, float] = (
            json.loads(self.build_log_path.read_text()) if self.build_log_path.exists() else {}
        )
        self.now = datetime(2026, 1, 1, tzinfo=UTC)

    def sql(self, query: str, *args: Any) -> Any:
        return self.memory._run(self.engine.store.pool.fetchval(query, *args))

    def _note_build(self, key: str, seconds: float) -> None:
        # Re-read: a build of the other part may run side by side and write its own key.
        if self.build_log_path.exists():
            self.build_log = json.loads(self.build_log_path.read_text())
        self.build_log[key] = self.build_log.get(key, 0.0) + seconds
        self.build_log_path.write_text(json.dumps(self.build_log, indent=1))

    def index_down(self) -> Any:
        """The vector index dropped while the build runs and built once after it, as
        `import_memories(..., rebuild_vector_index=True)` does for one call (memwrap/store/vector_index.py)."""
        from contextlib import contextmanager

        from memwrap.store.vector_index import index_down

        @contextmanager
        def down() -> Iterator[None]:
            manager = index_down(self.engine.store.pool, memory_cap=self.engine.store.index_memory_cap)
            self.memory._run(manager.__aenter__())
            failed = True
            try:
                yield
                failed = False
            finally:
                t0 = time.perf_counter()
                self.memory._run(manager.__aexit__(None, None, None))
                self._note_build("index_s", time.perf_counter() - t0)
                self.log(
                    f"[scale] vector index built in {time.perf_counter() - t0:.0f} s"
                    + (" (after a failed build)" if failed else "")
                )

        return down()

    def missing(self) -> bool:
        """Whether the database is smaller than the configured sizes (a build would add to it)."""
        small = int(self.sql("SELECT count(*) FROM banks WHERE bank_id LIKE 'scale-small-%'"))
        return small < self.config.banks or self.size_of(BIG) < self.config.big

    def size_of(self, bank: str) -> int:
        return int(self.sql("SELECT coalesce(max(memory_count), 0) FROM banks WHERE bank_id = $1", bank))

    def build_big(self, reserve_s: float) -> dict[str, Any]:
        have = self.size_of(BIG)
        start = time.perf_counter()
        rates = []
        while have < self.config.big and time.monotonic() < self.deadline - reserve_s:
            count = min(IMPORT_CHUNK, self.config.big - have)
            turns = list(iter_turns_range(have, count))
            t0 = time.perf_counter()
            added = self.memory.import_memories(BIG, _memories(turns, self.vectors.rows(have, count)))
            rates.append(added / (time.perf_counter() - t0))
            have += count
            self.log(f"[scale] big bank {have:,} ({rates[-1]:.0f} memories/s)")
        self._note_build("big_s", time.perf_counter() - start)
        return {"size": self.size_of(BIG), "import_per_s_last": round(rates[-1], 1) if rates else None}

    def build_small(self, reserve_s: float) -> dict[str, Any]:
        have = int(self.sql("SELECT count(*) FROM banks WHERE bank_id LIKE 'scale-small-%'"))
        start = time.perf_counter()
        while have < self.config.banks and time.monotonic() < self.deadline - reserve_s:
            self.memory.import_memories(SMALL.format(have), small_bank_rows(self.vectors, have))
            have += 1
            if have % 250 == 0:
                self.log(f"[scale] small banks {have:,}")
        self._note_build("small_s", time.perf_counter() - start)
        return {"banks": have}

    def lone_memory(self) -> Any:
        """A database of its own on the same server, holding one bank with small bank 0's memories."""
        import asyncpg

        from memwrap import Memory
        from memwrap.config import load_settings

        url = self.engine.store.url
        base, _, query = url.partition("?")
        lone_url = base.rsplit("/", 1)[0] + "/memwrap_scale_lone" + (f"?{query}" if query else "")

        async def create() -> None:
            conn = await asyncpg.connect(url)
            try:
                if not await conn.fetchval("SELECT 1 FROM pg_database WHERE datname = 'memwrap_scale_lone'"):
                    await conn.execute("CREATE DATABASE memwrap_scale_lone")
            finally:
                await conn.close()

        self.memory._run(create())
        lone = Memory(settings=load_settings(home=self.config.home, database_url=lone_url, worker="off"))
        lone.import_memories(LONE, small_bank_rows(self.vectors, 0))
        return lone

    # --- measurements -----------------------------------------------------------------------------------------

    def time_recall(self, memory: Any, bank: str, queries: list[str]) -> list[float]:
        samples = []
        for query in queries:
            t0 = time.perf_counter()
            memory.recall(bank, query, token_budget=1024, now=self.now)
            samples.append((time.perf_counter() - t0) * 1000)
        return samples

    def big_latency(self, pool: QueryPool) -> dict[str, Any]:
        self.time_recall(self.memory, BIG, pool.take(10))
        reps = [
            self.time_recall(self.memory, BIG, pool.take(self.config.queries)) for _ in range(self.config.repetitions)
        ]
        return {"recall_ms": percentile_stats(reps)}

    def small_vs_lone(self, pool: QueryPool, lone: Any, banks: int) -> dict[str, Any]:
        rng = random.Random(5)
        small: list[float] = []
        alone: list[float] = []
        for query in pool.take(10):  # warm-up of both
            self.time_recall(self.memory, SMALL.format(rng.randrange(banks)), [query])
            self.time_recall(lone, LONE, [query])
        for i, query in enumerate(pool.take(self.config.queries * self.config.repetitions)):
            bank = SMALL.format(rng.randrange(banks))
            pair = [(self.memory, bank, small), (lone, LONE, alone)]
            for memory, name, into in pair if i % 2 else pair[::-1]:
                into += self.time_recall(memory, name, [query])
        s, a = percentile_stats([small]), percentile_stats([alone])
        assert s and a
        return {
            "small_among_banks_ms": s,
            "lone_bank_ms": a,
            "ratio_p50": round(s["p50"] / a["p50"], 2),
            "ratio_p95": round(s["p95"] / a["p95"], 2),
        }

    def semantic_recall(
        self, pool: QueryPool, bank: str, bank_size: int, *, ef_search: int | None = None
    ) -> dict[str, float]:
        """The semantic arm's top 20 against an exact scan of the bank, averaged over queries: the share of the
        exact 20 found, and the share of the arm's 20 no farther than the exact 20th plus 0.01 in cosine distance
        (the scale bench's mixture vectors come in tight clusters, where many memories are all but tied)."""
        from memwrap.engine.recall import arms
        from memwrap.engine.recall.arms import Filters

        queries = pool.take(self.config.recall_probes if bank != BIG else 25)
        vectors = self.engine.embedder.encode(queries)

        async def one(vector: np.ndarray) -> tuple[float, float]:
            async with self.engine.store.pool.acquire() as conn, conn.transaction():
                if ef_search:
                    await conn.execute(f"SET LOCAL hnsw.ef_search = {int(ef_search)}")
                # As recall runs the arm (its arm_limit of candidates, by exact distance), then its first 20.
                got = (await arms.semantic(conn, Filters(bank), vector, self.memory.settings.arm_limit, bank_size))[:20]
                exact = await conn.fetch(
                    "SELECT id, embedding <=> $2 AS dist FROM memory_units WHERE bank_id = $1 "
                    "AND invalidated_at IS NULL ORDER BY (embedding <=> $2) + 0 LIMIT 20",
                    bank,
                    vector,
                )
            found = len({i for i, _ in got} & {r["id"] for r in exact}) / max(1, len(exact))
            cut = exact[-1]["dist"] + 0.01 if exact else 0.0
            near = sum(1 for _, score in got if 1 - score <= cut) / max(1, len(exact))
            return found, near

        results = [self.memory._run(one(v)) for v in vectors]
        return {
            "recall_at_20": round(statistics.fmean(r[0] for r in results), 4),
            "within_0.01_of_exact_20th": round(statistics.fmean(r[1] for r in results), 4),
        }

    def disk(self) -> dict[str, Any]:
        rows = int(self.sql("SELECT count(*) FROM memory_units"))
        tables = {t: int(self.sql("SELECT pg_total_relation_size($1::regclass)", t)) for t in MEMORY_TABLES}
        units_heap = int(self.sql("SELECT pg_table_size('memory_units')"))
        indexes = {
            r["name"]: int(r["size"])
            for r in self.memory._run(
                self.engine.store.pool.fetch(
                    "SELECT indexrelid::regclass::text AS name, pg_relation_size(indexrelid) AS size FROM pg_index "
                    "WHERE indrelid = 'memory_units'::regclass ORDER BY 2 DESC"
                )
            )
        }
        total = sum(tables.values())
        return {
            "memory_units_rows": rows,
            "bytes_per_memory": round(total / rows) if rows else None,
            "memory_units_heap_per_memory": round(units_heap / rows) if rows else None,
            "tables_bytes": tables,
            "memory_units_index_bytes": indexes,
            "database_bytes": int(self.sql("SELECT pg_database_size(current_database())")),
        }

    def retain_throughput(self) -> dict[str, Any]:
        from memwrap import RetainItem

        turns = list(iter_turns(200, seed=424242 + int(time.time()) % 100_000))
        items = [RetainItem(content=t.content, timestamp=t.timestamp, document_id="R" + t.document_id) for t in turns]
        t0 = time.perf_counter()
        self.memory.retain_many(BIG, items)
        return {"items": len(items), "items_per_s": round(len(items) / (time.perf_counter() - t0), 1)}


def iter_turns_range(start: int, count: int) -> Iterator[Any]:
    """Turns [start, start + count) of the big bank's stream, without regenerating the ones before (a stream per
    block of 10,000 turns, seeded by the block)."""
    block = start // IMPORT_CHUNK
    offset = start % IMPORT_CHUNK
    produced = 0
    while produced < count:
        take = min(IMPORT_CHUNK - offset, count - produced)
        for turn in list(iter_turns(IMPORT_CHUNK, seed=7 + block * 7919))[offset : offset + take]:
            yield _renamed(turn, block)
        produced += take
        block += 1
        offset = 0


def _renamed(turn: Any, block: int) -> Any:
    from dataclasses import replace

    return replace(turn, document_id=f"B{block}-{turn.document_id}")


def build_only(config: ScaleConfig, part: str, log: Any = print) -> None:
    """Grow one part of the cached database until the time budget ends (two parts may grow side by side)."""
    run = ScaleRun(config, log)
    try:
        with run.index_down() if run.missing() else contextlib.nullcontext():
            if part in ("small", "both"):
                run.build_small(reserve_s=0)
            if part in ("big", "both"):
                run.build_big(reserve_s=0)
    finally:
        run.memory.close()


PG_DEFAULTS = {
    "shared_buffers": "128MB",
    "effective_cache_size": "4GB",
    "work_mem": "4MB",
    "maintenance_work_mem": "64MB",
}


def with_pg_defaults(config: ScaleConfig, log: Any = print) -> dict[str, Any]:
    """The big bank's recall with PostgreSQL's default memory settings (ALTER SYSTEM, a restart, then RESET):
    the same data and the same machine as the tuned run, so the difference is the settings'."""
    from memwrap.store.embedded_pg import stop_embedded_server

    def restart(run: ScaleRun, statements: list[str]) -> None:
        for statement in statements:
            run.sql(statement)
        run.memory.close()
        stop_embedded_server(run.memory.settings.pgdata)

    run = ScaleRun(config, log)
    restart(run, [f"ALTER SYSTEM SET {k} = '{v}'" for k, v in PG_DEFAULTS.items()])
    run = ScaleRun(config, log)
    try:
        settings = {k: run.sql(f"SHOW {k}") for k in PG_DEFAULTS}
        result = {"pg_settings": settings, "size": run.size_of(BIG), **run.big_latency(QueryPool(seed=901))}
    finally:
        restart(run, [f"ALTER SYSTEM RESET {k}" for k in PG_DEFAULTS])
    log(json.dumps(result, indent=1))
    config.out.mkdir(parents=True, exist_ok=True)
    (config.out / "scale_pg_defaults.json").write_text(json.dumps(result, indent=1))
    return result


def run_scale(config: ScaleConfig, log: Any = print) -> dict[str, Any]:
    started = time.perf_counter()
    run = ScaleRun(config, log)
    results: dict[str, Any] = {
        "started": datetime.now(UTC).isoformat(timespec="seconds"),
        "loadavg_start": os.getloadavg(),
        "config": {"big": config.big, "banks": config.banks, "home": str(config.home)},
        "corpus": {"real_vectors": run.vectors.real, "folder": str(run.vectors.corpus.folder)},
        "pg_settings": {
            k: run.sql(f"SHOW {k}")
            for k in ("shared_buffers", "effective_cache_size", "work_mem", "maintenance_work_mem")
        },
    }
    measure_s = 8 * 60
    share = max(0.0, config.time_budget_s - measure_s)
    with run.index_down() if run.missing() else contextlib.nullcontext():
        results["small_build"] = run.build_small(reserve_s=measure_s + share / 2)
        results["big_build"] = run.build_big(reserve_s=measure_s)
    results["build_seconds_total"] = {k: round(v, 1) for k, v in run.build_log.items()}
    pool = QueryPool(seed=int(time.time()) % 1000)
    banks = results["small_build"]["banks"]
    log("[scale] measuring")
    lone = run.lone_memory()
    try:
        if banks:
            results["small_vs_lone"] = run.small_vs_lone(pool, lone, banks)
            results["semantic_recall_at_20_small"] = run.semantic_recall(pool, SMALL.format(banks // 2), BANK_SIZE)
        big = run.size_of(BIG)
        if big:
            results["big_bank"] = {"size": big, **run.big_latency(pool)}
            results["big_bank"]["semantic_recall_at_20"] = {
                f"ef_search={ef}": run.semantic_recall(pool, BIG, big, ef_search=ef) for ef in (40, 100, 200, 400)
            }
            results["big_bank"]["retain_many"] = run.retain_throughput()
        results["disk"] = run.disk()
        results["python_rss_mb"] = process_rss_mb()
        results["postgres_pss_mb"] = postgres_pss_mb(run.memory.settings.pgdata)
    finally:
        lone.close()
        run.memory.close()
    results["seconds"] = round(time.perf_counter() - started, 1)
    results["loadavg_end"] = os.getloadavg()
    config.out.mkdir(parents=True, exist_ok=True)
    (config.out / "scale.json").write_text(json.dumps(results, indent=1, default=str))
    log(json.dumps(results, indent=1, default=str))
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench --scale", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--scale", action="store_true")
    parser.add_argument("--big", type=int, default=1_000_000, help="memories in the big bank")
    parser.add_argument("--banks", type=int, default=10_000, help="small banks of 100 memories")
    parser.add_argument("--home", type=Path, default=None, help="the cached database's home")
    parser.add_argument("--time-budget", type=float, default=90, help="minutes (build stops in time to measure)")
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument(
        "--build-only",
        choices=("small", "big", "both"),
        default=None,
        help="only grow this part (or both: small banks first) for the time budget, no measuring",
    )
    parser.add_argument(
        "--pg-defaults",
        action="store_true",
        help="only the big bank's recall, with PostgreSQL's default memory settings (a comparison)",
    )
    args = parser.parse_args(argv)
    config = ScaleConfig(big=args.big, banks=args.banks, time_budget_s=args.time_budget * 60, queries=args.queries)
    if args.home:
        config.home = args.home
    if args.pg_defaults:
        with_pg_defaults(config, log=lambda m: print(m, flush=True))
    elif args.build_only:
        build_only(config, args.build_only, log=lambda m: print(m, flush=True))
    else:
        run_scale(config, log=lambda m: print(m, flush=True))
    return 0
