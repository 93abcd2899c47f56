"""A short script's life: one wrapped chat call in a fresh process, beside the same script with the plain client.

Each run is a new Python process on a warm home (PostgreSQL initialised and the embedding model exported once,
before the runs; the server itself is started and stopped by each script, as it is on a user's machine), making
one `chat.completions.create` against a local fake upstream that answers at once. Plain and wrapped runs
alternate. Per run:

* whole run: from spawning the process to its exit, measured by this process;
* exit: from the script's last line (it prints a timestamp there) to the process's end: memwrap's exit
  sequence (deliver the retain, close the engine, leave PostgreSQL) plus the interpreter's own tear-down;
* the call: how long `create` took (the wrapped one includes waiting for the engine to start);
* the engine's start, by part (import of its modules, database, model, tokenizer: side by side; then store and
  a first query), as `Engine.startup_ms` says.

The first wrapped run tells a fact; every wrapped run after it asks, and the upstream counts how many of those
requests carried it in their memory block (all of them, or the figures are flagged). Machine load is recorded
before and after: the machine may be shared.

    .venv/bin/python -m bench.probes.lifecycle [--runs 10] [--home DIR] [--out bench/results]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

from bench.probes.wrapper_overhead import _Upstream, local_upstream

FACT = "Please remember: my favourite colour is teal."
QUESTION = "What is my favourite colour?"

SCRIPT = textwrap.dedent(
    """
    import json, sys, time
    start = time.perf_counter()
    from openai import OpenAI
    base, text, wrapped = sys.argv[1], sys.argv[2], sys.argv[3] == "wrapped"
    client = OpenAI(base_url=base, api_key="bench", max_retries=0)
    if wrapped:
        import memwrap
        client = memwrap.wrap_openai(client, bank_id="lifecycle-probe")
    call = time.perf_counter()
    client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": text}])
    report = {"call_ms": (time.perf_counter() - call) * 1000, "before_call_ms": (call - start) * 1000}
    if wrapped:
        memory = client.memwrap.memory
        report["startup_ms"] = memory._run(memory.aio._get_engine()).startup_ms
        report["failed_open"] = client.memwrap.stats.failed_open
    report["last_line"] = time.time()
    print(json.dumps(report), flush=True)
    """
)


def run_once(script: Path, base_url: str, text: str, wrapped: bool, env: dict[str, str]) -> dict[str, Any]:
    spawned = time.time()
    done = subprocess.run(
        [sys.executable, str(script), base_url, text, "wrapped" if wrapped else "plain"],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    ended = time.time()
    if done.returncode != 0:
        raise RuntimeError(f"the {'wrapped' if wrapped else 'plain'} script failed:\n{done.stderr[-3000:]}")
    report = json.loads(done.stdout.strip().splitlines()[-1])
    report["whole_ms"] = (ended - spawned) * 1000
    report["exit_ms"] = (ended - report.pop("last_line")) * 1000
    report["stderr"] = done.stderr.strip()
    return report


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def _median(values: list[float]) -> float:
    return round(statistics.median(values), 1) if values else float("nan")


def measure(runs: int, home: Path) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMWRAP_")}
    env["MEMWRAP_HOME"] = str(home)
    results: dict[str, list[dict[str, Any]]] = {"plain": [], "wrapped": []}
    with tempfile.TemporaryDirectory(prefix="memwrap-lifecycle-probe-") as scratch, local_upstream() as base_url:
        script = Path(scratch) / "one_call.py"
        script.write_text(SCRIPT)
        # Warm the home (initdb, the ONNX export) and tell the fact: not timed.
        run_once(script, base_url, FACT, True, env)
        load_before = _load()
        seen_before = _Upstream.with_block
        for i in range(runs):
            for wrapped in (False, True) if i % 2 == 0 else (True, False):
                report = run_once(script, base_url, QUESTION, wrapped, env)
                results["wrapped" if wrapped else "plain"].append(report)
        carried = _Upstream.with_block - seen_before
        load_after = _load()

    def medians(kind: str, key: str) -> float:
        return _median([r[key] for r in results[kind]])

    parts = sorted({p for r in results["wrapped"] for p in r.get("startup_ms", {})})
    summary = {
        "runs": runs,
        "home": str(home),
        "load_before": load_before,
        "load_after": load_after,
        "cpus": os.cpu_count(),
        "plain": {k: medians("plain", k) for k in ("whole_ms", "exit_ms", "call_ms", "before_call_ms")},
        "wrapped": {k: medians("wrapped", k) for k in ("whole_ms", "exit_ms", "call_ms", "before_call_ms")},
        "engine_startup_ms": {
            p: _median([r["startup_ms"][p] for r in results["wrapped"] if p in r["startup_ms"]]) for p in parts
        },
        "wrapped_calls_with_memory": carried,
        "wrapped_failed_open": sum(r.get("failed_open", 0) for r in results["wrapped"]),
        "stderr_lines": sum(len(r["stderr"].splitlines()) for kind in results.values() for r in kind),
        "samples": {
            kind: [{k: round(v, 1) for k, v in r.items() if isinstance(v, float)} for r in rs]
            for kind, rs in results.items()
        },
    }
    summary["added_whole_ms"] = round(summary["wrapped"]["whole_ms"] - summary["plain"]["whole_ms"], 1)
    return summary


def report_lines(s: dict[str, Any]) -> list[str]:
    p, w = s["plain"], s["wrapped"]
    lines = [
        f"lifecycle probe: {s['runs']} plain + {s['runs']} wrapped one-call scripts, fresh process each, warm home "
        f"(load average before {s['load_before']}, after {s['load_after']}, {s['cpus']} CPUs)",
        "",
        "| p50 ms | whole run | exit (last line to process end) | the call | before the call (imports, client) |",
        "|---|---|---|---|---|",
        f"| plain | {p['whole_ms']:.0f} | {p['exit_ms']:.0f} | {p['call_ms']:.0f} | {p['before_call_ms']:.0f} |",
        f"| wrapped | {w['whole_ms']:.0f} | {w['exit_ms']:.0f} | {w['call_ms']:.0f} | {w['before_call_ms']:.0f} |",
        "",
        f"wrapped - plain, whole run: {s['added_whole_ms']:+.0f} ms (goal <= +1500); wrapped exit "
        f"{w['exit_ms']:.0f} ms (goal <= 500)",
        "engine start p50 by part (ms; the engine's modules import while database, model and tokenizer load, "
        "side by side; then store and first_query; total is the whole start): "
        + ", ".join(f"{k} {v:.0f}" for k, v in s["engine_startup_ms"].items()),
        f"wrapped calls whose request carried the fact: {s['wrapped_calls_with_memory']}/{s['runs']}; "
        f"failed open: {s['wrapped_failed_open']}; lines on stderr (all runs): {s['stderr_lines']}",
    ]
    if s["wrapped_calls_with_memory"] < s["runs"]:
        lines.append("WARNING: some wrapped calls went out without memory")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=10, help="runs of each script (default 10)")
    parser.add_argument("--home", help="MEMWRAP_HOME to use (default: a fresh temporary one, removed afterwards)")
    parser.add_argument("--out", default=str(Path(__file__).resolve().parents[1] / "results"))
    args = parser.parse_args()
    home = Path(args.home) if args.home else Path(tempfile.mkdtemp(prefix="memwrap-lifecycle-home-"))
    try:
        summary = measure(args.runs, home)
    finally:
        if not args.home:
            _wait_for_server_to_stop(home / "pg")
            shutil.rmtree(home, ignore_errors=True)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "lifecycle.json").write_text(json.dumps(summary, indent=2))
    print("\n".join(report_lines(summary)))


def _wait_for_server_to_stop(pgdata: Path, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while (pgdata / "postmaster.pid").exists() and time.monotonic() < deadline:
        time.sleep(0.1)


if __name__ == "__main__":
    main()
