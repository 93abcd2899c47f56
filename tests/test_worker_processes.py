"""`memwrap worker` processes on one database: a 500-job backlog shared by two workers with no job done twice,
and a worker killed with SIGKILL in the middle of a consolidation whose job another worker completes once in
effect (no duplicate observation). Consolidation talks to the fake LLM, which can hold a reply back."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from fakes.llm_server import FakeLLMServer, Reply

from memwrap import Memory
from memwrap.config import load_settings

LEASE_SECONDS = 2.0
FACT_LINE_PREFIX = "[F"


class WorkerProcess:
    def __init__(self, name: str, env: dict[str, str]) -> None:
        self.name = name
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "memwrap.cli", "worker", "--id", name, "--json"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line.strip())

    def wait_ready(self, timeout: float = 120.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if any('"ready": true' in line for line in self.lines):
                return
            if self.proc.poll() is not None:
                raise AssertionError(
                    f"worker {self.name} exited: {self.proc.stderr.read() if self.proc.stderr else ''}"
                )
            time.sleep(0.05)
        raise AssertionError(f"worker {self.name} not ready after {timeout}s")

    def stop(self, timeout: float = 20.0) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout=timeout)

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=10)


@pytest.fixture(scope="module")
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as fake:
        yield fake


@pytest.fixture(scope="module")
def home() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="memwrap-workers-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _llm_settings(server: FakeLLMServer) -> dict[str, Any]:
    return {
        "llm_provider": "none",
        "consolidation_provider": "openai",
        "consolidation_model": "fake-consolidator",
        "consolidation_base_url": server.openai_base_url,
        "consolidation_api_key": "sk-test",
        "llm_max_retries": 0,
        "llm_timeout": 60.0,
    }


@pytest.fixture(scope="module")
def mem(home: Path, server: FakeLLMServer) -> Iterator[Memory]:
    with Memory(settings=load_settings(home=home, worker="off", **_llm_settings(server))) as memory:
        memory.banks()  # creates the database before the workers attach to it
        yield memory


@pytest.fixture(scope="module")
def workers(mem: Memory, home: Path, server: FakeLLMServer) -> Iterator[dict[str, WorkerProcess]]:
    env = {
        **os.environ,
        "MEMWRAP_HOME": str(home),
        "HF_HUB_OFFLINE": "1",
        "MEMWRAP_WORKER_LEASE_SECONDS": str(LEASE_SECONDS),
        "MEMWRAP_WORKER_POLL_SECONDS": "0.2",
        "MEMWRAP_CONSOLIDATION_DELAY_SECONDS": "0",
    }
    env.update({f"MEMWRAP_{k.upper()}": str(v) for k, v in _llm_settings(server).items()})
    env.pop("MEMWRAP_DATABASE_URL", None)
    started = {name: WorkerProcess(name, env) for name in ("worker-a", "worker-b")}
    started["env"] = env  # type: ignore[assignment]  # the dict holds mixed values
    try:
        for name in ("worker-a", "worker-b"):
            started[name].wait_ready()
        yield started
    finally:
        for worker in started.values():
            if isinstance(worker, WorkerProcess) and worker.proc.poll() is None:
                worker.kill()


def _pool(mem: Memory) -> Any:
    return mem._run(mem.aio._get_engine()).store.pool


def test_two_workers_share_a_500_job_backlog_and_do_no_job_twice(mem: Memory, workers: dict[str, Any]) -> None:
    pool = _pool(mem)
    mem._run(
        pool.execute(
            "INSERT INTO jobs (kind, payload, max_attempts) "
            "SELECT 'noop', jsonb_build_object('sleep', 0.004, 'n', n), 3 FROM generate_series(1, 500) AS n;"
            "SELECT pg_notify('memwrap_jobs', 'noop')"
        )
    )
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        if mem._run(pool.fetchval("SELECT count(*) FROM jobs WHERE kind = 'noop' AND status = 'done'")) == 500:
            break
        time.sleep(0.1)
    runs = mem._run(
        pool.fetch(
            "SELECT j.id, j.status, count(r.*) AS runs, count(*) FILTER (WHERE r.outcome = 'done') AS done, "
            "min(r.worker_id) AS worker FROM jobs j LEFT JOIN job_runs r ON r.job_id = j.id "
            "WHERE j.kind = 'noop' GROUP BY j.id"
        )
    )
    assert len(runs) == 500
    assert all(r["status"] == "done" and r["runs"] == 1 and r["done"] == 1 for r in runs)
    per_worker = {w: sum(1 for r in runs if r["worker"] == w) for w in ("worker-a", "worker-b")}
    assert all(count >= 50 for count in per_worker.values()), per_worker


def test_a_worker_killed_mid_consolidation_leaves_the_job_to_another(
    mem: Memory, workers: dict[str, Any], server: FakeLLMServer, bank: str
) -> None:
    pool = _pool(mem)
    assert workers["worker-b"].stop() == 0  # a graceful stop; worker-a stays, alone
    calls: list[str] = []
    hold = threading.Event()

    def model(request: Any) -> Reply:
        user = request.body["messages"][-1]["content"]
        facts = [line.split("]")[0][1:] for line in user.splitlines() if line.startswith(FACT_LINE_PREFIX)]
        cited = [{"fact": f, "quote": ""} for f in facts]
        calls.append(user)
        if len(calls) == 2 and not hold.is_set():
            return Reply(json={}, delay=4.0)  # the second batch: the worker waits on this when it is killed
        if "[O1]" in user:
            return Reply(
                json={
                    "updates": [
                        {
                            "observation": "O1",
                            "text": "The user loves hiking.",
                            "change": "refine",
                            "reason": "restated",
                            "evidence": cited,
                        }
                    ]
                }
            )
        return Reply(json={"creates": [{"text": "The user loves hiking.", "evidence": cited}]})

    server.reset()
    server.responder = model
    start = datetime(2026, 5, 1, tzinfo=UTC)
    mem.retain_many(
        bank,
        [
            {
                "content": f"I love hiking{'!' * (i % 4)} (trip {i})",
                "document_id": f"trip-{i}",
                "timestamp": start + timedelta(days=i),
            }
            for i in range(15)
        ],
    )  # 15 facts: two LLM batches (10 + 5)
    deadline = time.monotonic() + 60
    while len(calls) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(calls) == 2, "worker-a never reached the second batch"
    done_before = mem._run(pool.fetchval("SELECT count(*) FROM unit_learning WHERE bank_id = $1", bank))
    assert done_before == 10  # the first batch is committed, the second is in the air
    workers["worker-a"].kill()
    hold.set()

    survivor = WorkerProcess("worker-c", workers["env"])
    try:
        survivor.wait_ready()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and mem.jobs(bank, kind="consolidate")[0].status != "done":
            time.sleep(0.1)
        [job] = mem.jobs(bank, kind="consolidate")
        assert job.status == "done" and job.locked_by == "worker-c" and job.attempts == 2
        outcomes = mem._run(
            pool.fetch("SELECT worker_id, outcome FROM job_runs WHERE job_id = $1 ORDER BY started_at", job.id)
        )
        assert [(r["worker_id"], r["outcome"]) for r in outcomes] == [("worker-a", "lost"), ("worker-c", "done")]
        [observation] = mem.observations(bank)  # one, not two: the re-run went on from what was committed
        assert observation.proof_count == 15 and observation.evidence_count == 15
        assert len(calls) == 3 and "[O1] The user loves hiking." in calls[2] and calls[2].count("\n[F") == 5
    finally:
        assert survivor.stop() == 0
    assert json.loads(survivor.lines[-1])["completed"] >= 1
