"""Whole processes: a 2xx retain survives kill -9; two servers on one PostgreSQL serve the same banks."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import httpx
from fakes.llm_server import FakeLLMServer, Reply
from test_server_harness import *  # noqa: F403 - ServerProcess, wait_until, upstream

from memwrap.store import embedded_pg


def _postmaster_pid(pgdata: Path) -> int | None:
    try:
        return int((pgdata / "postmaster.pid").read_text().split("\n", 1)[0])
    except (OSError, ValueError):
        return None


def _stop_postgres(pgdata: Path) -> None:
    """Fast shutdown of the embedded server of `pgdata`, whoever started it (a killed server never stops it)."""
    server = embedded_pg._servers.pop(pgdata.resolve(), None)  # this process's own handle
    if server is not None:
        server.cleanup()
    pid = _postmaster_pid(pgdata)
    if pid is None:
        return
    try:
        os.kill(pid, signal.SIGINT)
    except ProcessLookupError:
        return
    wait_until(lambda: _postmaster_pid(pgdata) is None, timeout=30)


def test_retain_answered_2xx_survives_kill_9_and_sigterm_is_graceful(fresh_home: Path, upstream: FakeLLMServer) -> None:
    env = {"MEMWRAP_HOME": str(fresh_home), "MEMWRAP_UPSTREAM_OPENAI_URL": upstream.openai_base_url}
    first = ServerProcess(env).start()
    try:
        created = httpx.post(first.url + "/v1/banks/durable/memories", json={"content": "Kept across a crash."})
        assert created.status_code == 201
        first.kill()  # right after the answer: no shutdown code runs
        postmaster = _postmaster_pid(fresh_home / "pg")
        assert postmaster is not None
        os.kill(postmaster, signal.SIGKILL)  # and the database crashes too: only what was committed (fsync'd) is left
        wait_until(lambda: not Path(f"/proc/{postmaster}").exists(), timeout=10)

        second = ServerProcess(env).start()
        try:
            memory_id = created.json()["ids"][0]
            found = httpx.get(f"{second.url}/v1/banks/durable/memories/{memory_id}")
            assert found.status_code == 200 and found.json()["text"] == "Kept across a crash."

            # SIGTERM during a streamed proxy call: the stream still ends complete, then the process exits cleanly.
            reply = "A slow answer that is still streaming when the server is asked to stop."
            upstream.script([Reply(text=reply, chunk_size=4, chunk_delay=0.05)])
            body = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "Talk slowly."}]}
            text = []
            with httpx.stream(
                "POST",
                second.url + "/v1/chat/completions",
                json=body,
                timeout=60,
                headers={"X-Memwrap-Bank": "durable"},
            ) as response:
                for number, line in enumerate(response.iter_lines()):
                    if number == 2:
                        assert second.proc is not None
                        second.proc.send_signal(signal.SIGTERM)
                    if line.startswith("data: {"):
                        text += [c["delta"].get("content") or "" for c in json.loads(line[6:])["choices"]]
            assert "".join(text) == reply
            assert second.stop() == 0
        finally:
            second.stop()
    finally:
        first.kill()
        _stop_postgres(fresh_home / "pg")


def test_two_servers_on_one_database(sidecar: ServerProcess, memwrap_home: Path) -> None:
    # The session's sidecar runs on the embedded PostgreSQL of the tests' home; a second, stateless server joins
    # it through that database's URL (a unix socket), as any number of `memwrap serve` processes would.
    url = embedded_pg.embedded_database_url(memwrap_home / "pg")
    with ServerProcess({"MEMWRAP_DATABASE_URL": url, "MEMWRAP_HOME": str(memwrap_home / "server-b")}) as second:
        a = httpx.Client(base_url=sidecar.url, timeout=30, headers={"Authorization": f"Bearer {ADMIN_KEY}"})
        b = httpx.Client(base_url=second.url, timeout=30)
        assert b.get("/health").json()["engine"] == "postgres"
        a.delete("/v1/banks/shared")
        ids = a.post("/v1/banks/shared/memories", json={"content": "Retained through server A."}).json()["ids"]
        recall = b.post("/v1/banks/shared/recall", json={"query": "Which server was it retained through?"}).json()
        assert recall["memories"][0]["id"] == ids[0], recall
        # Either may delete; the other sees it at once (the servers keep no cache).
        assert b.delete(f"/v1/banks/shared/memories/{ids[0]}").status_code == 204
        assert a.get(f"/v1/banks/shared/memories/{ids[0]}").status_code == 404
