"""`memwrap ui` where a port is already taken: a memwrap server already serving the home is reused (nothing new
starts), a port asked for that another program holds is a one-line error, and the default port held by another
program gives way to a free one."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from conftest_wrappers import *  # noqa: F403 - fixtures: warm_memory
from test_server_harness import *  # noqa: F403 - fixtures: sidecar, upstream_server
from test_server_harness import ServerProcess, wait_until

from memwrap.config import load_settings
from memwrap_server.commands import default_port

DEFAULT_PORT = default_port()  # 8765 unless MEMWRAP_PORT says otherwise


def _memwrap(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "memwrap.cli", *args], capture_output=True, text=True, timeout=300, env=env
    )


@pytest.fixture
def held_port() -> Iterator[socket.socket]:
    """A port another program listens on (a plain socket: no memwrap behind it)."""
    with socket.socket() as other:
        other.bind(("127.0.0.1", 0))
        other.listen()
        yield other


def test_health_says_which_store_it_serves(sidecar: ServerProcess, memwrap_home: Path) -> None:
    body = httpx.get(sidecar.url + "/health", timeout=10).json()
    assert body["store"] == load_settings(home=memwrap_home).store_fingerprint
    assert str(memwrap_home) not in body["store"]  # a hash, not the path
    assert load_settings(home=memwrap_home / "elsewhere").store_fingerprint != body["store"]


def test_a_server_already_serving_the_home_is_reused(sidecar: ServerProcess, memwrap_home: Path) -> None:
    done = _memwrap("ui", "--no-browser", "--home", str(memwrap_home), "--port", str(sidecar.port))
    assert done.returncode == 0, done.stderr
    assert f"http://127.0.0.1:{sidecar.port}/ui/" in done.stdout and "already serving this home" in done.stdout


def test_a_port_asked_for_that_another_program_holds_is_a_clear_error(
    held_port: socket.socket, fresh_home: Path
) -> None:
    port = held_port.getsockname()[1]
    done = _memwrap("ui", "--no-browser", "--home", str(fresh_home), "--port", str(port))
    assert done.returncode == 2 and "Traceback" not in done.stderr + done.stdout
    [line] = done.stderr.splitlines()  # one line: what is wrong, and what to do
    assert f"Port {port} on 127.0.0.1 is in use by another program" in line and "--port" in line


def test_a_memwrap_server_of_another_home_does_not_count_as_this_one(sidecar: ServerProcess, fresh_home: Path) -> None:
    done = _memwrap("ui", "--no-browser", "--home", str(fresh_home), "--port", str(sidecar.port))
    assert done.returncode == 2 and "not a memwrap server on this home" in done.stderr


def test_the_default_port_taken_gives_way_to_a_free_one(fresh_home: Path, warm_memory: Any) -> None:
    with socket.socket() as other:
        try:
            other.bind(("127.0.0.1", DEFAULT_PORT))
        except OSError:
            pytest.skip(f"port {DEFAULT_PORT} is already in use on this machine")
        other.listen()
        (fresh_home / "models").symlink_to(Path(warm_memory.settings.home) / "models", target_is_directory=True)
        process = subprocess.Popen(
            [sys.executable, "-m", "memwrap.cli", "ui", "--no-browser", "--home", str(fresh_home)],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env={**os.environ, "MEMWRAP_LOG_LEVEL": "warning"},
        )
        try:
            assert process.stdout is not None
            first = process.stdout.readline()
            found = re.search(r"http://127\.0\.0\.1:(\d+)/ui/", first)
            assert found and int(found.group(1)) != DEFAULT_PORT, first
            assert f"port {DEFAULT_PORT} is taken" in first
            port = int(found.group(1))

            def serving() -> bool:
                try:
                    return httpx.get(f"http://127.0.0.1:{port}/health", timeout=2).json().get("store") == (
                        load_settings(home=fresh_home).store_fingerprint
                    )
                except httpx.HTTPError:
                    return False

            assert wait_until(serving, timeout=300, interval=0.5)
        finally:
            process.send_signal(signal.SIGINT)
            process.wait(timeout=60)
