"""Bulk import of memories: rows with (optionally) precomputed vectors, written with COPY.

The fast path for big banks and migrations: no LLM, no splitting, and no embedding for a row that brings its
vector (the model that made it must be the store's: the dimension is checked). Each row is still what retain
would store: the bank's memory defense applied, its entities and dates found, its keyword text indexed,
consecutive memories of a session linked. Importing the same rows again stores nothing twice (the item
hash of retain, recorded in retained_items in the same transaction).

Each batch is one transaction: units are COPYed into a temporary table, then moved into memory_units with
their tsvector computed by the server (COPY cannot call to_tsvector).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterable, Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from uuid import uuid4

import numpy as np

from memwrap import validate
from memwrap.engine.banks.names import add_name_words, backfill
from memwrap.engine.language.entities import entity_key, extract_entities
from memwrap.engine.language.speakers import said_by
from memwrap.engine.language.text import search_text
from memwrap.engine.language.timeparse import extract_occurred
from memwrap.engine.retain.name_links import link_names
from memwrap.engine.retain.prepare import PreparedUnit, defend_item, item_hash, legacy_item_hash, session_key
from memwrap.engine.retain.write import (
    BUMP_BANK,
    ENSURE_BANK,
    _write_entities,
    _write_session_links,
    existing_items,
    unit_entities,
)
from memwrap.engine.transfer.memories_jsonl import ImportedMemory
from memwrap.errors import InvalidInputError
from memwrap.models import RetainItem
from memwrap.store.bank_lock import lock_bank
from memwrap.store.pg_types import Connection

IMPORT_BATCH = 5000

STAGING = "memwrap_import_units"

CREATE_STAGING = f"""
CREATE TEMP TABLE IF NOT EXISTS {STAGING} (
    id uuid, text text, fact_type text, document_id text, session_key text, context text, metadata text,
    tags text[], item_hash text, occurred_start timestamptz, occurred_end timestamptz, mentioned_at timestamptz,
    embedding vector({{dim}}), search_text text, speaker text, change_cue boolean
) ON COMMIT DELETE ROWS
"""
STAGING_COLUMNS = (
    "id", "text", "fact_type", "document_id", "session_key", "context", "metadata", "tags", "item_hash",
    "occurred_start", "occurred_end", "mentioned_at", "embedding", "search_text", "speaker", "change_cue",
)  # fmt: skip

MOVE_STAGED = f"""
INSERT INTO memory_units (bank_id, id, text, fact_type, document_id, session_key, context, metadata, tags,
                          item_hash, occurred_start, occurred_end, mentioned_at, embedding, search_tsv, speaker,
                          change_cue)
SELECT $1, s.id, s.text, s.fact_type, s.document_id, s.session_key, s.context, s.metadata::jsonb, s.tags, s.item_hash,
       s.occurred_start, s.occurred_end, s.mentioned_at, s.embedding, to_tsvector('english', s.search_text), s.speaker,
       s.change_cue
FROM {STAGING} s
"""

# Claims the items first: a row whose item is already in the bank (an earlier import or retain) is not written.
CLAIM_ITEMS = """
INSERT INTO retained_items (bank_id, item_hash, unit_ids)
SELECT $1, h, ARRAY[u] FROM unnest($2::text[], $3::uuid[]) AS t(h, u)
ON CONFLICT (bank_id, item_hash) DO NOTHING
RETURNING item_hash
"""


@dataclass
class BulkLoadReport:
    read: int = 0
    imported: int = 0
    embedded: int = 0  # rows that came without a vector

    @property
    def skipped(self) -> int:
        return self.read - self.imported


Embed = Callable[[Sequence[str]], Awaitable[np.ndarray]]


def row_item(row: ImportedMemory) -> RetainItem:
    """The retain item a row stands for (what its identity is computed from)."""
    return RetainItem(
        content=row.text,
        timestamp=row.mentioned_at,
        context=row.context,
        document_id=row.document_id,
        metadata=row.metadata,
        tags=row.tags,
    )


def prepare_row(row: ImportedMemory, *, now: datetime, defense_policy: str) -> PreparedUnit:
    """What retain would store for this text, as one unit (its hash: retain's, of the defended row)."""
    item = defend_item(row_item(row), defense_policy)
    hashed = item_hash(item)
    mentioned = row.mentioned_at or now
    if row.occurred_start is not None:
        occurred: tuple[datetime, datetime] | None = (row.occurred_start, row.occurred_end or row.occurred_start)
    else:
        occurred = extract_occurred(item.content, mentioned)
    # A raw turn's speaker is a field, not an entity (speakers.said_by); facts and observations have none.
    speaker, said = said_by(item.content, item.metadata) if row.type == "raw" else (None, item.content)
    entities: dict[str, str] = {}
    for name in extract_entities(said):
        entities.setdefault(entity_key(name), name)
    return PreparedUnit(
        id=row.id or uuid4(),
        text=item.content,
        fact_type=row.type,
        item_hash=hashed,
        document_id=item.document_id,
        session_key=session_key(item),
        part_index=0,
        context=item.context,
        metadata=dict(item.metadata),
        tags=list(item.tags),
        mentioned_at=mentioned,
        occurred=occurred,
        entities=entities,
        search_text=search_text(item.content),
        embed_text=item.content,
        speaker=speaker,
    )


async def _embed_into(
    vectors: list[np.ndarray | None],
    units: Sequence[PreparedUnit],
    which: list[int],
    embed: Embed,
    report: BulkLoadReport,
) -> None:
    if not which:
        return
    computed = await embed([units[i].embed_text for i in which])
    for i, vector in zip(which, computed, strict=True):
        vectors[i] = vector
    report.embedded += len(which)


async def import_batch(
    conn: Connection,
    bank_id: str,
    rows: Sequence[ImportedMemory],
    *,
    dim: int,
    embed: Embed,
    defense_policy: str,
    report: BulkLoadReport,
    legacy_key: bytes | None = None,
    max_metadata_bytes: int | None = None,
) -> list[PreparedUnit]:
    """Write one batch in one transaction; returns the units written (rows already in the bank are skipped).
    `legacy_key`: the store's key for item hashes written before schema v11 (an item stored then is skipped too)."""
    now = datetime.now(UTC)
    for index, row in enumerate(rows):  # what retain would refuse (NaN, NUL, too deep, too large) is refused here
        validate.metadata(
            row.metadata, what=f"memory {report.read + index + 1}: metadata", max_bytes=max_metadata_bytes
        )
    units = [prepare_row(row, now=now, defense_policy=defense_policy) for row in rows]
    legacy = (
        {u.item_hash: legacy_item_hash(row_item(r), legacy_key) for u, r in zip(units, rows, strict=True)}
        if (legacy_key)
        else {}
    )
    vectors: list[np.ndarray | None] = []
    for index, row in enumerate(rows):
        if row.embedding is not None and len(row.embedding) != dim:
            raise InvalidInputError(
                f"memory {report.read + index + 1}: its embedding has {len(row.embedding)} dimensions, the store's "
                f"model has {dim}. Import vectors of the configured embedding model, or leave `embedding` out."
            )
        vectors.append(np.asarray(row.embedding, dtype=np.float32) if row.embedding is not None else None)
    # What the bank holds already (a file imported again) is not embedded: looked up first, outside the write's
    # transaction (a hint; the claim below decides), so re-importing a loaded file costs a read, not the model.
    held = await existing_items(conn, bank_id, [u.item_hash for u in units], legacy)
    seen: set[str] = set()
    missing = []
    for i, vector in enumerate(vectors):
        if vector is None and units[i].item_hash not in held and units[i].item_hash not in seen:
            missing.append(i)
        seen.add(units[i].item_hash)
    await _embed_into(vectors, units, missing, embed, report)
    report.read += len(rows)

    async with conn.transaction():
        await conn.execute(ENSURE_BANK, bank_id)
        stored_before = await existing_items(conn, bank_id, list(legacy), legacy) if legacy else {}
        claimed = set(await _claim(conn, bank_id, [u for u in units if u.item_hash not in stored_before]))
        keep = [i for i, u in enumerate(units) if u.item_hash in claimed]
        # The same item twice in one batch: the first one claimed it.
        first: dict[str, int] = {}
        for i in keep:
            first.setdefault(units[i].item_hash, i)
        keep = list(first.values())
        written = [units[i] for i in keep]
        # Deleted since the look-up above (or a batch's repeat claimed in its first's place): embedded now.
        await _embed_into(vectors, units, [i for i in keep if vectors[i] is None], embed, report)
        if written:
            await lock_bank(conn, bank_id)  # the items claimed, then the bank, then entities (store/bank_lock.py)
            fresh_names = await add_name_words(conn, bank_id, written)
            await conn.execute(CREATE_STAGING.format(dim=int(dim)))
            await conn.copy_records_to_table(
                STAGING, columns=STAGING_COLUMNS, records=[_record(units[i], vectors[i]) for i in keep]
            )
            await conn.execute(MOVE_STAGED, bank_id)
            await _write_entities(conn, bank_id, written)
            await backfill(conn, bank_id, fresh_names)
            await link_names(conn, bank_id, unit_entities(written))
            last = await _last_of_sessions(conn, bank_id, written)
            await _write_session_links(conn, bank_id, written, last)
            await conn.execute(BUMP_BANK, bank_id, len(written))
    report.imported += len(written)
    return written


async def _claim(conn: Connection, bank_id: str, units: Sequence[PreparedUnit]) -> list[str]:
    first: dict[str, PreparedUnit] = {}
    for unit in units:
        first.setdefault(unit.item_hash, unit)
    rows = await conn.fetch(CLAIM_ITEMS, bank_id, list(first), [u.id for u in first.values()])
    return [r["item_hash"] for r in rows]


async def _last_of_sessions(conn: Connection, bank_id: str, written: Sequence[PreparedUnit]) -> dict:
    """The unit before this batch in each of its sessions (the batch's own units were just inserted: skip them)."""
    sessions = sorted({u.session_key for u in written if u.session_key})
    if not sessions:
        return {}
    rows = await conn.fetch(
        """SELECT DISTINCT ON (session_key) session_key, id FROM memory_units
           WHERE bank_id = $1 AND session_key = ANY($2::text[]) AND NOT id = ANY($3::uuid[])
           ORDER BY session_key, seq DESC""",
        bank_id,
        sessions,
        [u.id for u in written],
    )
    return {r["session_key"]: r["id"] for r in rows}


def _record(unit: PreparedUnit, vector: np.ndarray | None) -> tuple[object, ...]:
    start, end = unit.occurred if unit.occurred else (None, None)
    return (
        unit.id,
        unit.text,
        unit.fact_type,
        unit.document_id,
        unit.session_key,
        unit.context,
        json.dumps(unit.metadata, ensure_ascii=False, default=str),
        unit.tags,
        unit.item_hash,
        start,
        end,
        unit.mentioned_at,
        vector,
        unit.search_text,
        unit.speaker,
        unit.change_cue,
    )


async def batches(
    rows: Iterable[ImportedMemory] | AsyncIterable[ImportedMemory], size: int = IMPORT_BATCH
) -> AsyncIterable[list[ImportedMemory]]:
    """Rows in lists of `size`, from a plain or an async iterable (a file read line by line, a generator)."""
    batch: list[ImportedMemory] = []
    if isinstance(rows, AsyncIterable):
        async for row in rows:
            batch.append(_as_memory(row))
            if len(batch) >= size:
                yield batch
                batch = []
    else:
        for row in rows:
            batch.append(_as_memory(row))
            if len(batch) >= size:
                yield batch
                batch = []
    if batch:
        yield batch


def _as_memory(row: object) -> ImportedMemory:
    if isinstance(row, ImportedMemory):
        return row
    try:
        return ImportedMemory.model_validate(row)
    except Exception as exc:  # pydantic's message names the field
        raise InvalidInputError(f"Not a memory to import: {exc}") from exc
