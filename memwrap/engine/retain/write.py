"""Writing prepared units: units, entities, links and the retained-item record, in one transaction."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any
from uuid import UUID

import numpy as np

from memwrap.engine import webhooks
from memwrap.engine.banks.names import add_name_words, backfill
from memwrap.engine.retain.name_links import link_names
from memwrap.engine.retain.prepare import PreparedItem, PreparedUnit
from memwrap.store.bank_lock import lock_bank
from memwrap.store.pg_types import Connection, Executor

INSERT_UNIT = """
INSERT INTO memory_units (bank_id, id, text, fact_type, document_id, session_key, part_index, context, metadata,
                          tags, item_hash, occurred_start, occurred_end, mentioned_at, embedding, search_tsv, speaker,
                          expires_at, turn_part, turn_parts, standing, change_cue)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, to_tsvector('english', $16), $17, $18,
        $19, $20, $21, $22)
"""

# An entity's type (migration 0022) is the latest one extraction gave it; a mention without one keeps it.
UPSERT_ENTITIES = """
INSERT INTO entities AS e (bank_id, id, name, name_key, mention_count, first_seen, last_seen, entity_type)
SELECT $1, gen_random_uuid(), t.name, t.name_key, t.mentions, now(), now(), t.entity_type
FROM unnest($2::text[], $3::text[], $4::int[], $5::text[]) AS t(name_key, name, mentions, entity_type)
ORDER BY t.name_key
ON CONFLICT (bank_id, name_key) DO UPDATE
   SET mention_count = e.mention_count + EXCLUDED.mention_count, last_seen = now(),
       entity_type = coalesce(EXCLUDED.entity_type, e.entity_type)
RETURNING e.id, e.name_key
"""

LINK_UNIT_ENTITIES = """
INSERT INTO unit_entities (bank_id, unit_id, entity_id)
SELECT $1, u, e FROM unnest($2::uuid[], $3::uuid[]) AS t(u, e)
ON CONFLICT DO NOTHING
"""

LAST_UNIT_OF_SESSIONS = """
SELECT DISTINCT ON (session_key) session_key, id
FROM memory_units
WHERE bank_id = $1 AND session_key = ANY($2::text[])
ORDER BY session_key, seq DESC
"""

INSERT_LINKS = """
INSERT INTO memory_links (bank_id, from_id, to_id, kind, weight)
SELECT $1, f, t, 'next', 1.0 FROM unnest($2::uuid[], $3::uuid[]) AS x(f, t)
ON CONFLICT DO NOTHING
"""

RECORD_ITEMS = """
INSERT INTO retained_items (bank_id, item_hash, unit_ids)
SELECT $1, h, string_to_array(ids, ',')::uuid[] FROM unnest($2::text[], $3::text[]) AS t(h, ids)
ON CONFLICT (bank_id, item_hash) DO NOTHING
"""

ENSURE_BANK = "INSERT INTO banks (bank_id) VALUES ($1) ON CONFLICT (bank_id) DO NOTHING"

# Step 1 of the lock order (store/bank_lock.py): the items about to be written, so that two concurrent writes
# of one item store it once. Sorted: two writers of overlapping items take them in the same order.
LOCK_ITEMS = "SELECT pg_advisory_xact_lock(hashtextextended($1 || h, 0)) FROM unnest($2::text[]) AS h ORDER BY h"

BUMP_BANK = "UPDATE banks SET memory_count = memory_count + $2, last_retain_at = now() WHERE bank_id = $1"


async def existing_items(
    conn: Executor, bank_id: str, hashes: Sequence[str], legacy: Mapping[str, str] | None = None
) -> dict[str, list[UUID]]:
    """item_hash -> unit ids of the items already in the bank. `legacy`: item_hash -> the keyed hash the same
    item was stored under before schema v11 (prepare.legacy_item_hash); an item found by it counts as present."""
    wanted = [*hashes, *(legacy or {}).values()]
    rows = await conn.fetch(
        "SELECT item_hash, unit_ids FROM retained_items WHERE bank_id = $1 AND item_hash = ANY($2::text[])",
        bank_id,
        wanted,
    )
    found = {r["item_hash"]: list(r["unit_ids"]) for r in rows}
    for hashed, old in (legacy or {}).items():
        if hashed not in found and old in found:
            found[hashed] = found[old]
    return {h: found[h] for h in hashes if h in found}


async def write_items(
    conn: Connection,
    bank_id: str,
    items: Sequence[PreparedItem],
    vectors: np.ndarray,
    *,
    link: bool = True,
    announce: bool = True,
) -> dict[str, list[UUID]]:
    """Insert the items' units (vectors in unit order). Items already stored (a concurrent retain) are skipped.

    `link`: also learn the romanised and familiar names of the entities (name_links.py); a caller that writes a
    model's aliases in the same transaction links after them instead, so the model's word comes first.
    `announce`: emit the 'retained' webhook event of the new units (write_translated announces its own).

    Returns item_hash → unit ids for every item, new or already present.
    """
    async with conn.transaction():
        await conn.execute(ENSURE_BANK, bank_id)
        # Lock the item hashes we are about to write, so two concurrent retains of one item store it once.
        already = await existing_items(conn, bank_id, [i.item_hash for i in items])
        await lock_items(conn, bank_id, {i.item_hash for i in items} - set(already))
        # Then the bank's row, before any entity, alias or link row (store/bank_lock.py: one order for every
        # writer of the bank, so this write and the worker's cannot each hold what the other waits for).
        await lock_bank(conn, bank_id)
        already = await existing_items(conn, bank_id, [i.item_hash for i in items])

        new_items, units, unit_vectors = _new_units(items, already, vectors)
        if units:
            await _write_units(conn, bank_id, new_items, units, unit_vectors, link=link, announce=announce)

    result = dict(already)
    for item in new_items:
        result[item.item_hash] = [u.id for u in item.units]
    return result


def _new_units(
    items: Sequence[PreparedItem], already: Mapping[str, list[UUID]], vectors: np.ndarray
) -> tuple[list[PreparedItem], list[PreparedUnit], list[np.ndarray]]:
    """The items not stored yet, their units and the units' vectors (`vectors` holds every item's, in unit order)."""
    units: list[PreparedUnit] = []
    unit_vectors: list[np.ndarray] = []
    offset = 0
    new_items: list[PreparedItem] = []
    for item in items:
        count = len(item.units)
        if item.item_hash not in already:
            new_items.append(item)
            units.extend(item.units)
            unit_vectors.extend(vectors[offset : offset + count])
        offset += count
    return new_items, units, unit_vectors


async def _write_units(
    conn: Connection,
    bank_id: str,
    new_items: Sequence[PreparedItem],
    units: list[PreparedUnit],
    unit_vectors: Sequence[np.ndarray],
    *,
    link: bool,
    announce: bool,
) -> None:
    """The new units' rows, then their entities, names, session links, the bank's count and the items' record
    (write_items' transaction, the bank locked)."""
    sessions = sorted({u.session_key for u in units if u.session_key})
    last_of_session = (
        {r["session_key"]: r["id"] for r in await conn.fetch(LAST_UNIT_OF_SESSIONS, bank_id, sessions)}
        if sessions
        else {}
    )
    fresh_names = await add_name_words(conn, bank_id, units)
    await conn.executemany(
        INSERT_UNIT, [_unit_row(bank_id, u, vector) for u, vector in zip(units, unit_vectors, strict=True)]
    )
    await _write_entities(conn, bank_id, units)
    await backfill(conn, bank_id, fresh_names)
    if link:
        await link_names(conn, bank_id, unit_entities(units))
    await _write_session_links(conn, bank_id, units, last_of_session)
    await conn.execute(BUMP_BANK, bank_id, len(units))  # the row locked above: no new lock here
    await conn.execute(
        RECORD_ITEMS,
        bank_id,
        [i.item_hash for i in new_items],
        [",".join(str(u.id) for u in i.units) for i in new_items],
    )
    if announce:
        await webhooks.emit(conn, bank_id, "retained", [u.id for u in units])


def _unit_row(bank_id: str, u: PreparedUnit, vector: np.ndarray) -> tuple[Any, ...]:
    """INSERT_UNIT's parameters for one unit."""
    return (
        bank_id,
        u.id,
        u.text,
        u.fact_type,
        u.document_id,
        u.session_key,
        u.part_index,
        u.context,
        u.metadata,
        u.tags,
        u.item_hash,
        u.occurred[0] if u.occurred else None,
        u.occurred[1] if u.occurred else None,
        u.mentioned_at,
        vector,
        u.search_text,
        u.speaker,
        u.expires_at,
        u.turn_part,
        u.turn_parts,
        u.standing,
        u.change_cue,
    )


async def lock_items(conn: Connection, bank_id: str, hashes: Iterable[str]) -> None:
    """Lock these items of the bank for the rest of the transaction (before the bank row: store/bank_lock.py)."""
    await conn.execute(LOCK_ITEMS, bank_id, sorted(set(hashes)))


def unit_entities(units: Sequence[PreparedUnit]) -> dict[str, str]:
    """{entity key: name} of all the units."""
    return {key: name for unit in units for key, name in unit.entities.items()}


async def _write_entities(conn: Connection, bank_id: str, units: Sequence[PreparedUnit]) -> None:
    types = {key: kind for unit in units for key, kind in unit.entity_types.items()}
    await write_unit_entities(conn, bank_id, [(unit.id, unit.entities) for unit in units], types)


async def write_unit_entities(
    conn: Connection,
    bank_id: str,
    units: Sequence[tuple[UUID, dict[str, str]]],
    types: Mapping[str, str] | None = None,
) -> None:
    """Entities (entity_key → name) of stored units: counted, created where new, and linked. `types`:
    entity_key → the bank's entity type extraction gave it (engine/banks/entity_types.py); the others keep theirs."""
    mentions: dict[str, int] = {}
    names: dict[str, str] = {}
    for _, entities in units:
        for key, name in entities.items():
            mentions[key] = mentions.get(key, 0) + 1
            names.setdefault(key, name)
    if not mentions:
        return
    keys = sorted(mentions)
    kinds = [(types or {}).get(k) for k in keys]
    rows = await conn.fetch(
        UPSERT_ENTITIES, bank_id, keys, [names[k] for k in keys], [mentions[k] for k in keys], kinds
    )
    entity_ids = {r["name_key"]: r["id"] for r in rows}
    pairs = [(unit_id, entity_ids[key]) for unit_id, entities in units for key in entities]
    await conn.execute(LINK_UNIT_ENTITIES, bank_id, [p[0] for p in pairs], [p[1] for p in pairs])


async def _write_session_links(
    conn: Connection, bank_id: str, units: Sequence[PreparedUnit], last_of_session: dict[str, UUID]
) -> None:
    """Chain each unit to the one before it in its session (earlier retains included)."""
    last = dict(last_of_session)
    froms: list[UUID] = []
    tos: list[UUID] = []
    previous_in_item: UUID | None = None
    previous_hash: str | None = None
    for unit in units:
        key = unit.session_key
        if key is not None:
            prev = last.get(key)
            if prev is not None and prev != unit.id:
                froms.append(prev)
                tos.append(unit.id)
            last[key] = unit.id
        elif previous_hash == unit.item_hash and previous_in_item is not None:
            froms.append(previous_in_item)
            tos.append(unit.id)
        previous_in_item, previous_hash = unit.id, unit.item_hash
    if froms:
        await conn.execute(INSERT_LINKS, bank_id, froms, tos)
