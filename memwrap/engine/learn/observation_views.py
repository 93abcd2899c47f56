"""Reading observations: list, one with its evidence, its history. The trend is computed at read time (it
depends on `now`)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

import asyncpg

from memwrap.engine.learn.trend import trend
from memwrap.errors import MemoryNotFoundError
from memwrap.models import Evidence, Observation, ObservationVersion
from memwrap.store.pg_types import Executor

_COLUMNS = """
    o.id, o.bank_id, u.text, o.scope, o.origin, o.proof_count, o.evidence_count, o.version, o.first_evidence_at,
    o.last_evidence_at, o.created_at, o.updated_at, u.invalidated_at,
    coalesce((SELECT array_agg(e.evidenced_at)
              FROM observation_evidence e JOIN memory_units m ON m.bank_id = e.bank_id AND m.id = e.memory_id
              WHERE e.bank_id = o.bank_id AND e.observation_id = o.id AND e.stance = 'supports'
                AND m.invalidated_at IS NULL), '{}') AS supported_at
"""

LIST = f"""
SELECT {_COLUMNS}
FROM observations o JOIN memory_units u ON u.bank_id = o.bank_id AND u.id = o.id
WHERE o.bank_id = $1
  AND ($2::bool OR u.invalidated_at IS NULL)
  AND ($3::text[] IS NULL OR o.scope && $3::text[])
ORDER BY o.proof_count DESC, o.last_evidence_at DESC NULLS LAST, o.id
LIMIT $4 OFFSET $5
"""

ONE = f"""
SELECT {_COLUMNS}
FROM observations o JOIN memory_units u ON u.bank_id = o.bank_id AND u.id = o.id
WHERE o.bank_id = $1 AND o.id = $2
"""

EVIDENCE = """
SELECT e.memory_id, e.quote, e.evidenced_at, e.source_key, e.stance, m.invalidated_at IS NULL AS active
FROM observation_evidence e JOIN memory_units m ON m.bank_id = e.bank_id AND m.id = e.memory_id
WHERE e.bank_id = $1 AND e.observation_id = $2
ORDER BY e.evidenced_at, e.memory_id
"""

HISTORY = """
SELECT version, text, action, reason, proof_count, evidence_ids, valid_from, recorded_at
FROM observation_history
WHERE bank_id = $1 AND observation_id = $2
ORDER BY version
"""


def _observation(row: asyncpg.Record, now: datetime) -> Observation:
    return Observation(
        id=row["id"],
        bank_id=row["bank_id"],
        text=row["text"],
        tags=list(row["scope"]),
        origin=row["origin"],
        proof_count=row["proof_count"],
        evidence_count=row["evidence_count"],
        version=row["version"],
        trend=trend(list(row["supported_at"]), now),
        first_evidence_at=row["first_evidence_at"],
        last_evidence_at=row["last_evidence_at"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        invalidated_at=row["invalidated_at"],
    )


@dataclass(frozen=True)
class ObservationSelection:
    """Which observations a list holds, checked: the `observations` verb's parameters (declared in
    memwrap/verbs.py, checked by memwrap/engine/learn/verbs.py) travel down as this one value, not as copies of the
    parameter list. `now` dates each observation's trend."""

    bank_id: str
    now: datetime
    tags: list[str] | None = None
    include_invalidated: bool = False
    limit: int = 100
    offset: int = 0


async def list_observations(db: Executor, selection: ObservationSelection) -> list[Observation]:
    s = selection
    rows = await db.fetch(LIST, s.bank_id, s.include_invalidated, s.tags, s.limit, s.offset)
    return [_observation(r, s.now) for r in rows]


async def get_observation(db: Executor, bank_id: str, observation_id: UUID, *, now: datetime) -> Observation:
    row = await db.fetchrow(ONE, bank_id, observation_id)
    if row is None:
        raise MemoryNotFoundError(f"No observation {observation_id} in bank {bank_id!r}.")
    observation = _observation(row, now)
    observation.evidence = [
        Evidence(
            memory_id=r["memory_id"],
            quote=r["quote"],
            at=r["evidenced_at"],
            source=r["source_key"],
            stance=r["stance"],
            active=r["active"],
        )
        for r in await db.fetch(EVIDENCE, bank_id, observation_id)
    ]
    return observation


async def observation_history(db: Executor, bank_id: str, observation_id: UUID) -> list[ObservationVersion]:
    rows = await db.fetch(HISTORY, bank_id, observation_id)
    if not rows and not await db.fetchval(
        "SELECT 1 FROM observations WHERE bank_id = $1 AND id = $2", bank_id, observation_id
    ):
        raise MemoryNotFoundError(f"No observation {observation_id} in bank {bank_id!r}.")
    return [ObservationVersion(**{**dict(r), "evidence_ids": list(r["evidence_ids"])}) for r in rows]
