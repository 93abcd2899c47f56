"""Read-only views of a bank for people looking at it (the sidecar's memory browser): its counts, one memory
with what surrounds it (links, the observations citing it, its invalidation), and its entities as a small graph.

The SQL only: the engine checks the arguments and offers these as verbs (memwrap/engine/views/verbs.py); their
results are public models (memwrap/models/).

Every query here is bounded (LIMIT, or a GROUP BY over one bank's index range) so a page of the browser costs a
few milliseconds on a bank of ten thousand memories.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

import asyncpg

from memwrap.engine.learn.pending import pending_facts
from memwrap.errors import BankNotFoundError, EntityNotFoundError, MemoryNotFoundError
from memwrap.models import (
    BankStats,
    CitingObservation,
    EntityGraph,
    EntityMemory,
    EntityRef,
    EntitySummary,
    LinkedMemory,
    MemoryContext,
    Neighbour,
    SessionSummary,
)

# The text of a linked or citing item is shown as a one-line preview.
PREVIEW_CHARS = 300


# The bank's consolidation watermark (learn_progress; 0 before its first consolidation).
WATERMARK = "coalesce((SELECT p.watermark FROM learn_progress p WHERE p.bank_id = $1), 0)"

STATS = f"""
SELECT b.bank_id, b.created_at, b.last_retain_at,
  (SELECT coalesce(jsonb_object_agg(t.fact_type, t.n), '{{}}') FROM (
     SELECT fact_type, count(*) AS n FROM memory_units
     WHERE bank_id = $1 AND invalidated_at IS NULL GROUP BY fact_type) t) AS by_type,
  (SELECT count(*) FROM memory_units WHERE bank_id = $1 AND invalidated_at IS NOT NULL) AS invalidated,
  (SELECT coalesce(jsonb_object_agg(s.status, s.n), '{{}}') FROM (
     SELECT status, count(*) AS n FROM mental_models WHERE bank_id = $1 GROUP BY status) s) AS models_by_status,
  (SELECT count(*) FROM entities WHERE bank_id = $1) AS entities,
  (SELECT coalesce(jsonb_object_agg(j.status, j.n), '{{}}') FROM (
     SELECT status, count(*) AS n FROM jobs WHERE bank_id = $1 GROUP BY status) j) AS jobs_by_status,
  (SELECT count(*) FROM memory_units m WHERE {pending_facts("$1", WATERMARK)}) AS facts_to_consolidate,
  greatest(b.last_retain_at,
           (SELECT max(updated_at) FROM observations WHERE bank_id = $1),
           (SELECT max(updated_at) FROM mental_models WHERE bank_id = $1),
           (SELECT max(greatest(created_at, finished_at)) FROM jobs WHERE bank_id = $1)) AS last_activity_at
FROM banks b WHERE b.bank_id = $1
"""


async def bank_stats(pool: asyncpg.Pool, bank_id: str) -> BankStats:
    row = await pool.fetchrow(STATS, bank_id)
    if row is None:
        raise BankNotFoundError(f"No bank {bank_id!r}; banks() lists the banks there are.")
    by_type = {k: int(v) for k, v in _json(row["by_type"]).items()}
    models = {k: int(v) for k, v in _json(row["models_by_status"]).items()}
    jobs = {k: int(v) for k, v in _json(row["jobs_by_status"]).items()}
    return BankStats(
        bank_id=bank_id,
        memories=sum(by_type.values()),
        memories_by_type=by_type,
        invalidated=row["invalidated"],
        observations=by_type.get("observation", 0),
        mental_models=sum(models.values()),
        mental_models_by_status=models,
        entities=row["entities"],
        jobs_pending=jobs.get("queued", 0) + jobs.get("running", 0),
        jobs_by_status=jobs,
        facts_to_consolidate=row["facts_to_consolidate"],
        created_at=row["created_at"],
        last_retain_at=row["last_retain_at"],
        last_activity_at=row["last_activity_at"],
    )


def _json(value: Any) -> dict[str, Any]:
    if isinstance(value, str):  # a pool without the jsonb codec hands back text
        import json

        return dict(json.loads(value))
    return dict(value or {})


# A memory past its expires_at is gone to every reader (recall, lists, reflect) until the maintenance pass deletes
# it: a view of its neighbours must not show its text either.
LIVE = "(m.expires_at IS NULL OR m.expires_at > now())"

LINKS = f"""
SELECT l.kind, 'out' AS direction, m.id, m.fact_type, left(m.text, $3) AS text, m.invalidated_at
FROM memory_links l JOIN memory_units m ON m.bank_id = l.bank_id AND m.id = l.to_id
WHERE l.bank_id = $1 AND l.from_id = $2 AND {LIVE}
UNION ALL
SELECT l.kind, 'in', m.id, m.fact_type, left(m.text, $3), m.invalidated_at
FROM memory_links l JOIN memory_units m ON m.bank_id = l.bank_id AND m.id = l.from_id
WHERE l.bank_id = $1 AND l.to_id = $2 AND {LIVE}
LIMIT 50
"""

CITING = f"""
SELECT o.id, left(m.text, $3) AS text, oe.quote, oe.stance, o.proof_count, m.invalidated_at
FROM observation_evidence oe
JOIN observations o ON o.bank_id = oe.bank_id AND o.id = oe.observation_id
JOIN memory_units m ON m.bank_id = o.bank_id AND m.id = o.id
WHERE oe.bank_id = $1 AND oe.memory_id = $2 AND {LIVE}
ORDER BY o.proof_count DESC
LIMIT 50
"""

UNIT_ENTITIES = """
SELECT e.id, e.name, e.entity_type
FROM unit_entities ue JOIN entities e ON e.bank_id = ue.bank_id AND e.id = ue.entity_id
WHERE ue.bank_id = $1 AND ue.unit_id = $2 ORDER BY e.name
"""


async def memory_context(pool: asyncpg.Pool, bank_id: str, memory_id: UUID) -> MemoryContext:
    async with pool.acquire() as conn:
        unit = await conn.fetchrow(
            "SELECT m.invalidated_at, i.reason FROM memory_units m LEFT JOIN invalidations i"
            " ON i.bank_id = m.bank_id AND i.unit_id = m.id WHERE m.bank_id = $1 AND m.id = $2",
            bank_id,
            memory_id,
        )
        if unit is None:
            raise MemoryNotFoundError(f"No memory with id {memory_id} in bank {bank_id!r}.")
        entities = await conn.fetch(UNIT_ENTITIES, bank_id, memory_id)
        links = await conn.fetch(LINKS, bank_id, memory_id, PREVIEW_CHARS)
        citing = await conn.fetch(CITING, bank_id, memory_id, PREVIEW_CHARS)
    return MemoryContext(
        id=memory_id,
        invalidated_at=unit["invalidated_at"],
        invalidation_reason=unit["reason"] if unit["invalidated_at"] else None,
        entities=[EntityRef(id=r["id"], name=r["name"], type=r["entity_type"]) for r in entities],
        links=[
            LinkedMemory(
                id=r["id"],
                kind=r["kind"],
                direction=r["direction"],
                type=r["fact_type"],
                text=r["text"],
                invalidated=r["invalidated_at"] is not None,
            )
            for r in links
        ],
        observations=[
            CitingObservation(
                id=r["id"],
                text=r["text"],
                quote=r["quote"],
                stance=r["stance"],
                proof_count=r["proof_count"],
                invalidated=r["invalidated_at"] is not None,
            )
            for r in citing
        ],
    )


ENTITY_COLUMNS = """
e.id, e.name, e.entity_type, e.mention_count, e.first_seen, e.last_seen,
coalesce((SELECT array_agg(a.alias ORDER BY a.alias) FROM entity_aliases a
          WHERE a.bank_id = e.bank_id AND a.entity_id = e.id), '{}') AS aliases
"""

ENTITIES = f"""
SELECT {ENTITY_COLUMNS} FROM entities e
WHERE e.bank_id = $1 AND ($2::text IS NULL OR e.name_key LIKE '%' || $2 || '%' OR e.name ILIKE '%' || $2 || '%'
                          OR EXISTS (SELECT 1 FROM entity_aliases a WHERE a.bank_id = e.bank_id
                                     AND a.entity_id = e.id AND a.alias ILIKE '%' || $2 || '%'))
  AND ($5::text IS NULL OR lower(e.entity_type) = $5)
ORDER BY e.mention_count DESC, e.name
LIMIT $3 OFFSET $4
"""

NEIGHBOURS = f"""
WITH mine AS (SELECT unit_id FROM unit_entities WHERE bank_id = $1 AND entity_id = $2),
co AS (
    SELECT ue.entity_id, count(*) AS n FROM mine JOIN unit_entities ue ON ue.bank_id = $1 AND ue.unit_id = mine.unit_id
    WHERE ue.entity_id <> $2 GROUP BY ue.entity_id
),
linked AS (
    SELECT ue.entity_id, count(*) AS n FROM mine
    JOIN memory_links l ON l.bank_id = $1 AND (l.from_id = mine.unit_id OR l.to_id = mine.unit_id)
    JOIN unit_entities ue ON ue.bank_id = $1
         AND ue.unit_id = CASE WHEN l.from_id = mine.unit_id THEN l.to_id ELSE l.from_id END
    WHERE ue.entity_id <> $2 GROUP BY ue.entity_id
),
ranked AS (
    SELECT coalesce(co.entity_id, linked.entity_id) AS entity_id, coalesce(co.n, 0) AS co_mentions,
           coalesce(linked.n, 0) AS links
    FROM co FULL JOIN linked ON linked.entity_id = co.entity_id
    ORDER BY 2 DESC, 3 DESC LIMIT $3
)
SELECT {ENTITY_COLUMNS}, r.co_mentions, r.links
FROM ranked r JOIN entities e ON e.bank_id = $1 AND e.id = r.entity_id
ORDER BY r.co_mentions DESC, r.links DESC, e.name
"""

ENTITY_MEMORIES = f"""
SELECT m.id, m.fact_type, left(m.text, $4) AS text, m.mentioned_at
FROM unit_entities ue JOIN memory_units m ON m.bank_id = ue.bank_id AND m.id = ue.unit_id
WHERE ue.bank_id = $1 AND ue.entity_id = $2 AND m.invalidated_at IS NULL AND {LIVE}
ORDER BY m.mentioned_at DESC LIMIT $3
"""


def _entity(row: asyncpg.Record) -> EntitySummary:
    return EntitySummary(
        id=row["id"],
        name=row["name"],
        type=row["entity_type"],
        mentions=row["mention_count"],
        aliases=list(row["aliases"]),
        first_seen=row["first_seen"],
        last_seen=row["last_seen"],
    )


async def entities(
    pool: asyncpg.Pool,
    bank_id: str,
    *,
    search: str | None = None,
    limit: int = 50,
    offset: int = 0,
    entity_type: str | None = None,
) -> list[EntitySummary]:
    """The bank's entities, most mentioned first; `search` matches a part of the name or of an alias;
    `entity_type` (checked by the caller) keeps one type, in any case (migration 0022's index on its lower case)."""
    needle = search.strip().lower() if search and search.strip() else None
    if needle is not None:
        needle = needle.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    kind = entity_type.lower() if entity_type else None
    return [_entity(r) for r in await pool.fetch(ENTITIES, bank_id, needle, limit, offset, kind)]


async def entity_graph(
    pool: asyncpg.Pool, bank_id: str, entity_id: UUID, *, neighbours: int = 15, memories: int = 20
) -> EntityGraph:
    """An entity, its closest neighbours (by co-mentions, then links) and its latest memories."""
    async with pool.acquire() as conn:
        row = await conn.fetchrow(
            f"SELECT {ENTITY_COLUMNS} FROM entities e WHERE e.bank_id = $1 AND e.id = $2", bank_id, entity_id
        )
        if row is None:
            raise EntityNotFoundError(
                f"No entity {entity_id} in bank {bank_id!r}; entities({bank_id!r}) lists the bank's entities."
            )
        near = await conn.fetch(NEIGHBOURS, bank_id, entity_id, neighbours)
        latest = await conn.fetch(ENTITY_MEMORIES, bank_id, entity_id, memories, PREVIEW_CHARS)
    return EntityGraph(
        entity=_entity(row),
        neighbours=[Neighbour(entity=_entity(r), co_mentions=r["co_mentions"], links=r["links"]) for r in near],
        memories=[
            EntityMemory(id=r["id"], type=r["fact_type"], text=r["text"], mentioned_at=r["mentioned_at"])
            for r in latest
        ],
    )


# The bank's sessions, latest conversation first: one GROUP BY over the bank's range of memory_units_session.
SESSIONS = """
SELECT session_key AS session_id, count(*) AS memories,
       coalesce(array_agg(DISTINCT speaker) FILTER (WHERE speaker IS NOT NULL), '{}') AS speakers,
       min(coalesce(mentioned_at, created_at)) AS first_said_at,
       max(coalesce(mentioned_at, created_at)) AS last_said_at
FROM memory_units
WHERE bank_id = $1 AND session_key IS NOT NULL AND invalidated_at IS NULL
GROUP BY session_key
ORDER BY last_said_at DESC, session_key
LIMIT $2 OFFSET $3
"""


async def sessions(pool: asyncpg.Pool, bank_id: str, *, limit: int, offset: int) -> list[SessionSummary]:
    rows = await pool.fetch(SESSIONS, bank_id, limit, offset)
    return [SessionSummary(**(dict(r) | {"speakers": sorted(r["speakers"])})) for r in rows]
