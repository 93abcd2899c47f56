"""Updating a memory in place, and the history of its earlier versions (table memory_history, migration 0007)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any
from uuid import UUID

import asyncpg
import numpy as np

from memwrap.store.pg_types import Connection

LOCK_UNIT = """
SELECT id, text, fact_type, metadata, tags, occurred_start, occurred_end, mentioned_at, created_at, session_key, seq,
       expires_at, turn_parts, speaker
FROM memory_units WHERE bank_id = $1 AND id = $2
FOR UPDATE
"""

# The unit before a raw unit in its session, whose end joins the unit's embedding text (engine/embed/unit_text.py).
PREVIOUS_IN_SESSION = """
SELECT CASE WHEN turn_parts IS NULL THEN text END FROM memory_units  -- unit_text.context_of: a chunk lends none
WHERE bank_id = $1 AND session_key = $2 AND seq < $3
ORDER BY seq DESC LIMIT 1
"""

# The raw unit after it in its session: its vector was computed with the updated unit's text as context.
NEXT_RAW_IN_SESSION = """
SELECT id, text, turn_parts FROM memory_units
WHERE bank_id = $1 AND session_key = $2 AND seq > $3 AND fact_type = 'raw'
ORDER BY seq LIMIT 1
"""

RECORD_VERSION = """
INSERT INTO memory_history (bank_id, memory_id, version, text, metadata, tags, occurred_start, occurred_end,
                            valid_from, changed)
SELECT $1, $2, coalesce(max(version), 0) + 1, $3, $4, $5, $6, $7,
       coalesce((SELECT max(replaced_at) FROM memory_history WHERE bank_id = $1 AND memory_id = $2), $8), $9
FROM memory_history WHERE bank_id = $1 AND memory_id = $2
"""

UPDATE_UNIT = """
UPDATE memory_units
SET text = $3, metadata = $4, tags = $5, occurred_start = $6, occurred_end = $7,
    embedding = coalesce($8, embedding), search_tsv = to_tsvector('english', $9)
WHERE bank_id = $1 AND id = $2
"""

# Entities keep an honest mention count (the graph arm weighs entities by rarity): the old links go first.
UNLINK_ENTITIES = """
WITH gone AS (
    DELETE FROM unit_entities WHERE bank_id = $1 AND unit_id = $2 RETURNING entity_id
)
UPDATE entities e SET mention_count = greatest(e.mention_count - 1, 0)
FROM gone WHERE e.bank_id = $1 AND e.id = gone.entity_id
"""

VERSIONS = """
SELECT version, text, metadata, tags, occurred_start, occurred_end, valid_from, replaced_at, changed
FROM memory_history WHERE bank_id = $1 AND memory_id = $2
ORDER BY version
"""

CURRENT = """
SELECT text, metadata, tags, occurred_start, occurred_end, created_at FROM memory_units WHERE bank_id = $1 AND id = $2
"""

SET_EVIDENCE_QUOTE = """
UPDATE observation_evidence SET quote = $3 WHERE bank_id = $1 AND memory_id = $2
"""


async def lock_unit(conn: Connection, bank_id: str, memory_id: UUID) -> asyncpg.Record | None:
    return await conn.fetchrow(LOCK_UNIT, bank_id, memory_id)


async def previous_text(conn: Connection, bank_id: str, session_key: str, seq: int) -> str | None:
    return await conn.fetchval(PREVIOUS_IN_SESSION, bank_id, session_key, seq)


async def next_raw(conn: Connection, bank_id: str, session_key: str, seq: int) -> asyncpg.Record | None:
    return await conn.fetchrow(NEXT_RAW_IN_SESSION, bank_id, session_key, seq)


async def record_version(conn: Connection, bank_id: str, old: asyncpg.Record, changed: Sequence[str]) -> None:
    await conn.execute(
        RECORD_VERSION,
        bank_id,
        old["id"],
        old["text"],
        old["metadata"] or {},
        list(old["tags"] or []),
        old["occurred_start"],
        old["occurred_end"],
        old["created_at"],
        list(changed),
    )


async def update_unit(
    conn: Connection,
    bank_id: str,
    memory_id: UUID,
    *,
    text: str,
    metadata: dict[str, Any],
    tags: list[str],
    occurred: tuple[datetime, datetime] | None,
    embedding: np.ndarray | None,
    search_text: str,
) -> None:
    await conn.execute(
        UPDATE_UNIT,
        bank_id,
        memory_id,
        text,
        metadata,
        tags,
        occurred[0] if occurred else None,
        occurred[1] if occurred else None,
        embedding,
        search_text,
    )


async def set_change_cue(conn: Connection, bank_id: str, memory_id: UUID, change_cue: bool) -> None:
    """Whether the memory's new text states a change (migration 0023; language/change_cue.py). A statement of its
    own, after the text's: the text's update left it unknown (the trigger memory_units_change_cue_stale)."""
    await conn.execute(
        "UPDATE memory_units SET change_cue = $3 WHERE bank_id = $1 AND id = $2", bank_id, memory_id, change_cue
    )


async def set_embedding(conn: Connection, bank_id: str, memory_id: UUID, embedding: np.ndarray) -> None:
    await conn.execute(
        "UPDATE memory_units SET embedding = $3 WHERE bank_id = $1 AND id = $2", bank_id, memory_id, embedding
    )


async def unlink_entities(conn: Connection, bank_id: str, memory_id: UUID) -> None:
    await conn.execute(UNLINK_ENTITIES, bank_id, memory_id)


async def set_evidence_quote(conn: Connection, bank_id: str, memory_id: UUID, quote: str) -> None:
    await conn.execute(SET_EVIDENCE_QUOTE, bank_id, memory_id, quote)


async def versions(
    pool: asyncpg.Pool, bank_id: str, memory_id: UUID
) -> tuple[list[asyncpg.Record], asyncpg.Record | None]:
    """(earlier versions oldest first, the current state) — the current state is None when there is no memory."""
    async with pool.acquire() as conn, conn.transaction(isolation="repeatable_read", readonly=True):
        return await conn.fetch(VERSIONS, bank_id, memory_id), await conn.fetchrow(CURRENT, bank_id, memory_id)
