"""The hook service: one resident process per home (and configuration) that runs `memwrap hook` requests with
the engine kept open, so a hook costs a socket round trip instead of a Python start, the engine's imports, the
embedding model's load and PostgreSQL's attach (seconds).

`memwrap hook` (memwrap/integrations/hook_client.py) starts it on first use: `python -m
memwrap.integrations.hook_service --socket PATH`. It listens on that Unix socket (in a directory only this user
can enter), one JSON request per connection, one JSON answer ({"stdout", "stderr"}). It exits after
MEMWRAP_HOOK_IDLE_SECONDS (default 600) without a request, closing the engine (the embedded PostgreSQL stops when
its last process is gone). A lock file keeps a second service of the same socket from starting.

Nothing waits on an LLM: the embedded engine is opened with no worker and an extraction deadline of 0, so retain
stores the text at once and its extraction job (when an LLM is configured) is left queued for `memwrap serve` or
`memwrap worker`. Through a sidecar (the request's url), the sidecar's own settings apply.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import fcntl
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from memwrap.integrations.claude_code import HookOptions, event_name, output, run_hook, verbose_lines

IDLE_ENV = "MEMWRAP_HOOK_IDLE_SECONDS"
DEFAULT_IDLE_SECONDS = 600.0
MAX_REQUEST_BYTES = 20 * 1024 * 1024


def _memory(home: str | None, database_url: str | None, url: str | None, api_key: str | None) -> Any:
    from memwrap.api import AsyncMemory
    from memwrap.config import load_settings

    settings = load_settings(home=home, database_url=database_url, extraction_deadline=0.0, worker="off")
    return AsyncMemory(settings=settings, url=url, api_key=api_key) if url else AsyncMemory(settings=settings)


def _options(raw: Any) -> HookOptions:
    given = raw if isinstance(raw, dict) else {}
    budget = given.get("token_budget")
    return HookOptions(
        bank=given.get("bank") or None,
        agent=given.get("agent") or None,
        recall=bool(given.get("recall")),
        token_budget=budget if isinstance(budget, int) else HookOptions.token_budget,
        query=given.get("query") or None,
        project_dir=given.get("project_dir") or None,
        cwd=given.get("cwd") or None,
    )


async def answer(memory: Any, request: dict[str, Any]) -> dict[str, Any]:
    """What the hook prints for `request`: stdout (the agent reads it) and stderr lines."""
    payload = request.get("payload")
    if not isinstance(payload, dict):
        raise ValueError("the hook payload on stdin is not a JSON object")
    event = event_name(request.get("event"), payload)
    options = _options(request.get("options"))
    result = await run_hook(memory, event, payload, options)
    return {"stdout": output(event, result), "stderr": verbose_lines(result) if request.get("verbose") else []}


def answer_in_process(
    request: dict[str, Any], home: str | None, database_url: str | None, timeout: float
) -> dict[str, Any]:
    """MEMWRAP_HOOK_SERVICE=off: the request run here, with its own engine."""
    from memwrap.integrations.reserved_stdout import reserved_stdout

    async def once() -> dict[str, Any]:
        memory = _memory(home, database_url, request.get("url"), request.get("api_key"))
        try:
            return await asyncio.wait_for(answer(memory, request), timeout=max(0.05, timeout))
        finally:
            await memory.close()

    with reserved_stdout() as out:  # the engine's noise (and its child processes') goes to stderr
        result = asyncio.run(once())
        out.flush()
    return result


class Service:
    """The resident process: an embedded engine opened once, a client per sidecar URL and key."""

    def __init__(self, home: str | None, database_url: str | None, idle: float) -> None:
        self.home, self.database_url, self.idle = home, database_url, idle
        self.memories: dict[tuple[str | None, str | None], Any] = {}
        self.last = time.monotonic()
        self.busy = 0

    def memory(self, url: str | None, api_key: str | None) -> Any:
        key = (url, api_key if url else None)
        if key not in self.memories:
            self.memories[key] = _memory(self.home, self.database_url, url, api_key)
        return self.memories[key]

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.busy += 1
        try:
            try:
                line = await reader.readline()
                request = json.loads(line)
                if not isinstance(request, dict):
                    raise ValueError("a hook request is a JSON object")
                memory = self.memory(request.get("url"), request.get("api_key"))
                reply = await answer(memory, request)
            except Exception as exc:  # noqa: BLE001 - the hook prints it; the service stays up
                reply = {"stdout": "", "stderr": [f"memwrap hook: {type(exc).__name__}: {exc}"]}
            writer.write(json.dumps(reply).encode())
            await writer.drain()
        finally:
            self.busy -= 1
            self.last = time.monotonic()
            with contextlib.suppress(OSError):
                writer.close()

    async def serve(self, path: Path) -> None:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()  # a stale socket of a service that died: ours now (we hold the lock)
        server = await asyncio.start_unix_server(self.handle, path=str(path), limit=MAX_REQUEST_BYTES)
        os.chmod(path, 0o600)
        try:
            while self.busy or time.monotonic() - self.last < self.idle:
                await asyncio.sleep(min(1.0, self.idle / 4))
        finally:
            server.close()
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
            for memory in self.memories.values():
                with contextlib.suppress(Exception):
                    await memory.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="memwrap-hook-service")
    parser.add_argument("--socket", required=True)
    parser.add_argument("--home")
    parser.add_argument("--database-url")
    args = parser.parse_args(argv)
    path = Path(args.socket)
    lock = open(path.with_suffix(".lock"), "w")  # noqa: SIM115 - held for the process's life
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return 0  # another service of this socket is starting or running
    idle = float(os.environ.get(IDLE_ENV) or DEFAULT_IDLE_SECONDS)
    service = Service(args.home, args.database_url, idle)
    sys.stderr.write(f"memwrap hook service {os.getpid()} on {path} (idle exit after {idle:g} s)\n")
    asyncio.run(service.serve(path))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
