"""Recall latency right after a retain, step by step: where the slow tail comes from.

    python -m bench.recall_tail [--conversations 5] [--worker inline|off] [--budget 1024] [--json out.json]

As an application meets it: each LoCoMo conversation is retained into a fresh bank, and its questions are asked at
once, one after the other (token_budget 1024, the wrappers' default), with everything that runs after a retain
running too (the learning worker's consolidation, the planner's background ANALYZE, the keyword arm's common
terms) unless `--worker off`. Reports p50 / p95 / p99 of each step of `Recall.timings_ms` (embed, names, each
arm, fuse, details, order, pack, total) and of the wall time of the call, and the slowest questions with their
steps. The questions' text is not printed (LoCoMo is CC BY-NC: read in place, never copied).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from bench.locomo import default_data_path, load_locomo

STEPS = (
    "embed",
    "names",
    "arm.semantic",
    "arm.keyword",
    "arm.graph",
    "arm.temporal",
    "arms",
    "fuse",
    "details",
    "order",
    "pack",
    "total",
)


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))] if ordered else float("nan")


def run(conversations: int, worker: str, budget: int, home: Path | None) -> dict[str, Any]:
    os.environ["MEMWRAP_WORKER"] = worker
    from memwrap import Memory, RetainItem

    convs = load_locomo(default_data_path(), conversations=conversations)
    rows: list[dict[str, Any]] = []
    with Memory(home=home or Path(tempfile.mkdtemp(prefix="memwrap-tail-"))) as memory:
        memory.recall("tail-warm-up", "warm up", token_budget=64)  # the engine is up: only recall is timed
        for conv in convs:
            bank = f"tail-{uuid.uuid4().hex[:8]}-{conv.sample_id}"
            items = [RetainItem(content=t.content, timestamp=t.timestamp, document_id=t.dia_id) for t in conv.turns]
            for i in range(0, len(items), 250):
                memory.retain_many(bank, items[i : i + 250])
            for index, question in enumerate(conv.questions):
                started = time.perf_counter()
                recall = memory.recall(bank, question.question, token_budget=budget, now=conv.last_time)
                wall = (time.perf_counter() - started) * 1000
                rows.append(
                    {
                        "conversation": conv.sample_id,
                        "question": index,
                        "wall": wall,
                        **{step: recall.timings_ms.get(step) for step in STEPS},
                    }
                )
    return {"worker": worker, "budget": budget, "questions": len(rows), "rows": rows, "load": os.getloadavg()}


def summary(result: dict[str, Any]) -> dict[str, dict[str, float]]:
    rows = result["rows"]
    out: dict[str, dict[str, float]] = {}
    for step in ("wall", *STEPS):
        values = [r[step] for r in rows if r.get(step) is not None]
        if values:
            out[step] = {
                "p50": round(statistics.median(values), 2),
                "p95": round(percentile(values, 0.95), 2),
                "p99": round(percentile(values, 0.99), 2),
                "max": round(max(values), 2),
                "n": len(values),
            }
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conversations", type=int, default=5)
    parser.add_argument("--worker", choices=("inline", "off"), default="inline")
    parser.add_argument("--budget", type=int, default=1024)
    parser.add_argument("--home", type=Path, default=None)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    result = run(args.conversations, args.worker, args.budget, args.home)
    table = summary(result)
    print(
        f"{result['questions']} questions, worker {args.worker}, token_budget {args.budget}, "
        f"load {result['load'][0]:.2f} on {os.cpu_count()} CPUs"
    )
    print(f"{'step':<14}{'p50':>9}{'p95':>9}{'p99':>9}{'max':>9}")
    for step, stats in table.items():
        print(f"{step:<14}{stats['p50']:>9}{stats['p95']:>9}{stats['p99']:>9}{stats['max']:>9}")
    slowest = sorted(result["rows"], key=lambda r: -r["wall"])[:8]
    print("slowest:")
    for r in slowest:
        steps = ", ".join(f"{s}={r[s]:.1f}" for s in STEPS if r.get(s) is not None)
        print(f"  {r['conversation']} q{r['question']}: wall {r['wall']:.1f} ms ({steps})")
    if args.json:
        args.json.write_text(json.dumps({**result, "summary": table}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
