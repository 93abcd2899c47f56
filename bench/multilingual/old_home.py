"""An old home opened by this memwrap: what a user whose memories were embedded with all-MiniLM-L6-v2 (the default
before issue 38) sees once multilingual-e5-small is the default, and how long `memwrap reembed` takes.

    python -m bench.multilingual.old_home                  # a 1k bank, in a temporary home
    python -m bench.multilingual.old_home --size 2000 --json out.json

1. The old home: the multilingual set (bench/multilingual/set.json) and its MemoryBank distractors, `--size`
   memories in all, retained with all-MiniLM-L6-v2 named, as the old default did.
2. Opened in a fresh process with no model named (MEMWRAP_EMBEDDING_MODEL unset), as after an upgrade: what it
   prints on stderr, which model the engine runs, and recall@5 of the set's questions per group.
3. `python -m memwrap reembed --yes --home DIR` in a fresh process, timed from outside (start and model load
   included, as the user waits for it), with what it prints; then once more, with nothing left to re-embed: the
   fixed part of the time (process start, database, model load).
4. Opened again with no model named: stderr, the model, recall@5 per group.

The reembed time of 10k memories is extrapolated from --size (the fixed part, plus 10k times the time per memory
beyond it), and the report says so: embedding is per memory; the vector index, built once at the end, grows a little
faster than linearly. bench.multilingual.reembed measures 10k itself (bench/README.md, *Embedding models*).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from bench.multilingual.evaluate import NOW, load_set, set_items
from bench.recall_at_k import at_k

OLD_MODEL = "all-MiniLM-L6-v2"
BANK = "old-home"
TEN_K = 10_000


def _env() -> dict[str, str]:
    """The environment of a user who named no model."""
    return {k: v for k, v in os.environ.items() if k != "MEMWRAP_EMBEDDING_MODEL"}


def build(home: Path, size: int) -> float:
    """The old home: `size` memories retained with the English model named. Returns the seconds it took."""
    from memwrap import Memory
    from memwrap.config import load_settings

    items = set_items(load_set())[:size]
    with Memory(settings=load_settings(home=home, embedding_model=OLD_MODEL, worker="off")) as memory:
        start = time.perf_counter()
        for i in range(0, len(items), 250):
            memory.retain_many(BANK, items[i : i + 250])
        return time.perf_counter() - start


def probe(home: Path) -> dict[str, Any]:
    """In this process (run as a child with no model named): the engine's model and recall@5 per group."""
    from memwrap import Memory
    from memwrap.config import load_settings

    data = load_set()
    scores: dict[str, list[float]] = defaultdict(list)
    with Memory(settings=load_settings(home=home, worker="off")) as memory:
        first = memory.recall(BANK, data.questions[0].text, token_budget=2048, now=NOW)
        # Which model answered: the user does not see it (no verb says it), so it is read off the engine.
        engine = getattr(getattr(memory, "_async", None), "_engine", None)
        model = getattr(getattr(engine, "embedder", None), "model_name", None) or getattr(engine, "kept_model", None)
        for question in data.questions:
            recall = memory.recall(BANK, question.text, token_budget=2048, now=NOW)
            ranked = [m.document_id for m in recall.memories]
            scores[question.category].append(at_k(ranked, question.evidence, 5))
    return {
        "kept_model": getattr(engine, "kept_model", None),
        "model": model,
        "first_question": data.questions[0].text,
        "first_answer": first.memories[0].text if first.memories else None,
        "memories_recalled": len(first.memories),
        "recall@5": {cat: round(sum(v) / len(v), 3) for cat, v in sorted(scores.items())},
    }


def _child(*args: str) -> tuple[subprocess.CompletedProcess[str], float]:
    start = time.perf_counter()
    done = subprocess.run([sys.executable, *args], env=_env(), capture_output=True, text=True, check=False)
    return done, time.perf_counter() - start


def opened(home: Path) -> dict[str, Any]:
    """The home opened in a fresh process with no model named: its probe and what it printed on stderr."""
    done, _ = _child("-m", "bench.multilingual.old_home", "--probe", str(home))
    if done.returncode != 0:
        raise RuntimeError(f"the probe failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1]) | {"stderr": done.stderr.strip()}


def reembed(home: Path) -> dict[str, Any]:
    done, seconds = _child("-m", "memwrap", "reembed", "--yes", "--home", str(home))
    if done.returncode != 0:
        raise RuntimeError(f"memwrap reembed failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return {"seconds": round(seconds, 1), "stdout": done.stdout.strip(), "stderr_tail": done.stderr.strip()[-600:]}


def load_average() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.multilingual.old_home", description=__doc__.split("\n")[0])
    parser.add_argument("--size", type=int, default=1000, help="memories in the old home (default 1000)")
    parser.add_argument("--home", type=Path, help="build the old home here (default: a temporary directory)")
    parser.add_argument("--json", type=Path, help="also write the result here")
    parser.add_argument("--probe", type=Path, help=argparse.SUPPRESS)  # the child's part
    args = parser.parse_args(argv)
    if args.probe:
        print(json.dumps(probe(args.probe)))
        return 0

    home = args.home or Path(tempfile.mkdtemp(prefix="memwrap-old-home-"))
    try:
        result: dict[str, Any] = {"size": args.size, "load_before": load_average()}
        result["build_s"] = round(build(home, args.size), 1)
        result["before"] = opened(home)
        result["load_reembed_start"] = load_average()
        result["reembed"] = reembed(home)
        result["load_reembed_end"] = load_average()
        # The same command again has nothing to re-embed: its time is the fixed part (process start, database,
        # model load), left out of the per-memory rate the 10k figure is extrapolated from.
        result["reembed_again"] = reembed(home)
        fixed = result["reembed_again"]["seconds"]
        per_memory = max(0.0, result["reembed"]["seconds"] - fixed) / args.size
        result["reembed_rate_per_s"] = round(1 / per_memory, 1) if per_memory else None
        result["reembed_10k_extrapolated_s"] = round(fixed + per_memory * TEN_K, 0)
        result["after"] = opened(home)
    finally:
        if args.home is None:
            from memwrap.config import load_settings
            from memwrap.store.embedded_pg import stop_embedded_server

            stop_embedded_server(load_settings(home=home).pgdata)
            shutil.rmtree(home, ignore_errors=True)
    _report(result)
    if args.json:
        args.json.write_text(json.dumps(result, indent=2, ensure_ascii=False))
    return 0


def _report(result: dict[str, Any]) -> None:
    size = result["size"]
    print(f"An old {OLD_MODEL} home of {size} memories (built in {result['build_s']} s), opened with no model named:")
    for when in ("before", "after"):
        seen = result[when]
        print(f"  {when} reembed: engine model {seen['model']} (kept: {seen['kept_model']}),")
        print(
            f"    first question {seen['first_question']!r}: {seen['memories_recalled']} memories, first "
            f"{seen['first_answer']!r}"
        )
        print(f"    recall@5 {seen['recall@5']}")
        print(f"    stderr: {seen['stderr'] or '(nothing)'}")
    re = result["reembed"]
    print(
        f"  memwrap reembed --yes: {re['seconds']} s for {size} memories ({size / re['seconds']:.1f}/s, process "
        f"start and model load included); printed {re['stdout']!r}"
    )
    again = result["reembed_again"]
    print(
        f"  again (nothing to re-embed: process start, database, model load): {again['seconds']} s, printed "
        f"{again['stdout']!r}; so {result['reembed_rate_per_s']} memories/s once started"
    )
    print(
        f"  10k memories: ~{result['reembed_10k_extrapolated_s']:.0f} s, extrapolated linearly from {size} "
        "(not measured)"
    )
    print(
        f"  load average: before {result['load_before']}, reembed {result['load_reembed_start']} -> "
        f"{result['load_reembed_end']}"
    )


if __name__ == "__main__":
    raise SystemExit(main())
