"""Forgetting: invalidate (reversible) and restore, the cascade before a delete, and a per-bank TTL for raw facts.

What a forgotten memory supported loses it: observations are recounted, rewritten (a heuristic observation
uses its earliest fact's words; if that fact goes, the next one's words replace them; an LLM observation is
rewritten by the LLM from its remaining evidence) or, left without enough support, removed (delete) or
invalidated (invalidate; restore brings them back). Mental models that drew on it go stale, are refreshed by
the worker, and — on delete — lose the versions that drew on it.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Literal, cast
from uuid import UUID

import asyncpg
from pydantic import BaseModel

from memwrap.engine import webhooks
from memwrap.engine.jobs import queue as jobs
from memwrap.engine.jobs.queue import JobContext
from memwrap.engine.learn import mental_models
from memwrap.engine.learn.learning_llm import consolidation_llm
from memwrap.engine.learn.observations import (
    SUPPORTING_IDS,
    invalidate_observation,
    observations_citing,
    record_version,
    refresh_stats,
    remove_observation,
    set_text,
)
from memwrap.engine.memories import catalog
from memwrap.errors import MemoryNotFoundError
from memwrap.models import MAX_TTL_DAYS
from memwrap.store.pg_types import Connection

if TYPE_CHECKING:
    from memwrap.engine.parts import EngineParts

log = logging.getLogger("memwrap.learn")

REVISE = "revise_observations"
EXPIRE = "expire_raw"
EXPIRE_BATCH = 200

LOCK = """
SELECT o.id, o.origin, o.representative_id, u.text, u.invalidated_at
FROM observations o JOIN memory_units u ON u.bank_id = o.bank_id AND u.id = o.id
WHERE o.bank_id = $1 AND o.id = ANY($2::uuid[])
ORDER BY o.id
FOR UPDATE OF o
"""


def _min_support(origin: str) -> int:
    # A heuristic observation is a group of near-duplicates: one fact alone is just that fact.
    return 2 if origin == "heuristic" else 1


async def revise(
    conn: Connection,
    parts: EngineParts,
    bank_id: str,
    observation_ids: Sequence[UUID],
    *,
    reason: str,
    cause: UUID | None,
    hard: bool,
) -> list[UUID]:
    """Bring observations in line with their remaining evidence. Returns those changed (for mental models)."""
    if not observation_ids:
        return []
    await refresh_stats(conn, bank_id, observation_ids)
    changed: list[UUID] = []
    rewrite_later: list[UUID] = []
    for row in await conn.fetch(LOCK, bank_id, list(observation_ids)):
        if row["invalidated_at"] is not None and not hard:
            continue
        supporting = [r["memory_id"] for r in await conn.fetch(SUPPORTING_IDS, bank_id, row["id"])]
        changed.append(row["id"])
        if len(supporting) < _min_support(row["origin"]):
            if hard:
                await remove_observation(conn, bank_id, row["id"])
            else:
                await invalidate_observation(
                    conn, bank_id, row["id"], f"{reason}: too little evidence left", caused_by=cause
                )
        elif row["origin"] == "heuristic":
            if row["representative_id"] not in supporting:
                await _use_words_of(conn, bank_id, row["id"], supporting[0], reason)
        else:
            rewrite_later.append(row["id"])
    if rewrite_later:
        await jobs.enqueue(
            conn,
            REVISE,
            bank_id=bank_id,
            payload={"ids": [str(i) for i in rewrite_later], "reason": reason},
            serial_key=f"consolidate:{bank_id}",
            max_attempts=parts.settings.job_max_attempts,
            priority=60,
        )
    return changed


async def _use_words_of(conn: Connection, bank_id: str, observation_id: UUID, fact_id: UUID, reason: str) -> None:
    found = await conn.fetchrow(
        "SELECT text, embedding FROM memory_units WHERE bank_id = $1 AND id = $2", bank_id, fact_id
    )
    fact = cast(asyncpg.Record, found)  # not None: revise just read `fact_id` among the observation's evidence
    await set_text(
        conn, bank_id, observation_id, fact["text"], fact["embedding"], origin="heuristic", representative_id=fact_id
    )
    await record_version(conn, bank_id, observation_id, "rewritten", f"{reason}: its words came from that memory")


# --- delete ------------------------------------------------------------------------------------------------


async def before_delete(parts: EngineParts, bank_id: str, memory_ids: Sequence[UUID]) -> None:
    """Take the memories out of everything learnt from them, before they are deleted."""
    ids = list(memory_ids)
    async with parts.pool.acquire() as conn, conn.transaction():
        cited = await observations_citing(conn, bank_id, ids)
        texts = [
            r["text"]
            for r in await conn.fetch(
                "SELECT text FROM memory_units WHERE bank_id = $1 AND id = ANY($2::uuid[])", bank_id, ids
            )
        ]
        await conn.execute(
            "DELETE FROM observation_evidence WHERE bank_id = $1 AND memory_id = ANY($2::uuid[])", bank_id, ids
        )
        if cited:
            # History must not keep what was forgotten: versions in its words, or resting on it alone.
            await conn.execute(
                """
                DELETE FROM observation_history
                WHERE bank_id = $1 AND observation_id = ANY($2::uuid[])
                  AND (text = ANY($4::text[]) OR (evidence_ids <@ $3::uuid[] AND evidence_ids <> '{}'))
                """,
                bank_id,
                cited,
                ids,
                texts,
            )
            await conn.execute(
                """
                UPDATE observation_history
                SET evidence_ids = array(SELECT x FROM unnest(evidence_ids) AS x WHERE x <> ALL($3::uuid[]))
                WHERE bank_id = $1 AND observation_id = ANY($2::uuid[]) AND evidence_ids && $3::uuid[]
                """,
                bank_id,
                cited,
                ids,
            )
        changed = await revise(conn, parts, bank_id, cited, reason="evidence deleted", cause=None, hard=True)
        await mental_models.mark_stale_for_sources(
            conn, parts.settings, bank_id, ids + changed, reason="a memory it drew on was deleted"
        )
        await mental_models.forget_sources(conn, bank_id, ids, texts)


# --- invalidate / restore ----------------------------------------------------------------------------------


async def invalidate(parts: EngineParts, bank_id: str, memory_id: UUID, reason: str) -> None:
    async with parts.pool.acquire() as conn, conn.transaction():
        row = await _lock_unit(conn, bank_id, memory_id)
        if row["invalidated_at"] is not None:
            await conn.execute(
                "UPDATE invalidations SET reason = $3 WHERE bank_id = $1 AND unit_id = $2", bank_id, memory_id, reason
            )
            return
        if row["fact_type"] == "observation":
            await invalidate_observation(conn, bank_id, memory_id, reason)
            changed: list[UUID] = []
        else:
            await conn.execute(
                "UPDATE memory_units SET invalidated_at = now() WHERE bank_id = $1 AND id = $2", bank_id, memory_id
            )
            await conn.execute(
                "INSERT INTO invalidations (bank_id, unit_id, reason) VALUES ($1, $2, $3) "
                "ON CONFLICT (bank_id, unit_id) DO UPDATE SET reason = EXCLUDED.reason, invalidated_at = now()",
                bank_id,
                memory_id,
                reason,
            )
            cited = await observations_citing(conn, bank_id, [memory_id])
            changed = await revise(
                conn, parts, bank_id, cited, reason="evidence invalidated", cause=memory_id, hard=False
            )
        await mental_models.mark_stale_for_sources(
            conn, parts.settings, bank_id, [memory_id, *changed], reason="a memory it drew on was invalidated"
        )
        await webhooks.emit(conn, bank_id, "invalidated", [memory_id], data={"reason": reason})


async def restore(parts: EngineParts, bank_id: str, memory_id: UUID) -> None:
    """Undo `invalidate`, and the invalidations it caused."""
    async with parts.pool.acquire() as conn, conn.transaction():
        row = await _lock_unit(conn, bank_id, memory_id)
        if row["invalidated_at"] is None:
            return
        await _unhide(conn, bank_id, memory_id)
        changed = [memory_id]
        if row["fact_type"] == "observation":
            await record_version(conn, bank_id, memory_id, "restored", "restored")
        else:
            cited = await observations_citing(conn, bank_id, [memory_id])
            changed += await revise(conn, parts, bank_id, cited, reason="evidence restored", cause=None, hard=False)
            caused = await conn.fetch(
                "SELECT i.unit_id, o.origin FROM invalidations i "
                "JOIN observations o ON o.bank_id = i.bank_id AND o.id = i.unit_id "
                "WHERE i.bank_id = $1 AND i.caused_by = $2",
                bank_id,
                memory_id,
            )
            for c in caused:
                support = await conn.fetch(SUPPORTING_IDS, bank_id, c["unit_id"])
                if len(support) >= _min_support(c["origin"]):
                    await _unhide(conn, bank_id, c["unit_id"])
                    await record_version(conn, bank_id, c["unit_id"], "restored", "its evidence was restored")
                    changed.append(c["unit_id"])
            await _make_pending_if_new(conn, parts, bank_id, memory_id, row["seq"])
        await mental_models.mark_stale_for_sources(
            conn, parts.settings, bank_id, changed, reason="a memory it drew on was restored"
        )
        await mental_models.mark_stale_for_scopes(
            conn, parts.settings, bank_id, [tuple(sorted(row["tags"]))], reason="a memory in its scope was restored"
        )


async def _lock_unit(conn: Connection, bank_id: str, memory_id: UUID) -> asyncpg.Record:
    row = await conn.fetchrow(
        "SELECT fact_type, invalidated_at, seq, tags FROM memory_units WHERE bank_id = $1 AND id = $2 FOR UPDATE",
        bank_id,
        memory_id,
    )
    if row is None:
        raise MemoryNotFoundError(f"No memory with id {memory_id} in bank {bank_id!r}.")
    return row


async def _unhide(conn: Connection, bank_id: str, unit_id: UUID) -> None:
    await conn.execute("UPDATE memory_units SET invalidated_at = NULL WHERE bank_id = $1 AND id = $2", bank_id, unit_id)
    await conn.execute("DELETE FROM invalidations WHERE bank_id = $1 AND unit_id = $2", bank_id, unit_id)


async def _make_pending_if_new(conn: Connection, parts: EngineParts, bank_id: str, unit_id: UUID, seq: int) -> None:
    """A unit invalidated before consolidation saw it is pending again (the watermark may have passed it)."""
    learnt = await conn.fetchval("SELECT 1 FROM unit_learning WHERE bank_id = $1 AND unit_id = $2", bank_id, unit_id)
    if learnt:
        return
    await conn.execute(
        "UPDATE learn_progress SET watermark = least(watermark, $2) WHERE bank_id = $1", bank_id, seq - 1
    )
    await parts.learning().enqueue_consolidation(bank_id, conn=conn)


# --- observations whose evidence changed: rewritten from what there is now ----------------------------------


class RevisedObservation(BaseModel):
    action: Literal["keep", "rewrite", "delete"]
    text: str = ""
    reason: str = ""


REVISE_SYSTEM = """The evidence behind an observation in long-term memory changed: some of it was deleted or \
invalidated by the user, or restored. Given the observation and its current evidence, decide: keep it as it is, \
rewrite it so it says what the current evidence supports (action "rewrite", with the new text), or delete it \
when the evidence does not support it. Never keep details that only removed evidence supported."""


async def run_revise(ctx: JobContext) -> dict[str, Any]:
    parts, bank_id = ctx.parts, ctx.job.bank_id or ""
    llm = consolidation_llm(parts)
    reason = str(ctx.job.payload.get("reason", "evidence removed"))
    # An updated memory is the newest word on what it says, whenever it was first said: its evidence comes first.
    changed = ctx.job.payload.get("changed")
    changed_id = UUID(changed) if isinstance(changed, str) else None
    done: dict[str, str] = {}
    for raw in ctx.job.payload.get("ids", []):
        observation_id = UUID(raw)
        async with parts.pool.acquire() as conn:
            row = await conn.fetchrow(
                "SELECT u.text, u.invalidated_at FROM memory_units u WHERE u.bank_id = $1 AND u.id = $2",
                bank_id,
                observation_id,
            )
            evidence = await conn.fetch(
                "SELECT m.id, m.text FROM observation_evidence e "
                "JOIN memory_units m ON m.bank_id = e.bank_id AND m.id = e.memory_id "
                "WHERE e.bank_id = $1 AND e.observation_id = $2 AND e.stance = 'supports' AND m.invalidated_at IS NULL "
                "ORDER BY m.id IS NOT DISTINCT FROM $3 DESC, e.evidenced_at DESC, m.seq DESC",
                bank_id,
                observation_id,
                changed_id,
            )
        if row is None or row["invalidated_at"] is not None or not evidence:
            continue
        if llm is None:
            # No LLM to rewrite it: say only what the newest remaining evidence says, in its words.
            decision = RevisedObservation(action="rewrite", text=evidence[0]["text"], reason=reason)
        else:
            listing = "\n".join(f"- {' '.join(e['text'].split())}" for e in evidence[:30])
            decision, _usage = await llm.structured(
                REVISE_SYSTEM,
                f"OBSERVATION\n{row['text']}\n\nCURRENT EVIDENCE\n{listing}\n",
                RevisedObservation,
                role="consolidation",
            )
        async with parts.pool.acquire() as conn, conn.transaction():
            if decision.action == "delete":
                await invalidate_observation(conn, bank_id, observation_id, decision.reason or reason)
            elif decision.action == "rewrite" and decision.text.strip() and decision.text.strip() != row["text"]:
                vector = (await parts.embedder.embed([decision.text.strip()]))[0]
                representative = evidence[0]["id"] if llm is None else None
                await set_text(
                    conn,
                    bank_id,
                    observation_id,
                    decision.text.strip(),
                    vector,
                    origin="heuristic" if llm is None else "llm",
                    representative_id=representative,
                )
                await record_version(conn, bank_id, observation_id, "rewritten", decision.reason or reason)
            await mental_models.mark_stale_for_sources(
                conn, parts.settings, bank_id, [observation_id], reason="an observation it drew on was revised"
            )
        done[raw] = decision.action
    return {"revised": done}


# --- TTL for raw facts ---------------------------------------------------------------------------------------


async def expire_raw(parts: EngineParts, bank_id: str, *, now: datetime | None = None) -> int:
    """Delete the bank's raw facts stored longer ago than its TTL (with the forgetting cascade). Returns how many."""
    pool: asyncpg.Pool = parts.pool
    config = await pool.fetchval("SELECT config FROM banks WHERE bank_id = $1", bank_id)
    days = (config or {}).get("raw_ttl_days") if isinstance(config, dict) else None
    if isinstance(days, bool) or not isinstance(days, (int, float)) or not math.isfinite(days) or days <= 0:
        return 0  # none set, or a value no check let through (a hand-written row): nothing to expire by
    # Clamped to the declared bound: a row written past the checks cannot overflow the date arithmetic.
    cutoff = (now or datetime.now(UTC)) - timedelta(days=min(float(days), MAX_TTL_DAYS))
    removed = 0
    while True:
        ids = [
            r["id"]
            for r in await pool.fetch(
                "SELECT id FROM memory_units WHERE bank_id = $1 AND fact_type = 'raw' AND created_at < $2 "
                "ORDER BY seq LIMIT $3",
                bank_id,
                cutoff,
                EXPIRE_BATCH,
            )
        ]
        if not ids:
            return removed
        await before_delete(parts, bank_id, ids)
        for memory_id in ids:
            try:
                await catalog.delete_memory(pool, bank_id, memory_id)
                removed += 1
            except MemoryNotFoundError:
                pass  # deleted meanwhile


async def run_expire(ctx: JobContext) -> dict[str, Any]:
    return {"expired": await expire_raw(ctx.parts, ctx.job.bank_id or "")}
