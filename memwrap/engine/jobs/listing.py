"""Reading the jobs table: the queue as `jobs()` lists it, how much is open, and forgetting finished jobs
(the queue's own life, claims and retries, is queue.py; it re-exports these)."""

from __future__ import annotations

from memwrap.models import Job
from memwrap.store.pg_types import Executor


async def list_jobs(
    db: Executor, *, bank_id: str | None = None, status: str | None = None, kind: str | None = None, limit: int = 100
) -> list[Job]:
    rows = await db.fetch(
        """
        SELECT id, kind, bank_id, status, attempts, max_attempts, payload, result, last_error, locked_by,
               run_after, lease_until, created_at, started_at, finished_at
        FROM jobs
        WHERE ($1::text IS NULL OR bank_id = $1) AND ($2::text IS NULL OR status = $2) AND ($3::text IS NULL OR kind =
          $3)
        ORDER BY id DESC
        LIMIT $4
        """,
        bank_id,
        status,
        kind,
        limit,
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
        "DELETE FROM jobs WHERE status IN ('done', 'failed', 'cancelled') AND finished_at < now() - $1 * interval '1 "
        "second'",
        older_than_seconds,
    )
    return int(status.split()[-1])
