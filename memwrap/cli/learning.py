"""`memwrap worker`, `memwrap jobs`, `memwrap export DIR`: the learning commands. Light to import: the engine loads
inside the commands."""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from memwrap.cli.registry import Register
from memwrap.cli.render import print_json

T = TypeVar("T")


def _settings(args: argparse.Namespace, **overrides: Any) -> Any:
    from memwrap.config import load_settings

    return load_settings(home=args.home, database_url=args.database_url, **overrides)


# --- memwrap worker ------------------------------------------------------------------------------------------


def configure_worker(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--concurrency", type=int, metavar="N", help="jobs run at once (MEMWRAP_WORKER_CONCURRENCY, default 1)"
    )
    parser.add_argument("--id", metavar="NAME", help="worker name shown in `memwrap jobs` (default host:pid)")
    parser.add_argument(
        "--kind", action="append", metavar="KIND", help="only run jobs of this kind; repeat it, e.g. --kind consolidate"
    )
    parser.add_argument("--drain", action="store_true", help="run the jobs that are due, then exit")


def cmd_worker(args: argparse.Namespace) -> int:
    return asyncio.run(_run_worker(args))


async def _run_worker(args: argparse.Namespace) -> int:
    from memwrap import tracing
    from memwrap.engine.jobs.worker import Worker
    from memwrap.engine.learn import reconcile
    from memwrap.engine.learn.kinds import BUILTIN_KINDS
    from memwrap.engine.startup import open_engine

    tracing.trace_every_bank_in_background()  # a worker's jobs are all it does: trace them all
    engine = await open_engine(_settings(args, worker="off"), model_on_first_use=True)
    try:
        worker = Worker(
            engine.parts,
            worker_id=args.id,
            concurrency=args.concurrency,
            kinds=args.kind,
            listen=not args.drain,
            registry=BUILTIN_KINDS,
            reconcile=reconcile.run,
        )
        if args.drain:
            ran = await worker.drain(timeout=float("inf"))
            _report({"worker": worker.worker_id, "ran": ran}, args, f"Ran {ran} job(s).")
            return 0
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, worker.request_stop)
        await worker.start()
        _report({"worker": worker.worker_id, "ready": True}, args, f"worker {worker.worker_id} ready")
        await worker.wait_stopped()
        await worker.stop()
        _report(
            {"worker": worker.worker_id, "completed": worker.completed},
            args,
            f"worker {worker.worker_id} stopped after {worker.completed} job(s)",
        )
        return 0
    finally:
        await engine.close()


async def _with_engine(args: argparse.Namespace, call: Callable[[Any], Awaitable[T]]) -> T:
    """Run one engine call. Looking at the queue or exporting starts no worker and loads no embedding model."""
    from memwrap.engine.startup import open_engine

    engine = await open_engine(_settings(args, worker="off"), model_on_first_use=True)
    try:
        return await call(engine)
    finally:
        await engine.close()


def _report(data: dict[str, Any], args: argparse.Namespace, text: str) -> None:
    if args.json:
        sys.stdout.write(json.dumps(data) + "\n")
    else:
        sys.stdout.write(text + "\n")
    sys.stdout.flush()


# --- memwrap jobs --------------------------------------------------------------------------------------------


def configure_jobs(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--bank", metavar="BANK_ID", help="only this bank's jobs, e.g. alice")
    parser.add_argument(
        "--status", choices=["queued", "running", "done", "failed", "cancelled"], help="only jobs in this state"
    )
    parser.add_argument("--kind", metavar="KIND", help="only jobs of this kind, e.g. consolidate")
    parser.add_argument(
        "--limit", type=int, default=50, metavar="N", help="at most this many, newest first (default 50)"
    )
    parser.add_argument("--ids", action="store_true", help="print only the job ids, one a line")


def cmd_jobs(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.table import Table

    jobs = asyncio.run(
        _with_engine(args, lambda e: e.jobs(args.bank, status=args.status, kind=args.kind, limit=args.limit))
    )
    if args.json:
        print_json([j.model_dump(mode="json") for j in jobs])
        return 0
    if args.ids:
        sys.stdout.writelines(f"{j.id}\n" for j in jobs)
        return 0
    counts = Counter(j.status for j in jobs)
    # Ids, banks and short fields whole (ids are pasted into other commands); the error or result wraps.
    table = Table(title="Jobs (newest first)  " + "  ".join(f"{s}: {n}" for s, n in sorted(counts.items())))
    for column in ("id", "kind", "bank", "status", "tries", "when (UTC)", "error / result"):
        whole = column != "error / result"
        table.add_column(column, no_wrap=whole, overflow="fold", min_width=len(column) if whole else 12)
    for j in jobs:
        detail = j.last_error or (json.dumps(j.result, default=str, separators=(",", ":")) if j.result else "")
        when = (
            f"done {j.finished_at:%m-%d %H:%M}"
            if j.finished_at
            else f"due {j.run_after:%m-%d %H:%M}"
            if j.run_after
            else ""
        )
        table.add_row(
            str(j.id),
            j.kind,
            j.bank_id or "",
            f"{j.status} ({j.locked_by})" if j.status == "running" and j.locked_by else j.status,
            f"{j.attempts}/{j.max_attempts}",
            when,
            detail[:200],
        )
    Console().print(table)
    return 0


# --- memwrap export ------------------------------------------------------------------------------------------


def configure_export(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "directory", metavar="DIR", help="where to write <bank>/mental-models/<name>.md and <bank>/observations.md"
    )
    parser.add_argument("--bank", metavar="BANK_ID", help="only this bank, e.g. alice")


def cmd_export(args: argparse.Namespace) -> int:
    from pathlib import Path

    from memwrap.errors import InvalidInputError

    target = Path(args.directory)
    for place in (target, *target.parents):  # the first part that exists must be a directory
        if place.exists():
            if not place.is_dir():
                raise InvalidInputError(f"{place} is a file, not a directory: give a directory to write into.")
            break
    paths = asyncio.run(_with_engine(args, lambda e: e.export(args.directory, bank_id=args.bank)))
    if args.json:
        print_json([str(p) for p in paths])
    else:
        sys.stdout.write(f"Wrote {len(paths)} file(s) under {args.directory}\n")
    return 0


def register(add: Register) -> None:
    add("worker", configure_worker, cmd_worker, "run background jobs (consolidation, mental models, TTL) until stopped")
    add("jobs", configure_jobs, cmd_jobs, "show the background job queue")
    add("export", configure_export, cmd_export, "write mental models and observations as Markdown")
