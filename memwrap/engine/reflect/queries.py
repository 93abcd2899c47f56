"""Read-only SQL reflect needs beyond the engine's verbs: observation staleness for many ids at once, the turns
around a fact, memory units by id, and which cited ids exist. Every query is keyed by bank_id first."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

import asyncpg

from memwrap.engine.learn.trend import trend
from memwrap.models import RecalledMemory, Trend

UNIT_COLUMNS = """m.id, m.text, m.fact_type, m.document_id, m.metadata, m.tags, m.occurred_start, m.occurred_end,
       m.mentioned_at"""

UNITS = f"""
SELECT {UNIT_COLUMNS}
FROM memory_units m
WHERE m.bank_id = $1 AND m.id = ANY($2::uuid[]) AND m.invalidated_at IS NULL
  AND (m.expires_at IS NULL OR m.expires_at > now())
  AND ($3::text[] IS NULL OR m.tags && $3::text[])
"""

OBSERVATION_STATE = """
SELECT o.id, o.proof_count, o.evidence_count, o.last_evidence_at,
       coalesce((SELECT array_agg(e.evidenced_at)
                 FROM observation_evidence e JOIN memory_units m ON m.bank_id = e.bank_id AND m.id = e.memory_id
                 WHERE e.bank_id = o.bank_id AND e.observation_id = o.id AND e.stance = 'supports'
                   AND m.invalidated_at IS NULL), '{}') AS supported_at,
       (SELECT count(*) FROM observation_evidence e
        WHERE e.bank_id = o.bank_id AND e.observation_id = o.id AND e.stance = 'superseded') AS superseded
FROM observations o
WHERE o.bank_id = $1 AND o.id = ANY($2::uuid[])
"""

# The turns (raw units or facts) of the same session just before and after a unit, in order.
AROUND = f"""
WITH me AS (SELECT session_key, seq FROM memory_units WHERE bank_id = $1 AND id = $2)
SELECT * FROM (
    (SELECT {UNIT_COLUMNS}, m.seq FROM memory_units m, me
     WHERE m.bank_id = $1 AND m.session_key = me.session_key AND m.seq < me.seq
       AND m.invalidated_at IS NULL AND m.fact_type <> 'observation'
       AND (m.expires_at IS NULL OR m.expires_at > now())
       AND ($4::text[] IS NULL OR m.tags && $4::text[])
     ORDER BY m.seq DESC LIMIT $3)
    UNION ALL
    (SELECT {UNIT_COLUMNS}, m.seq FROM memory_units m, me
     WHERE m.bank_id = $1 AND m.session_key = me.session_key AND m.seq >= me.seq
       AND m.invalidated_at IS NULL AND m.fact_type <> 'observation'
       AND (m.expires_at IS NULL OR m.expires_at > now())
       AND ($4::text[] IS NULL OR m.tags && $4::text[])
     ORDER BY m.seq LIMIT $3 + 1)
) around
ORDER BY seq
"""

KIND_OF = """
SELECT 'unit' AS kind, fact_type FROM memory_units WHERE bank_id = $1 AND id = $2 AND invalidated_at IS NULL
  AND (expires_at IS NULL OR expires_at > now())
UNION ALL
SELECT 'mental_model', NULL FROM mental_models WHERE bank_id = $1 AND id = $2
LIMIT 1
"""


@dataclass
class ObservationState:
    proof_count: int
    evidence_count: int
    superseded: int
    last_evidence_at: datetime | None
    trend: Trend

    @property
    def stale(self) -> bool:
        return self.trend == "stale"


def _unit(row: asyncpg.Record) -> RecalledMemory:
    return RecalledMemory(
        id=row["id"],
        text=row["text"],
        type=row["fact_type"],
        document_id=row["document_id"],
        metadata=row["metadata"] or {},
        tags=list(row["tags"] or []),
        occurred_start=row["occurred_start"],
        occurred_end=row["occurred_end"],
        mentioned_at=row["mentioned_at"],
    )


async def units(pool: asyncpg.Pool, bank_id: str, ids: Sequence[UUID], tags: list[str] | None) -> list[RecalledMemory]:
    """Live (not invalidated, not expired) units by id, in the order asked."""
    rows = {r["id"]: r for r in await pool.fetch(UNITS, bank_id, list(ids), tags)}
    return [_unit(rows[i]) for i in ids if i in rows]


async def around(
    pool: asyncpg.Pool, bank_id: str, unit_id: UUID, width: int, tags: list[str] | None
) -> list[RecalledMemory]:
    """The unit and up to `width` turns of its session on each side (just the unit when it has no session)."""
    rows = await pool.fetch(AROUND, bank_id, unit_id, width, tags)
    found = [_unit(r) for r in rows]
    if not any(m.id == unit_id for m in found):
        found = await units(pool, bank_id, [unit_id], tags)
    return found


async def observation_states(
    pool: asyncpg.Pool, bank_id: str, ids: Sequence[UUID], now: datetime
) -> dict[UUID, ObservationState]:
    rows = await pool.fetch(OBSERVATION_STATE, bank_id, list(ids))
    return {
        r["id"]: ObservationState(
            proof_count=r["proof_count"],
            evidence_count=r["evidence_count"],
            superseded=r["superseded"],
            last_evidence_at=r["last_evidence_at"],
            trend=trend(list(r["supported_at"]), now),
        )
        for r in rows
    }


async def kind_of(pool: asyncpg.Pool, bank_id: str, some_id: UUID) -> str | None:
    """'observation', a fact type ('raw', 'world', 'experience'), 'mental_model', or None if not in the bank."""
    row = await pool.fetchrow(KIND_OF, bank_id, some_id)
    if row is None:
        return None
    return "mental_model" if row["kind"] == "mental_model" else str(row["fact_type"])


async def existing(
    pool: asyncpg.Pool, bank_id: str, unit_ids: Sequence[UUID], model_ids: Sequence[UUID]
) -> tuple[set[UUID], set[UUID]]:
    """Which of these ids are live units and mental models of the bank (cited ids are checked against this)."""
    found_units: set[UUID] = set()
    found_models: set[UUID] = set()
    if unit_ids:
        rows = await pool.fetch(
            "SELECT id FROM memory_units WHERE bank_id = $1 AND id = ANY($2::uuid[]) AND invalidated_at IS NULL"
            " AND (expires_at IS NULL OR expires_at > now())",
            bank_id,
            list(unit_ids),
        )
        found_units = {r["id"] for r in rows}
    if model_ids:
        rows = await pool.fetch(
            "SELECT id FROM mental_models WHERE bank_id = $1 AND id = ANY($2::uuid[])", bank_id, list(model_ids)
        )
        found_models = {r["id"] for r in rows}
    return found_units, found_models


async def stored_disposition(pool: asyncpg.Pool, bank_id: str) -> dict[str, object] | None:
    config = await pool.fetchval("SELECT config FROM banks WHERE bank_id = $1", bank_id)
    value = config.get("disposition") if isinstance(config, dict) else None
    return value if isinstance(value, dict) else None


async def bank_is_empty(pool: asyncpg.Pool, bank_id: str) -> bool:
    """No live memory and no mental model: a reflect may answer without looking anything up."""
    return not await pool.fetchval(
        "SELECT EXISTS (SELECT 1 FROM memory_units WHERE bank_id = $1 AND invalidated_at IS NULL"
        " AND (expires_at IS NULL OR expires_at > now()))"
        " OR EXISTS (SELECT 1 FROM mental_models WHERE bank_id = $1)",
        bank_id,
    )
