"""The fused candidates as memories: their rows and their session neighbours in one query per bank, and the names
of their entities only for those a caller is shown.

A recall weighs 40-200 candidates and shows a block of a few dozen: the entity names (an aggregate over two joins
per memory) are read for what is returned, after packing, not for every candidate.
"""

from __future__ import annotations

from collections.abc import Sequence
from uuid import UUID

import asyncpg

from memwrap.engine.recall.arms import Filters
from memwrap.engine.recall.fusion import Fused
from memwrap.models import RecalledMemory
from memwrap.store.pg_types import Connection

# Neighbours are fetched for this many of the best hits and offered after all ranked hits.
NEIGHBOUR_HITS = 10
NEIGHBOUR_DISCOUNT = 0.5

# A memory across banks: (bank id, memory id). Ids are unique within a bank only (an imported copy keeps them).
Key = tuple[str, UUID]

COLUMNS = """m.id, m.text, m.fact_type, m.document_id, m.metadata, m.tags, m.occurred_start, m.occurred_end,
       m.mentioned_at, m.speaker, m.session_key, m.item_hash, m.part_index, m.turn_part, m.turn_parts,
       m.change_cue"""

# $2: the bank's candidates; $3: the best of them, whose session neighbours (the turn before and after) come too
# when they pass the filters (from $4 on). A hit's two neighbours come in the session's order.
ROWS_AND_NEIGHBOURS = """
WITH pairs AS (
    SELECT l.from_id AS hit, l.to_id AS neighbour FROM memory_links l
    WHERE l.bank_id = $1 AND l.from_id = ANY($3::uuid[]) AND l.kind = 'next'
    UNION ALL
    SELECT l.to_id, l.from_id FROM memory_links l
    WHERE l.bank_id = $1 AND l.to_id = ANY($3::uuid[]) AND l.kind = 'next'
), wanted AS (
    SELECT id, NULL::uuid AS hit FROM unnest($2::uuid[]) AS id
    UNION ALL
    SELECT neighbour, hit FROM pairs
)
-- Each row by its primary key, one probe per id (LATERAL with a LIMIT cannot become a hash join): the cost follows
-- the candidates, never the bank's size or what the planner's statistics believe it to be.
SELECT w.hit, m.*
FROM wanted w CROSS JOIN LATERAL (
    SELECT {columns} FROM memory_units m
    WHERE m.bank_id = $1 AND m.id = w.id AND (w.hit IS NULL OR ({filters}))
    LIMIT 1
) m
ORDER BY w.hit IS NOT NULL, array_position($3::uuid[], w.hit), m.mentioned_at, m.id
"""

ENTITY_NAMES = """
SELECT ue.unit_id, array_agg(e.name ORDER BY e.name) AS names
FROM unit_entities ue CROSS JOIN LATERAL (
    SELECT name FROM entities WHERE bank_id = $1 AND id = ue.entity_id LIMIT 1
) e
WHERE ue.bank_id = $1 AND ue.unit_id = ANY($2::uuid[])
GROUP BY ue.unit_id
"""


async def candidates(
    conn: Connection,
    filters: dict[str, Filters],
    fused: Sequence[Fused],
    *,
    with_neighbours: bool,
    change_cues: dict[Key, bool] | None = None,
) -> list[RecalledMemory]:
    """The fused candidates in their order, then the session neighbours of the best NEIGHBOUR_HITS (a neighbour
    scores half its hit: they only fill what the budget leaves over). `entities` is left empty (`add_entities`).
    `change_cues`, when given, gets each memory's stored change cue where the store knows it (migration 0023):
    what order.apply_changes asks of each hit, kept beside the memories (no field of theirs: no surface shows it)."""
    keys: list[Key] = [f.id for f in fused]  # type: ignore[misc]  # fused over (bank, id) keys
    by_bank: dict[str, list[UUID]] = {}
    for bank, memory_id in keys:
        by_bank.setdefault(bank, []).append(memory_id)
    rows: dict[Key, asyncpg.Record] = {}
    pairs: list[tuple[Key, Key]] = []
    for bank, ids in by_bank.items():
        best = [memory_id for b, memory_id in keys[:NEIGHBOUR_HITS] if b == bank] if with_neighbours else []
        where, params = filters[bank].sql("m", 4)
        sql = ROWS_AND_NEIGHBOURS.format(columns=COLUMNS, filters=where)
        for row in await conn.fetch(sql, bank, ids, best, *params):
            if change_cues is not None and row["change_cue"] is not None:
                change_cues[(bank, row["id"])] = row["change_cue"]
            if row["hit"] is None:
                rows[(bank, row["id"])] = row
            else:
                pairs.append(((bank, row["hit"]), (bank, row["id"])))
                rows.setdefault((bank, row["id"]), row)

    ranked: list[RecalledMemory] = []
    placed: set[Key] = set()
    for item in fused:
        key: Key = item.id  # type: ignore[assignment]  # fused over (bank, id) keys (search.py)
        if key in rows and key not in placed:
            ranked.append(memory(key[0], rows[key], item.score, item.arms))
            placed.add(key)
    scores = {(m.bank_id, m.id): m.score for m in ranked}
    for hit, neighbour in pairs:
        if neighbour not in placed:
            found = memory(neighbour[0], rows[neighbour], scores.get(hit, 0.0) * NEIGHBOUR_DISCOUNT, {})
            found.neighbour_of = hit[1]
            ranked.append(found)
            placed.add(neighbour)
    return ranked


async def add_entities(conn: Connection, memories: Sequence[RecalledMemory]) -> None:
    """Fill in each memory's entity names (sorted), one query per bank."""
    by_bank: dict[str, list[RecalledMemory]] = {}
    for m in memories:
        by_bank.setdefault(m.bank_id or "", []).append(m)
    for bank, members in by_bank.items():
        names = {r["unit_id"]: list(r["names"]) for r in await conn.fetch(ENTITY_NAMES, bank, [m.id for m in members])}
        for m in members:
            m.entities = names.get(m.id, [])


def memory(bank_id: str, row: asyncpg.Record, score: float, arm_ranks: dict[str, int]) -> RecalledMemory:
    return RecalledMemory(
        id=row["id"],
        bank_id=bank_id,
        text=row["text"],
        type=row["fact_type"],
        document_id=row["document_id"],
        metadata=row["metadata"] or {},
        tags=list(row["tags"] or []),
        occurred_start=row["occurred_start"],
        occurred_end=row["occurred_end"],
        mentioned_at=row["mentioned_at"],
        speaker=row["speaker"],
        session_id=row["session_key"],
        message_id=_message_id(row),
        part=row["turn_part"],
        parts=row["turn_parts"],
        score=score,
        arms=arm_ranks,
    )


def _message_id(row: asyncpg.Record) -> str | None:
    """The identity of a long message, the same for each of its chunks: its item and where its turn starts in it
    (an item can hold several turns: "user: …\nassistant: …"). None for a message kept whole."""
    if row["turn_part"] is None or row["item_hash"] is None:
        return None
    return f"{row['item_hash'][:16]}:{row['part_index'] - row['turn_part']}"


__all__ = ["COLUMNS", "NEIGHBOUR_DISCOUNT", "NEIGHBOUR_HITS", "add_entities", "candidates", "memory"]
