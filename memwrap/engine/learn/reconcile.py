"""Reconciliation: put back on the queue whatever work is due but has no open job.

Jobs can be lost to a terminal failure (attempts used up), a crash between a commit and an enqueue, or a
unit committed late below a bank's watermark. None of that may strand a fact: every pass looks for pending
facts with no open consolidation job, stale or scheduled mental models with no open refresh, banks whose raw
facts have a TTL, and (on deep passes) facts below the watermarks and old finished jobs. One worker at a time
runs a pass (an advisory lock); the queries are idempotent anyway (dedupe keys).

One bank can never stop another's work: each step runs in a savepoint of its own, so a step that fails leaves the
others to run; a failed step is then run again bank by bank, each bank in its own savepoint, so only the bank whose
row is at fault is skipped (and logged once per bank and step, not every 30 s). The arithmetic cannot overflow in
the first place: a schedule is compared as seconds (float8), clamped to the declared bounds, never turned into an
interval (a `refresh_every` of 1e300 written by an older version, or by hand, is read as the longest schedule).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import asyncpg

from memwrap.engine.jobs import queue as jobs
from memwrap.engine.jobs.queue import LOCK_NAMESPACE, NOTIFY_CHANNEL
from memwrap.engine.learn import forgetting, mental_models
from memwrap.engine.webhooks import delivery as webhook_delivery
from memwrap.models import MAX_REFRESH_EVERY_SECONDS, MIN_REFRESH_EVERY_SECONDS
from memwrap.store.pg_types import Connection

if TYPE_CHECKING:
    from memwrap.engine.parts import EngineParts

EXPIRE_EVERY_SECONDS = 3600.0
# After a job failed for good (its attempts used up: the LLM is down, say), wait this long before queueing
# another for the same work, so a dead provider is not hammered every pass.
FAILED_CONSOLIDATION_COOLDOWN_SECONDS = 300.0
FAILED_REFRESH_COOLDOWN_SECONDS = 600.0
KEEP_FINISHED_JOBS_SECONDS = 7 * 86400.0

log = logging.getLogger("memwrap.worker")
# (step, bank) pairs already logged as failing: a poisoned row is reported once per process, not every pass.
_REPORTED: set[tuple[str, str | None]] = set()
_MAX_REPORTED = 10_000

LOWER_WATERMARKS = """
UPDATE learn_progress p SET watermark = s.low - 1, updated_at = now()
FROM (
    SELECT m.bank_id, min(m.seq) AS low
    FROM memory_units m JOIN learn_progress w ON w.bank_id = m.bank_id
    WHERE m.seq <= w.watermark AND m.fact_type <> 'observation' AND m.invalidated_at IS NULL
      AND NOT EXISTS (SELECT 1 FROM unit_learning l WHERE l.bank_id = m.bank_id AND l.unit_id = m.id)
    GROUP BY m.bank_id
) s
WHERE p.bank_id = s.bank_id
"""

CONSOLIDATIONS = """
INSERT INTO jobs (kind, bank_id, dedupe_key, serial_key, max_attempts, priority)
SELECT 'consolidate', b.bank_id, 'consolidate:' || b.bank_id, 'consolidate:' || b.bank_id, $1, 50
FROM banks b
LEFT JOIN learn_progress p ON p.bank_id = b.bank_id
WHERE ($3::text IS NULL OR b.bank_id = $3)
  AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.bank_id = b.bank_id AND j.kind = 'consolidate'
                    AND (j.status IN ('queued', 'running')
                         OR (j.status = 'failed' AND j.finished_at > now() - $2 * interval '1 second')))
  AND EXISTS (SELECT 1 FROM memory_units m
              WHERE m.bank_id = b.bank_id AND m.seq > coalesce(p.watermark, 0) AND m.fact_type <> 'observation'
                AND m.invalidated_at IS NULL
                AND NOT EXISTS (SELECT 1 FROM unit_learning l WHERE l.bank_id = m.bank_id AND l.unit_id = m.id))
ON CONFLICT DO NOTHING
RETURNING id
"""

MENTAL_MODELS = """
INSERT INTO jobs (kind, bank_id, payload, dedupe_key, serial_key, max_attempts, priority)
SELECT 'refresh_mental_model', mm.bank_id, jsonb_build_object('model_id', mm.id::text),
       'refresh_mental_model:' || mm.id, 'refresh_mental_model:' || mm.id, $1, 120
FROM mental_models mm
WHERE ($3::text IS NULL OR mm.bank_id = $3)
  AND (mm.status IN ('pending', 'stale')
       OR (mm.refresh_every IS NOT NULL
           -- seconds against seconds: no interval to overflow; NaN and infinities clamp to the longest schedule
           AND extract(epoch FROM now() - coalesce(mm.refreshed_at, mm.created_at))::float8
               > greatest(least(mm.refresh_every, $4::float8), $5::float8)))
  AND NOT EXISTS (
        SELECT 1 FROM jobs j
        WHERE j.bank_id = mm.bank_id AND j.kind = 'refresh_mental_model' AND j.payload->>'model_id' = mm.id::text
          AND (j.status IN ('queued', 'running')
               OR (j.status = 'failed' AND j.finished_at > now() - $2 * interval '1 second')))
ON CONFLICT DO NOTHING
RETURNING id
"""

EXPIRIES = """
INSERT INTO jobs (kind, bank_id, dedupe_key, serial_key, max_attempts, priority)
SELECT 'expire_raw', b.bank_id, 'expire_raw:' || b.bank_id, 'expire_raw:' || b.bank_id, $1, 150
FROM banks b
WHERE ($3::text IS NULL OR b.bank_id = $3)
  AND b.config ? 'raw_ttl_days'
  AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.bank_id = b.bank_id AND j.kind = 'expire_raw'
                    AND (j.status IN ('queued', 'running') OR j.finished_at > now() - $2 * interval '1 second'))
ON CONFLICT DO NOTHING
RETURNING id
"""


# Observations whose evidence went away by another path than delete() (re-extraction replacing raw units,
# a manual DELETE): their counts, words and mental models are brought in line.
MISCOUNTED = """
SELECT o.bank_id, o.id FROM observations o
WHERE o.evidence_count <> (
    SELECT count(*) FROM observation_evidence e JOIN memory_units m ON m.bank_id = e.bank_id AND m.id = e.memory_id
    WHERE e.bank_id = o.bank_id AND e.observation_id = o.id AND m.invalidated_at IS NULL)
LIMIT 1000
"""


async def heal_observations(parts: EngineParts) -> int:
    pool: asyncpg.Pool = parts.pool
    by_bank: dict[str, list[Any]] = {}
    for row in await pool.fetch(MISCOUNTED):
        by_bank.setdefault(row["bank_id"], []).append(row["id"])
    for bank_id, ids in by_bank.items():
        async with pool.acquire() as conn, conn.transaction():
            changed = await forgetting.revise(
                conn, parts, bank_id, ids, reason="evidence removed", cause=None, hard=True
            )
            await mental_models.mark_stale_for_sources(
                conn, parts.settings, bank_id, changed, reason="an observation it drew on lost evidence"
            )
    return sum(len(ids) for ids in by_bank.values())


async def run(parts: EngineParts, *, deep: bool = False) -> int:
    """One pass. Returns how many jobs it queued (0 too when another worker is reconciling right now)."""
    pool: asyncpg.Pool = parts.pool
    attempts = parts.settings.job_max_attempts
    async with pool.acquire() as conn, conn.transaction():
        if not await conn.fetchval("SELECT pg_try_advisory_xact_lock($1, hashtext('reconcile'))", LOCK_NAMESPACE):
            return 0
        if deep:
            await _step(conn, "lower watermarks", lambda: conn.execute(LOWER_WATERMARKS))
            await _step(conn, "prune jobs", lambda: jobs.prune(conn, older_than_seconds=KEEP_FINISHED_JOBS_SECONDS))
            await _step(conn, "prune webhook deliveries", lambda: webhook_delivery.prune(conn))
        queued = 0
        for name, query, args in (
            ("consolidations", CONSOLIDATIONS, (attempts, FAILED_CONSOLIDATION_COOLDOWN_SECONDS)),
            (
                "mental model refreshes",
                MENTAL_MODELS,
                (attempts, FAILED_REFRESH_COOLDOWN_SECONDS, None, MAX_REFRESH_EVERY_SECONDS, MIN_REFRESH_EVERY_SECONDS),
            ),
            ("raw-memory expiry", EXPIRIES, (attempts, EXPIRE_EVERY_SECONDS)),
        ):
            queued += await _per_bank_step(conn, name, query, args)
        if queued:
            await conn.execute("SELECT pg_notify($1, 'reconcile')", NOTIFY_CHANNEL)
    if deep:
        try:
            await heal_observations(parts)
        except (asyncpg.PostgresError, ArithmeticError, ValueError) as exc:
            _report("heal observations", None, exc)
    return queued


async def _step(conn: Connection, name: str, work: Any) -> Any:
    """Run one step in a savepoint: its failure is logged (once) and undone, and the pass goes on."""
    try:
        async with conn.transaction():
            return await work()
    except asyncpg.PostgresError as exc:
        _report(name, None, exc)
        return None


async def _per_bank_step(conn: Connection, name: str, query: str, args: tuple[Any, ...]) -> int:
    """A step that queues jobs: over every bank at once (one statement), or, if that fails, bank by bank, each
    in a savepoint, so a bank whose row breaks the statement is skipped and the other banks' work is queued."""
    full = (*args[:2], None, *args[3:]) if len(args) > 2 else (*args, None)
    try:
        async with conn.transaction():
            return len(await conn.fetch(query, *full))
    except asyncpg.PostgresError as exc:
        _report(name, None, exc)
    queued = 0
    for bank_id in [r["bank_id"] for r in await conn.fetch("SELECT bank_id FROM banks ORDER BY bank_id")]:
        one = (*args[:2], bank_id, *args[3:]) if len(args) > 2 else (*args, bank_id)
        try:
            async with conn.transaction():
                queued += len(await conn.fetch(query, *one))
        except asyncpg.PostgresError as exc:
            _report(name, bank_id, exc)
    return queued


def _report(step: str, bank_id: str | None, exc: BaseException) -> None:
    """One warning per (step, bank) per process; later failures of the same pair at debug."""
    key = (step, bank_id)
    where = f"bank {bank_id!r}" if bank_id is not None else "all banks"
    if key in _REPORTED:
        log.debug("reconciliation: %s failed for %s again: %s", step, where, exc)
        return
    if len(_REPORTED) < _MAX_REPORTED:
        _REPORTED.add(key)
    log.warning(
        "reconciliation: %s failed for %s (%s: %s); %s",
        step,
        where,
        type(exc).__name__,
        exc,
        "skipping that bank, the others go on" if bank_id is not None else "retrying bank by bank",
    )
