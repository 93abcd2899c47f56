"""The tables of a bank as export/import sees them (memwrap/engine/transfer/bank_stream.py): which columns travel,
in which order, and what a row needs to exist before it can be imported.

Every statement is built from this fixed table, never from a file: a record's keys only select values
(jsonb_populate_record reads the columns named here and ignores anything else).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

from pgvector import Vector

from memwrap.store.pg_types import Connection


@dataclass(frozen=True)
class Table:
    kind: str  # the line's "record" in the JSONL file
    table: str
    columns: tuple[str, ...]  # without bank_id
    order: str
    # (column, parent table, parent column): a row whose parent is not in the bank is skipped, not an error.
    parents: tuple[tuple[str, str, str], ...] = ()
    entity_columns: tuple[str, ...] = field(default=())  # entity ids, remapped to the bank's own entity of that key


MEMORY_COLUMNS = (
    "id",
    "text",
    "fact_type",
    "document_id",
    "session_key",
    "part_index",
    "context",
    "metadata",
    "tags",
    "item_hash",
    "occurred_start",
    "occurred_end",
    "mentioned_at",
    "created_at",
    "invalidated_at",
    "speaker",
    "expires_at",
    "turn_part",  # 0017: a chunk's place in its long message (an older export has none: NULL, a whole message)
    "turn_parts",
    "standing",  # 0017: a standing instruction's domain
)

ENTITIES = Table(
    "entity",
    "entities",
    # 0022: its declared type (an older export has none: NULL, an untyped entity, as the store had it).
    ("id", "name", "name_key", "mention_count", "first_seen", "last_seen", "entity_type"),
    "name_key",
)
MEMORIES = Table("memory", "memory_units", MEMORY_COLUMNS, "seq")

# In dependency order: a table's parents come before it.
TABLES: tuple[Table, ...] = (
    ENTITIES,
    MEMORIES,
    Table(
        "unit_entity",
        "unit_entities",
        ("unit_id", "entity_id"),
        "unit_id, entity_id",
        (("unit_id", "memory_units", "id"), ("entity_id", "entities", "id")),
        ("entity_id",),
    ),
    Table(
        "alias",
        "entity_aliases",
        ("alias_key", "alias", "entity_id", "source", "created_at"),
        "alias_key",
        (("entity_id", "entities", "id"),),
        ("entity_id",),
    ),
    Table(
        "link",
        "memory_links",
        ("from_id", "to_id", "kind", "weight"),
        "from_id, to_id, kind",
        (("from_id", "memory_units", "id"), ("to_id", "memory_units", "id")),
    ),
    Table("retained_item", "retained_items", ("item_hash", "unit_ids", "created_at"), "item_hash"),
    Table(
        "invalidation",
        "invalidations",
        ("unit_id", "reason", "caused_by", "invalidated_at"),
        "unit_id",
        (("unit_id", "memory_units", "id"),),
    ),
    Table(
        "observation",
        "observations",
        (
            "id",
            "scope",
            "origin",
            "representative_id",
            "version",
            "proof_count",
            "evidence_count",
            "first_evidence_at",
            "last_evidence_at",
            "created_at",
            "updated_at",
        ),
        "id",
        (("id", "memory_units", "id"),),
    ),
    Table(
        "evidence",
        "observation_evidence",
        ("observation_id", "memory_id", "quote", "evidenced_at", "source_key", "stance", "added_at"),
        "observation_id, memory_id",
        (("observation_id", "observations", "id"), ("memory_id", "memory_units", "id")),
    ),
    Table(
        "observation_version",
        "observation_history",
        (
            "observation_id",
            "version",
            "text",
            "action",
            "reason",
            "proof_count",
            "evidence_ids",
            "valid_from",
            "recorded_at",
        ),
        "observation_id, version",
        (("observation_id", "observations", "id"),),
    ),
    Table(
        "unit_learning",
        "unit_learning",
        ("unit_id", "status", "error", "updated_at"),
        "unit_id",
        (("unit_id", "memory_units", "id"),),
    ),
    Table(
        "mental_model",
        "mental_models",
        (
            "id",
            "name",
            "question",
            "tags",
            "max_tokens",
            "refresh_every",
            "content",
            "version",
            "status",
            "generator",
            "source_ids",
            "dirty_seq",
            "stale_since",
            "stale_reason",
            "last_error",
            "refreshed_at",
            "created_at",
            "updated_at",
        ),
        "name",
    ),
    Table(
        "mental_model_version",
        "mental_model_versions",
        ("model_id", "version", "content", "generator", "source_ids", "reason", "generated_at"),
        "model_id, version",
        (("model_id", "mental_models", "id"),),
    ),
    Table(
        "memory_version",
        "memory_history",
        (
            "memory_id",
            "version",
            "text",
            "metadata",
            "tags",
            "occurred_start",
            "occurred_end",
            "valid_from",
            "replaced_at",
            "changed",
        ),
        "memory_id, version",
        (("memory_id", "memory_units", "id"),),
    ),
)
BY_KIND = {t.kind: t for t in TABLES}


def select_sql(table: Table, *, with_embeddings: bool = False) -> str:
    columns = ", ".join(table.columns)
    if table is MEMORIES and with_embeddings:
        columns += ", embedding::real[] AS embedding"
    return (
        f"SELECT to_jsonb(r) AS record FROM (SELECT {columns} FROM {table.table} WHERE bank_id = $1 ORDER BY "
        f"{table.order}) r"
    )


def insert_sql(table: Table) -> str:
    """Rows from a JSON array ($2), in its order, into the bank ($1); present rows are skipped. The caller has
    kept only rows whose parents are in the bank (`present_keys`): a per-row EXISTS against tables written in the
    same transaction ran on statistics that still said "empty", and its nested loops made a 10k import take
    minutes. Memories bring their vectors beside the JSON, in binary ($3, `arguments`): as JSON text, 384 numbers
    a row were most of the statement's time (printed, sent, parsed twice)."""
    columns = ", ".join(table.columns)
    values = ", ".join(f"r.{c}" for c in table.columns)
    source = "jsonb_array_elements($2::jsonb) WITH ORDINALITY AS e(value, n)"
    extra_columns, extra_values = "", ""
    if table is MEMORIES:
        source = (
            "ROWS FROM (jsonb_array_elements($2::jsonb), unnest($3::vector[])) WITH ORDINALITY AS e(value, vector, n)"
        )
        extra_columns = ", embedding, search_tsv"
        extra_values = ", e.vector, to_tsvector('english', e.value->>'search_text')"
    return (
        f"INSERT INTO {table.table} (bank_id, {columns}{extra_columns}) "
        f"SELECT $1, {values}{extra_values} "
        f"FROM {source}, "
        f"LATERAL jsonb_populate_record(NULL::{table.table}, e.value) AS r "
        f"ORDER BY e.n ON CONFLICT DO NOTHING"
    )


def arguments(table: Table, rows: list[dict[str, Any]]) -> tuple[Any, ...]:
    """insert_sql's parameters after the bank: the rows, and for memories their vectors (a row's "embedding":
    a float32 array, or None) apart."""
    if table is not MEMORIES:
        return (rows,)
    vectors = [None if r.get("embedding") is None else Vector(r["embedding"]) for r in rows]
    return ([{k: v for k, v in r.items() if k != "embedding"} for r in rows], vectors)


async def present_keys(conn: Connection, bank_id: str, parent: str, key: str, wanted: list[UUID]) -> set[Any]:
    """Which of `wanted` the bank's `parent` table holds (as `key`): one indexed look-up per chunk of ids."""
    found: set[Any] = set()
    for start in range(0, len(wanted), 20_000):
        rows = await conn.fetch(
            f"SELECT {key} AS k FROM {parent} WHERE bank_id = $1 AND {key} = ANY($2::uuid[])",
            bank_id,
            wanted[start : start + 20_000],
        )
        found.update(r["k"] for r in rows)
    return found


async def records(
    conn: Connection, table: Table, bank_id: str, *, with_embeddings: bool
) -> AsyncIterator[dict[str, Any]]:
    """The bank's rows of `table` as JSON objects (inside the caller's transaction: a cursor needs one)."""
    async for row in conn.cursor(select_sql(table, with_embeddings=with_embeddings), bank_id, prefetch=500):
        yield row["record"]


async def entity_ids_by_key(conn: Connection, bank_id: str, keys: list[str]) -> dict[str, Any]:
    rows = await conn.fetch(
        "SELECT name_key, id FROM entities WHERE bank_id = $1 AND name_key = ANY($2::text[])", bank_id, keys
    )
    return {r["name_key"]: r["id"] for r in rows}


async def finish_import(conn: Connection, bank_id: str) -> int:
    """The bank's count and learning watermark after an import; returns how many of its facts still wait for
    consolidation (units with no learning record)."""
    await conn.execute(
        "UPDATE banks SET memory_count = (SELECT count(*) FROM memory_units WHERE bank_id = $1), "
        "last_retain_at = coalesce(last_retain_at, now()) WHERE bank_id = $1",
        bank_id,
    )
    # Every unit at or below the watermark has a learning record: the watermark stops before the first that has none.
    await conn.execute(
        """
        INSERT INTO learn_progress (bank_id, watermark)
        SELECT $1, coalesce(
            (SELECT min(m.seq) - 1 FROM memory_units m WHERE m.bank_id = $1 AND m.fact_type <> 'observation'
               AND NOT EXISTS (SELECT 1 FROM unit_learning l WHERE l.bank_id = $1 AND l.unit_id = m.id)),
            (SELECT max(seq) FROM memory_units WHERE bank_id = $1), 0)
        ON CONFLICT (bank_id) DO NOTHING
        """,
        bank_id,
    )
    return int(
        await conn.fetchval(
            "SELECT count(*) FROM memory_units m WHERE m.bank_id = $1 AND m.fact_type <> 'observation' "
            "AND m.invalidated_at IS NULL AND NOT EXISTS "
            "(SELECT 1 FROM unit_learning l WHERE l.bank_id = $1 AND l.unit_id = m.id)",
            bank_id,
        )
    )
