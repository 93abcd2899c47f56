"""The benchmark suite: LoCoMo evidence recall (memwrap and baselines), then latency/throughput.

    python -m bench                 # full: 5 conversations, banks of 1k/10k/100k (within ~15 min)
    python -m bench --quick         # 1 conversation, a 1k bank (< 3 min)
    python -m bench --scale         # a 1M bank and 10k small banks on one database (bench/scale.py)

Both also compare the embedding models (the configured one and the other packaged one) on the multilingual set,
LoCoMo and query embedding (bench/multilingual).

Honesty rules: every system gets the same items and questions, builds its own index from scratch (nothing
is cached or shared between systems), and memwrap gets fresh banks (unique names) on every run.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench import report
from bench.baselines import BASELINE_NAMES, Embedder, Retriever, baseline_embedder, make_baselines
from bench.latency import PLANNED_PROBES, PROBES, LatencyConfig, load_probe_modules, run_latency
from bench.locomo import Conversation, QuestionResult, Ranked, load_locomo, score_question, summarise
from bench.long_session.section import LongConfig, add_arguments, config_from_args, run_long
from bench.multilingual.compare import run_comparison

ALL_SYSTEMS: tuple[str, ...] = ("memwrap", *BASELINE_NAMES)
DEFAULT_OUT = Path(__file__).resolve().parent / "results"


@dataclass
class BenchConfig:
    out: Path = DEFAULT_OUT
    budgets: list[int] = field(default_factory=lambda: [256, 512, 1024, 2048])
    conversations: int | None = None  # None: all in the file
    sizes: list[int] = field(default_factory=lambda: [1_000, 10_000, 100_000])
    skip_latency: bool = False
    skip_locomo: bool = False
    skip_models: bool = False
    # embedding models to compare with the configured one (default: the other packaged one)
    models: list[str] | None = None
    max_distractors: int | None = None  # multilingual set: keep only the first N distractors (smoke tests)
    data: Path | None = None
    quick: bool = False
    systems: list[str] = field(default_factory=lambda: list(ALL_SYSTEMS))
    max_sessions: int | None = None  # slices for smoke tests
    max_questions: int | None = None
    recall_max_tokens: int = 8000  # long enough a ranked list for the largest budget walk
    baseline_depth: int = 200  # ranked list length asked of each baseline
    retain_batch: int = 500
    repetitions: int = 3
    warmup: int = 10
    queries_per_rep: int = 50
    latency_max_tokens: int = 1024
    time_budget_s: float | None = 15 * 60
    home: Path | None = None  # memwrap home (embedded PostgreSQL); a temporary directory by default
    database_url: str | None = None
    progress: bool = True
    command: str = "python -m bench"
    skip_long: bool = False
    long: LongConfig = field(default_factory=LongConfig)  # the long-session section (bench/long_session)


def _int_list(text: str) -> list[int]:
    values = []
    for part in text.split(","):
        part = part.strip().lower().replace("_", "")
        if not part:
            continue
        scale = 1_000 if part.endswith("k") else 1
        values.append(int(float(part.rstrip("k")) * scale))
    return values


def parse_args(argv: Sequence[str] | None = None) -> BenchConfig:
    parser = argparse.ArgumentParser(
        prog="python -m bench", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="1 conversation, a 1k bank, fewer repetitions (< 3 min)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output directory (default bench/results/)")
    parser.add_argument("--budgets", type=_int_list, default=None, help="token budgets, e.g. 256,512,1024,2048")
    parser.add_argument("--conversations", type=int, default=None, help="how many LoCoMo conversations (default all)")
    parser.add_argument(
        "--sizes", type=_int_list, default=None, help="bank sizes for latency, e.g. 1000,10000,100000 or 1k,10k"
    )
    parser.add_argument("--skip-latency", action="store_true", help="LoCoMo only")
    parser.add_argument("--skip-locomo", action="store_true", help="latency/throughput only")
    parser.add_argument("--skip-models", action="store_true", help="no embedding-model comparison (multilingual set)")
    parser.add_argument(
        "--models", default=None, help="embedding models to compare with the configured one, comma-separated"
    )
    parser.add_argument(
        "--max-distractors", type=int, default=None, help="multilingual set: only the first N distractors"
    )
    parser.add_argument(
        "--data", type=Path, default=None, help="LoCoMo json (default <repo>/../shared/data/locomo/locomo_dev5.json)"
    )
    parser.add_argument("--systems", default=",".join(ALL_SYSTEMS), help=f"subset of {','.join(ALL_SYSTEMS)}")
    parser.add_argument(
        "--max-sessions", type=int, default=None, help="keep only the first N sessions per conversation"
    )
    parser.add_argument(
        "--max-questions", type=int, default=None, help="keep only the first N questions per conversation"
    )
    parser.add_argument("--repetitions", type=int, default=None, help="latency repetitions (default 3, quick 2)")
    parser.add_argument(
        "--queries", type=int, default=None, help="distinct queries per latency repetition (default 50, quick 30)"
    )
    parser.add_argument("--warmup", type=int, default=None, help="latency warm-up calls (default 10, quick 5)")
    parser.add_argument(
        "--time-budget",
        type=float,
        default=None,
        help="minutes the whole run may take (default 15, quick 3; 0 = no limit)",
    )
    parser.add_argument(
        "--home", type=Path, default=None, help="memwrap home to use (default: a fresh temporary directory)"
    )
    parser.add_argument("--database-url", default=None, help="use this PostgreSQL instead of the embedded one")
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")
    add_arguments(parser)
    args = parser.parse_args(argv)

    systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    unknown = set(systems) - set(ALL_SYSTEMS)
    if unknown:
        parser.error(f"unknown systems {sorted(unknown)}; choose from {list(ALL_SYSTEMS)}")
    config = BenchConfig(
        out=args.out,
        data=args.data,
        quick=args.quick,
        skip_latency=args.skip_latency,
        skip_locomo=args.skip_locomo,
        skip_models=args.skip_models,
        max_distractors=args.max_distractors,
        models=[m.strip() for m in args.models.split(",") if m.strip()] if args.models else None,
        systems=systems,
        max_sessions=args.max_sessions,
        max_questions=args.max_questions,
        home=args.home,
        database_url=args.database_url,
        progress=not args.no_progress,
        skip_long=args.skip_long,
        long=config_from_args(args, _int_list),
        command=" ".join(["python -m bench", *(argv if argv is not None else sys.argv[1:])]),
    )
    if args.quick:
        config.conversations, config.sizes = 1, [1_000]
        config.repetitions, config.queries_per_rep, config.warmup = 2, 30, 5
        config.time_budget_s = 3 * 60
    if args.budgets:
        config.budgets = sorted(set(args.budgets))
    if args.conversations is not None:
        config.conversations = args.conversations
    if args.sizes:
        config.sizes = sorted(set(args.sizes))
    if args.repetitions is not None:
        config.repetitions = args.repetitions
    if args.queries is not None:
        config.queries_per_rep = args.queries
    if args.warmup is not None:
        config.warmup = args.warmup
    if args.time_budget is not None:
        config.time_budget_s = args.time_budget * 60 if args.time_budget > 0 else None
    return config


# ------------------------------------------------------------------------------------------- console


class Console:
    """Log lines and progress bars on one rich console (bars are off without --progress or without a TTY)."""

    def __init__(self, progress: bool) -> None:
        from rich.console import Console as RichConsole

        self.rich = RichConsole(stderr=True, width=None if sys.stderr.isatty() else 160)
        self.show_bars = progress
        self._progress: Any = None

    def log(self, message: str) -> None:
        self.rich.print(message, highlight=False, markup=False)

    @contextmanager
    def bars(self) -> Iterator[None]:
        if not self.show_bars:
            yield
            return
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        with Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            console=self.rich,
            transient=True,
        ) as progress:
            self._progress = progress
            try:
                yield
            finally:
                self._progress = None

    def bar(self, description: str, total: int) -> Callable[[int], None] | None:
        if self._progress is None:
            return None
        task = self._progress.add_task(description, total=total)
        return lambda n: self._progress.advance(task, n)


# ------------------------------------------------------------------------------------------- LoCoMo


@dataclass
class SystemCost:
    index_s: float = 0.0
    items: int = 0
    query_ms: list[float] = field(default_factory=list)
    list_lengths: list[int] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        ms = sorted(self.query_ms)
        return {
            "index_s": round(self.index_s, 3),
            "items": self.items,
            "items_per_s": round(self.items / self.index_s, 1) if self.index_s else None,
            "query_p50_ms": round(statistics.median(ms), 3) if ms else None,
            "query_p95_ms": round(ms[min(len(ms) - 1, int(0.95 * len(ms)))], 3) if ms else None,
            "mean_list_length": statistics.fmean(self.list_lengths) if self.list_lengths else 0.0,
        }


def _count_tokens(text: str) -> int:
    from memwrap.tokens import count_tokens

    return count_tokens(text)


def evaluate_memwrap(
    memory: Any,
    conv: Conversation,
    config: BenchConfig,
    run_id: str,
    console: Console,
    cost: SystemCost,
    system: str = "memwrap",
) -> list[QuestionResult]:
    from memwrap import RetainItem

    bank = f"bench-{run_id}-{conv.sample_id}"
    items = [
        RetainItem(
            content=turn.content,
            timestamp=turn.timestamp,
            document_id=turn.dia_id,
            metadata={"speaker": turn.speaker, "session": turn.session, "dia_id": turn.dia_id},
        )
        for turn in conv.turns
    ]
    advance = console.bar(f"{system} retain {conv.sample_id}", len(items))
    start = time.perf_counter()
    for i in range(0, len(items), config.retain_batch):
        chunk = items[i : i + config.retain_batch]
        memory.retain_many(bank, chunk)
        if advance:
            advance(len(chunk))
    cost.index_s += time.perf_counter() - start
    cost.items += len(items)
    now = conv.last_time
    memory.recall(bank, "warm-up query, not scored", token_budget=config.recall_max_tokens, now=now)
    results = []
    advance = console.bar(f"{system} recall {conv.sample_id}", len(conv.questions))
    for question in conv.questions:
        t0 = time.perf_counter()
        recall = memory.recall(bank, question.question, token_budget=config.recall_max_tokens, now=now)
        ms = (time.perf_counter() - t0) * 1000
        ranked = [
            Ranked(document_id=m.document_id or (m.metadata or {}).get("dia_id"), tokens=_count_tokens(m.text))
            for m in recall.memories
        ]
        cost.query_ms.append(ms)
        cost.list_lengths.append(len(ranked))
        results.append(score_question(system, conv, question, ranked, config.budgets, ms))
        if advance:
            advance(1)
    memory.delete_bank(bank)
    return results


def evaluate_baseline(
    retriever: Retriever, conv: Conversation, config: BenchConfig, console: Console, cost: SystemCost
) -> list[QuestionResult]:
    texts = [turn.content for turn in conv.turns]
    start = time.perf_counter()
    retriever.index(texts)
    cost.index_s += time.perf_counter() - start
    cost.items += len(texts)
    retriever.search("warm-up query, not scored", config.baseline_depth)
    results = []
    for question in conv.questions:
        t0 = time.perf_counter()
        order = retriever.search(question.question, config.baseline_depth)
        ms = (time.perf_counter() - t0) * 1000
        ranked = [Ranked(document_id=conv.turns[i].dia_id, tokens=_count_tokens(texts[i])) for i in order]
        cost.query_ms.append(ms)
        cost.list_lengths.append(len(ranked))
        results.append(score_question(retriever.name, conv, question, ranked, config.budgets, ms))
    return results


def run_locomo(
    config: BenchConfig, memory: Any | None, embedder: Embedder, run_id: str, console: Console
) -> tuple[dict[str, Any], list[QuestionResult]]:
    conversations = load_locomo(
        config.data,
        conversations=config.conversations,
        max_sessions=config.max_sessions,
        max_questions=config.max_questions,
    )
    costs = {system: SystemCost() for system in config.systems}
    results: list[QuestionResult] = []
    baseline_names = [s for s in config.systems if s != "memwrap"]
    with console.bars():
        for conv in conversations:
            console.log(
                f"[locomo] {conv.sample_id}: {len(conv.turns)} turns in {conv.sessions} sessions, "
                f"{len(conv.questions)} questions"
            )
            if memory is not None and "memwrap" in config.systems:
                t0 = time.perf_counter()
                results += evaluate_memwrap(memory, conv, config, run_id, console, costs["memwrap"])
                console.log(f"[locomo] {conv.sample_id}: memwrap done in {time.perf_counter() - t0:.1f}s")
            for retriever in make_baselines(embedder, baseline_names):  # fresh indexes per conversation
                t0 = time.perf_counter()
                results += evaluate_baseline(retriever, conv, config, console, costs[retriever.name])
                console.log(f"[locomo] {conv.sample_id}: {retriever.name} done in {time.perf_counter() - t0:.1f}s")
    summaries = summarise(results, config.budgets)
    per_system = {system: summaries[system].to_json() for system in config.systems if system in summaries}
    locomo = {
        "data": str(config.data or "default"),
        "budgets": config.budgets,
        "recall_max_tokens": config.recall_max_tokens,
        "baseline_depth": config.baseline_depth,
        "conversations": [
            {
                "sample_id": c.sample_id,
                "turns": len(c.turns),
                "sessions": c.sessions,
                "questions": len(c.questions),
                "dropped_no_evidence": c.dropped_questions,
            }
            for c in conversations
        ],
        "turns": sum(len(c.turns) for c in conversations),
        "questions": sum(len(c.questions) for c in conversations),
        "per_system": per_system,
        "ratios": report.ratios(per_system, config.budgets),
        "costs": {system: cost.to_json() for system, cost in costs.items() if cost.items},
    }
    return locomo, results


def compare_models(
    config: BenchConfig,
    memory: Any,
    locomo: dict[str, Any] | None,
    run_id: str,
    console: Console,
    deadline: float | None,
) -> dict[str, Any]:
    """The embedding-model comparison (bench/multilingual/compare.py) with this run's LoCoMo settings."""

    def memwrap_on_locomo(other: Any, system: str) -> list[QuestionResult]:
        conversations = load_locomo(
            config.data,
            conversations=config.conversations,
            max_sessions=config.max_sessions,
            max_questions=config.max_questions,
        )
        with console.bars():
            return [
                r
                for conv in conversations
                for r in evaluate_memwrap(other, conv, config, run_id, console, SystemCost(), system)
            ]

    return run_comparison(
        memory,
        run_id=run_id,
        budgets=config.budgets,
        count_tokens=_count_tokens,
        locomo_memwrap=(locomo or {}).get("per_system", {}).get("memwrap"),
        run_locomo=None if config.skip_locomo or "memwrap" not in config.systems else memwrap_on_locomo,
        requested=config.models,
        log=console.log,
        deadline=deadline,
        max_distractors=config.max_distractors,
    )


# ------------------------------------------------------------------------------------------- suite


def _open_memory(config: BenchConfig) -> tuple[Any, Path | None, Path | None]:
    """(memory, home we created and must remove, pgdata for memory accounting)."""
    from memwrap import Memory
    from memwrap.config import load_settings

    created = None
    home = config.home
    if home is None and config.database_url is None:
        home = created = Path(tempfile.mkdtemp(prefix="memwrap-bench-"))
    # Retain and recall are measured alone: background consolidation would compete for the same two cores.
    memory = Memory(settings=load_settings(home=home, database_url=config.database_url, worker="off"))
    pgdata = None if config.database_url else memory.settings.pgdata
    return memory, created, pgdata


def _stop_embedded_server(pgdata: Path | None) -> None:
    """Stop the embedded PostgreSQL of a home we are about to delete (at exit it could no longer be stopped
    cleanly once its data directory is gone)."""
    if pgdata is not None:
        from memwrap.store.embedded_pg import stop_embedded_server

        stop_embedded_server(pgdata)


def _settings_snapshot(memory: Any) -> dict[str, Any]:
    settings = memory.settings.model_dump(mode="json")
    for secret in ("llm_api_key", "database_url"):
        if settings.get(secret):
            settings[secret] = "***"
    return settings


def _background_load() -> dict[str, Any]:
    """How busy the machine is before we start: other processes skew every timing on a small box."""
    import psutil

    return {
        "busy_cpu_percent_before_start": psutil.cpu_percent(interval=1.0),
        "loadavg_start": [round(x, 2) for x in os.getloadavg()],
    }


def run_suite(config: BenchConfig, console: Console | None = None) -> dict[str, Any]:
    """Run everything the config asks for, write results.json, report.md and the PNG; return the results."""
    console = console or Console(config.progress)
    suite_start = time.perf_counter()
    deadline = time.monotonic() + config.time_budget_s - 20 if config.time_budget_s else None
    run_id = datetime.now(UTC).strftime("%Y%m%d%H%M%S") + "-" + uuid.uuid4().hex[:6]
    config.out.mkdir(parents=True, exist_ok=True)
    warnings: list[str] = []
    results: dict[str, Any] = {
        "meta": {
            "run_id": run_id,
            "started": datetime.now(UTC).isoformat(timespec="seconds"),
            "quick": config.quick,
            "parts": [
                p
                for p, skip in (
                    ("locomo", config.skip_locomo),
                    ("models", config.skip_models),
                    ("latency", config.skip_latency),
                    ("long_session", config.skip_long),
                )
                if not skip
            ],
            "command": config.command,
            "config": {k: (str(v) if isinstance(v, Path) else v) for k, v in asdict(config).items()},
            "machine": {
                "cpus": os.cpu_count(),
                "python": platform.python_version(),
                "platform": platform.platform(),
            },
            "warnings": warnings,
        }
    }
    background = _background_load()
    results["meta"]["machine"].update(background)
    if background["busy_cpu_percent_before_start"] > 25:
        warnings.append(
            f"the machine was already {background['busy_cpu_percent_before_start']:.0f}% busy before the run started "
            f"(load average {background['loadavg_start'][0]:.1f}); latencies and throughput are inflated by other work"
        )
    needs_memory = (
        ("memwrap" in config.systems and not config.skip_locomo) or not config.skip_latency or not config.skip_long
    )
    memory, created_home, pgdata = _open_memory(config) if needs_memory else (None, None, None)
    per_question: list[QuestionResult] = []
    try:
        if memory is not None:
            t0 = time.perf_counter()
            memory.banks()  # starts the engine: database and model, so no system pays for it in a timing
            results["meta"]["engine_start_s"] = round(time.perf_counter() - t0, 2)
            results["meta"]["memwrap_settings"] = _settings_snapshot(memory)
            console.log(f"[memwrap] engine started in {results['meta']['engine_start_s']}s")
        # The baselines' own model instance, on memwrap's backend (its export is cached per user: model_cache).
        settings = memory.settings if memory is not None else None
        t0 = time.perf_counter()  # the model loads here, before anything is timed
        embedder = baseline_embedder(
            model=settings.embedding_model if settings else None,
            backend=settings.embedding_backend if settings else None,
            model_cache=settings.model_cache if settings else None,
        )
        results["meta"]["baseline_embedder_load_s"] = round(time.perf_counter() - t0, 2)
        results["meta"]["baseline_embedder"] = {"model": embedder.model_name, "backend": embedder.backend}
        if not config.skip_locomo:
            t0 = time.perf_counter()
            results["locomo"], per_question = run_locomo(config, memory, embedder, run_id, console)
            results["locomo"]["seconds"] = round(time.perf_counter() - t0, 1)
        if not config.skip_models and memory is not None:
            t0 = time.perf_counter()
            results["models"] = compare_models(config, memory, results.get("locomo"), run_id, console, deadline)
            results["models"]["seconds"] = round(time.perf_counter() - t0, 1)
        if not config.skip_latency and memory is not None:
            modules = load_probe_modules()
            latency_config = LatencyConfig(
                sizes=config.sizes,
                batch_size=config.retain_batch,
                repetitions=config.repetitions,
                warmup=config.warmup,
                queries_per_rep=config.queries_per_rep,
                max_tokens=config.latency_max_tokens,
                deadline=deadline,
            )
            t0 = time.perf_counter()
            bank = f"bench-{run_id}-latency"
            with console.bars():
                sizes = run_latency(
                    memory,
                    bank,
                    latency_config,
                    embedder=embedder,
                    pgdata=pgdata,
                    progress=console.bar,
                    log=console.log,
                )
            results["latency"] = {
                "config": {k: v for k, v in asdict(latency_config).items() if k != "deadline"},
                "sizes": [s.to_json() for s in sizes],
                "probes": {name: probe.label for name, probe in PROBES.items()},
                "planned_probes": PLANNED_PROBES,
                "probe_modules": modules,
                "seconds": round(time.perf_counter() - t0, 1),
            }
            try:
                memory.delete_bank(bank)
            except Exception as exc:  # noqa: BLE001 - cleanup only
                warnings.append(f"could not delete latency bank: {exc}")
        if not config.skip_long and memory is not None:
            with console.bars():
                results["long_session"] = run_long(
                    memory, embedder, config.long, run_id, console.log, console.bar, config.out
                )
    finally:
        if memory is not None:
            memory.close()
        if created_home is not None:
            _stop_embedded_server(pgdata)
            shutil.rmtree(created_home, ignore_errors=True)
    results["meta"]["duration_s"] = round(time.perf_counter() - suite_start, 1)
    load_end = os.getloadavg()
    results["meta"]["machine"]["loadavg_end"] = [round(x, 2) for x in load_end]
    if load_end[0] > (os.cpu_count() or 1):
        warnings.append(
            f"load average was {load_end[0]:.1f} at the end of the run on {os.cpu_count()} CPUs: other processes "
            "competed for the CPUs during the run, so latencies and throughput are pessimistic"
        )
    _write_outputs(results, per_question, config, console)
    return results


def _write_outputs(
    results: dict[str, Any], per_question: list[QuestionResult], config: BenchConfig, console: Console
) -> None:
    import json

    report.write_json(results, config.out)
    if per_question:
        (config.out / "per_question.json").write_text(
            json.dumps([r.to_json() for r in per_question], indent=1) + "\n", encoding="utf-8"
        )
    report.plot_recall(results, config.out)
    report.write_markdown(results, config.out)
    report.print_tables(results)
    console.log(
        f"wrote {config.out}/results.json, report.md, {report.PNG_NAME} in {results['meta']['duration_s']:.0f}s"
    )


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    if "--scale" in arguments:  # its own run and time budget (bench/scale.py)
        from bench.scale import main as scale_main

        return scale_main(arguments)
    config = parse_args(argv)
    run_suite(config)
    return 0
