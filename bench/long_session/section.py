"""The long-session section of `python -m bench` (bench/README.md, *Long technical sessions*).

    python -m bench --skip-locomo --skip-models --skip-latency            # this section alone (~10 min quiet)
    python -m bench --skip-locomo --skip-models --skip-latency --quick    # tiny sizes (CI smoke)

(a) evidence recall @512/1024/2048 per question type, memwrap beside a dense+BM25 hybrid over the same chunks,
on generated long technical sessions and on LongMemEval's s_3q; (b) recall latency per step at 2k and 10k
memories of long messages in a home with 50 other such banks, right after the retains, quiet and (`--load N`)
with N busy loops; (c) retain throughput of long messages beside the embedding model alone on the same chunks,
and retain of short turns.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from bench.long_session import evidence as ev
from bench.long_session.generator import LongBank, generate_bank
from bench.long_session.latency import run_latency, short_turns
from bench.long_session.longmemeval import load_banks


@dataclass
class LongConfig:
    tokens: list[int] = field(default_factory=lambda: [120_000, 250_000])  # one generated bank per entry
    seed: int = 1
    longmemeval: Path | None = None  # default: ../shared/data/longmemeval/s_3q.json
    lme_items: int | None = None
    lme_other_sessions: int | None = None  # sessions kept besides the answer sessions (None: all)
    budgets: list[int] = field(default_factory=lambda: [512, 1024, 2048])
    batch: int = 100  # messages per retain_many
    sizes: list[int] = field(default_factory=lambda: [2_000, 10_000])
    others: int = 50
    other_size: int = 500
    tail: int = 100  # messages retained through retain_many at each size, right before timing (-1: all of them)
    queries: int = 60
    warmup: int = 5
    load: int = 0
    short_turns: int = 1000
    skip_evidence: bool = False
    skip_latency: bool = False


def add_arguments(parser: argparse.ArgumentParser) -> None:
    g = parser.add_argument_group("long technical sessions (bench/long_session)")
    g.add_argument("--skip-long", action="store_true", help="no long-session section")
    g.add_argument("--long-tokens", default=None, help="generated banks' sizes in tokens, e.g. 120k,250k")
    g.add_argument("--long-seed", type=int, default=None, help="seed of the generated banks (default 1)")
    g.add_argument("--longmemeval", type=Path, default=None, help="LongMemEval json (default ../shared s_3q.json)")
    g.add_argument("--long-sizes", default=None, help="latency bank sizes in memories (default 2k,10k)")
    g.add_argument("--long-others", type=int, default=None, help="other banks in the home (default 50)")
    g.add_argument("--long-other-size", type=int, default=None, help="memories per other bank (default 500)")
    g.add_argument(
        "--long-tail", type=int, default=None, help="messages retained (not imported) per size; -1: all (default 100)"
    )
    g.add_argument("--long-queries", type=int, default=None, help="timed recalls per size (default 60)")
    g.add_argument("--long-skip-evidence", action="store_true", help="latency and throughput only")
    g.add_argument("--long-skip-latency", action="store_true", help="evidence recall and throughput only")
    g.add_argument("--load", type=int, default=0, help="also time recall with N busy-loop processes running")


def config_from_args(args: argparse.Namespace, int_list: Callable[[str], list[int]]) -> LongConfig:
    c = LongConfig()
    if args.quick:
        c.tokens, c.lme_items, c.lme_other_sessions = [12_000], 1, 1
        c.sizes, c.others, c.other_size, c.tail = [300], 3, 100, 10
        c.queries, c.warmup, c.short_turns = 10, 2, 100
    if args.long_tokens:
        c.tokens = int_list(args.long_tokens)
    if args.long_sizes:
        c.sizes = sorted(set(int_list(args.long_sizes)))
    for name, attr in (("long_seed", "seed"), ("long_others", "others"), ("long_other_size", "other_size")):
        if getattr(args, name) is not None:
            setattr(c, attr, getattr(args, name))
    if args.long_tail is not None:
        c.tail = args.long_tail
    if args.long_queries is not None:
        c.queries = args.long_queries
    c.longmemeval, c.load = args.longmemeval, args.load
    c.skip_evidence, c.skip_latency = args.long_skip_evidence, args.long_skip_latency
    return c


def _median(values: list[float | None]) -> float | None:
    kept = sorted(v for v in values if v is not None)
    return round(kept[len(kept) // 2], 1) if kept else None


def _pool(embedder: Any, vectors: list[Any]) -> np.ndarray:
    """Real chunk embeddings to draw the imported banks' vectors from (those of the evidence part, or fresh)."""
    if vectors:
        return np.concatenate(vectors).astype(np.float32)
    from bench.long_session.latency import chunk_texts

    texts = [t for m in generate_bank(77, 20_000).messages for t in chunk_texts(m)]
    return np.asarray(embedder.encode(texts), dtype=np.float32)


def run_long(
    memory: Any, embedder: Any, config: LongConfig, run_id: str, log: Callable[[str], None], progress: ev.Progress,
    out: Path,
) -> dict[str, Any]:  # fmt: skip
    started = time.perf_counter()
    result: dict[str, Any] = {"config": {k: str(v) if isinstance(v, Path) else v for k, v in vars(config).items()}}
    per_question: list[ev.EvidenceResult] = []
    vectors: list[Any] = []
    if not config.skip_evidence:
        datasets: list[tuple[str, list[LongBank]]] = [
            ("generated", [generate_bank(config.seed + i, t) for i, t in enumerate(config.tokens)])
        ]
        try:
            lme = load_banks(config.longmemeval, items=config.lme_items, other_sessions=config.lme_other_sessions)
            datasets.append(("longmemeval", lme))
        except FileNotFoundError as exc:
            log(f"[long] {exc}: LongMemEval skipped")
        result["datasets"], result["throughput"] = {}, {}
        total = ev.Throughput()
        for dataset, banks in datasets:
            described, throughput = [], ev.Throughput()
            for bank in banks:
                t0 = time.perf_counter()
                rows, spent, chunks, matrix = ev.evaluate_bank(
                    memory, embedder, bank, f"bench-{run_id}-{bank.name}", dataset, config.budgets, config.batch,
                    progress,
                )  # fmt: skip
                per_question += rows
                ours = [r for r in rows if r.system == ev.MEMWRAP]
                throughput.add(spent)
                vectors.append(matrix)
                described.append({
                    "bank": bank.name, "messages": len(bank.messages), "tokens": bank.tokens,
                    "sessions": bank.sessions, "questions": len(bank.questions), "memories": len(chunks.texts),
                    "recall_ms_median": _median([r.latency_ms for r in ours]),
                    "graph_ms_median": _median([r.timings_ms.get("arm.graph") for r in ours]),
                    **bank.info,
                })  # fmt: skip
                log(
                    f"[long] {dataset} {bank.name}: {len(bank.messages)} messages, {bank.tokens:,} tokens -> "
                    f"{len(chunks.texts)} memories; retain {spent.retain_s:.0f}s, embedding {spent.embed_s:.0f}s, "
                    f"all {time.perf_counter() - t0:.0f}s"
                )
            result["datasets"][dataset] = {"banks": described}
            result["throughput"][dataset] = throughput.to_json()
            total.add(throughput)
        result["throughput"]["all"] = total.to_json()
        result["recall"] = ev.summarise(per_question, config.budgets)
        result["budgets"] = config.budgets
        (out / "long_per_question.json").write_text(
            json.dumps([r.to_json() for r in per_question], indent=1) + "\n", encoding="utf-8"
        )
    if not config.skip_latency:
        result["short_turns"] = short_turns(memory, f"bench-{run_id}-short", config.short_turns, embedder=embedder)
        s = result["short_turns"]
        log(f"[long] short turns: {s['turns_per_s']:.0f}/s (the embedding alone: {s['embed_turns_per_s']:.0f}/s)")
        result["latency"] = run_latency(
            memory, f"bench-{run_id}-lat", _pool(embedder, vectors), sizes=config.sizes, others=config.others,
            other_size=config.other_size, tail=config.tail, queries=config.queries, warmup=config.warmup,
            load=config.load, log=log,
        )  # fmt: skip
    result["seconds"] = round(time.perf_counter() - started, 1)
    return result
