"""A local webhook receiver for the tests (127.0.0.1): it checks each request's signature with the recipe of
docs/webhooks.md, written out as a receiver would, keeps every request (`raw`) and accepts each idempotency key once
(`accepted`); it can be slow (accept, then answer only once released) or answer a status code of the test's choice.
And `drive`: run 'webhook' jobs of a Memory's engine until a condition holds."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import socket
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from memwrap import Memory
from memwrap.engine.jobs.worker import Worker
from memwrap.engine.learn.kinds import BUILTIN_KINDS


def signature_ok(secret: str, headers: dict[str, str], body: bytes, tolerance: int = 300) -> bool:
    timestamp = headers["memwrap-timestamp"]
    if abs(time.time() - int(timestamp)) > tolerance:
        return False
    expected = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()
    given = [p.removeprefix("v1=") for p in headers["memwrap-signature"].split() if p.startswith("v1=")]
    return any(hmac.compare_digest(expected, g) for g in given)


@dataclass
class Received:
    path: str
    event_id: str
    headers: dict[str, str]
    body: bytes

    @property
    def payload(self) -> dict[str, Any]:
        return dict(json.loads(self.body))


@dataclass
class Receiver:
    """POSTs land in `raw` (every attempt); `accepted` keeps one per idempotency key, as a receiver should."""

    port: int
    secrets: dict[str, str] = field(default_factory=dict)  # path -> the subscription's secret
    mode: str = "up"  # up: 200; slow: accept, answer once `release` is set; or a status code to answer
    raw: list[Received] = field(default_factory=list)
    accepted: dict[str, Received] = field(default_factory=dict)
    accepted_order: list[str] = field(default_factory=list)
    bad_signatures: list[Received] = field(default_factory=list)
    release: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)
    server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                body = self.rfile.read(int(self.headers["Content-Length"]))
                headers = {k.lower(): v for k, v in self.headers.items()}
                got = Received(self.path, headers["memwrap-event-id"], headers, body)
                with receiver.lock:
                    receiver.raw.append(got)
                    mode = receiver.mode
                    if not signature_ok(receiver.secrets[self.path], headers, body):
                        receiver.bad_signatures.append(got)
                        self._answer(400)
                        return
                    if mode in ("up", "slow") and got.event_id not in receiver.accepted:
                        receiver.accepted[got.event_id] = got
                        receiver.accepted_order.append(got.event_id)
                if mode == "slow":
                    receiver.release.wait(60)
                self._answer(int(mode) if mode.isdigit() else 200)

            def _answer(self, status: int) -> None:
                try:
                    self.send_response(status)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                except OSError:  # the sender gave up waiting (the slow phase): nobody is listening any more
                    pass

            def log_message(self, *args: Any) -> None:
                pass

        ThreadingHTTPServer.allow_reuse_address = True
        self.server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.release.set()
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def drive(mem: Memory, done: Callable[[], Awaitable[bool]], what: str, *, deadline: float = 120.0) -> None:
    """Run 'webhook' jobs (one at a time, as they fall due) until `done()`."""

    async def run() -> None:
        worker = Worker(
            (await mem.aio._get_engine()).parts, registry=BUILTIN_KINDS, kinds=["webhook"], worker_id="tests"
        )
        give_up = time.monotonic() + deadline
        while not await done():
            if time.monotonic() > give_up:
                raise AssertionError(f"still waiting for {what}")
            if not await worker.run_one():
                await asyncio.sleep(0.01)

    mem._run(run())
