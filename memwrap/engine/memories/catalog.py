"""Reading and removing stored memories: list, get, delete, banks."""

from __future__ import annotations

from uuid import UUID

import asyncpg

from memwrap.engine import webhooks
from memwrap.engine.recall.arms import Filters
from memwrap.errors import MemoryNotFoundError
from memwrap.models import BankInfo, MemoryRecord
from memwrap.store.bank_lock import lock_bank

_RECORD_COLUMNS = """
    m.id, m.bank_id, m.text, m.fact_type, m.document_id, m.context, m.metadata, m.tags, m.occurred_start,
    m.occurred_end, m.mentioned_at, m.created_at, m.speaker, m.expires_at, m.invalidated_at,
    coalesce((SELECT array_agg(e.name ORDER BY e.name)
              FROM unit_entities ue JOIN entities e ON e.bank_id = ue.bank_id AND e.id = ue.entity_id
              WHERE ue.bank_id = m.bank_id AND ue.unit_id = m.id), '{}') AS entities
"""


def _record(row: asyncpg.Record) -> MemoryRecord:
    return MemoryRecord(
        id=row["id"],
        bank_id=row["bank_id"],
        text=row["text"],
        type=row["fact_type"],
        document_id=row["document_id"],
        context=row["context"],
        metadata=row["metadata"] or {},
        tags=list(row["tags"] or []),
        entities=list(row["entities"] or []),
        occurred_start=row["occurred_start"],
        occurred_end=row["occurred_end"],
        mentioned_at=row["mentioned_at"],
        created_at=row["created_at"],
        speaker=row["speaker"],
        expires_at=row["expires_at"],
        invalidated_at=row["invalidated_at"],
    )


async def list_memories(
    pool: asyncpg.Pool, filters: Filters, *, limit: int, offset: int, document_id: str | None
) -> list[MemoryRecord]:
    where, params = filters.sql("m", 4)
    document_filter = ""
    if document_id is not None:
        params.append(document_id)
        document_filter = f" AND m.document_id = ${3 + len(params)}"
    # The page's ids first, then its columns: OFFSET reads the rows it skips, and reading them through the
    # record columns (the entity names' subquery) made deep pages cost a subquery per skipped row.
    sql = f"""
        SELECT {_RECORD_COLUMNS}
        FROM (SELECT m.id, m.seq FROM memory_units m
              WHERE m.bank_id = $1 AND {where}{document_filter}
              ORDER BY m.seq LIMIT $2 OFFSET $3) page
        JOIN memory_units m ON m.bank_id = $1 AND m.id = page.id
        ORDER BY page.seq
    """
    return [_record(r) for r in await pool.fetch(sql, filters.bank_id, limit, offset, *params)]


async def get_memory(pool: asyncpg.Pool, bank_id: str, memory_id: UUID) -> MemoryRecord:
    row = await pool.fetchrow(
        f"SELECT {_RECORD_COLUMNS} FROM memory_units m WHERE m.bank_id = $1 AND m.id = $2", bank_id, memory_id
    )
    if row is None:
        raise MemoryNotFoundError(f"No memory with id {memory_id} in bank {bank_id!r}.")
    return _record(row)


async def delete_memory(pool: asyncpg.Pool, bank_id: str, memory_id: UUID) -> None:
    async with pool.acquire() as conn, conn.transaction():
        await lock_bank(conn, bank_id)  # before the entities (store/bank_lock.py)
        # Entities keep an honest mention count (the graph arm weighs entities by rarity).
        await conn.execute(
            "UPDATE entities SET mention_count = greatest(mention_count - 1, 0) WHERE bank_id = $1 AND id IN "
            "(SELECT entity_id FROM unit_entities WHERE bank_id = $1 AND unit_id = $2)",
            bank_id,
            memory_id,
        )
        await webhooks.emit(conn, bank_id, "deleted", [memory_id])  # first: its text is still there to send
        item_hash = await conn.fetchval(
            "DELETE FROM memory_units WHERE bank_id = $1 AND id = $2 RETURNING item_hash", bank_id, memory_id
        )
        if item_hash is None:
            raise MemoryNotFoundError(f"No memory with id {memory_id} in bank {bank_id!r}.")
        # Forget that the item was retained, so retaining it again stores it again.
        await conn.execute("DELETE FROM retained_items WHERE bank_id = $1 AND item_hash = $2", bank_id, item_hash)
        await conn.execute("UPDATE banks SET memory_count = memory_count - 1 WHERE bank_id = $1", bank_id)


async def matching_ids(pool: asyncpg.Pool, filters: Filters, *, document_id: str | None) -> list[UUID]:
    """The ids of every memory the filters select (what `list` would page through), oldest first."""
    where, params = filters.sql("m", 2)
    document_filter = ""
    if document_id is not None:
        params.append(document_id)
        document_filter = f" AND m.document_id = ${1 + len(params)}"
    rows = await pool.fetch(
        f"SELECT m.id FROM memory_units m WHERE m.bank_id = $1 AND {where}{document_filter} ORDER BY m.seq",
        filters.bank_id,
        *params,
    )
    return [r["id"] for r in rows]


async def delete_memories(pool: asyncpg.Pool, bank_id: str, ids: list[UUID]) -> int:
    """Forget these memories at once, as `delete_memory` forgets one; returns how many were deleted."""
    if not ids:
        return 0
    async with pool.acquire() as conn, conn.transaction():
        await lock_bank(conn, bank_id)  # before the entities (store/bank_lock.py)
        await conn.execute(
            "UPDATE entities e SET mention_count = greatest(e.mention_count - c.n, 0) "
            "FROM (SELECT entity_id, count(*) AS n FROM unit_entities WHERE bank_id = $1 AND unit_id = ANY($2::uuid[]) "
            "GROUP BY entity_id) c WHERE e.bank_id = $1 AND e.id = c.entity_id",
            bank_id,
            ids,
        )
        await webhooks.emit(conn, bank_id, "deleted", ids)  # first: their texts are still there to send
        hashes = [
            r["item_hash"]
            for r in await conn.fetch(
                "DELETE FROM memory_units WHERE bank_id = $1 AND id = ANY($2::uuid[]) RETURNING item_hash",
                bank_id,
                ids,
            )
        ]
        await conn.execute(
            "DELETE FROM retained_items WHERE bank_id = $1 AND item_hash = ANY($2::text[])", bank_id, hashes
        )
        await conn.execute(
            "UPDATE banks SET memory_count = greatest(memory_count - $2, 0) WHERE bank_id = $1", bank_id, len(hashes)
        )
    return len(hashes)


async def delete_bank(pool: asyncpg.Pool, bank_id: str) -> int:
    async with pool.acquire() as conn, conn.transaction():
        await lock_bank(conn, bank_id, deleting=True)  # first: its writers finish, new ones wait (store/bank_lock.py)
        count = await conn.fetchval("SELECT count(*) FROM memory_units WHERE bank_id = $1", bank_id)
        # Children first: their foreign keys lead with bank_id, so each delete is an index range.
        for table in (
            "memory_links",
            "unit_entities",
            "memory_units",
            "entities",
            "retained_items",
            "response_sessions",
            "banks",
        ):
            await conn.execute(f"DELETE FROM {table} WHERE bank_id = $1", bank_id)
    return int(count or 0)


async def banks(pool: asyncpg.Pool) -> list[BankInfo]:
    rows = await pool.fetch(
        "SELECT bank_id, memory_count, created_at, last_retain_at, config FROM banks ORDER BY bank_id"
    )
    return [
        BankInfo(
            bank_id=r["bank_id"],
            memories=r["memory_count"],
            created_at=r["created_at"],
            last_retain_at=r["last_retain_at"],
            config=dict(r["config"] or {}),
        )
        for r in rows
    ]
