"""Consolidation of a bank: pending facts, in batches, into observations (LLM) or groups of near-duplicates (none).

Each batch commits in one transaction: the observations it changes, the units it handled (unit_learning), the
bank's watermark, and the mental models it makes stale (with their refresh jobs). A worker killed mid-job
therefore leaves whole batches or nothing, and the next claim goes on from what is recorded: the job completes
once in effect. Callers hold the bank's consolidation lock (the worker's serial key, or `consolidate_now`).

A batch that fails on the job's last attempt is parked, so that it cannot block the bank's later facts: its units
are marked failed (the watermark passes them) and a job of their own (PARKED_KIND, with the slower retry policy of
jobs/retry_policy.py) tries just those units again; when that job dies too they stay facts, unconsolidated.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any
from uuid import UUID

import asyncpg

from memwrap import tracing
from memwrap.engine.banks import settings as bank_settings
from memwrap.engine.jobs import queue as jobs
from memwrap.engine.jobs.queue import JobContext, serial_lock
from memwrap.engine.jobs.retry_policy import RetryPolicy
from memwrap.engine.learn import heuristic, llm_consolidate, mental_models
from memwrap.engine.learn.heuristic import Fact
from memwrap.engine.learn.learning_llm import consolidation_llm
from memwrap.engine.learn.observations import Applied, CreateOp, Plan, UpdateOp, apply_plan
from memwrap.engine.learn.pending import pending_facts
from memwrap.models import ConsolidationReport

if TYPE_CHECKING:
    from memwrap.engine.parts import EngineParts

log = logging.getLogger("memwrap.learn")

KIND = "consolidate"
PARKED_KIND = "consolidate_parked"
HEURISTIC_BATCH = 256
LLM_BATCH = 10
# The watermark only passes units older than this: a slower transaction may still commit a unit with a lower
# seq. (The deep reconciliation finds any that slip below it anyway.)
WATERMARK_LAG_SECONDS = 60.0

_FACT_COLUMNS = """m.id, m.seq, m.text, m.tags, m.mentioned_at, m.document_id, m.item_hash, m.embedding, m.speaker,
       m.created_at < now() - $4 * interval '1 second' AS settled,
       coalesce(m.expires_at <= now(), false) AS expired"""

PENDING = f"""
SELECT {_FACT_COLUMNS}
FROM memory_units m
WHERE {pending_facts("$1", "$2")}
ORDER BY m.seq
LIMIT $3
"""

PARKED = f"""
SELECT {_FACT_COLUMNS}
FROM unit_learning l JOIN memory_units m ON m.bank_id = l.bank_id AND m.id = l.unit_id
WHERE l.bank_id = $1 AND l.unit_id = ANY($2::uuid[]) AND l.status = 'failed' AND m.invalidated_at IS NULL
ORDER BY m.seq
LIMIT $3
"""

MARK_DONE = """
INSERT INTO unit_learning (bank_id, unit_id, status)
SELECT $1, u, 'done' FROM unnest($2::uuid[]) AS u
ON CONFLICT (bank_id, unit_id) DO UPDATE SET status = 'done', error = NULL, updated_at = now()
"""

MARK_FAILED = """
INSERT INTO unit_learning (bank_id, unit_id, status, error)
SELECT $1, u, 'failed', $3 FROM unnest($2::uuid[]) AS u
ON CONFLICT (bank_id, unit_id) DO UPDATE SET status = 'failed', error = EXCLUDED.error, updated_at = now()
"""

ADVANCE_WATERMARK = """
INSERT INTO learn_progress (bank_id, watermark) VALUES ($1, $2)
ON CONFLICT (bank_id) DO UPDATE SET watermark = greatest(learn_progress.watermark, EXCLUDED.watermark), updated_at =
  now()
"""


def lock_key(bank_id: str) -> str:
    return f"{KIND}:{bank_id}"


async def run_job(ctx: JobContext) -> dict[str, Any]:
    report = await consolidate_bank(ctx.parts, ctx.job.bank_id or "", last_attempt=ctx.job.last_attempt)
    return report.model_dump(exclude={"bank_id"})


async def consolidate_now(parts: EngineParts, bank_id: str) -> ConsolidationReport:
    """Consolidate a bank in this process, now, waiting for any worker busy with the same bank."""
    async with serial_lock(parts.pool, lock_key(bank_id), wait=True):
        return await consolidate_bank(parts, bank_id, last_attempt=True)


async def consolidate_bank(parts: EngineParts, bank_id: str, *, last_attempt: bool) -> ConsolidationReport:
    llm = consolidation_llm(parts)
    report = ConsolidationReport(bank_id=bank_id, mode="llm" if llm else "heuristic")
    with _span(report):
        return await _consolidate_pending(parts, llm, report, last_attempt=last_attempt)


async def _consolidate_pending(
    parts: EngineParts, llm: Any, report: ConsolidationReport, *, last_attempt: bool
) -> ConsolidationReport:
    pool: asyncpg.Pool = parts.pool
    bank_id = report.bank_id
    size = LLM_BATCH if llm else HEURISTIC_BATCH
    cursor = await pool.fetchval("SELECT watermark FROM learn_progress WHERE bank_id = $1", bank_id) or 0
    while facts := await pool.fetch(PENDING, bank_id, cursor, size, WATERMARK_LAG_SECONDS):
        try:
            await _batch(parts, llm, bank_id, facts, report)
        except Exception as exc:
            if last_attempt:
                await _park(parts, bank_id, [f["id"] for f in facts], f"{type(exc).__name__}: {exc}")
                report.failed += len(facts)
            raise
        cursor = max(cursor, facts[-1]["seq"])
    return report


async def run_parked_job(ctx: JobContext) -> dict[str, Any]:
    """Consolidate the units a consolidation job parked (those still parked and valid)."""
    parts, bank_id = ctx.parts, ctx.job.bank_id or ""
    llm = consolidation_llm(parts)
    report = ConsolidationReport(bank_id=bank_id, mode="llm" if llm else "heuristic")
    ids = [UUID(str(i)) for i in ctx.job.payload.get("unit_ids", [])]
    size = LLM_BATCH if llm else HEURISTIC_BATCH
    with _span(report, parked=True):
        while facts := await parts.pool.fetch(PARKED, bank_id, ids, size, WATERMARK_LAG_SECONDS):
            await _batch(parts, llm, bank_id, facts, report)
    return report.model_dump(exclude={"bank_id"})


@contextlib.contextmanager
def _span(report: ConsolidationReport, *, parked: bool = False) -> Iterator[None]:
    """A span over one consolidation pass; its attributes are the report's counts (what it did, at what LLM
    cost), also when a batch failed part-way."""
    with tracing.span("consolidate", bank_id=report.bank_id, mode=report.mode, parked=parked) as current:
        try:
            yield
        finally:
            tracing.set_attributes(
                current,
                memories=report.units,
                observations_created=report.created,
                observations_updated=report.updated,
                observations_deleted=report.deleted,
                evidence_added=report.evidence_added,
                memories_failed=report.failed,
                llm_calls=report.llm_calls,
                prompt_tokens=report.prompt_tokens,
                completion_tokens=report.completion_tokens,
            )


async def _batch(
    parts: EngineParts, llm: Any, bank_id: str, rows: Sequence[asyncpg.Record], report: ConsolidationReport
) -> None:
    pool: asyncpg.Pool = parts.pool
    # An expired memory is read (so that it is marked done and the watermark passes it) but learnt nothing from.
    rows_read = rows
    rows = [r for r in rows if not r["expired"]]
    facts = [Fact.from_row(r) for r in rows]
    bank_size = await pool.fetchval("SELECT memory_count FROM banks WHERE bank_id = $1", bank_id) or 0
    now = datetime.now(UTC)
    plans: list[Plan] = []
    if llm is not None:
        # The LLM is asked outside any transaction (it may take seconds); we hold the bank's lock meanwhile.
        vectors = {r["id"]: r["embedding"] for r in rows if r["embedding"] is not None}
        instructions = await bank_settings.extraction_instructions(pool, bank_id)
        for scope, group in _by_scope(facts).items():
            async with pool.acquire() as conn:
                plan, usage = await llm_consolidate.plan_batch(
                    parts, llm, conn, bank_id, group, vectors, list(scope), bank_size, now, instructions
                )
            plans.append(plan)
            report.llm_calls += usage.calls or 1
            report.prompt_tokens += usage.prompt_tokens
            report.completion_tokens += usage.completion_tokens
    settled = [r["seq"] for r in rows_read if r["settled"]]
    async with pool.acquire() as conn, conn.transaction():
        if llm is None:
            plan = await heuristic.plan_batch(
                conn, bank_id, facts, threshold=parts.settings.observation_threshold, bank_size=bank_size
            )
            await _own_vectors(parts, plan)
            plans.append(plan)
        applied = Applied()
        for plan in plans:
            done = await apply_plan(conn, bank_id, plan)
            applied.created += done.created
            applied.updated += done.updated
            applied.deleted += done.deleted
            applied.evidence_added += done.evidence_added
            applied.scopes |= done.scopes
        await conn.execute(MARK_DONE, bank_id, [r["id"] for r in rows_read])
        if settled:
            await conn.execute(ADVANCE_WATERMARK, bank_id, max(settled))
        scopes = applied.scopes | {tuple(sorted(set(f.tags))) for f in facts}
        await mental_models.mark_stale_for_scopes(
            conn,
            parts.settings,
            bank_id,
            scopes,
            reason="consolidation changed what it draws on",
            touched=applied.touched,
        )
    report.units += len(facts)
    report.created += len(applied.created)
    report.updated += len(applied.updated)
    report.deleted += len(applied.deleted)
    report.evidence_added += applied.evidence_added


def _by_scope(facts: Sequence[Fact]) -> dict[tuple[str, ...], list[Fact]]:
    groups: dict[tuple[str, ...], list[Fact]] = {}
    for fact in facts:
        groups.setdefault(tuple(sorted(set(fact.tags))), []).append(fact)
    return groups


async def _park(parts: EngineParts, bank_id: str, ids: list[UUID], error: str) -> None:
    """The job is out of attempts: the batch's units are marked failed and get a job of their own, in one
    transaction."""
    policy = RetryPolicy.for_parked_units(parts.settings)
    try:
        async with parts.pool.acquire() as conn, conn.transaction():
            await conn.execute(MARK_FAILED, bank_id, ids, error[:1000])
            await jobs.enqueue(
                conn,
                PARKED_KIND,
                bank_id=bank_id,
                payload={"unit_ids": [str(i) for i in ids]},
                serial_key=lock_key(bank_id),
                max_attempts=policy.max_attempts,
                delay=policy.delay(1),
                priority=60,
            )
    except (OSError, asyncpg.PostgresError) as exc:
        log.warning("could not park the failed consolidation of %d units in %s: %s", len(ids), bank_id, exc)


async def _own_vectors(parts: EngineParts, plan: Plan) -> None:
    """A heuristic observation that took a newer statement's words (a recorded change) gets its text's own vector:
    the statement's stored one carries the turn said before it."""
    ops: list[CreateOp | UpdateOp] = [op for op in plan.creates if op.own_vector]
    ops += [op for op in plan.updates if op.text and op.embedding is None]
    if ops:
        vectors = await parts.embedder.embed([op.text for op in ops if op.text])
        for op, vector in zip(ops, vectors, strict=True):
            op.embedding = vector
