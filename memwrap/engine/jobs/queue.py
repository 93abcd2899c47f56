"""The jobs table, the one durable queue of background work: enqueue, claim (FOR UPDATE SKIP LOCKED), keep the
lease, then finish, retry after a backoff or fail for good (retry_policy.py says how long and how often).

A job's life: queued → running (claimed, with a lease) → done | queued again (retry, after a backoff) | failed
(attempts used up: dead). A claim whose worker died is taken over when its lease runs out; the dead claim is
recorded as 'lost'. Jobs that share a `serial_key` never run at the same time: the claim skips a job whose key
is held by a live running job, and the runner holds a session advisory lock on the key while it works (so even
an expired-but-alive claim cannot overlap a takeover). Every claim is a row of job_runs.

At most one job per `dedupe_key` is queued (the unique index jobs_dedupe): enqueueing a key that is queued adds
nothing. A running job whose key was queued again meanwhile (retains enqueue a bank's consolidation while one
runs) and that goes back to the queue — retried, or given back — merges with that queued twin instead: the
twin keeps the earlier due time of a give-back, or the later one of a retry's backoff, and the larger attempt
count, and the job going back ends 'cancelled' with `{"merged_into": twin}` as its result.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from uuid import UUID, uuid4

import asyncpg

from memwrap.engine.jobs.listing import list_jobs, open_jobs, prune
from memwrap.engine.jobs.retry_policy import RetryPolicy
from memwrap.store.pg_types import Connection, Executor

if TYPE_CHECKING:
    from memwrap.engine.parts import EngineParts

__all__ = ["list_jobs", "open_jobs", "prune"]  # and the rest: the queue's reading lives in listing.py

log = logging.getLogger("memwrap.worker")

# Wakes workers in other processes at once (they poll anyway).
NOTIFY_CHANNEL = "memwrap_jobs"

# First key of every learning advisory lock (two-key form), so ours never collide with anyone else's.
LOCK_NAMESPACE = 0x6C726E  # "lrn"


@dataclass
class ClaimedJob:
    id: int
    kind: str
    bank_id: str | None
    payload: dict[str, Any]
    attempts: int
    max_attempts: int
    serial_key: str
    claim_token: UUID
    worker_id: str

    @property
    def last_attempt(self) -> bool:
        return self.attempts >= self.max_attempts


@dataclass
class JobContext:
    """What a job's handler gets: the engine parts of the process running it (engine/parts.py), and the claimed
    job."""

    parts: EngineParts
    job: ClaimedJob


def default_worker_id(suffix: str = "") -> str:
    return f"{socket.gethostname()}:{os.getpid()}{':' + suffix if suffix else ''}"


ENQUEUE = """
INSERT INTO jobs (kind, bank_id, payload, priority, max_attempts, run_after, dedupe_key, serial_key)
VALUES ($1, $2, $3, $4, $5, now() + $6 * interval '1 second', $7, $8)
ON CONFLICT (dedupe_key) WHERE status = 'queued' DO NOTHING
RETURNING id
"""

# The candidates are the first open jobs that are due (or whose claim's lease ran out) and whose serial key is
# not held by a live claim; `any_time` also takes queued jobs that are not due yet (a retry asked for now).
# SKIP LOCKED lets concurrent workers pass over each other's candidates.
#
# Fair across banks: the claim takes the next bank after the one this worker served last ($9), in bank order,
# wrapping around, and within that bank the first job by priority. One bank's flood of jobs (or of slow webhook
# attempts) therefore waits its turn: every other bank with due work is served once between two of its jobs.
# A bank already running $11 jobs of the capped kinds ($10: webhook deliveries, whose receivers may be slow or
# dead) gets no more of them until one ends, so it cannot hold every worker slot either.
CLAIM = """
WITH busy AS (
    SELECT r.bank_id FROM jobs r
    WHERE r.status = 'running' AND r.lease_until >= now() AND $10::text[] IS NOT NULL AND r.kind = ANY($10::text[])
    GROUP BY r.bank_id
    HAVING count(*) >= $11
), candidate AS (
    SELECT j.id
    FROM jobs j
    WHERE j.status IN ('queued', 'running')
      AND ((j.status = 'queued' AND ($8::bool OR j.run_after <= now())) OR (j.status = 'running' AND j.lease_until <
        now()))
      AND ($2::text[] IS NULL OR j.kind = ANY($2::text[]))
      AND ($6::text IS NULL OR j.bank_id = $6)
      AND ($7::bigint[] IS NULL OR j.id = ANY($7::bigint[]))
      AND (j.serial_key IS NULL OR NOT EXISTS (
            SELECT 1 FROM jobs r
            WHERE r.serial_key = j.serial_key AND r.status = 'running' AND r.lease_until >= now() AND r.id <> j.id))
      AND NOT ($10::text[] IS NOT NULL AND j.kind = ANY($10::text[])
               AND j.bank_id IN (SELECT b.bank_id FROM busy b))
    ORDER BY ($9::text IS NULL OR coalesce(j.bank_id, '') > $9) DESC, coalesce(j.bank_id, ''),
             j.priority, j.run_after, j.id
    LIMIT $5
    FOR UPDATE OF j SKIP LOCKED
), lost AS (
    UPDATE job_runs r SET outcome = 'lost', finished_at = now(), error = 'lease expired: the worker stopped renewing it'
    FROM candidate c
    WHERE r.job_id = c.id AND r.outcome IS NULL
)
UPDATE jobs j
SET status = 'running', attempts = j.attempts + 1, claim_token = $3, locked_by = $1,
    lease_until = now() + $4 * interval '1 second', started_at = now()
FROM candidate c
WHERE j.id = c.id
RETURNING j.id, j.kind, j.bank_id, j.payload, j.attempts, j.max_attempts, j.serial_key, j.claim_token
"""

RECORD_RUNS = """
INSERT INTO job_runs (job_id, claim_token, attempt, worker_id)
SELECT id, $2, attempt, $3 FROM unnest($1::bigint[], $4::int[]) AS r(id, attempt)
"""

RENEW = """
UPDATE jobs j SET lease_until = now() + $3 * interval '1 second'
FROM unnest($1::bigint[], $2::uuid[]) AS c(id, token)
WHERE j.id = c.id AND j.claim_token = c.token AND j.status = 'running'
"""

# Finishing does not insist on our claim token: a takeover after our lease expired could not run the job while
# we held its advisory lock, so whoever holds the lock decides how the job ends.
FINISH = """
UPDATE jobs SET status = 'done', result = $2, finished_at = now(), lease_until = NULL, last_error = NULL
WHERE id = $1 AND status IN ('queued', 'running')
"""

RETRY = """
UPDATE jobs SET status = 'queued', run_after = now() + $2 * interval '1 second', last_error = $3,
                lease_until = NULL, claim_token = NULL, locked_by = NULL
WHERE id = $1 AND status IN ('queued', 'running')
"""

FAIL = """
UPDATE jobs SET status = 'failed', last_error = $2, finished_at = now(), lease_until = NULL
WHERE id = $1 AND status IN ('queued', 'running')
"""

# Give a claim back without using an attempt: the serial key was busy, or the worker is shutting down.
RELEASE = """
UPDATE jobs SET status = 'queued', run_after = now() + $3 * interval '1 second', attempts = greatest(attempts - 1, 0),
                lease_until = NULL, claim_token = NULL, locked_by = NULL
WHERE id = $1 AND claim_token = $2 AND status = 'running'
"""

# The queued job with the same dedupe key as job $1 (locked: it is about to take job $1's place).
QUEUED_TWIN = """
SELECT t.id FROM jobs j JOIN jobs t ON t.dedupe_key = j.dedupe_key AND t.status = 'queued' AND t.id <> j.id
WHERE j.id = $1
FOR UPDATE OF t
"""

# Job $1 goes back to the queue but its twin $2 is there: the twin takes its due time ($3: 'retry' keeps the
# later of the two, a give-back the earlier), attempts, priority and error, and job $1 ends merged into it.
MERGE_INTO_TWIN = """
WITH gone AS (
    UPDATE jobs SET status = 'cancelled', finished_at = now(), lease_until = NULL, claim_token = NULL,
                    locked_by = NULL, result = jsonb_build_object('merged_into', $2::bigint),
                    last_error = coalesce($5, last_error)
    WHERE id = $1 AND status IN ('queued', 'running')
    RETURNING attempts, max_attempts, priority
)
UPDATE jobs t
SET run_after = CASE WHEN $3 = 'retry' THEN greatest(t.run_after, now() + $4 * interval '1 second')
                     ELSE least(t.run_after, now() + $4 * interval '1 second') END,
    attempts = greatest(t.attempts, g.attempts - CASE WHEN $3 = 'retry' THEN 0 ELSE 1 END),
    max_attempts = greatest(t.max_attempts, g.max_attempts),
    priority = least(t.priority, g.priority),
    last_error = coalesce($5, t.last_error)
FROM gone g
WHERE t.id = $2
"""

END_RUN = """
UPDATE job_runs SET outcome = $3, finished_at = now(), error = $4 WHERE job_id = $1 AND claim_token = $2
"""

# Dead jobs of a kind queued again, with one more attempt each (a retry asked for by hand).
REVIVE = """
UPDATE jobs j SET status = 'queued', run_after = now(), finished_at = NULL, max_attempts = j.attempts + 1
WHERE j.kind = $1 AND j.status = 'failed' AND ($2::text IS NULL OR j.bank_id = $2)
  AND (j.dedupe_key IS NULL
       OR NOT EXISTS (SELECT 1 FROM jobs q WHERE q.dedupe_key = j.dedupe_key AND q.status = 'queued'))
"""


async def enqueue(
    db: Executor,
    kind: str,
    *,
    bank_id: str | None = None,
    payload: dict[str, Any] | None = None,
    priority: int = 100,
    max_attempts: int = 5,
    delay: float = 0.0,
    dedupe_key: str | None = None,
    serial_key: str | None = None,
    notify: bool = True,
) -> int | None:
    """Queue a job. With a dedupe_key that is already queued, nothing is added and None is returned."""
    job_id = await db.fetchval(
        ENQUEUE, kind, bank_id, payload or {}, priority, max_attempts, max(delay, 0.0), dedupe_key, serial_key
    )
    if job_id is not None and notify:
        await db.execute("SELECT pg_notify($1, $2)", NOTIFY_CHANNEL, kind)
    return job_id


async def claim_many(
    pool: asyncpg.Pool,
    worker_id: str,
    *,
    lease_seconds: float,
    kinds: Sequence[str] | None = None,
    bank_id: str | None = None,
    ids: Sequence[int] | None = None,
    any_time: bool = False,
    limit: int = 1,
    after_bank: str | None = None,
    capped_kinds: Sequence[str] | None = None,
    cap_per_bank: int = 0,
) -> list[ClaimedJob]:
    """Take up to `limit` due jobs (of these kinds, of this bank, among these ids; `any_time`: due or not).
    The claims and their job_runs rows commit together.

    Fairness (CLAIM above): banks are served in turn, starting after `after_bank` (the bank the caller served
    last; None: from the first bank); a bank running `cap_per_bank` jobs of the `capped_kinds` gets no more of
    those until one ends."""
    token = uuid4()
    capped = list(capped_kinds) if capped_kinds and cap_per_bank > 0 else None
    async with pool.acquire() as conn, conn.transaction():
        if capped is not None:
            # Claims that may take a capped kind take turns (a lock held for this one short transaction): each
            # then counts the running jobs the ones before it committed, and a bank's cap holds under concurrency.
            await conn.execute("SELECT pg_advisory_xact_lock($1, hashtext('claim:capped'))", LOCK_NAMESPACE)
        rows = await conn.fetch(
            CLAIM,
            worker_id,
            list(kinds) if kinds is not None else None,
            token,
            lease_seconds,
            limit,
            bank_id,
            list(ids) if ids is not None else None,
            any_time,
            after_bank,
            capped,
            max(cap_per_bank, 1),
        )
        if rows:
            await conn.execute(RECORD_RUNS, [r["id"] for r in rows], token, worker_id, [r["attempts"] for r in rows])
    return [
        ClaimedJob(
            id=r["id"],
            kind=r["kind"],
            bank_id=r["bank_id"],
            payload=dict(r["payload"] or {}),
            attempts=r["attempts"],
            max_attempts=r["max_attempts"],
            serial_key=r["serial_key"] or f"job:{r['id']}",
            claim_token=token,
            worker_id=worker_id,
        )
        for r in rows
    ]


async def claim(
    pool: asyncpg.Pool,
    worker_id: str,
    *,
    lease_seconds: float,
    kinds: Sequence[str] | None = None,
    after_bank: str | None = None,
    capped_kinds: Sequence[str] | None = None,
    cap_per_bank: int = 0,
) -> ClaimedJob | None:
    """Take the next due job (the next bank's turn after `after_bank`: claim_many), or None."""
    claimed = await claim_many(
        pool,
        worker_id,
        lease_seconds=lease_seconds,
        kinds=kinds,
        after_bank=after_bank,
        capped_kinds=capped_kinds,
        cap_per_bank=cap_per_bank,
    )
    return claimed[0] if claimed else None


async def renew(db: Executor, claimed: Sequence[ClaimedJob], lease_seconds: float) -> int:
    """Extend the leases of claims still current; returns how many were."""
    status = await db.execute(RENEW, [j.id for j in claimed], [j.claim_token for j in claimed], lease_seconds)
    return int(status.split()[-1])


async def keep_leased(db: Executor, claimed: Sequence[ClaimedJob], lease_seconds: float) -> None:
    """Renew the leases every third of their length until cancelled (run it as a task beside the work)."""
    while True:
        await asyncio.sleep(max(lease_seconds / 3, 0.05))
        try:
            if await renew(db, claimed, lease_seconds) < len(claimed):
                log.warning(
                    "jobs %s: lease renewal found a claim gone; finishing under the lock", [j.id for j in claimed]
                )
                return
        except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
            log.warning("jobs %s: lease renewal failed: %s", [j.id for j in claimed], exc)


async def finish(db: Executor, job: ClaimedJob, result: dict[str, Any] | None) -> None:
    async with _transaction(db) as conn:
        await conn.execute(FINISH, job.id, result or {})
        await conn.execute(END_RUN, job.id, job.claim_token, "done", None)


async def retry_or_fail(db: Executor, job: ClaimedJob, error: str, policy: RetryPolicy) -> str:
    """After a failed attempt: queue it again after the policy's backoff, or fail it for good (dead) when it was
    its last attempt. Returns the new status."""
    error = error[:2000]
    async with _transaction(db) as conn:
        if job.last_attempt:
            await conn.execute(FAIL, job.id, error)
            await conn.execute(END_RUN, job.id, job.claim_token, "failed", error)
            return "failed"
        delay = policy.delay(job.attempts)
        twin = await _back_to_queue(conn, job, RETRY, (job.id, delay, error))
        if twin is not None:
            await conn.execute(MERGE_INTO_TWIN, job.id, twin, "retry", delay, error)
        await conn.execute(END_RUN, job.id, job.claim_token, "retry", error)
        return "queued"


async def fail_now(db: Executor, job: ClaimedJob, error: str) -> None:
    """Fail without retrying (no handler for the kind, or its claims died too often)."""
    async with _transaction(db) as conn:
        await conn.execute(FAIL, job.id, error[:2000])
        await conn.execute(END_RUN, job.id, job.claim_token, "failed", error[:2000])


async def release(db: Executor, job: ClaimedJob, *, delay: float, outcome: str = "deferred") -> None:
    async with _transaction(db) as conn:
        twin = await _back_to_queue(conn, job, RELEASE, (job.id, job.claim_token, delay))
        if twin is not None and await conn.fetchval(
            "SELECT claim_token = $2 AND status = 'running' FROM jobs WHERE id = $1", job.id, job.claim_token
        ):
            await conn.execute(MERGE_INTO_TWIN, job.id, twin, "release", delay, None)
        await conn.execute(END_RUN, job.id, job.claim_token, outcome, None)


async def _back_to_queue(conn: Connection, job: ClaimedJob, requeue: str, args: tuple[Any, ...]) -> int | None:
    """Put `job` back in the queue with `requeue` (RETRY or RELEASE), or return the id of the queued twin it
    must merge with instead (the caller merges). A twin enqueued concurrently shows up as a unique violation
    of jobs_dedupe: the savepoint undoes our attempt, and the twin, committed by then, is merged with."""
    twin: int | None = await conn.fetchval(QUEUED_TWIN, job.id)
    if twin is not None:
        return twin
    try:
        async with conn.transaction():  # a savepoint inside the caller's transaction
            await conn.execute(requeue, *args)
    except asyncpg.UniqueViolationError:
        twin = await conn.fetchval(QUEUED_TWIN, job.id)
        if twin is None:
            raise
    return twin


async def revive(db: Executor, kind: str, *, bank_id: str | None = None) -> int:
    """Queue the dead jobs of a kind (of a bank) again, due now, with one more attempt each."""
    status = await db.execute(REVIVE, kind, bank_id)
    return int(status.split()[-1])


async def run_claimed(
    pool: asyncpg.Pool,
    job: ClaimedJob,
    work: Callable[[], Awaitable[dict[str, Any] | None]],
    *,
    policy: RetryPolicy,
    lease_seconds: float,
) -> dict[str, Any] | None:
    """One attempt of a claimed job: its lease is renewed while `work` runs, then the job is finished with
    work's result, or (work raised) queued again or failed by the policy; a cancelled attempt gives the claim
    back without using it up. Returns the result, None when the attempt failed."""
    heartbeat = asyncio.create_task(keep_leased(pool, [job], lease_seconds))
    started = time.perf_counter()
    try:
        result = await work()
    except asyncio.CancelledError:
        await asyncio.shield(release(pool, job, delay=0.0, outcome="cancelled"))
        raise
    except Exception as exc:  # any failure of the work becomes a retry, never a dead worker
        # A handler that logs its own failures (webhook deliveries: one line per subscription, rate-limited)
        # marks its exception `logged`: the queue then says it at debug only.
        level = logging.DEBUG if getattr(exc, "logged", False) else logging.WARNING
        log.log(
            level,
            "job %s (%s, bank %s) attempt %s failed: %s",
            job.id,
            job.kind,
            job.bank_id,
            job.attempts,
            exc,
            exc_info=log.isEnabledFor(logging.DEBUG),
        )
        await retry_or_fail(pool, job, f"{type(exc).__name__}: {exc}", policy)
        return None
    finally:
        heartbeat.cancel()
    result = dict(result or {})
    result.setdefault("seconds", round(time.perf_counter() - started, 3))
    await finish(pool, job, result)
    return result


@asynccontextmanager
async def serial_lock(pool: asyncpg.Pool, key: str, *, wait: bool) -> AsyncIterator[bool]:
    """Hold the advisory lock of a serial key on a connection of our own (released if our session dies).

    Yields True when held; with wait=False, yields False at once if someone else holds it.
    """
    async with pool.acquire() as conn:
        if wait:
            await conn.execute("SELECT pg_advisory_lock($1, hashtext($2))", LOCK_NAMESPACE, key)
            held = True
        else:
            held = bool(await conn.fetchval("SELECT pg_try_advisory_lock($1, hashtext($2))", LOCK_NAMESPACE, key))
        try:
            yield held
        finally:
            if held and not conn.is_closed():
                # Best effort: if this fails (a cancelled query left the connection busy), the pool's reset on
                # release runs pg_advisory_unlock_all(), and a closed session drops its locks anyway.
                with contextlib.suppress(asyncpg.PostgresError, asyncpg.InterfaceError):
                    await conn.execute("SELECT pg_advisory_unlock($1, hashtext($2))", LOCK_NAMESPACE, key)


class _transaction:
    """`async with _transaction(pool_or_conn) as conn`: one transaction on a connection we may have to borrow."""

    def __init__(self, db: Executor) -> None:
        self.db = db
        self._acquired: Any = None
        self._tx: Any = None

    async def __aenter__(self) -> Connection:
        if isinstance(self.db, asyncpg.Pool):
            self._acquired = self.db.acquire()
            conn = await self._acquired.__aenter__()
        else:
            conn = self.db
        self._tx = conn.transaction()
        await self._tx.__aenter__()
        return conn

    async def __aexit__(self, *exc: Any) -> None:
        try:
            await self._tx.__aexit__(*exc)
        finally:
            if self._acquired is not None:
                await self._acquired.__aexit__(*exc)
