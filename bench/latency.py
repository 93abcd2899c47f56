"""Latency and throughput: recall p50/p95/p99 at growing bank sizes, retain_many items/s, memory use.

One bank grows through the requested sizes (1k -> 10k -> 100k): at each size the missing turns are
retained with `retain_many` in batches (timed: items/s), then every registered latency probe runs.

Probes form a registry. The built-in ones time recall with and without query embedding, and the
embedding alone. Other parts of memwrap add theirs (wrapper overhead per chat call, mental-model read)
by registering a probe in a module under `bench/probes/` - see that package's docstring. Slots that
nobody has filled yet are reported as "not measured", never with made-up numbers.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import statistics
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
import psutil

from bench.synthetic import NAMES, QUESTIONS, TOPICS, WHEN, SyntheticTurn, generate_turns

# ------------------------------------------------------------------------------------------- registry


@dataclass
class ProbeContext:
    """What a probe gets: the memory under test, a bank of `size` memories, and a supply of fresh queries."""

    memory: Any  # memwrap.Memory
    bank_id: str
    size: int
    now: datetime
    queries: QueryPool
    repetitions: int
    warmup: int
    queries_per_rep: int
    max_tokens: int
    embedder: Any  # memwrap.engine.embed.embedder.Embedder: the baselines' own instance of memwrap's model
    extras: dict[str, Any] = field(default_factory=dict)  # probes may leave notes for later probes

    def engine(self) -> Any:
        """The engine behind the Memory (for probes that need below-the-API access)."""
        return self.memory._run(self.memory.aio._get_engine())


@dataclass
class ProbeResult:
    """Per-repetition samples in milliseconds (medians across repetitions are what gets reported)."""

    samples_ms: list[list[float]] = field(default_factory=list)
    note: str = ""
    skipped: str | None = None  # why it did not run
    derived: dict[str, float] | None = None  # percentiles computed rather than measured (see note)
    breakdown_ms: dict[str, float] = field(default_factory=dict)  # median per-stage timings, when known

    def stats(self) -> dict[str, float] | None:
        if self.derived is not None:
            return self.derived
        return percentile_stats(self.samples_ms)

    def to_json(self) -> dict[str, Any]:
        return {
            "stats_ms": self.stats(),
            "note": self.note,
            "skipped": self.skipped,
            "derived": self.derived is not None,
            "breakdown_ms": self.breakdown_ms,
            "samples": sum(len(rep) for rep in self.samples_ms),
        }


ProbeFn = Callable[[ProbeContext], ProbeResult]


@dataclass(frozen=True)
class Probe:
    name: str
    label: str
    fn: ProbeFn
    order: int = 100


PROBES: dict[str, Probe] = {}

# Probes the report names before they exist, so a missing figure shows as "not measured" rather than vanishing
# from the table; each is filled when a probe with this name is registered.
PLANNED_PROBES: dict[str, str] = {
    "wrapper_overhead": "wrapper overhead per chat call",
    "mental_model_read": "mental-model read p50",
}


def register_probe(name: str, label: str, *, order: int = 100) -> Callable[[ProbeFn], ProbeFn]:
    """Decorator: run `fn(ctx) -> ProbeResult` at every bank size. Lower `order` runs first."""

    def decorate(fn: ProbeFn) -> ProbeFn:
        PROBES[name] = Probe(name=name, label=label, fn=fn, order=order)
        return fn

    return decorate


def load_probe_modules() -> list[str]:
    """Import every module in `bench/probes/` so their `register_probe` calls run."""
    import bench.probes as package

    loaded = []
    for info in pkgutil.iter_modules(package.__path__, prefix="bench.probes."):
        importlib.import_module(info.name)
        loaded.append(info.name)
    return loaded


# ------------------------------------------------------------------------------------------- helpers


def percentile_stats(reps: Sequence[Sequence[float]]) -> dict[str, float] | None:
    """p50/p95/p99/mean per repetition, then the median of each across repetitions."""
    reps = [r for r in reps if r]
    if not reps:
        return None
    per_rep = [
        {
            "p50": float(np.percentile(r, 50)),
            "p95": float(np.percentile(r, 95)),
            "p99": float(np.percentile(r, 99)),
            "mean": float(np.mean(r)),
        }
        for r in reps
    ]
    return {key: round(statistics.median(p[key] for p in per_rep), 3) for key in ("p50", "p95", "p99", "mean")}


class QueryPool:
    """Distinct questions about the synthetic bank. Each is handed out once, so no cache can serve it."""

    def __init__(self, seed: int = 11) -> None:
        self._iter = self._generate(seed)

    @staticmethod
    def _generate(seed: int) -> Iterator[str]:
        import random

        rng = random.Random(seed)
        seen: set[str] = set()
        topics = list(TOPICS)
        while True:
            topic = rng.choice(topics)
            query = rng.choice(QUESTIONS).format(
                name=rng.choice(NAMES), topic=topic, detail=rng.choice(TOPICS[topic]), when=rng.choice(WHEN)
            )
            if len(seen) > 20_000:  # the template space is nearly used up: vary further with a suffix
                query = f"{query[:-1]} {rng.choice(WHEN)}?"
            if query not in seen:
                seen.add(query)
                yield query

    def take(self, n: int) -> list[str]:
        return [next(self._iter) for _ in range(n)]


def time_calls(
    ctx: ProbeContext, call: Callable[[str], Any], *, supply: Callable[[int], list[str]] | None = None
) -> ProbeResult:
    """Warm up, then `repetitions` x `queries_per_rep` timed calls of `call(query)` (wall clock, ms).

    Queries come from `supply(n)`, by default fresh ones from the context's pool (never repeated).
    """
    take = supply or ctx.queries.take
    for query in take(ctx.warmup):
        call(query)
    result = ProbeResult()
    for _ in range(ctx.repetitions):
        samples = []
        for query in take(ctx.queries_per_rep):
            start = time.perf_counter()
            call(query)
            samples.append((time.perf_counter() - start) * 1000)
        result.samples_ms.append(samples)
    return result


def recall_vector_parameter(engine: Any) -> str | None:
    """The engine's recall parameter that takes a precomputed query vector, if it has one."""
    try:
        params = inspect.signature(engine.recall).parameters
    except (TypeError, ValueError):
        return None
    for name in ("query_vector", "query_embedding", "embedding", "vector"):
        if name in params:
            return name
    return None


# ------------------------------------------------------------------------------------------- built-in probes


@register_probe("recall", "recall (query embedding included)", order=10)
def probe_recall(ctx: ProbeContext) -> ProbeResult:
    breakdowns: list[dict[str, float]] = []

    def call(query: str) -> None:
        recall = ctx.memory.recall(ctx.bank_id, query, token_budget=ctx.max_tokens, now=ctx.now)
        breakdowns.append(dict(recall.timings_ms))

    result = time_calls(ctx, call)
    result.breakdown_ms = median_breakdown(breakdowns[ctx.warmup :])
    result.note = f"fresh query per call, max_tokens={ctx.max_tokens}"
    return result


@register_probe("query_embedding", "query embedding alone (same model)", order=20)
def probe_query_embedding(ctx: ProbeContext) -> ProbeResult:
    result = time_calls(ctx, lambda query: ctx.embedder.encode([query]))
    result.note = "bench's own all-MiniLM-L6-v2 instance, one query per call"
    ctx.extras["query_embedding"] = result
    return result


@register_probe("recall_no_embed", "recall (precomputed query vector)", order=30)
def probe_recall_no_embed(ctx: ProbeContext) -> ProbeResult:
    engine = ctx.engine()
    param = recall_vector_parameter(engine)
    if param is not None:
        queries = ctx.queries.take(ctx.warmup + ctx.repetitions * ctx.queries_per_rep)
        vectors = dict(zip(queries, ctx.embedder.encode(queries), strict=True))
        pending = iter(queries)
        breakdowns: list[dict[str, float]] = []

        def call(query: str) -> None:
            recall = ctx.memory._run(
                engine.recall(ctx.bank_id, query, token_budget=ctx.max_tokens, now=ctx.now, **{param: vectors[query]})
            )
            breakdowns.append(dict(getattr(recall, "timings_ms", {}) or {}))

        result = time_calls(ctx, call, supply=lambda n: [next(pending) for _ in range(n)])
        result.breakdown_ms = median_breakdown(breakdowns[ctx.warmup :])
        result.note = f"engine.recall(..., {param}=vector); vectors computed beforehand, outside the timing"
        return result
    # No way to hand the engine a vector: estimate by subtracting the median embedding time.
    with_embedding: ProbeResult | None = ctx.extras.get("recall")
    embedding: ProbeResult | None = ctx.extras.get("query_embedding")
    if not with_embedding or not embedding or not with_embedding.stats() or not embedding.stats():
        return ProbeResult(skipped="engine.recall takes no query vector and the recall/embedding probes did not run")
    embed_p50 = embedding.stats()["p50"]  # type: ignore[index]  # not None: checked above
    recall_stats = with_embedding.stats() or {}  # not None: checked above
    derived = {k: round(max(v - embed_p50, 0.0), 3) for k, v in recall_stats.items()}
    return ProbeResult(
        derived=derived,
        note=(
            "ESTIMATED: engine.recall takes no query vector; recall percentiles minus median embedding time "
            f"({embed_p50:.2f} ms)"
        ),
    )


def median_breakdown(rows: Sequence[dict[str, float]]) -> dict[str, float]:
    keys = sorted({k for row in rows for k in row})
    return {k: round(statistics.median(row[k] for row in rows if k in row), 3) for k in keys}


# ------------------------------------------------------------------------------------------- the run


@dataclass
class LatencyConfig:
    sizes: list[int]
    batch_size: int = 500  # retain_many batch for the throughput measurement
    bulk_batch_size: int = 2000  # larger batches for sizes above `bulk_from` (bank building, same public API)
    bulk_from: int = 10_000
    repetitions: int = 3
    warmup: int = 10
    queries_per_rep: int = 50
    max_tokens: int = 1024
    deadline: float | None = None  # time.monotonic() by which the latency part must be done
    seed: int = 7


@dataclass
class SizeResult:
    size: int
    retained: int = 0
    retain_seconds: float = 0.0
    batch_size: int = 0
    items_per_s: float | None = None
    rss_mb: float | None = None
    postgres_pss_mb: float | None = None
    probes: dict[str, ProbeResult] = field(default_factory=dict)
    skipped: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "size": self.size,
            "retained_in_stage": self.retained,
            "retain_seconds": round(self.retain_seconds, 3),
            "batch_size": self.batch_size,
            "retain_items_per_s": round(self.items_per_s, 1) if self.items_per_s else None,
            "rss_mb": self.rss_mb,
            "postgres_pss_mb": self.postgres_pss_mb,
            "probes": {name: probe.to_json() for name, probe in self.probes.items()},
            "skipped": self.skipped,
        }


def process_rss_mb() -> float:
    return round(psutil.Process().memory_info().rss / 2**20, 1)


def postgres_pss_mb(pgdata: Path | None) -> float | None:
    """Proportional memory of the PostgreSQL server on `pgdata` (postmaster + backends), shared pages split fairly."""
    if pgdata is None:
        return None
    target = str(Path(pgdata).resolve())
    for proc in psutil.process_iter(["name", "cmdline"]):
        try:
            cmdline = proc.info["cmdline"] or []
            if "postgres" not in (proc.info["name"] or "") or target not in " ".join(cmdline):
                continue
            total = 0
            for p in [proc, *proc.children(recursive=True)]:
                info = p.memory_full_info()
                total += getattr(info, "pss", info.rss)
            return round(total / 2**20, 1)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    return None


def _items(turns: Sequence[SyntheticTurn]) -> list[Any]:
    from memwrap import RetainItem

    return [
        RetainItem(content=t.content, timestamp=t.timestamp, document_id=t.document_id, metadata={"speaker": t.speaker})
        for t in turns
    ]


def run_latency(
    memory: Any,
    bank_id: str,
    config: LatencyConfig,
    *,
    embedder: Any,
    pgdata: Path | None = None,
    progress: Callable[[str, int], Any] | None = None,
    log: Callable[[str], None] = print,
) -> list[SizeResult]:
    """Grow one bank through `config.sizes`, measuring retain throughput and running every probe at each size.

    `progress(description, total)` returns a callable `advance(n)` (a progress bar); None disables bars.
    """
    sizes = sorted(set(config.sizes))
    started = time.perf_counter()
    turns = generate_turns(max(sizes), seed=config.seed)
    log(f"generated {len(turns):,} synthetic turns in {time.perf_counter() - started:.2f}s")
    now = max(t.timestamp for t in turns)
    queries = QueryPool()
    results: list[SizeResult] = []
    have = 0
    last_rate: float | None = None
    last_probe_s = 30.0  # until the first size has measured how long its probes take
    for size in sizes:
        result = SizeResult(size=size)
        results.append(result)
        batch = config.bulk_batch_size if size > config.bulk_from else config.batch_size
        result.batch_size = batch
        todo = turns[have:size]
        if config.deadline is not None and last_rate:
            projected = len(todo) / last_rate + 1.5 * last_probe_s
            remaining = config.deadline - time.monotonic()
            if projected > remaining:
                result.skipped = (
                    f"building to {size:,} would take ~{projected / 60:.1f} min at {last_rate:.0f} items/s, "
                    f"{max(remaining, 0) / 60:.1f} min left in the time budget; run with --sizes {size} to measure it "
                    "alone"
                )
                log(f"[latency] skipping {size:,}: {result.skipped}")
                continue
        advance = progress(f"retain -> {size:,}", len(todo)) if progress else None
        t0 = time.perf_counter()
        done = 0
        for i in range(0, len(todo), batch):
            chunk = todo[i : i + batch]
            memory.retain_many(bank_id, _items(chunk))
            done += len(chunk)
            if advance:
                advance(len(chunk))
            if config.deadline is not None and done < len(todo):
                rate = done / (time.perf_counter() - t0)
                eta = (len(todo) - done) / rate
                if time.monotonic() + eta > config.deadline + 60:
                    result.skipped = (
                        f"aborted at {have + done:,} memories: ~{eta / 60:.1f} more min at {rate:.0f} items/s "
                        f"would overrun the time budget; run with --sizes {size} to measure it alone"
                    )
                    break
        result.retained, result.retain_seconds = done, time.perf_counter() - t0
        result.items_per_s = done / result.retain_seconds if result.retain_seconds > 0 else None
        have += done
        if result.skipped:
            log(f"[latency] {result.skipped}")
            break
        last_rate = result.items_per_s
        ctx = ProbeContext(
            memory=memory,
            bank_id=bank_id,
            size=size,
            now=now,
            queries=queries,
            repetitions=config.repetitions,
            warmup=config.warmup,
            queries_per_rep=config.queries_per_rep,
            max_tokens=config.max_tokens,
            embedder=embedder,
        )
        probes_start = time.perf_counter()
        for probe in sorted(PROBES.values(), key=lambda p: p.order):
            t_probe = time.perf_counter()
            try:
                outcome = probe.fn(ctx)
            except Exception as exc:  # noqa: BLE001 - a broken probe must not sink the whole run
                outcome = ProbeResult(skipped=f"failed: {type(exc).__name__}: {exc}")
            ctx.extras[probe.name] = outcome
            result.probes[probe.name] = outcome
            stats = outcome.stats()
            log(
                f"[latency] {size:>7,} {probe.name:<16} "
                + (f"p50 {stats['p50']:.1f} ms  p95 {stats['p95']:.1f} ms" if stats else f"skipped: {outcome.skipped}")
                + f"  ({time.perf_counter() - t_probe:.1f}s)"
            )
        last_probe_s = time.perf_counter() - probes_start
        result.rss_mb = process_rss_mb()
        result.postgres_pss_mb = postgres_pss_mb(pgdata)
    return results
