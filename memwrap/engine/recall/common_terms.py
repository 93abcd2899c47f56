"""The bank's frequent terms with their counts: listed in the background so the keyword arm reads less.

The keyword arm drops a term that TERM_SCAN_CAP or more of the bank's memories contain (its weight is small and
reading its matches is not). Finding that out means reading up to TERM_SCAN_CAP rows per term; in a bank of
100,000 chat turns most everyday words ("went", "weekend", a frequent name) are that common, and one query
could read 8,000 rows to keep nothing. Measured there: keyword arm p50 16 ms -> 0.7 ms with the terms known,
the same hits for 100 of 100 queries.

Long technical sessions add the terms under that cap: a library, a path, "error", "test" in hundreds of a
10k-memory bank's chunks. Knowing their counts, the arm reads them only while the question's rarer terms leave
room (arms.FREQUENT_READ_BUDGET) and scores the rest on what the rarer terms found (arms.keyword).

So once a bank holds COUNT_FROM memories, and again each time it has grown by half, one `ts_stat` pass
(0.3 s at 100k) lists every term in FREQUENT_TERM_DF or more of its memories into `bank_common_terms`. Recall
starts it in the background when due; it never waits for it. Between counts a newly frequent term is read as
before, so results never depend on the list being fresh; a listed count may be stale by up to a third of the
bank (it grew by half at most since), which moves that term's weight a little, not which memories match.
"""

from __future__ import annotations

import asyncio
import logging

import asyncpg

log = logging.getLogger("memwrap.recall")

# A term in this many of a bank's memories is listed (reading it costs a few ms; under it a term is always read).
FREQUENT_TERM_DF = 200
# Banks are counted from this size on: below it no term reaches a count worth listing often enough to matter.
COUNT_FROM = 1000
REFRESH_GROWTH = 1.5  # count again when the bank holds this many times what it held at the last count

COUNT_COMMON_TERMS = """
INSERT INTO bank_common_terms (bank_id, lexeme, df)
SELECT $1, word, ndoc
FROM ts_stat(format('SELECT search_tsv FROM memory_units WHERE bank_id = %L AND invalidated_at IS NULL', $1::text))
WHERE ndoc >= $2
"""


class CommonTerms:
    def __init__(self, pool: asyncpg.Pool, listed_df: int = FREQUENT_TERM_DF, count_from: int = COUNT_FROM) -> None:
        self.pool = pool
        self.listed_df = listed_df
        self.count_from = count_from
        self._tasks: dict[str, asyncio.Task[None]] = {}

    def due(self, bank_size: int, counted_at: int | None) -> bool:
        return bank_size >= self.count_from and (counted_at is None or bank_size >= counted_at * REFRESH_GROWTH)

    def refresh_soon(self, bank_id: str) -> None:
        """Count the bank's common terms in the background (once at a time per bank and process)."""
        running = self._tasks.get(bank_id)
        if running is not None and not running.done():
            return
        task = asyncio.get_running_loop().create_task(self._refresh_quietly(bank_id), name="memwrap-common-terms")
        self._tasks[bank_id] = task

        def forget(done: asyncio.Task[None]) -> None:
            if self._tasks.get(bank_id) is done:
                del self._tasks[bank_id]

        task.add_done_callback(forget)

    async def _refresh_quietly(self, bank_id: str) -> None:
        try:
            await self.refresh(bank_id)
        except (asyncpg.PostgresError, asyncpg.InterfaceError, OSError) as exc:
            log.debug("memwrap: counting the common terms of %s failed: %s", bank_id, exc)  # next recall retries

    async def refresh(self, bank_id: str) -> int | None:
        """Count now. Returns how many terms are listed, or None when another process is counting them."""
        async with self.pool.acquire() as conn, conn.transaction():
            locked = await conn.fetchval(
                "SELECT pg_try_advisory_xact_lock(hashtextextended('memwrap-common-terms:' || $1, 0))", bank_id
            )
            if not locked:
                return None
            size = await conn.fetchval("SELECT memory_count FROM banks WHERE bank_id = $1", bank_id)
            if size is None:
                return None  # deleted meanwhile
            await conn.execute("DELETE FROM bank_common_terms WHERE bank_id = $1", bank_id)
            status = await conn.execute(COUNT_COMMON_TERMS, bank_id, self.listed_df)
            await conn.execute("UPDATE banks SET common_terms_at = $2 WHERE bank_id = $1", bank_id, size)
        return int(status.split()[-1])

    async def wait(self) -> None:
        """Wait for the counts running now (tests, benchmarks)."""
        await asyncio.gather(*self._tasks.values(), return_exceptions=True)

    async def close(self) -> None:
        for task in self._tasks.values():
            task.cancel()
        await self.wait()
