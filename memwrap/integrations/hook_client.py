"""`memwrap hook EVENT`: the process Claude Code (or Codex) starts for each hook. Standard library only, so it
starts in tens of milliseconds: it reads the payload, hands it to the hook service of this home (a resident
process, memwrap/integrations/hook_service.py, started on first use and gone when idle) over a Unix socket, and
prints what the service answers. The engine, the embedding model and PostgreSQL stay warm in the service.

A hook must never get in the agent's way: any failure is one line on stderr and exit status 0 (the agent treats 2
as "block"), and the whole hook (stdin, the service's start, the answer) gives up after `--timeout` seconds.
MEMWRAP_HOOK_SERVICE=off runs the hook in this process instead (each hook then opens the engine: seconds).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from memwrap.integrations.hook_bank import project_bank

DEFAULT_TIMEOUT = 45.0  # under Claude Code's own 60 s default for a command hook
DEFAULT_TOKEN_BUDGET = 800
MAX_PAYLOAD_BYTES = 16 * 1024 * 1024  # a payload carries a prompt, never a transcript
SERVICE_ENV = "MEMWRAP_HOOK_SERVICE"
EVENT_NAMES = "SessionStart, UserPromptSubmit, Stop, SubagentStop, PreCompact, SessionEnd"


class HookTimeout(Exception):
    """The hook's time ran out."""


def project_dir(payload: dict[str, Any], claude_project_dir: str | None = None) -> Path:
    """The project: CLAUDE_PROJECT_DIR (set by Claude Code for hooks; stable when the session changes directory),
    else the payload's cwd, else this process's."""
    found = claude_project_dir or payload.get("cwd") or os.getcwd()
    return Path(str(found)).expanduser().resolve()


# --- the service's address -----------------------------------------------------------------------------------


def service_key(home: str | None, database_url: str | None) -> str:
    """One service per home and configuration: the MEMWRAP_* environment (but the per-request sidecar URL and
    key) is part of the key, so a session configured otherwise gets its own service rather than another's."""
    env = {
        k: v for k, v in os.environ.items() if k.startswith("MEMWRAP_") and k not in {"MEMWRAP_URL", "MEMWRAP_API_KEY"}
    }
    home_path = home or env.get("MEMWRAP_HOME") or "~/.memwrap"
    env["home"] = str(Path(home_path).expanduser().resolve())
    env["database_url"] = database_url or ""
    env["python"] = sys.executable
    return hashlib.sha256(json.dumps(env, sort_keys=True).encode()).hexdigest()[:20]


def service_dir() -> Path:
    """A directory only this user can enter: $XDG_RUNTIME_DIR/memwrap, else <tmp>/memwrap-hooks-<uid>."""
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    base = (
        Path(runtime) / "memwrap"
        if runtime
        else Path(os.environ.get("TMPDIR") or "/tmp") / f"memwrap-hooks-{os.getuid()}"
    )
    base.mkdir(mode=0o700, parents=True, exist_ok=True)
    info = base.lstat()
    if info.st_uid != os.getuid() or info.st_mode & 0o077:
        raise PermissionError(f"{base} is not a private directory of this user; remove it")
    return base


# --- talking to the service ----------------------------------------------------------------------------------


def _connect(path: Path, deadline: float) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(max(0.05, deadline - time.monotonic()))
    try:
        sock.connect(str(path))
    except OSError:
        sock.close()
        raise
    return sock


def _start_service(args: argparse.Namespace, path: Path) -> None:
    command = [sys.executable, "-m", "memwrap.integrations.hook_service", "--socket", str(path)]
    if args.home:
        command += ["--home", args.home]
    if args.database_url:
        command += ["--database-url", args.database_url]
    log = open(path.with_suffix(".log"), "ab")  # noqa: SIM115 - handed to the child, closed here after the spawn
    try:
        # Its own session and no inherited descriptor: the agent waits for the hook's stdout to close, never for
        # the service's.
        subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True, close_fds=True
        )
    finally:
        log.close()


def call_service(args: argparse.Namespace, request: dict[str, Any], deadline: float) -> dict[str, Any]:
    """The service's answer to `request`, starting the service first when none answers."""
    path = service_dir() / f"{service_key(args.home, args.database_url)}.sock"
    started = False
    while True:
        try:
            sock = _connect(path, deadline)
            break
        except (FileNotFoundError, ConnectionRefusedError):
            if not started:
                _start_service(args, path)
                started = True
            if time.monotonic() + 0.05 >= deadline:
                raise HookTimeout from None
            time.sleep(0.05)
    with sock:
        sock.settimeout(max(0.05, deadline - time.monotonic()))
        try:
            sock.sendall(json.dumps(request).encode() + b"\n")
            chunks = []
            while chunk := sock.recv(65536):
                chunks.append(chunk)
        except TimeoutError:
            raise HookTimeout from None
    answer = json.loads(b"".join(chunks) or b"{}")
    if not isinstance(answer, dict):
        raise ValueError("the hook service answered something that is not a JSON object")
    return answer


# --- the command ---------------------------------------------------------------------------------------------


def _read_stdin(timeout: float) -> bytes:
    """At most MAX_PAYLOAD_BYTES of stdin, within `timeout` (a stdin nobody closes must not hold the agent)."""
    got: list[bytes] = []

    def read() -> None:
        got.append(sys.stdin.buffer.read(MAX_PAYLOAD_BYTES + 1))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(timeout)
    if not got:
        raise HookTimeout
    if len(got[0]) > MAX_PAYLOAD_BYTES:
        raise ValueError(f"the hook payload is over {MAX_PAYLOAD_BYTES // 1024 // 1024} MiB; nothing was done")
    return got[0]


def parse_payload(raw: bytes) -> dict[str, Any]:
    """The payload: bytes that are not UTF-8 replaced (as the proxy reads a body), then JSON."""
    text = raw.decode("utf-8", "replace")
    payload = json.loads(text) if text.strip() else {}
    if not isinstance(payload, dict):
        raise ValueError("the hook payload on stdin is not a JSON object")
    return payload


def request_of(args: argparse.Namespace, payload: dict[str, Any]) -> dict[str, Any]:
    return {
        "event": args.event,
        "payload": payload,
        "options": {
            "bank": args.bank,
            "agent": args.agent,
            "recall": args.recall,
            "token_budget": args.token_budget,
            "query": args.query,
            "project_dir": os.environ.get("CLAUDE_PROJECT_DIR") or None,
            "cwd": os.getcwd(),
        },
        "url": args.url or os.environ.get("MEMWRAP_URL") or None,
        "api_key": os.environ.get("MEMWRAP_API_KEY") or None,
        "verbose": args.verbose,
    }


def run(args: argparse.Namespace) -> int:
    """Exit status 0 whatever happens: a hook that fails must leave the agent alone (the reason on stderr)."""
    deadline = time.monotonic() + args.timeout
    try:
        if args.show_bank:
            sys.stdout.write((args.bank or project_bank(project_dir({}, os.environ.get("CLAUDE_PROJECT_DIR")))) + "\n")
            return 0
        payload = parse_payload(_read_stdin(args.timeout))
        request = request_of(args, payload)
        if os.environ.get(SERVICE_ENV, "").lower() in {"off", "0", "false", "no"}:
            from memwrap.integrations.hook_service import answer_in_process

            answer = answer_in_process(request, args.home, args.database_url, deadline - time.monotonic())
        else:
            answer = call_service(args, request, deadline)
        sys.stdout.write(str(answer.get("stdout") or ""))
        sys.stdout.flush()
        for line in answer.get("stderr") or []:
            sys.stderr.write(f"{line}\n")
    except (HookTimeout, TimeoutError):
        sys.stderr.write(f"memwrap hook: gave up after {args.timeout:g} s; nothing was injected.\n")
    except Exception as exc:  # noqa: BLE001 - whatever went wrong, the agent goes on
        sys.stderr.write(f"memwrap hook: {type(exc).__name__}: {exc}\n")
    return 0


def configure(parser: argparse.ArgumentParser, *, common: bool = False) -> None:
    """The options of `memwrap hook` (`common`: also --home and --database-url, which the full CLI adds itself)."""
    parser.add_argument("event", nargs="?", help=f"{EVENT_NAMES} (any case, - or _); default: the payload's")
    parser.add_argument("--bank", help="the bank (default: one per project, see --show-bank)")
    parser.add_argument("--agent", choices=["claude-code", "codex"], help="whose session (default: from the payload)")
    parser.add_argument("--url", help="a `memwrap serve` sidecar (MEMWRAP_URL; default: the embedded engine)")
    parser.add_argument(
        "--recall", action="store_true", help="UserPromptSubmit: also inject what memory holds for the prompt"
    )
    parser.add_argument("--query", help="SessionStart: the recall query (default: what matters for this project)")
    parser.add_argument("--token-budget", type=int, default=DEFAULT_TOKEN_BUDGET, help="tokens of injected memory")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, help="seconds before the hook gives up")
    parser.add_argument("--show-bank", action="store_true", help="print the bank this directory's hooks use, and exit")
    parser.add_argument("--verbose", action="store_true", help="say on stderr what was retained (secrets redacted)")
    if common:
        parser.add_argument("--home", help="data directory of the embedded database (MEMWRAP_HOME)")
        parser.add_argument("--database-url", help="external PostgreSQL (MEMWRAP_DATABASE_URL)")
        parser.add_argument("--json", action="store_true", help=argparse.SUPPRESS)


def main(argv: list[str]) -> int:
    """`memwrap hook ...` without the full CLI (memwrap/launcher.py sends it here)."""
    parser = argparse.ArgumentParser(prog="memwrap hook", description="Coding-agent hooks (stdin JSON)")
    configure(parser, common=True)
    return run(parser.parse_args(argv))
