"""The swap at the heart of extraction: an item's raw units out, its facts in, in one transaction.

The first facts of each item take over the ids of its raw units (an id that retain returned still names a memory
of that item), so nothing is lost and nothing appears twice. Also: an item rebuilt from its raw units (for a
later attempt), and the no-LLM entities of raw units whose extraction failed.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from uuid import UUID

import asyncpg
import numpy as np

from memwrap.engine.language.entities import entity_key, extract_entities
from memwrap.engine.retain.facts import ExtractedItem, write_translated
from memwrap.engine.retain.prepare import PreparedItem
from memwrap.engine.retain.write import lock_items, write_unit_entities
from memwrap.models import RetainItem
from memwrap.store.bank_lock import lock_bank
from memwrap.store.pg_types import Connection

log = logging.getLogger("memwrap.extract")

RAW_UNITS = """
SELECT item_hash, id, text, document_id, context, metadata, tags, mentioned_at, part_index, seq, expires_at
FROM memory_units
WHERE bank_id = $1 AND item_hash = ANY($2::text[]) AND fact_type = 'raw' AND NOT (metadata ? 'kept_raw')
ORDER BY seq
"""

# Raw units stored before their extraction carry no entities (the extraction names them, and an entity made
# from a raw unit's guess would shadow the model's better name when its facts are resolved). Units whose
# extraction failed get the no-LLM entities after all: the graph arm finds them while they wait.
UNLINKED_RAW = """
SELECT id, text FROM memory_units m
WHERE m.bank_id = $1 AND m.item_hash = ANY($2::text[]) AND m.fact_type = 'raw'
  AND NOT EXISTS (SELECT 1 FROM unit_entities e WHERE e.bank_id = m.bank_id AND e.unit_id = m.id)
"""

FORGET_ENTITY_MENTIONS = """
UPDATE entities e SET mention_count = greatest(e.mention_count - x.n, 0)
FROM (SELECT entity_id, count(*) AS n FROM unit_entities
      WHERE bank_id = $1 AND unit_id = ANY($2::uuid[]) GROUP BY entity_id) x
WHERE e.bank_id = $1 AND e.id = x.entity_id
"""


async def link_raw_entities(pool: asyncpg.Pool, bank_id: str, hashes: list[str]) -> None:
    """Units whose extraction failed get the no-LLM entities meanwhile (see UNLINKED_RAW)."""
    async with pool.acquire() as conn, conn.transaction():
        await lock_bank(conn, bank_id)  # before the entities (store/bank_lock.py)
        rows = await conn.fetch(UNLINKED_RAW, bank_id, hashes)
        found = [(r["id"], {entity_key(n): n for n in extract_entities(r["text"])}) for r in rows]
        await write_unit_entities(conn, bank_id, [(i, e) for i, e in found if e])


async def replace_raw(
    conn: Connection, bank_id: str, items: list[ExtractedItem], vectors: np.ndarray
) -> dict[str, list[UUID]]:
    """Delete the items' raw units and write their facts in their place (call inside a transaction). Items whose
    raw units are gone (another run converted them, or they were deleted) are skipped. Returns item_hash → unit
    ids of the items converted."""
    hashes = [i.item_hash for i in items]
    # The same per-item locks as write_items: a concurrent retain of one of these items waits for us.
    await lock_items(conn, bank_id, hashes)
    await lock_bank(conn, bank_id)  # then the bank, before the entities (store/bank_lock.py)
    raw_rows = await conn.fetch(RAW_UNITS, bank_id, hashes)
    still = {r["item_hash"] for r in raw_rows}
    if not still:
        return {}  # another run converted them first, or they were deleted
    raw_ids = [r["id"] for r in raw_rows]
    await conn.execute(FORGET_ENTITY_MENTIONS, bank_id, raw_ids)
    removed = await conn.execute(
        "DELETE FROM memory_units WHERE bank_id = $1 AND id = ANY($2::uuid[])", bank_id, raw_ids
    )
    await conn.execute(
        "UPDATE banks SET memory_count = greatest(memory_count - $2, 0) WHERE bank_id = $1",
        bank_id,
        int(removed.split()[-1]),
    )
    await conn.execute(
        "DELETE FROM retained_items WHERE bank_id = $1 AND item_hash = ANY($2::text[])", bank_id, sorted(still)
    )
    keep: list[ExtractedItem] = []
    rows: list[np.ndarray] = []
    offset = 0
    for item in items:
        count = len(item.units)
        if item.item_hash in still:
            keep.append(item)
            rows.extend(vectors[offset : offset + count])
        offset += count
    matrix = np.stack(rows) if rows else np.zeros((0, vectors.shape[-1]), dtype=np.float32)
    _take_over_ids(keep, raw_rows)
    # write_items sees these items as new now (their retained_items rows are gone): facts replace raw units.
    written = await write_translated(conn, bank_id, keep, matrix)
    log.info("extracted %d item(s) in bank %s", len(keep), bank_id)
    return {i.item_hash: written.get(i.item_hash, []) for i in keep}


async def rebuild_items(pool: asyncpg.Pool, bank_id: str, hashes: list[str]) -> list[PreparedItem]:
    """Each item still waiting for its facts again, from its raw units (their text is the defended content, with
    the line break before each speaker label kept)."""
    rows = await pool.fetch(RAW_UNITS, bank_id, hashes)
    parts: dict[str, list[asyncpg.Record]] = {}
    for row in rows:  # by seq: items come back in the order they were retained
        parts.setdefault(row["item_hash"], []).append(row)
    items: list[PreparedItem] = []
    for item_hash, units in parts.items():
        units.sort(key=lambda r: r["part_index"])
        first = units[0]
        source = RetainItem(
            content="\n".join(r["text"] for r in units),
            timestamp=first["mentioned_at"],
            context=first["context"],
            document_id=first["document_id"],
            metadata=dict(first["metadata"] or {}),
            tags=list(first["tags"] or []),
            expires_at=first["expires_at"],
        )
        items.append(PreparedItem(item_hash=item_hash, units=[], source=source))
    return items


def _take_over_ids(items: list[ExtractedItem], raw_rows: Sequence[asyncpg.Record]) -> None:
    """The first units of each item take the ids of its raw units, in order: an id that retain returned
    still names a memory of the same item (get() finds it) after its facts replaced the raw text."""
    raw_by_item: dict[str, list[UUID]] = {}
    for row in raw_rows:
        raw_by_item.setdefault(row["item_hash"], []).append(row["id"])
    renamed: dict[UUID, UUID] = {}
    for item in items:
        for unit, old in zip(item.units, raw_by_item.get(item.item_hash, []), strict=False):
            renamed[unit.id] = old
            unit.id = old
    for item in items:
        item.links = [(renamed.get(a, a), renamed.get(b, b)) for a, b in item.links]
