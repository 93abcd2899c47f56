"""Fresh planner statistics after bulk writes: ANALYZE the memory tables sooner than autovacuum would.

Recall's queries are planned from the tables' statistics (how many rows a bank has, how rare a term or an
entity is). Right after a bulk load those statistics still describe the old, smaller tables, and autovacuum
only looks again after its nap (a minute by default) and once 10% of a table has changed. Measured on a bank
just built to 10,000 memories: recall p50 27.6 ms before ANALYZE, 17.1 ms after.

So the writer counts what it wrote, per bank and in total, and once a bank (or the whole table) has grown by
a good share since the last ANALYZE, one runs in the background: it never delays the write that triggered it,
and only one process on the database runs it at a time (an advisory lock; the others skip).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

import asyncpg

log = logging.getLogger("memwrap.store")

TABLES = ("memory_units", "unit_entities", "entities", "memory_links")
_ANALYZE_LOCK_KEY = 0x6D656D61  # "mema"; distinct from the migration lock


class PlannerStats:
    """Counts rows written since the last ANALYZE and runs one when a bank or the table has grown enough."""

    def __init__(self, pool: asyncpg.Pool, *, min_rows: int = 1000, growth: float = 0.5) -> None:
        self.pool = pool
        self.min_rows = min_rows  # fewer new rows than this never trigger (autovacuum covers slow growth)
        self.growth = growth  # ...and at least this share of what the bank (or table) held at the last ANALYZE
        self.runs = 0
        self._since: dict[str, int] = {}
        self._size_at_analyze: dict[str, int] = {}
        self._total_since = 0
        self._table_at_analyze = 0
        self._task: asyncio.Task[None] | None = None

    def note_writes(self, bank_id: str, rows: int) -> None:
        """Record `rows` new rows in `bank_id`; start a background ANALYZE if statistics are now stale."""
        if rows <= 0:
            return
        self._since[bank_id] = self._since.get(bank_id, 0) + rows
        self._total_since += rows
        if self._task is not None and not self._task.done():
            return  # one at a time: what is written meanwhile counts towards the next one
        if self._stale():
            self._task = asyncio.get_running_loop().create_task(self._analyze(), name="memwrap-analyze")

    def _stale(self) -> bool:
        if self._total_since >= max(self.min_rows, self.growth * self._table_at_analyze):
            return True
        return any(
            written >= max(self.min_rows, self.growth * self._size_at_analyze.get(bank, 0))
            for bank, written in self._since.items()
        )

    async def _analyze(self) -> None:
        banks = list(self._since)
        self._since.clear()
        self._total_since = 0
        try:
            async with self.pool.acquire() as conn:
                if not await conn.fetchval("SELECT pg_try_advisory_lock($1)", _ANALYZE_LOCK_KEY):
                    return  # another process is analyzing these very tables right now
                try:
                    await conn.execute(f"ANALYZE {', '.join(TABLES)}")
                finally:
                    await conn.execute("SELECT pg_advisory_unlock($1)", _ANALYZE_LOCK_KEY)
                self.runs += 1
                self._table_at_analyze = int(
                    await conn.fetchval(
                        "SELECT greatest(reltuples, 0)::bigint FROM pg_class WHERE oid = 'memory_units'::regclass"
                    )
                )
                for row in await conn.fetch(
                    "SELECT bank_id, memory_count FROM banks WHERE bank_id = ANY($1::text[])", banks
                ):
                    self._size_at_analyze[row["bank_id"]] = int(row["memory_count"] or 0)
        except (asyncpg.PostgresError, asyncpg.InterfaceError, OSError) as exc:
            # Only a speed-up: autovacuum still gets there. Never let it surface in a retain.
            log.debug("memwrap: background ANALYZE failed: %s", exc)

    async def wait(self) -> None:
        """Wait for a running ANALYZE (tests, benchmarks, shutdown)."""
        if self._task is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def close(self) -> None:
        if self._task is not None and not self._task.done():
            self._task.cancel()
        await self.wait()
