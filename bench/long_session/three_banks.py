"""Issue 36's reproduction: recall right after retain, in the last of three long banks of one home.

The three LongMemEval items of `../shared/data/longmemeval/s_3q.json` (~120K tokens, ~400 turns each) are retained
one after another into three banks of a fresh home, each message one item, through `retain_many` (the real path,
batches of 100, worker on as a user runs it); then, at once (no wait for autovacuum), each bank is asked three
questions: "What did I say about my job?", "How is my health?" and the item's own question. Reported per bank and
question: the call's wall time and the graph arm's (`Recall.timings_ms`), best of `--repeat` calls after one cold
call (the cold call's times too). At e746bb0 the third bank took 2.0-2.35 s per question, 1.96-2.27 s of it in the
graph arm (stale planner statistics: a bank the last ANALYZE did not see was planned as ~1 row).

    .venv/bin/python -m bench.long_session.three_banks [--home DIR] [--repeat 3] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.long_session.evidence import retain_bank
from bench.long_session.longmemeval import load_banks

QUESTIONS = ("What did I say about my job?", "How is my health?")


def _recall(memory: Any, bank_id: str, question: str, now: Any) -> dict[str, float]:
    started = time.perf_counter()
    result = memory.recall(bank_id, question, token_budget=1024, now=now)
    wall = (time.perf_counter() - started) * 1000
    return {"wall_ms": round(wall, 1), "graph_ms": round(float(result.timings_ms.get("arm.graph", 0.0)), 1)}


def run(args: argparse.Namespace) -> dict[str, Any]:
    from memwrap import Memory
    from memwrap.config import load_settings

    banks = load_banks(args.data)
    memory = Memory(settings=load_settings(home=args.home))
    report: dict[str, Any] = {"load_before": os.getloadavg()[0], "banks": []}
    try:
        for index, bank in enumerate(banks):
            seconds = retain_bank(memory, bank, f"three-{index}", 100, None)
            print(f"retained {bank.name}: {len(bank.messages)} messages, {bank.tokens:,} tokens in {seconds:.1f} s")
        for index, bank in enumerate(banks):
            question = bank.questions[0]
            rows = []
            for text in (*QUESTIONS, question.question):
                cold = _recall(memory, f"three-{index}", text, question.asked_at)
                warm = [_recall(memory, f"three-{index}", text, question.asked_at) for _ in range(args.repeat)]
                best = min(warm, key=lambda r: r["wall_ms"]) if warm else cold
                rows.append({"question": text, "cold": cold, "best_warm": best})
                print(
                    f"bank {index}  {text[:48]:48}  cold {cold['wall_ms']:8.1f} ms (graph {cold['graph_ms']:7.1f})"
                    f"  warm {best['wall_ms']:8.1f} ms (graph {best['graph_ms']:7.1f})"
                )
            report["banks"].append({"bank": index, "messages": len(bank.messages), "rows": rows})
    finally:
        memory.close()
    report["load_after"] = os.getloadavg()[0]
    return report


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--home", default=None, help="memwrap home (default: a fresh temporary directory)")
    parser.add_argument("--data", type=Path, default=None, help="s_3q.json (default: ../shared/data/longmemeval)")
    parser.add_argument("--repeat", type=int, default=3, help="warm calls per question after the cold one")
    parser.add_argument("--json", type=Path, default=None, help="write the report here")
    args = parser.parse_args(argv)
    if args.home is None:
        args.home = tempfile.mkdtemp(prefix="memwrap-three-banks-")
    report = run(args)
    print(f"load {report['load_before']:.1f} -> {report['load_after']:.1f}")
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
