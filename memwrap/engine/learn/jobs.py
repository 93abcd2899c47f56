"""The jobs table: enqueue, claim (FOR UPDATE SKIP LOCKED), renew the lease, finish, retry with backoff.

A job's life: queued → running (claimed, with a lease) → done | queued again (retry, after a backoff) | failed
(attempts used up). A claim whose worker died is taken over when its lease runs out; the dead claim is
recorded as 'lost'. Jobs that share a `serial_key` never run at the same time: the claim skips a job whose key
is held by a live running job, and the runner holds a session advisory lock on the key while it works (so even
an expired-but-alive claim cannot overlap a takeover). Every claim is a row of job_runs.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any
from uuid import UUID, uuid4

import asyncpg

from memwrap.models import Job

# Wakes workers in other processes at once (they poll anyway).
NOTIFY_CHANNEL = "memwrap_jobs"

# First key of every learning advisory lock (two-key form), so ours never collide with anyone else's.
LOCK_NAMESPACE = 0x6C726E  # "lrn"

Executor = asyncpg.Connection | asyncpg.Pool


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


ENQUEUE = """
INSERT INTO jobs (kind, bank_id, payload, priority, max_attempts, run_after, dedupe_key, serial_key)
VALUES ($1, $2, $3, $4, $5, now() + $6 * interval '1 second', $7, $8)
ON CONFLICT (dedupe_key) WHERE status = 'queued' DO NOTHING
RETURNING id
"""

# The candidate is the first open job that is due (or whose claim's lease ran out) and whose serial key is not
# held by a live claim. SKIP LOCKED lets concurrent workers pass over each other's candidates.
CLAIM = """
WITH candidate AS (
    SELECT j.id
    FROM jobs j
    WHERE j.status IN ('queued', 'running')
      AND ((j.status = 'queued' AND j.run_after <= now()) OR (j.status = 'running' AND j.lease_until < now()))
      AND ($2::text[] IS NULL OR j.kind = ANY($2::text[]))
      AND (j.serial_key IS NULL OR NOT EXISTS (
            SELECT 1 FROM jobs r
            WHERE r.serial_key = j.serial_key AND r.status = 'running' AND r.lease_until >= now() AND r.id <> j.id))
    ORDER BY j.priority, j.run_after, j.id
    LIMIT 1
    FOR UPDATE SKIP LOCKED
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

RECORD_RUN = """
INSERT INTO job_runs (job_id, claim_token, attempt, worker_id) VALUES ($1, $2, $3, $4)
"""

RENEW = """
UPDATE jobs SET lease_until = now() + $3 * interval '1 second'
WHERE id = $1 AND claim_token = $2 AND status = 'running'
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

END_RUN = """
UPDATE job_runs SET outcome = $3, finished_at = now(), error = $4 WHERE job_id = $1 AND claim_token = $2
"""


def backoff_seconds(attempt: int, base: float, cap: float, *, jitter: bool = True) -> float:
    """Exponential backoff: base, 2·base, 4·base, … up to cap; ±25% jitter so failed jobs do not retry in lockstep."""
    delay = min(cap, base * (2 ** max(attempt - 1, 0)))
    return delay * random.uniform(0.75, 1.25) if jitter else delay


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


async def claim(
    pool: asyncpg.Pool, worker_id: str, *, lease_seconds: float, kinds: list[str] | None = None
) -> ClaimedJob | None:
    """Take the next due job, or None. The claim and its job_runs row commit together."""
    token = uuid4()
    async with pool.acquire() as conn, conn.transaction():
        row = await conn.fetchrow(CLAIM, worker_id, kinds, token, lease_seconds)
        if row is None:
            return None
        await conn.execute(RECORD_RUN, row["id"], token, row["attempts"], worker_id)
    return ClaimedJob(
        id=row["id"], kind=row["kind"], bank_id=row["bank_id"], payload=dict(row["payload"] or {}),
        attempts=row["attempts"], max_attempts=row["max_attempts"],
        serial_key=row["serial_key"] or f"job:{row['id']}", claim_token=token, worker_id=worker_id,
    )


async def renew(db: Executor, job: ClaimedJob, lease_seconds: float) -> bool:
    return await db.execute(RENEW, job.id, job.claim_token, lease_seconds) == "UPDATE 1"


async def finish(db: Executor, job: ClaimedJob, result: dict[str, Any] | None) -> None:
    async with _transaction(db) as conn:
        await conn.execute(FINISH, job.id, result or {})
        await conn.execute(END_RUN, job.id, job.claim_token, "done", None)


async def retry_or_fail(db: Executor, job: ClaimedJob, error: str, *, base: float, cap: float) -> str:
    """After a failed attempt: queue it again after a backoff, or fail it for good. Returns the new status."""
    error = error[:2000]
    async with _transaction(db) as conn:
        if job.last_attempt:
            await conn.execute(FAIL, job.id, error)
            await conn.execute(END_RUN, job.id, job.claim_token, "failed", error)
            return "failed"
        await conn.execute(RETRY, job.id, backoff_seconds(job.attempts, base, cap), error)
        await conn.execute(END_RUN, job.id, job.claim_token, "retry", error)
        return "queued"


async def fail_now(db: Executor, job: ClaimedJob, error: str) -> None:
    """Fail without retrying (no handler for the kind, or its claims died too often)."""
    async with _transaction(db) as conn:
        await conn.execute(FAIL, job.id, error[:2000])
        await conn.execute(END_RUN, job.id, job.claim_token, "failed", error[:2000])


async def release(db: Executor, job: ClaimedJob, *, delay: float, outcome: str = "deferred") -> None:
    async with _transaction(db) as conn:
        await conn.execute(RELEASE, job.id, job.claim_token, delay)
        await conn.execute(END_RUN, job.id, job.claim_token, outcome, None)


async def list_jobs(
    db: Executor, *, bank_id: str | None = None, status: str | None = None, kind: str | None = None, limit: int = 100
) -> list[Job]:
    rows = await db.fetch(
        """
        SELECT id, kind, bank_id, status, attempts, max_attempts, payload, result, last_error, locked_by,
               run_after, lease_until, created_at, started_at, finished_at
        FROM jobs
        WHERE ($1::text IS NULL OR bank_id = $1) AND ($2::text IS NULL OR status = $2) AND ($3::text IS NULL OR kind = $3)
        ORDER BY id DESC
        LIMIT $4
        """,
        bank_id, status, kind, limit,
    )
    return [Job(**{**dict(r), "payload": r["payload"] or {}}) for r in rows]


async def open_jobs(db: Executor, bank_id: str | None = None) -> int:
    """Queued or running jobs (of a bank, or everywhere)."""
    return int(
        await db.fetchval(
            "SELECT count(*) FROM jobs WHERE status IN ('queued', 'running') AND ($1::text IS NULL OR bank_id = $1)",
            bank_id,
        )
    )


async def prune(db: Executor, *, older_than_seconds: float) -> int:
    """Forget finished jobs after a while (their runs go with them)."""
    status = await db.execute(
        "DELETE FROM jobs WHERE status IN ('done', 'failed', 'cancelled') AND finished_at < now() - $1 * interval '1 second'",
        older_than_seconds,
    )
    return int(status.split()[-1])


class _transaction:
    """`async with _transaction(pool_or_conn) as conn`: one transaction on a connection we may have to borrow."""

    def __init__(self, db: Executor) -> None:
        self.db = db
        self._acquired: Any = None
        self._tx: Any = None

    async def __aenter__(self) -> asyncpg.Connection:
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
