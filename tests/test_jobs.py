"""The jobs table and the in-process worker: claims, dedupe, serial keys, retries with backoff, leases, reconciliation.

A database of its own (no other test's inline worker may claim these jobs), workers driven step by step.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memwrap import Memory
from memwrap.config import load_settings
from memwrap.engine.jobs import queue as jobs
from memwrap.engine.jobs.queue import JobContext, serial_lock
from memwrap.engine.jobs.retry_policy import RetryPolicy, backoff_seconds
from memwrap.engine.jobs.worker import Worker
from memwrap.engine.learn import reconcile
from memwrap.engine.learn.kinds import BUILTIN_KINDS, JobKind
from memwrap.errors import InvalidInputError

CALLS: dict[int, int] = {}


async def _flaky(ctx: JobContext) -> dict[str, Any]:
    CALLS[ctx.job.id] = CALLS.get(ctx.job.id, 0) + 1
    if CALLS[ctx.job.id] <= int(ctx.job.payload.get("fail_times", 0)):
        raise RuntimeError(f"planned failure {CALLS[ctx.job.id]}")
    return {"calls": CALLS[ctx.job.id]}


async def _slow(ctx: JobContext) -> dict[str, Any]:
    await asyncio.sleep(30)
    return {}


# The built-in kinds plus two of the tests' own, handed to each worker (no kind registers itself on import).
KINDS = {**BUILTIN_KINDS, "test-flaky": JobKind(_flaky), "test-slow": JobKind(_slow)}


@pytest.fixture(scope="module")
def home() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="memwrap-jobs-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="module")
def mem(home: Path) -> Iterator[Memory]:
    settings = load_settings(
        home=home,
        worker="off",
        worker_lease_seconds=1.0,
        job_backoff_seconds=0.05,
        job_backoff_cap_seconds=0.2,
        worker_poll_seconds=0.05,
        consolidation_delay_seconds=0.0,
    )
    with Memory(settings=settings) as memory:
        memory.banks()
        yield memory


def engine(mem: Memory) -> Any:
    return mem._run(mem.aio._get_engine())


def run(mem: Memory, coro: Any) -> Any:
    return mem._run(coro)


@pytest.fixture(autouse=True)
def empty_queue(mem: Memory) -> None:
    run(mem, engine(mem).store.pool.execute("DELETE FROM jobs"))


def worker(mem: Memory, name: str, **kwargs: Any) -> Worker:
    e = engine(mem)

    async def make() -> Worker:  # on the memory's loop: the worker's events belong there
        return Worker(e.parts, worker_id=name, registry=KINDS, **kwargs)

    return run(mem, make())


def runs(mem: Memory, job_id: int) -> list[str]:
    rows = run(
        mem, engine(mem).store.pool.fetch("SELECT outcome FROM job_runs WHERE job_id = $1 ORDER BY started_at", job_id)
    )
    return [r["outcome"] for r in rows]


def test_backoff_doubles_up_to_the_cap() -> None:
    assert [backoff_seconds(a, 2.0, 30.0, jitter=False) for a in range(1, 7)] == [2, 4, 8, 16, 30, 30]
    assert all(1.5 <= backoff_seconds(1, 2.0, 30.0) <= 2.5 for _ in range(50))


def test_every_kind_retries_by_the_one_policy(mem: Memory) -> None:
    """Each built-in kind declares its numbers, nothing else: extraction follows the extraction settings."""
    settings = engine(mem).settings
    policies = {name: kind.policy(settings) for name, kind in BUILTIN_KINDS.items()}
    assert policies["extract"] == RetryPolicy(
        settings.extraction_max_attempts, settings.extraction_retry_interval, 6 * 3600.0
    )
    assert policies["consolidate"] == RetryPolicy.for_jobs(settings)
    assert policies["consolidate_parked"].max_attempts == 3
    assert [policies["extract"].delay(a, jitter=False) for a in (1, 2, 3)] == [
        settings.extraction_retry_interval * f for f in (1, 2, 4)
    ]


def test_a_worker_without_an_extraction_llm_leaves_extraction_jobs_alone(mem: Memory) -> None:
    pool = engine(mem).store.pool
    run(mem, jobs.enqueue(pool, "extract", payload={"item_hashes": ["x"]}))
    w = worker(mem, "w-no-llm")
    assert "extract" not in w.kinds and "consolidate" in w.kinds
    assert run(mem, w.run_one()) is False
    assert [j.status for j in run(mem, jobs.list_jobs(pool, kind="extract"))] == ["queued"]


def test_a_queued_dedupe_key_is_enqueued_once(mem: Memory) -> None:
    pool = engine(mem).store.pool
    first = run(mem, jobs.enqueue(pool, "noop", dedupe_key="k"))
    assert first is not None
    assert run(mem, jobs.enqueue(pool, "noop", dedupe_key="k")) is None
    claimed = run(mem, jobs.claim(pool, "w1", lease_seconds=30))
    assert claimed is not None and claimed.id == first
    # While it runs, new work may queue behind it (it could have missed what arrives now).
    assert run(mem, jobs.enqueue(pool, "noop", dedupe_key="k")) is not None


def test_jobs_sharing_a_serial_key_never_run_together(mem: Memory) -> None:
    pool = engine(mem).store.pool
    a = run(mem, jobs.enqueue(pool, "noop", serial_key="bank-x"))
    b = run(mem, jobs.enqueue(pool, "noop", serial_key="bank-x"))
    other = run(mem, jobs.enqueue(pool, "noop", serial_key="bank-y"))
    first = run(mem, jobs.claim(pool, "w1", lease_seconds=30))
    second = run(mem, jobs.claim(pool, "w2", lease_seconds=30))
    assert (first.id, second.id) == (a, other)  # b waits: its key is held by a live claim
    assert run(mem, jobs.claim(pool, "w3", lease_seconds=30)) is None
    run(mem, jobs.finish(pool, first, {}))
    third = run(mem, jobs.claim(pool, "w3", lease_seconds=30))
    assert third is not None and third.id == b


def test_a_failing_job_is_retried_with_backoff_then_failed(mem: Memory) -> None:
    pool = engine(mem).store.pool
    w = worker(mem, "w-retry")
    flaky = run(mem, jobs.enqueue(pool, "test-flaky", payload={"fail_times": 1}, max_attempts=3))
    doomed = run(mem, jobs.enqueue(pool, "test-flaky", payload={"fail_times": 99}, max_attempts=3))
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if not run(mem, w.drain(timeout=5)):
            time.sleep(0.05)  # the retries wait out their backoff
        states = {j.id: j for j in run(mem, jobs.list_jobs(pool))}
        if states[flaky].status == "done" and states[doomed].status == "failed":
            break
    states = {j.id: j for j in run(mem, jobs.list_jobs(pool))}
    assert states[flaky].status == "done" and states[flaky].attempts == 2 and states[flaky].result["calls"] == 2
    assert states[doomed].status == "failed" and states[doomed].attempts == 3
    assert "planned failure 3" in states[doomed].last_error
    assert runs(mem, flaky) == ["retry", "done"]
    assert runs(mem, doomed) == ["retry", "retry", "failed"]


def test_a_claim_whose_worker_died_is_taken_over_after_its_lease(mem: Memory) -> None:
    pool = engine(mem).store.pool
    job_id = run(mem, jobs.enqueue(pool, "test-flaky"))
    dead = run(mem, jobs.claim(pool, "dead-worker", lease_seconds=0.5))  # claimed, then never heard of again
    assert dead.id == job_id
    w = worker(mem, "w-survivor")
    assert run(mem, w.run_one()) is False  # the lease still holds
    time.sleep(0.6)
    assert run(mem, w.run_one()) is True
    job = run(mem, jobs.list_jobs(pool))[0]
    assert job.status == "done" and job.attempts == 2 and job.locked_by == "w-survivor"
    assert runs(mem, job_id) == ["lost", "done"]


def test_a_live_claim_with_a_lapsed_lease_is_not_run_twice(mem: Memory) -> None:
    e = engine(mem)
    pool = e.store.pool
    job_id = run(mem, jobs.enqueue(pool, "test-flaky", serial_key="slow"))
    run(mem, jobs.claim(pool, "slow-worker", lease_seconds=0.1))
    time.sleep(0.2)

    async def takeover_while_held() -> bool:
        async with serial_lock(pool, "slow", wait=False) as held:  # the slow worker still works under its lock
            assert held
            return await Worker(e.parts, worker_id="w-eager", registry=KINDS).run_one()

    assert run(mem, takeover_while_held()) is True
    assert run(mem, jobs.list_jobs(pool))[0].status == "queued"  # given back, not run
    assert CALLS.get(job_id) is None
    assert runs(mem, job_id)[-1] == "deferred"


def test_stopping_a_worker_mid_job_gives_the_job_back(mem: Memory) -> None:
    pool = engine(mem).store.pool
    job_id = run(mem, jobs.enqueue(pool, "test-slow", max_attempts=2))
    w = worker(mem, "w-stopping", kinds=["test-slow"])

    async def start_then_stop() -> float:
        await w.start()
        while (await jobs.list_jobs(pool))[0].status != "running":
            await asyncio.sleep(0.01)
        started = time.monotonic()
        await w.stop(timeout=0.2)
        return time.monotonic() - started

    assert run(mem, start_then_stop()) < 10  # the job sleeps 30 s: stop(timeout=0.2) cancelled it, not waited
    job = run(mem, jobs.list_jobs(pool))[0]
    assert job.status == "queued" and job.attempts == 0  # a shutdown does not use up an attempt
    assert runs(mem, job_id) == ["cancelled"]


def _queued_and_merged(mem: Memory) -> tuple[list[Any], list[Any]]:
    every = [j for j in run(mem, jobs.list_jobs(engine(mem).store.pool)) if j.kind.startswith("test-")]
    return [j for j in every if j.status == "queued"], [j for j in every if j.status == "cancelled"]


def test_a_job_given_back_merges_with_its_queued_twin(mem: Memory) -> None:
    """Seen with a slow local model: a bank's consolidation runs, retains queue the next one (same dedupe key),
    the process is stopped, and giving the running one back violated jobs_dedupe. Now the two merge."""
    pool = engine(mem).store.pool
    running = run(mem, jobs.enqueue(pool, "test-slow", dedupe_key="consolidate:mei", serial_key="consolidate:mei"))
    w = worker(mem, "w-give-back", kinds=["test-slow"])

    async def start_queue_twin_then_stop() -> int | None:
        await w.start()
        while (await jobs.list_jobs(pool))[0].status != "running":
            await asyncio.sleep(0.01)
        twin = await jobs.enqueue(
            pool, "test-slow", dedupe_key="consolidate:mei", serial_key="consolidate:mei", delay=3600
        )
        await w.stop(timeout=0.2)  # gives the running job back: its twin is queued
        return twin

    twin = run(mem, start_queue_twin_then_stop())
    queued, merged = _queued_and_merged(mem)
    assert [j.id for j in queued] == [twin] and [j.id for j in merged] == [running]
    assert merged[0].result == {"merged_into": twin} and runs(mem, running) == ["cancelled"]
    # The twin is due when the job given back was (now), not in an hour; no attempt was used up.
    assert queued[0].run_after.timestamp() < time.time() + 60 and queued[0].attempts == 0


def test_a_job_given_back_first_absorbs_its_twin(mem: Memory) -> None:
    pool = engine(mem).store.pool
    first = run(mem, jobs.enqueue(pool, "test-slow", dedupe_key="k-first"))
    claimed = run(mem, jobs.claim(pool, "w1", lease_seconds=30))
    run(mem, jobs.release(pool, claimed, delay=0.0))
    assert run(mem, jobs.enqueue(pool, "test-slow", dedupe_key="k-first")) is None  # already queued: one job
    queued, merged = _queued_and_merged(mem)
    assert [j.id for j in queued] == [first] and merged == []


def test_a_retried_job_merges_with_its_queued_twin(mem: Memory) -> None:
    pool = engine(mem).store.pool
    failing = run(
        mem, jobs.enqueue(pool, "test-flaky", payload={"fail_times": 1}, dedupe_key="k-retry", max_attempts=4)
    )
    claimed = run(mem, jobs.claim(pool, "w1", lease_seconds=30))
    twin = run(mem, jobs.enqueue(pool, "test-flaky", dedupe_key="k-retry"))
    policy = RetryPolicy(max_attempts=4, base_seconds=600.0, cap_seconds=600.0)
    assert run(mem, jobs.retry_or_fail(pool, claimed, "RuntimeError: the model timed out", policy)) == "queued"
    queued, merged = _queued_and_merged(mem)
    assert [j.id for j in queued] == [twin] and [j.id for j in merged] == [failing]
    assert merged[0].result == {"merged_into": twin} and runs(mem, failing) == ["retry"]
    # The twin waits out the backoff and carries the attempt and the error.
    assert queued[0].run_after.timestamp() > time.time() + 300
    assert queued[0].attempts == 1 and queued[0].max_attempts == 5 and "timed out" in queued[0].last_error


def test_a_job_retried_first_absorbs_its_twin(mem: Memory) -> None:
    pool = engine(mem).store.pool
    failing = run(mem, jobs.enqueue(pool, "test-flaky", dedupe_key="k-retry-first", max_attempts=3))
    claimed = run(mem, jobs.claim(pool, "w1", lease_seconds=30))
    run(mem, jobs.retry_or_fail(pool, claimed, "RuntimeError: once", RetryPolicy(3, 0.05, 0.2)))
    assert run(mem, jobs.enqueue(pool, "test-flaky", dedupe_key="k-retry-first")) is None
    queued, merged = _queued_and_merged(mem)
    assert [j.id for j in queued] == [failing] and merged == []


def test_a_twin_enqueued_while_the_job_goes_back_is_merged(mem: Memory) -> None:
    """The twin's insert is not committed yet when the give-back looks for it: the unique index makes the
    give-back wait for that commit, then fail, and it merges instead."""
    pool = engine(mem).store.pool
    running = run(mem, jobs.enqueue(pool, "test-slow", dedupe_key="k-race"))
    claimed = run(mem, jobs.claim(pool, "w1", lease_seconds=30))

    async def race() -> int:
        async with pool.acquire() as conn:
            tx = conn.transaction()
            await tx.start()
            twin = await jobs.enqueue(conn, "test-slow", dedupe_key="k-race", notify=False)
            give_back = asyncio.ensure_future(jobs.release(pool, claimed, delay=0.0))
            await asyncio.sleep(0.3)
            assert not give_back.done()  # waiting on the uncommitted twin's index entry
            await tx.commit()
            await give_back
            return twin

    twin = run(mem, race())
    queued, merged = _queued_and_merged(mem)
    assert [j.id for j in queued] == [twin] and [j.id for j in merged] == [running]


def test_claims_that_keep_dying_fail_the_job(mem: Memory) -> None:
    pool = engine(mem).store.pool
    job_id = run(mem, jobs.enqueue(pool, "test-flaky", max_attempts=2))
    for _ in range(2):
        run(mem, jobs.claim(pool, "crashing-worker", lease_seconds=0.05))
        time.sleep(0.1)
    assert run(mem, worker(mem, "w-judge").run_one()) is True
    job = run(mem, jobs.list_jobs(pool))[0]
    assert job.status == "failed" and "gave up after 2 claims" in job.last_error
    assert CALLS.get(job_id) is None


def test_reconciliation_requeues_facts_stranded_by_a_terminal_failure(mem: Memory, bank: str) -> None:
    e = engine(mem)
    mem.retain(bank, "I prefer tea over coffee in the morning.", document_id="a")
    mem.retain(bank, "I really prefer tea over coffee in the morning.", document_id="b")
    queued = mem.jobs(bank, status="queued")
    assert [j.kind for j in queued] == ["consolidate"]
    # The job used up its attempts (an LLM outage, say): its facts have no consolidation record.
    run(mem, e.store.pool.execute("UPDATE jobs SET status = 'failed', finished_at = now() WHERE bank_id = $1", bank))
    assert run(mem, reconcile.run(e.parts)) == 0  # a cool-down first: a dead provider is not hammered every pass
    run(mem, e.store.pool.execute("UPDATE jobs SET finished_at = now() - interval '1 hour' WHERE bank_id = $1", bank))
    assert run(mem, reconcile.run(e.parts)) >= 1
    assert [j.status for j in mem.jobs(bank, kind="consolidate")] == ["queued", "failed"]
    run(mem, worker(mem, "w-reconciled").drain())
    assert [o.proof_count for o in mem.observations(bank)] == [2]
    assert run(mem, reconcile.run(e.parts)) == 0  # nothing left to do: nothing queued


def test_the_inline_worker_runs_with_the_engine_and_stops_on_close(home: Path, bank: str) -> None:
    settings = load_settings(home=home, worker="inline", consolidation_delay_seconds=0.0, worker_poll_seconds=0.05)
    mem = Memory(settings=settings)
    try:
        mem.retain(bank, "My favourite editor is Helix.", document_id="1")
        mem.retain(bank, "My favourite editor is Helix!", document_id="2")
        assert mem.wait_for_jobs(bank, timeout=20)
        assert [o.proof_count for o in mem.observations(bank)] == [2]
        assert mem.jobs(bank)[0].locked_by.endswith(":inline")
        loop = mem._loop.loop
    finally:
        mem.close()
    leftover = [t for t in asyncio.all_tasks(loop) if t.get_name().startswith("memwrap-")]
    assert leftover == []


def test_jobs_cli(mem: Memory, home: Path, bank: str, capsys: pytest.CaptureFixture[str]) -> None:
    from memwrap.cli import main

    run(mem, jobs.enqueue(engine(mem).store.pool, "noop", bank_id=None))
    assert main(["jobs", "--home", str(home), "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert listed[0]["kind"] == "noop" and listed[0]["status"] == "queued"
    assert main(["jobs", "--home", str(home), "--status", "queued"]) == 0
    assert "noop" in capsys.readouterr().out


@pytest.mark.parametrize("kind", ["a\x00b", "x" * 101, "line\nbreak", ""])
def test_a_job_kind_that_is_no_name_is_refused(mem: Memory, kind: str) -> None:
    # Found by the fuzz tier: a NUL in `kind` reached SQL and answered 500.
    with pytest.raises(InvalidInputError, match="kind is a job kind"):
        mem.jobs(kind=kind)
