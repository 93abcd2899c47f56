"""Raw turns become facts: right after retain wrote them, and later again for those whose extraction failed.

Retain stores an item's turns raw (recall finds them from the moment retain returns) and queues the item in
`extraction_queue`. `Reextractor.start_inline` extracts those items at once, in a task that retain waits on
only up to `extraction_deadline`: past it retain returns the raw ids and the task goes on (nothing is
cancelled). `Reextractor.run_once` claims due rows (FOR UPDATE SKIP LOCKED, with a lease, so several
processes can share the work), rebuilds each item from its raw units (already defended text, with the line
break before each speaker label kept), and extracts it. Either way one transaction deletes the raw units and
writes the facts in their place, the first facts taking over the raw units' ids (an id retain returned still
names a memory of that item): nothing is lost and nothing appears twice. A failure pushes the row back with
exponential backoff; after `extraction_max_attempts` the row is parked (next_attempt_at NULL) and the raw
memory simply stays.

Seam for issue 6: once memwrap/engine/learn/jobs.py exists, the loop in `Reextractor.start` should become a
periodic "reextract" job whose body is `run_once`; nothing else here needs to change.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime
from uuid import UUID

import asyncpg
import numpy as np

from memwrap.config import Settings
from memwrap.engine.retain.defense import redact
from memwrap.engine.retain.entities import entity_key, extract_entities
from memwrap.engine.retain.facts import ExtractedItem, Extractor, write_translated
from memwrap.engine.retain.prepare import PreparedItem
from memwrap.engine.retain.write import write_unit_entities
from memwrap.models import RetainItem

log = logging.getLogger("memwrap.extract")

# A claimed row becomes due again after this long, so a process that died mid-way does not strand it.
LEASE_SECONDS = 600.0
MAX_BACKOFF_SECONDS = 6 * 3600.0

CLAIM = """
UPDATE extraction_queue q
SET attempts = q.attempts + 1, next_attempt_at = now() + make_interval(secs => $2)
FROM (
    SELECT bank_id, item_hash FROM extraction_queue
    WHERE ($4::bool OR next_attempt_at <= now()) AND ($3::text IS NULL OR bank_id = $3)
    ORDER BY next_attempt_at NULLS LAST, created_at
    LIMIT $1
    FOR UPDATE SKIP LOCKED
) due
WHERE q.bank_id = due.bank_id AND q.item_hash = due.item_hash
RETURNING q.bank_id, q.item_hash, q.attempts
"""

RAW_UNITS = """
SELECT item_hash, id, text, document_id, context, metadata, tags, mentioned_at, part_index, seq
FROM memory_units
WHERE bank_id = $1 AND item_hash = ANY($2::text[]) AND fact_type = 'raw' AND NOT (metadata ? 'kept_raw')
ORDER BY seq
"""

# Attempts counts claims; the next one waits interval * 2^(attempts-1), capped; parked after the maximum.
RESCHEDULE = """
UPDATE extraction_queue
SET last_error = $3,
    next_attempt_at = CASE WHEN attempts >= $4 THEN NULL
                           ELSE now() + make_interval(secs => least($5 * power(2, attempts - 1), $6)) END
WHERE bank_id = $1 AND item_hash = ANY($2::text[])
"""

# Raw units stored before their extraction carry no entities (the extraction names them, and an entity made
# from a raw unit's guess would shadow the model's better name when its facts are resolved). Units whose
# extraction failed get the no-LLM entities after all: the graph arm finds them while they wait.
UNLINKED_RAW = """
SELECT id, text FROM memory_units m
WHERE m.bank_id = $1 AND m.item_hash = ANY($2::text[]) AND m.fact_type = 'raw'
  AND NOT EXISTS (SELECT 1 FROM unit_entities e WHERE e.bank_id = m.bank_id AND e.unit_id = m.id)
"""

STILL_QUEUED = """
SELECT item_hash FROM extraction_queue WHERE bank_id = $1 AND item_hash = ANY($2::text[]) FOR UPDATE
"""

FORGET_ENTITY_MENTIONS = """
UPDATE entities e SET mention_count = greatest(e.mention_count - x.n, 0)
FROM (SELECT entity_id, count(*) AS n FROM unit_entities
      WHERE bank_id = $1 AND unit_id = ANY($2::uuid[]) GROUP BY entity_id) x
WHERE e.bank_id = $1 AND e.id = x.entity_id
"""


class Reextractor:
    def __init__(
        self,
        pool: asyncpg.Pool,
        extractor: Extractor,
        embed: Callable[[list[str]], Awaitable[np.ndarray]],
        settings: Settings,
        defense_policy: Callable[[str], Awaitable[str]],
        converted: Callable[[str, int], Awaitable[None]] | None = None,
    ) -> None:
        self.pool = pool
        self.extractor = extractor
        self.embed = embed
        self.settings = settings
        self.defense_policy = defense_policy
        self.converted = converted  # told (bank, new units) after facts landed: consolidation follows
        self._task: asyncio.Task[None] | None = None
        self._inline: set[asyncio.Task[dict[str, list[UUID]]]] = set()
        # (bank, item) under extraction by an inline task of this process: a pass never takes them up twice,
        # however long a slow server makes them outlast their lease.
        self._converting: set[tuple[str, str]] = set()

    def start_inline(
        self, bank_id: str, items: Sequence[PreparedItem], *, now: datetime, policy: str
    ) -> asyncio.Task[dict[str, list[UUID]]]:
        """Extract just-retained (raw, queued) items now, in a task of their own that outlives the retain."""
        keys = {(bank_id, i.item_hash) for i in items}
        self._converting |= keys
        task = asyncio.get_running_loop().create_task(
            self.convert(bank_id, list(items), now=now, policy=policy), name="memwrap-extract"
        )
        self._inline.add(task)
        task.add_done_callback(lambda done: self._inline_done(done, keys))
        return task

    def _inline_done(self, task: asyncio.Task[dict[str, list[UUID]]], keys: set[tuple[str, str]]) -> None:
        self._inline.discard(task)
        self._converting -= keys
        if not task.cancelled() and task.exception() is not None:
            exc = task.exception()
            log.warning("extraction after retain failed (the turns stay raw and queued): %s: %s",
                        type(exc).__name__, redact(str(exc)))

    async def wait_inline(self, timeout: float | None = None) -> bool:
        """Wait for the extractions started by retains of this process; False if some still run at `timeout`."""
        tasks = set(self._inline)
        if not tasks:
            return True
        _, pending = await asyncio.wait(tasks, timeout=timeout)
        return not pending

    async def run_once(self, *, bank_id: str | None = None, limit: int = 64, force: bool = False) -> int:
        """One pass over the due rows (of one bank, or all); `force`: every queued row, due or parked.
        Returns how many items became facts."""
        claimed = await self.pool.fetch(CLAIM, limit, LEASE_SECONDS, bank_id, force)
        by_bank: dict[str, list[str]] = {}
        for row in claimed:
            if (row["bank_id"], row["item_hash"]) not in self._converting:
                by_bank.setdefault(row["bank_id"], []).append(row["item_hash"])
        converted = 0
        for bank, hashes in by_bank.items():
            converted += await self._convert_bank(bank, hashes)
        return converted

    async def _convert_bank(self, bank_id: str, hashes: list[str]) -> int:
        items = await self._rebuild(bank_id, hashes)
        missing = sorted(set(hashes) - {i.item_hash for i in items})
        if missing:  # the raw units were deleted meanwhile: nothing left to convert
            await self.pool.execute(
                "DELETE FROM extraction_queue WHERE bank_id = $1 AND item_hash = ANY($2::text[])", bank_id, missing
            )
        if not items:
            return 0
        policy = await self.defense_policy(bank_id)
        return len(await self.convert(bank_id, items, now=datetime.now(UTC), policy=policy))

    async def convert(
        self, bank_id: str, items: list[PreparedItem], *, now: datetime, policy: str
    ) -> dict[str, list[UUID]]:
        """Extract queued items and put their facts in place of their raw units; failures are rescheduled.
        Returns item_hash → unit ids of the items converted (by this call; not those another process did)."""
        translated = await self.extractor.translate(bank_id, items, now=now, policy=policy)
        failed = [i for i in translated if i.error]
        for reason in dict.fromkeys(i.error for i in failed):
            await self.pool.execute(
                RESCHEDULE,
                bank_id,
                [i.item_hash for i in failed if i.error == reason],
                reason,
                self.settings.extraction_max_attempts,
                self.settings.extraction_retry_interval,
                MAX_BACKOFF_SECONDS,
            )
        if failed:
            await self._link_raw_entities(bank_id, [i.item_hash for i in failed])
        done = [i for i in translated if not i.error]
        if not done:
            return {}
        texts = [u.embed_text for i in done for u in i.units]
        vectors = await self.embed(texts)
        async with self.pool.acquire() as conn, conn.transaction():
            result = await self._replace(conn, bank_id, done, vectors)
        if result and self.converted is not None:
            await self.converted(bank_id, sum(len(ids) for ids in result.values()))
        return result

    async def _link_raw_entities(self, bank_id: str, hashes: list[str]) -> None:
        async with self.pool.acquire() as conn, conn.transaction():
            rows = await conn.fetch(UNLINKED_RAW, bank_id, hashes)
            found = [(r["id"], {entity_key(n): n for n in extract_entities(r["text"])}) for r in rows]
            await write_unit_entities(conn, bank_id, [(i, e) for i, e in found if e])

    async def _replace(
        self, conn: asyncpg.Connection, bank_id: str, items: list[ExtractedItem], vectors: np.ndarray
    ) -> dict[str, list[UUID]]:
        hashes = [i.item_hash for i in items]
        # The same per-item locks as write_items: a concurrent retain of one of these items waits for us.
        await conn.execute(
            "SELECT pg_advisory_xact_lock(hashtextextended($1 || h, 0)) FROM unnest($2::text[]) AS h ORDER BY h",
            bank_id,
            sorted(hashes),
        )
        still = sorted({r["item_hash"] for r in await conn.fetch(STILL_QUEUED, bank_id, hashes)})
        if not still:
            return {}  # another process converted them first
        raw_rows = await conn.fetch(RAW_UNITS, bank_id, still)
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
            "DELETE FROM retained_items WHERE bank_id = $1 AND item_hash = ANY($2::text[])", bank_id, still
        )
        await conn.execute("DELETE FROM extraction_queue WHERE bank_id = $1 AND item_hash = ANY($2::text[])", bank_id, still)
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

    async def _rebuild(self, bank_id: str, hashes: list[str]) -> list[PreparedItem]:
        """Each queued item again, from its raw units (their text is the defended content)."""
        rows = await self.pool.fetch(RAW_UNITS, bank_id, hashes)
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
            )
            items.append(PreparedItem(item_hash=item_hash, units=[], source=source))
        return items

    # -- the background loop -------------------------------------------------------------------------------

    def start(self) -> None:
        """Run `run_once` every extraction_retry_interval seconds on the running loop, until `stop`.

        Without a running loop (an engine built outside async code) nothing starts; run_once still works.
        """
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        if self._task is None or self._task.done():
            self._task = loop.create_task(self._loop(), name="memwrap-reextract")

    async def _loop(self) -> None:
        interval = max(0.05, self.settings.extraction_retry_interval)
        while True:
            await asyncio.sleep(interval)
            try:
                while await self.run_once() > 0:
                    pass  # more may be due: keep going while passes make progress
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - the loop must outlive a bad pass (the database restarting)
                log.warning("re-extraction pass failed: %s: %s", type(exc).__name__, redact(str(exc)))

    def stop_soon(self) -> None:
        """Cancel the loop without waiting for it (from sync code)."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()

    async def stop(self) -> None:
        """Stop the loop and the extractions still running (their items stay queued: the next pass redoes them)."""
        tasks = [t for t in (self._task, *self._inline) if t is not None]
        self._task = None
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


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
