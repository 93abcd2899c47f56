"""The one HNSW index over every bank's vectors: dropped for a bulk load and built again in one pass.

Inserting into an HNSW graph row by row is most of what a bulk import costs (10k rows on 2 cores: 427 rows/s
with the index, 1,764 without, and 3 s to build it afterwards), so `import_memories(..., rebuild_vector_index=
True)` and `reembed` drop it, write, and build it once. Meanwhile the semantic arm scans exactly: answers stay
right, only slower. A process killed in between leaves the store without the index; the next `Store.open`
builds it again (`ensure_vector_index`).

Bulk loads hold an advisory lock in shared mode while the index is down; building takes it exclusively. So
several bulk loads may run at once and the last to finish builds the index, and a process starting meanwhile
does not build it under a load still running (its inserts would wait for the build, then pay for the graph).

A build that does not fit `maintenance_work_mem` goes on on disk, many times slower (pgvector says so in a
NOTICE). On the embedded server, which runs on this machine, a build gets what the graph needs, up to a
quarter of RAM; an external server keeps its own setting (see docs/operations.md, PostgreSQL settings).
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import asyncpg

from memwrap.store.pg_types import Connection, Executor

log = logging.getLogger("memwrap.store")

VECTOR_INDEX = "memory_units_embedding_hnsw"
DROP_VECTOR_INDEX = f"DROP INDEX IF EXISTS {VECTOR_INDEX}"

# Bytes of graph per row besides the vector itself (neighbour lists at pgvector's default m = 16, tuple headers).
GRAPH_BYTES_PER_ROW = 400
HALF = 2  # bytes per dimension in the index: half precision
MB = 1024 * 1024
LOCK_KEY = 0x6D656D77_7669  # pg advisory lock: "memw" "vi"


# The index answers a bank's nearest memories only when the bank holds at least this share of all memories. A
# filtered scan of the shared graph visits about limit / share entries (and pgvector stops at hnsw.max_scan_tuples,
# 20,000 by default, with what it found), so for a bank that is a small part of a large table its own rows, read
# by bank_id and sorted exactly, are fewer to read and always complete.
INDEX_MIN_SHARE = 0.02
TABLE_ROWS = "SELECT greatest(reltuples, 0)::bigint FROM pg_class WHERE oid = 'memory_units'::regclass"


async def index_serves(conn: Executor, bank_size: int, exact_max: int) -> bool:
    """Whether a bank's nearest memories come from the index (a large bank, a good share of the table) or from
    an exact scan of its own rows. The table's size is the planner's own estimate (kept by ANALYZE and VACUUM);
    a bank larger than it counts as all of it."""
    if bank_size <= exact_max:
        return False
    table = int(await conn.fetchval(TABLE_ROWS) or 0)
    return bank_size >= INDEX_MIN_SHARE * max(table, bank_size)


@asynccontextmanager
async def index_order(conn: Connection) -> AsyncIterator[None]:
    """A transaction in which the planner takes the index's order instead of sorting the bank's rows.

    The choice is index_serves's, made from the bank's real size: the planner has no statistics on bank_id
    (migration 19, so that no plan follows which banks the last ANALYZE saw) and takes every bank for a small
    share of the table, which would always make reading the bank and sorting it look cheaper. With sorting
    disabled, the one plan left without a Sort node for the nearest-first LIMIT is the index scan (PostgreSQL
    counts disabled nodes before costs); sorts every plan needs (the final order) are disabled alike."""
    async with conn.transaction():
        await conn.execute("SET LOCAL enable_sort = off")
        yield


def indexed_distance(column: str, other: str, dim: int) -> str:
    """The ORDER BY expression the index answers: cosine distance in half precision. The table keeps full
    precision; callers re-sort the index's candidates by the exact distance.

    Why half precision: at 2M memories the full-precision graph is 4.1 GB, more than the embedded server's
    shared_buffers (RAM/8), and a search read ~1,150 pages from the kernel (semantic arm p50 45-76 ms at 1M);
    in half precision it is 2.3 GB and the same searches took 5 ms, finding more of the exact 20 (0.80 vs 0.66
    on the scale bench's vectors; bench/README.md, *Scale*). `other` is a parameter or a column of type vector."""
    return f"({column}::halfvec({int(dim)}) <=> {other}::vector::halfvec({int(dim)}))"


def dimensions(vector: object) -> int:
    """A query vector's length: a numpy array, a list, or pgvector's Vector (a vector read back from the table)."""
    to_numpy = getattr(vector, "to_numpy", None)
    return len(to_numpy() if to_numpy is not None else vector)  # type: ignore[arg-type]  # a list or an array


def create_vector_index_sql(dim: int) -> str:
    return (
        f"CREATE INDEX IF NOT EXISTS {VECTOR_INDEX} ON memory_units "
        f"USING hnsw ((embedding::halfvec({int(dim)})) halfvec_cosine_ops)"
    )


async def vector_dim(conn: Executor) -> int:
    """The embedding column's dimension (its type modifier)."""
    return int(
        await conn.fetchval(
            "SELECT atttypmod FROM pg_attribute WHERE attrelid = 'memory_units'::regclass AND attname = 'embedding'"
        )
    )


async def vector_index_exists(conn: Executor) -> bool:
    return await conn.fetchval("SELECT to_regclass($1) IS NOT NULL", VECTOR_INDEX)


async def drop_vector_index(conn: Executor) -> None:
    await conn.execute(DROP_VECTOR_INDEX)


@asynccontextmanager
async def index_down(pool: asyncpg.Pool, *, memory_cap: int | None = None) -> AsyncIterator[None]:
    """The vector index dropped for the block, built again after it (by the last such block to end), also when
    the block fails: a load refused on a bad row must not leave every bank searching without the index."""
    try:
        async with pool.acquire() as conn:
            await conn.execute("SELECT pg_advisory_lock_shared($1)", LOCK_KEY)
            try:
                await drop_vector_index(conn)
                yield
            finally:
                await conn.execute("SELECT pg_advisory_unlock_shared($1)", LOCK_KEY)
    finally:
        await ensure_vector_index(pool, memory_cap=memory_cap)


async def ensure_vector_index(pool: asyncpg.Pool, *, memory_cap: int | None = None, unfinished: bool = False) -> float:
    """Build the index if it is missing and no bulk load is under way; returns the seconds the build took (0.0 if
    there was nothing to build, or a bulk load will build it).

    `memory_cap`: the most `maintenance_work_mem` this build may take (the embedded server's machine); None keeps
    the server's own setting. `unfinished`: a missing index means a bulk load died (said as a warning)."""
    async with pool.acquire() as conn:
        if await vector_index_exists(conn):
            return 0.0
        if not await conn.fetchval("SELECT pg_try_advisory_lock($1)", LOCK_KEY):
            return 0.0  # a bulk load is under way: the last one to end builds it
        try:
            if await vector_index_exists(conn):  # built while this one waited
                return 0.0
            if unfinished and await conn.fetchval("SELECT EXISTS (SELECT 1 FROM memory_units)"):
                log.warning(
                    "building the vector index %s: it is missing (new in a migration, or a bulk load or "
                    "reembed did not finish)",
                    VECTOR_INDEX,
                )
            started = time.perf_counter()
            async with conn.transaction():
                dim = await vector_dim(conn)
                if memory_cap is not None:
                    await _size_build_memory(conn, memory_cap, dim)
                await conn.execute(create_vector_index_sql(dim))
            took = time.perf_counter() - started
        finally:
            await conn.execute("SELECT pg_advisory_unlock($1)", LOCK_KEY)
    log.info("built the vector index %s in %.1f s", VECTOR_INDEX, took)
    return took


async def _size_build_memory(conn: Connection, cap: int, dim: int) -> None:
    """Raise maintenance_work_mem for this transaction to what the graph needs (rows × (vector + links)), if the
    server's setting is below it, up to `cap`."""
    rows = await conn.fetchval("SELECT count(*) FROM memory_units WHERE embedding IS NOT NULL")
    need = int(rows * (max(dim, 1) * HALF + GRAPH_BYTES_PER_ROW) * 1.2)
    current = await conn.fetchval(
        "SELECT setting::bigint * 1024 FROM pg_settings WHERE name = 'maintenance_work_mem'"
    )  # kB on the server
    wanted = min(need, cap)
    if wanted > current:
        await conn.execute(f"SET LOCAL maintenance_work_mem = '{wanted // MB}MB'")
