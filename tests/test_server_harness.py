"""Real `memwrap serve` processes on loopback for the server, proxy, MCP and client tests (no tests here).

    from test_server_harness import *      # fixtures: sidecar, sidecar_http, ...; helpers: ServerProcess

`sidecar` is one server for the session, on the session's embedded PostgreSQL (MEMWRAP_HOME of the tests),
with API keys on (ADMIN_KEY: every bank; ALICE_KEY: alice and alice-*), proxying to `upstream`, a fake LLM.
"""

from __future__ import annotations

import atexit
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fakes.llm_server import FakeLLMServer

__all__ = [
    "ADMIN_KEY",
    "ALICE_KEY",
    "ServerProcess",
    "admin",
    "free_port",
    "sidecar",
    "upstream",
    "upstream_server",
    "wait_until",
]

ADMIN_KEY = "admin-test-key"
ALICE_KEY = "alice-test-key"
ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_until(check: Any, timeout: float = 15.0, interval: float = 0.05) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(interval)


class ServerProcess:
    """`python -m memwrap_server` in a subprocess, on 127.0.0.1 at a free port; its log goes to a temp file."""

    def __init__(self, env: dict[str, str], port: int | None = None) -> None:
        self.port = port or free_port()
        self.env = {
            **os.environ,
            "HF_HUB_OFFLINE": "1",
            "TOKENIZERS_PARALLELISM": "false",
            "MEMWRAP_HOST": "127.0.0.1",
            "MEMWRAP_PORT": str(self.port),
            "MEMWRAP_LOG_LEVEL": "warning",
            **env,
        }
        fd, log = tempfile.mkstemp(prefix="memwrap-server-", suffix=".log")
        os.close(fd)
        self.log = Path(log)
        atexit.register(self.log.unlink, missing_ok=True)  # kept until the run ends: failures print its tail
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, wait: bool = True) -> ServerProcess:
        with self.log.open("ab") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "memwrap_server"], env=self.env, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT
            )
        if wait:
            self.wait_ready()
        return self

    def wait_ready(self, timeout: float = 300.0) -> None:  # a fresh home exports the ONNX model first
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise RuntimeError(f"memwrap server exited with {self.proc.returncode}:\n{self.tail()}")
            try:
                if httpx.get(self.url + "/health", timeout=1.0).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        raise RuntimeError(f"memwrap server not ready after {timeout}s:\n{self.tail()}")

    def tail(self, chars: int = 4000) -> str:
        return self.log.read_text(errors="replace")[-chars:]

    def kill(self) -> None:
        """SIGKILL: no shutdown code runs."""
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)

    def stop(self, timeout: float = 30.0) -> int | None:
        """SIGTERM, the graceful way; SIGKILL if it does not exit in time."""
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.kill()
        return self.proc.returncode if self.proc else None

    def __enter__(self) -> ServerProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
        self.log.unlink(missing_ok=True)


# One sidecar and one fake upstream per pytest process, shared by every module that imports these fixtures
# (a session fixture imported into several modules would otherwise start once per module).
_shared: dict[str, Any] = {}


@pytest.fixture(scope="session")
def upstream_server() -> FakeLLMServer:
    if "upstream" not in _shared:
        _shared["upstream"] = FakeLLMServer().start()
    return _shared["upstream"]


@pytest.fixture
def upstream(upstream_server: FakeLLMServer) -> FakeLLMServer:
    """The fake OpenAI/Anthropic upstream of the sidecar's proxy, with no script and no recorded requests."""
    upstream_server.reset()
    return upstream_server


@pytest.fixture(scope="session")
def sidecar(request: pytest.FixtureRequest, memwrap_home: Path, upstream_server: FakeLLMServer) -> ServerProcess:
    if "sidecar" not in _shared:
        env = {
            "MEMWRAP_HOME": str(memwrap_home),
            "MEMWRAP_API_KEYS": f"{ADMIN_KEY},{ALICE_KEY}:alice|alice-*",
            "MEMWRAP_UPSTREAM_OPENAI_URL": upstream_server.openai_base_url,
            "MEMWRAP_UPSTREAM_ANTHROPIC_URL": upstream_server.anthropic_base_url,
            "MEMWRAP_GRACEFUL_TIMEOUT": "5",
            # The auth, hardening and fuzz modules send hundreds of refused requests on purpose, as fast as they
            # can; the failure budget has its own test (test_server_throttle.py) and would only slow these down.
            "MEMWRAP_FAILURE_RATE": "0",
        }
        _shared["sidecar"] = ServerProcess(env).start()
    # Stopped before memwrap_home goes away (it was set up first, so it is torn down last).
    request.addfinalizer(_stop_shared)
    return _shared["sidecar"]


def _stop_shared() -> None:
    server = _shared.pop("sidecar", None)
    if server is not None:
        server.stop()
        server.log.unlink(missing_ok=True)
    upstream = _shared.pop("upstream", None)
    if upstream is not None:
        upstream.stop()


@pytest.fixture
def admin(sidecar: ServerProcess) -> Iterator[httpx.Client]:
    """An httpx client on the session's sidecar with the all-banks key."""
    with httpx.Client(base_url=sidecar.url, headers={"Authorization": f"Bearer {ADMIN_KEY}"}, timeout=30) as client:
        yield client
