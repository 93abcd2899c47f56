"""One bank cannot hurt another through a shared resource: a hostile bank and a victim bank for each of them.

- the webhook slot: the hostile bank's 25 subscriptions point at a black hole (a local port that accepts and never
  answers); the victim's delivery is attempted after at most one hostile attempt (one worker slot), or at most the
  per-bank cap of them (several slots);
- the job queue: a flood of one bank's jobs does not push another bank's job behind it (claims go round-robin);
- the maintenance pass: a poisoned `refresh_every` (written by SQL, past every check) does not stop the other
  banks' raw-memory expiry, and a step that fails for one bank is skipped for that bank only, logged once;
- the log: failed deliveries are one warning line per subscription, without traceback.

A database of its own and no inline worker: each test drives a worker itself. Nothing here compares a duration:
the assertions are on the order of attempts and on counts (a deadline only turns a hang into a failure).
"""

from __future__ import annotations

import asyncio
import logging
import shutil
import socket
import tempfile
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from webhook_receiver import Receiver, free_port

from memwrap import Memory
from memwrap.config import load_settings
from memwrap.engine.jobs import queue as jobs
from memwrap.engine.jobs.worker import Worker
from memwrap.engine.learn import reconcile
from memwrap.engine.learn.kinds import BUILTIN_KINDS
from memwrap.errors import InvalidInputError

TIMEOUT = 1.0  # the black hole's attempts end here

SETTINGS: dict[str, Any] = {
    "webhook_max_attempts": 8,
    "webhook_backoff_seconds": 0.01,
    "webhook_backoff_cap_seconds": 0.05,
    "webhook_timeout_seconds": TIMEOUT,
    "webhook_allow_private_addresses": True,  # the receivers are local (the SSRF tests are test_webhook_addresses)
    "webhook_max_in_flight_per_bank": 2,
}


@pytest.fixture(scope="module")
def mem() -> Iterator[Memory]:
    home = Path(tempfile.mkdtemp(prefix="memwrap-fairness-"))
    with Memory(settings=load_settings(home=home, worker="off", **SETTINGS)) as memory:
        yield memory
    shutil.rmtree(home, ignore_errors=True)


@pytest.fixture
def black_hole() -> Iterator[str]:
    """A URL whose port accepts connections (the kernel's backlog) and never answers."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(512)
    yield f"http://127.0.0.1:{sock.getsockname()[1]}/hole"
    sock.close()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver(free_port())
    r.start()
    yield r
    r.stop()


def _engine(mem: Memory) -> Any:
    return mem._run(mem.aio._get_engine())


ATTEMPTS = """
SELECT d.bank_id, a.started_at FROM webhook_attempts a
JOIN webhook_deliveries d ON d.bank_id = a.bank_id AND d.id = a.delivery_id
WHERE d.bank_id = ANY($1::text[]) ORDER BY a.started_at
"""


def _hostile_attempts_before_victim(mem: Memory, hostile: str, victim: str) -> tuple[int, int]:
    """(hostile attempts started before the victim's first, hostile attempts in all)."""
    rows = mem._run(_engine(mem).store.pool.fetch(ATTEMPTS, [hostile, victim]))
    first = next(i for i, r in enumerate(rows) if r["bank_id"] == victim)
    return sum(1 for r in rows[:first] if r["bank_id"] == hostile), sum(1 for r in rows if r["bank_id"] == hostile)


def _hostile_and_victim(mem: Memory, black_hole: str, receiver: Receiver, tag: str) -> tuple[str, str]:
    hostile, victim = f"hostile-{tag}-{time.time_ns()}", f"victim-{tag}-{time.time_ns()}"
    for i in range(25):  # the most a bank may have
        mem.create_webhook(hostile, f"{black_hole}/{i}", events=["retained"])
    hook = mem.create_webhook(victim, f"{receiver.url}/victim", events=["retained"])
    receiver.secrets["/victim"] = hook.secret or ""
    mem.retain(hostile, "The hostile bank's first note.")  # 25 deliveries, queued first
    mem.retain(victim, "The victim's note.")
    return hostile, victim


def _victim_delivered(mem: Memory, victim: str) -> bool:
    return [d.status for d in mem.webhook_deliveries(victim)] == ["delivered"]


def test_a_black_hole_bank_delays_another_banks_delivery_by_one_attempt_at_most(
    mem: Memory, black_hole: str, receiver: Receiver, caplog: pytest.LogCaptureFixture
) -> None:
    hostile, victim = _hostile_and_victim(mem, black_hole, receiver, "slot")

    async def run() -> None:
        worker = Worker(
            (await mem.aio._get_engine()).parts, registry=BUILTIN_KINDS, kinds=["webhook"], worker_id="fair-1"
        )
        deadline = time.monotonic() + 120
        while not await asyncio.to_thread(_victim_delivered, mem, victim):
            assert time.monotonic() < deadline, "the victim's delivery never went out"
            await worker.run_one()
        for _ in range(30):  # a few more hostile attempts: the log test below counts their lines
            await worker.run_one()

    with caplog.at_level(logging.DEBUG, logger="memwrap"):
        mem._run(run())
    before, total = _hostile_attempts_before_victim(mem, hostile, victim)
    print(f"\none worker slot: {before} hostile attempt(s) before the victim's first; {total} hostile in all")
    assert before <= 1  # the one that held the slot when the victim's delivery fell due, at most
    assert total >= 25  # the hostile bank was served too: fairness, not a ban

    # The log: one warning line per hostile subscription at most, no traceback at warning; the details at debug.
    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING and r.name.startswith("memwrap")]
    hostile_lines = [r for r in warnings if hostile in r.getMessage()]
    print(f"log: {len(hostile_lines)} warning line(s) for {total} failed hostile attempts")
    assert 1 <= len(hostile_lines) <= 25
    assert all(r.exc_info is None for r in warnings)
    assert all("Traceback" not in r.getMessage() for r in warnings)
    assert any(r.levelno == logging.DEBUG and r.exc_info for r in caplog.records if r.name == "memwrap.webhooks")


def test_several_slots_a_bank_holds_at_most_its_cap_of_them(mem: Memory, black_hole: str, receiver: Receiver) -> None:
    hostile, victim = _hostile_and_victim(mem, black_hole, receiver, "cap")

    async def run() -> None:
        engine = await mem.aio._get_engine()
        worker = Worker(engine.parts, registry=BUILTIN_KINDS, kinds=["webhook"], worker_id="fair-4", concurrency=4)
        await worker.start()
        try:
            deadline = time.monotonic() + 120
            most = 0
            while not await asyncio.to_thread(_victim_delivered, mem, victim):
                assert time.monotonic() < deadline, "the victim's delivery never went out"
                running = await engine.store.pool.fetchval(
                    "SELECT count(*) FROM jobs WHERE bank_id = $1 AND kind = 'webhook' AND status = 'running'",
                    hostile,
                )
                most = max(most, running)
                await asyncio.sleep(0.02)
            assert most <= SETTINGS["webhook_max_in_flight_per_bank"], most
        finally:
            await worker.stop(timeout=2 * TIMEOUT + 5)

    mem._run(run())
    before, total = _hostile_attempts_before_victim(mem, hostile, victim)
    print(f"\nfour worker slots, cap 2: {before} hostile attempt(s) before the victim's first; {total} in all")
    assert before <= SETTINGS["webhook_max_in_flight_per_bank"]


def test_a_flood_of_one_banks_jobs_does_not_starve_another_bank(mem: Memory) -> None:
    engine = _engine(mem)
    pool = engine.store.pool
    hostile, victim = f"flood-{time.time_ns()}", f"starved-{time.time_ns()}"
    for bank in (hostile, victim):
        mem.create_bank(bank)

    async def run() -> list[str | None]:
        for _ in range(60):
            await jobs.enqueue(pool, "noop", bank_id=hostile, priority=50)  # and at a better priority
        await jobs.enqueue(pool, "noop", bank_id=victim, priority=100)
        worker = Worker(engine.parts, registry=BUILTIN_KINDS, kinds=["noop"], worker_id="fair-queue")
        order: list[str | None] = []
        while len(order) < 61:
            job = await jobs.claim(
                pool, worker.worker_id, lease_seconds=30, kinds=["noop"], after_bank=order[-1] if order else None
            )
            assert job is not None
            order.append(job.bank_id)
            await worker.execute(job)
        return order

    order = mem._run(run())
    # Whatever bank the worker served last, the victim's turn comes within two claims.
    print(f"\nqueue: the victim's job was claim {order.index(victim) + 1} of 61 (60 hostile jobs queued first)")
    assert order.index(victim) <= 1


def test_a_poisoned_schedule_does_not_stop_another_banks_expiry(mem: Memory) -> None:
    engine = _engine(mem)
    pool = engine.store.pool
    hostile, victim = f"poison-{time.time_ns()}", f"expiring-{time.time_ns()}"
    mem.create_mental_model(hostile, "habits", "What are the habits?")
    with pytest.raises(InvalidInputError, match="refresh_every"):
        mem.create_mental_model(hostile, "bad", "What?", refresh_every=1e300)
    # What an older version let through, or a hand-written row: past every check.
    # Fresh, so the schedule is what decides (a pending model is queued whatever its schedule).
    mem._run(
        pool.execute(
            "UPDATE mental_models SET refresh_every = 1e300, status = 'fresh', refreshed_at = now() WHERE bank_id = $1",
            hostile,
        )
    )
    mem._run(
        pool.execute(
            "INSERT INTO mental_models (bank_id, id, name, question, tags, max_tokens, refresh_every, status, "
            "refreshed_at) SELECT bank_id, gen_random_uuid(), 'nan', 'q', '{}', 100, 'NaN'::float8, 'fresh', now() "
            "FROM banks WHERE bank_id = $1",
            hostile,
        )
    )
    mem.configure_bank(victim, raw_ttl_days=1)
    [old] = mem.retain(victim, "An old raw note that should expire.")
    mem._run(
        pool.execute(
            "UPDATE memory_units SET fact_type = 'raw', created_at = now() - interval '3 days' WHERE id = $1", old
        )
    )
    mem._run(pool.execute("DELETE FROM jobs WHERE bank_id = ANY($1::text[])", [hostile, victim]))

    queued = mem._run(reconcile.run(engine.parts))
    expiries = mem._run(pool.fetchval("SELECT count(*) FROM jobs WHERE bank_id = $1 AND kind = 'expire_raw'", victim))
    print(f"\nmaintenance pass with a refresh_every of 1e300 and NaN in another bank: {queued} job(s) queued")
    assert expiries == 1

    async def drain() -> None:
        worker = Worker(engine.parts, registry=BUILTIN_KINDS, kinds=["expire_raw"], worker_id="fair-expiry")
        await worker.drain(timeout=60)

    mem._run(drain())
    assert [m.id for m in mem.list(victim, include_expired=True) if m.id == old] == []


def test_a_step_that_fails_for_one_bank_runs_for_the_others_and_is_logged_once(
    mem: Memory, caplog: pytest.LogCaptureFixture
) -> None:
    engine = _engine(mem)
    pool = engine.store.pool
    stamp = time.time_ns()
    broken, fine = f"broken-{stamp}", f"fine-{stamp}"
    for bank in (broken, fine):
        mem.create_bank(bank)
    # A step whose statement fails on one bank's row (a division by zero standing in for any bad value).
    step = f"""
    INSERT INTO jobs (kind, bank_id, priority, dedupe_key)
    SELECT 'noop', b.bank_id, 100 / (CASE WHEN b.bank_id = '{broken}' THEN 0 ELSE 1 END), 'fair:' || b.bank_id
    FROM banks b WHERE ($3::text IS NULL OR b.bank_id = $3) AND b.bank_id IN ('{broken}', '{fine}')
      AND $1::int IS NOT NULL AND $2::float8 IS NOT NULL
    ON CONFLICT DO NOTHING RETURNING id
    """

    async def twice() -> list[int]:
        counts = []
        for _ in range(2):
            async with pool.acquire() as conn, conn.transaction():
                counts.append(await reconcile._per_bank_step(conn, "test step", step, (1, 1.0)))
        return counts

    with caplog.at_level(logging.WARNING, logger="memwrap.worker"):
        counts = mem._run(twice())
    assert counts == [1, 0]  # the fine bank's job, once (deduplicated on the second pass)
    banks = mem._run(pool.fetch("SELECT bank_id FROM jobs WHERE dedupe_key LIKE 'fair:%' AND kind = 'noop'"))
    assert [r["bank_id"] for r in banks] == [fine]
    lines = [r.getMessage() for r in caplog.records if "test step" in r.getMessage()]
    # One line for the statement over every bank, one for the broken bank; the second pass adds none.
    assert len(lines) == 2 and any(broken in line for line in lines), lines
    mem._run(pool.execute("DELETE FROM jobs WHERE dedupe_key LIKE 'fair:%'"))


def test_expiry_survives_an_absurd_ttl_written_by_hand(mem: Memory) -> None:
    engine = _engine(mem)
    bank = f"ttl-{time.time_ns()}"
    mem.retain(bank, "A note.")
    mem._run(
        engine.store.pool.execute(
            "UPDATE banks SET config = config || '{\"raw_ttl_days\": 1e300}'::jsonb WHERE bank_id = $1", bank
        )
    )
    assert mem._run(engine.learning.expire(bank, datetime.now(UTC) + timedelta(days=1))) == 0
