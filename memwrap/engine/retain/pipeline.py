"""Retain's pipeline, top-down: checked items are defended, hashed, deduplicated, prepared, given their session
context, embedded and written in batches, then extracted (when an LLM is configured) or handed to learning.

    mend (joints.py) → defend_item, item_hash (prepare.py) → existing_items (write.py) → prepare_defended (prepare.py)
    → add_session_context (here; embed/unit_text.py: short units only) → embed group N+1 ∥ write group N
    (write.py, facts.py)
    → the extraction started inline (reextract.py) or learning's after_retain (learn/service.py)

The engine validates at the boundary (Engine.retain_many) and hands the checked items here.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

import numpy as np

from memwrap.config import Settings
from memwrap.engine.embed.embedder import Embedder
from memwrap.engine.embed.unit_text import context_of, embedding_text
from memwrap.engine.retain.facts import ExtractedItem, Extractor, write_translated
from memwrap.engine.retain.joints import mend
from memwrap.engine.retain.prepare import PreparedItem, defend_item, item_hash, legacy_item_hash, prepare_defended
from memwrap.engine.retain.reextract import Reextractor
from memwrap.engine.retain.write import existing_items, write_items
from memwrap.models import RetainItem
from memwrap.store.bank_lock import retry_transaction
from memwrap.store.db import Store

LAST_TEXT_OF_SESSIONS = """
SELECT DISTINCT ON (session_key) session_key, text, turn_parts
FROM memory_units
WHERE bank_id = $1 AND session_key = ANY($2::text[])
ORDER BY session_key, seq DESC
"""

# Items are embedded and written in groups of about this many units (a group closes at the item that reaches it):
# the model embeds group N+1 (in its own threads, which release the GIL) while group N is written, so only the last
# group's write is not hidden behind embedding. Smaller groups hide more of the writes but cost a transaction each
# (~15 round trips) and leave a core idle at the end of each group's embedding. Short turns in calls of 100 (one
# group each before): the model idled 10-13% of retain's time, 3-4% now (bench/README.md, *Retain throughput*,
# 2026-12-07). Not a tuned optimum: 32 against one group was all this loaded machine could tell apart.
EMBED_GROUP_UNITS = 32
# Groups whose embedding is started ahead of the write that waits for them: one running, one queued, so the model
# never waits for the database, and a query embedding (a recall meanwhile) waits for two groups at most.
EMBED_AHEAD = 2

_UNREAD = object()  # Retainer._legacy_key before store_meta was read


def unit_groups(items: list[PreparedItem], size: int) -> list[list[PreparedItem]]:
    """`items` in order, cut into groups of at least `size` units (the last may be smaller); an item is never split,
    so a long message's chunks are embedded and written together."""
    groups: list[list[PreparedItem]] = []
    current: list[PreparedItem] = []
    units = 0
    for item in items:
        current.append(item)
        units += len(item.units)
        if units >= size:
            groups.append(current)
            current, units = [], 0
    if current:
        groups.append(current)
    return groups


class Retainer:
    """Writes checked items into a bank. `use` sets the extraction (None, None: retain stores raw units)."""

    def __init__(
        self,
        store: Store,
        embedder: Embedder,
        settings: Settings,
        *,
        after_retain: Callable[[str, int], Awaitable[None]],
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.settings = settings
        self.after_retain = after_retain  # learning's hook: consolidation follows new units
        self.extractor: Extractor | None = None
        self.reextractor: Reextractor | None = None
        self._legacy_key: bytes | None | object = _UNREAD

    def use(self, extractor: Extractor | None, reextractor: Reextractor | None) -> None:
        self.extractor, self.reextractor = extractor, reextractor

    async def retain(self, bank_id: str, checked: list[RetainItem], policy: str) -> list[UUID]:
        """The ids of the units the items stand for, in order (an item already stored gives its existing ids)."""
        now = datetime.now(UTC)
        # Everything is validated, defended and prepared before anything is written: bad input stores nothing
        # (under 'block', an item with a secret refuses the whole call). A secret split between two turns of a
        # session is redacted first (joints.py; the stored turn before too).
        checked = await mend(self.store.pool, bank_id, checked, policy)
        defended = [defend_item(i, policy) for i in checked]
        hashes = [item_hash(i) for i in defended]
        legacy = (
            {h: legacy_item_hash(i, key) for i, h in zip(checked, hashes, strict=True)}
            if (key := await self.legacy_item_key())
            else {}
        )
        known = await existing_items(self.store.pool, bank_id, hashes, legacy)
        prepared: dict[str, PreparedItem] = {}
        for item, hashed in zip(defended, hashes, strict=True):
            if hashed not in known and hashed not in prepared:
                prepared[hashed] = prepare_defended(item, now=now)

        stored: dict[str, list[UUID]] = dict(known)
        pending: list[PreparedItem] = list(prepared.values())
        if self.extractor is not None and pending:
            # Raw first, recallable from the moment retain returns; queued for the extraction started below.
            # Their entities wait for the extraction's (reextract.py, UNLINKED_RAW).
            pending = [
                ExtractedItem(p.item_hash, [replace(u, entities={}) for u in p.units], p.source, pending=True)
                for p in pending
            ]
        await self._add_session_context(bank_id, pending)
        # The embedding of the next groups (EMBED_AHEAD) runs while this one is written.
        groups = unit_groups(pending, EMBED_GROUP_UNITS)
        embedding = deque(self._embed_items(group) for group in groups[:EMBED_AHEAD])
        try:
            for index, group in enumerate(groups):
                vectors = await embedding.popleft()
                if index + EMBED_AHEAD < len(groups):
                    embedding.append(self._embed_items(groups[index + EMBED_AHEAD]))
                async with self.store.pool.acquire() as conn:
                    stored.update(await self._write(conn, bank_id, group, vectors))
        finally:
            # A write failed: the groups after it are neither written nor awaited. The groups before it stay (each
            # group is its own transaction, as batches of 256 units were): retain is idempotent by item hash, so
            # the caller's retry stores only the rest.
            for left in embedding:
                left.cancel()
        self.store.planner_stats.note_writes(bank_id, sum(len(stored.get(h, ())) for h in prepared))
        if self.reextractor is not None and pending:
            # Consolidation follows the facts (the reextractor's `converted`), not the raw units they replace.
            stored.update(await self._extract_written(bank_id, pending, stored, now=now, policy=policy))
        else:
            await self.after_retain(bank_id, len(pending))
        return [unit_id for hashed in hashes for unit_id in stored.get(hashed, [])]

    async def _extract_written(
        self, bank_id: str, items: list[PreparedItem], stored: dict[str, list[UUID]], *, now: datetime, policy: str
    ) -> dict[str, list[UUID]]:
        """Start the extraction of the items this retain wrote raw and wait up to extraction_deadline for it: the
        facts' ids when it is done in time, else nothing (the raw ids stand; the extraction goes on, its facts
        take the raw units' place and their ids when they land). defend_item ran the memory defense: the LLM
        sees defended text only."""
        assert self.reextractor is not None
        ours = [i for i in items if stored.get(i.item_hash) == [u.id for u in i.units]]  # not a concurrent retain's
        if not ours:
            return {}
        task = self.reextractor.start_inline(bank_id, ours, now=now, policy=policy)
        done, _ = await asyncio.wait({task}, timeout=max(0.0, self.settings.extraction_deadline))
        if task not in done or task.cancelled() or task.exception() is not None:
            return {}
        return task.result()

    async def _write(
        self, conn: Any, bank_id: str, batch: list[PreparedItem], vectors: np.ndarray
    ) -> dict[str, list[UUID]]:
        async def once() -> dict[str, list[UUID]]:
            if self.extractor is None:
                return await write_items(conn, bank_id, batch, vectors)
            return await write_translated(conn, bank_id, batch, vectors, self.settings)

        # The safety net behind the lock order (store/bank_lock.py): a write PostgreSQL aborts as a deadlock or a
        # serialization failure was rolled back whole, and writing is idempotent by item hash (items stored
        # meanwhile are skipped), so it runs again instead of losing the user's batch (issue 37).
        return await retry_transaction(once, what=f"writing {len(batch)} item(s) into bank {bank_id!r}")

    def _embed_items(self, items: list[PreparedItem]) -> asyncio.Future[np.ndarray]:
        texts = [unit.embed_text for item in items for unit in item.units]
        return asyncio.ensure_future(self.embedder.embed(texts))

    async def _add_session_context(self, bank_id: str, items: list[PreparedItem]) -> None:
        """Embed each short unit together with the end of the unit before it in its session (embedding_text).

        A reply such as "Yes, it was amazing!" means nothing alone; with the question before it, its vector
        lands near the questions it answers. Only the vector sees the context: the stored text is the unit's own.
        (LoCoMo evidence recall at 1,024 tokens went from 0.790 to 0.809 with it.) A unit of CONTEXT_FREE_CHARS or
        more is embedded alone: it carries its own meaning, and the context made retain of long messages embed
        1.38x the chunks' tokens (1.09x without; issue 36). LoCoMo R@256/1024 moved under 1 point per category.

        Chunks of a long message take no context and give none (`context_of`): a chunk's meaning is its message's,
        and a short one (a remark after pasted code, the last lines of an answer) is not a reply to the 300
        characters of code or prose before it. With that context a short statement's vector moved away from the
        questions it answers: on a generated long technical bank (bench/long_session/diagnose.py) evidence chunks
        the plain dense baseline ranks 1-7 ranked 120-370 in the semantic arm (issue 36).
        """
        sessions = sorted({u.session_key for item in items for u in item.units if u.session_key})
        if not sessions:
            return
        rows = await self.store.pool.fetch(LAST_TEXT_OF_SESSIONS, bank_id, sessions)
        previous: dict[str, str | None] = {r["session_key"]: context_of(r["text"], r["turn_parts"]) for r in rows}
        for item in items:
            for unit in item.units:
                if unit.session_key is None:
                    continue
                chunk = unit.turn_parts is not None
                unit.embed_text = embedding_text(unit.text, previous.get(unit.session_key), chunk=chunk)
                previous[unit.session_key] = context_of(unit.text, unit.turn_parts)

    async def legacy_item_key(self) -> bytes | None:
        """The key the item hashes of a store older than schema v11 were rewritten under (None: no such rows);
        import_memories reads it too."""
        if self._legacy_key is _UNREAD:
            stored = await self.store.get_meta("legacy_item_hash_key")
            self._legacy_key = bytes.fromhex(stored) if stored else None
        return self._legacy_key  # type: ignore[return-value]  # _UNREAD was replaced just above
