"""The engine: the store, the embedding model and the verbs (retain, recall, list, get, delete) over them.

The learning verbs (memwrap/engine/learn/verbs.py) and the read-only views of a bank (view_verbs.py) are mixed in.
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import logging
import time
from collections.abc import AsyncIterable, AsyncIterator, Iterable, Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from uuid import UUID

import numpy as np

from memwrap import lifecycle
from memwrap.config import Settings
from memwrap.engine import bank_ids, bank_settings, catalog, tracing, validate
from memwrap.engine.embed import Embedder
from memwrap.engine.import_memories import IMPORT_BATCH, BulkLoadReport, batches, import_batch
from memwrap.engine.learn.service import Learning
from memwrap.engine.learn.verbs import LearningVerbs
from memwrap.engine.llm import LLM
from memwrap.engine.memories_jsonl import read_jsonl_file
from memwrap.engine.recall.arms import Filters
from memwrap.engine.recall.filters import recall_filter
from memwrap.engine.recall.search import RecallRequest, Searcher
from memwrap.engine.reembed import embedding_text, reembed_store
from memwrap.engine.reflect.service import reflect
from memwrap.engine.retain.defense import apply_policy, defend
from memwrap.engine.retain.facts import ExtractedItem, Extractor, write_translated
from memwrap.engine.retain.prepare import PreparedItem, defend_item, item_hash, legacy_item_hash, prepare_defended
from memwrap.engine.retain.reextract import Reextractor
from memwrap.engine.retain.write import existing_items, write_items
from memwrap.engine.startup import StartParts
from memwrap.engine.transfer import export_lines, import_lines, read_lines, write_lines
from memwrap.engine.update import history, update
from memwrap.engine.view_verbs import ViewVerbs
from memwrap.filters import RecallFilter
from memwrap.models import (
    MAX_PAGE_OFFSET,
    BankInfo,
    ImportReport,
    MemoryRecord,
    MemoryVersion,
    Recall,
    ReflectResult,
    RetainItem,
)
from memwrap.store.db import Store
from memwrap.store.pg_tuning import index_build_cap
from memwrap.store.vector_index import index_down
from memwrap.tokens import encoding_for_model

log = logging.getLogger("memwrap.engine")

LAST_TEXT_OF_SESSIONS = """
SELECT DISTINCT ON (session_key) session_key, text
FROM memory_units
WHERE bank_id = $1 AND session_key = ANY($2::text[])
ORDER BY session_key, seq DESC
"""

# Items are embedded and written in groups of this many: big enough to batch well, small enough to stream.
WRITE_BATCH = 256

# Engine.open's warm-up recall reads this bank, which holds nothing (bank ids cannot start with two underscores
# followed by this name by accident: it is just an unlikely name; a recall on it reads, never writes).
WARMUP_BANK = "__memwrap_warmup__"


_UNREAD = object()  # Engine._legacy_key before store_meta was read


class Engine(LearningVerbs, ViewVerbs):
    def __init__(self, store: Store, embedder: Embedder, settings: Settings) -> None:
        self.store = store
        self.embedder = embedder
        self.settings = settings
        self.searcher = Searcher(store.pool, embedder.embed_query, settings)
        self.learning = Learning(self)  # jobs, observations, mental models, forgetting (engine/learn)
        self.llm: LLM | None = None
        self.extractor: Extractor | None = None  # None: retain stores raw units (none mode)
        self.reextractor: Reextractor | None = None
        self.startup_ms: dict[str, float] = {}  # how long each part of Engine.open took (ms)
        self._legacy_key: bytes | None | object = _UNREAD
        self.use_llm(LLM.from_settings(settings))

    def use_llm(self, llm: LLM | None) -> None:
        """The LLM for extraction (and, later, consolidation and reflect); None or provider none: no LLM.

        The hook for `wrap_openai(client, llm="gpt-4o-mini")`: engine.use_llm(llm_from_client(client, model)).
        """
        self.llm = llm
        self.extractor = self.reextractor = None
        if llm is not None and llm.configured("extraction"):
            self.extractor = Extractor(llm, self.store.pool, self.embedder.embed, self.settings)
            self.reextractor = Reextractor(
                self.store.pool, self.extractor, self.embedder.embed, self.settings, self._defense_policy,
                converted=self.learning.after_retain,
            )

    async def _warm_up(self) -> None:
        """Every recall arm once, on connections of their own, on a bank that holds nothing: the connections,
        their catalog and plan caches and the model's first run are then ready for the first real call."""
        with contextlib.suppress(Exception):  # only a warm-up: the first real recall reports real errors
            await self.searcher.recall(RecallRequest(
                bank_id=WARMUP_BANK, query="what did we say last week?", token_budget=64, now=datetime.now(UTC),
                types=None, tags=None, model=None, neighbours=True, fusion=None, warm_up=True,
            ))
            encoding_for_model().encode("the first count on this thread builds its tokenizer state")

    async def retry_extractions(self, bank_id: str | None = None, *, limit: int = 64) -> int:
        """Re-extract queued raw turns now, due or not (the background loop retries them on a schedule).
        Returns how many items became facts."""
        if self.reextractor is None:
            return 0
        bank = validate.bank_id(bank_id) if bank_id else None
        return await self.reextractor.run_once(bank_id=bank, limit=limit, force=True)

    @classmethod
    async def open(
        cls, settings: Settings, *, allow_model_change: bool = False, parts: StartParts | None = None
    ) -> Engine:
        """Start the engine. The database server, the embedding model and the token counter are independent:
        they load side by side (memwrap/engine/startup.py; `parts` when already begun), and `startup_ms` says
        how long each part took."""
        parts = parts or StartParts.begin(settings)
        timings = parts.timings
        try:
            url = settings.database_url or await parts.database  # type: ignore[misc]  # set when no database_url
            embedder = await parts.model
            start = time.perf_counter()
            store = await Store.open(
                url,
                embedding_model=settings.embedding_space,
                embedding_dim=embedder.dim,
                allow_model_change=allow_model_change,
                min_size=settings.pool_min_size,
                max_size=settings.pool_max_size,
                index_memory_cap=None if settings.database_url else index_build_cap(),
            )
            timings["store"] = round((time.perf_counter() - start) * 1000, 1)
        except BaseException:
            parts.abandon()
            raise
        try:
            with contextlib.suppress(Exception):  # no offline encoding: the first recall says so, clearly
                await parts.tokenizer
            engine = cls(store, embedder, settings)
            start = time.perf_counter()
            if not allow_model_change:  # reembed: the stored vectors may not fit the model yet
                await engine._warm_up()
            timings["first_query"] = round((time.perf_counter() - start) * 1000, 1)
            engine.startup_ms = {**timings, "total": parts.elapsed_ms()}
            lifecycle.engine_started()
            log.debug("memwrap: engine started in %s ms", engine.startup_ms)
            if not allow_model_change:  # no learning while every vector is being rewritten
                await engine.learning.start()
        except BaseException:
            await store.close()
            raise
        return engine

    async def close(self) -> None:
        await self.learning.stop()
        if self.reextractor is not None:
            await self.reextractor.stop()
        if self.llm is not None:
            await self.llm.aclose()
        await self.searcher.close()
        await self.store.close()

    # --- retain -----------------------------------------------------------------------------------------

    async def retain(self, bank_id: str, content: str, **fields: Any) -> list[UUID]:
        """One item (fields: timestamp, context, document_id, metadata, tags), validated as `retain_many` does."""
        item = {"content": content, **{k: v for k, v in fields.items() if v is not None}}
        return await self.retain_many(bank_id, [item])

    @tracing.traced("retain", lambda _self, bank_id, items, *_a, **_k: {"bank_id": bank_id, "items": len(items)})
    async def retain_many(self, bank_id: str, items: Sequence[RetainItem | Mapping[str, Any] | str]) -> list[UUID]:
        bank_id = validate.bank_id(bank_id)
        checked = validate.retain_items(items, max_metadata_bytes=self.settings.max_metadata_bytes)
        await bank_ids.admit(self.store.pool, bank_id)  # a new bank may not pass for another (bank_ids.py)
        if not checked:
            return []
        policy = await self._defense_policy(bank_id)
        now = datetime.now(UTC)
        # Everything is validated, defended and prepared before anything is written: bad input stores nothing
        # (under 'block', an item with a secret refuses the whole call).
        defended = [defend_item(i, policy) for i in checked]
        hashes = [item_hash(i) for i in defended]
        legacy = {h: legacy_item_hash(i, key) for i, h in zip(checked, hashes, strict=True)} if (
            key := await self._legacy_item_key()) else {}
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
        # Embedding (torch, in its own thread) of the next batch overlaps the database write of this one.
        batches = [pending[i : i + WRITE_BATCH] for i in range(0, len(pending), WRITE_BATCH)]
        embedding = self._embed_items(batches[0]) if batches else None
        for index, batch in enumerate(batches):
            assert embedding is not None
            vectors = await embedding
            embedding = self._embed_items(batches[index + 1]) if index + 1 < len(batches) else None
            async with self.store.pool.acquire() as conn:
                stored.update(await self._write(conn, bank_id, batch, vectors))
        self.store.planner_stats.note_writes(bank_id, sum(len(stored.get(h, ())) for h in prepared))
        if self.reextractor is not None and pending:
            # Consolidation follows the facts (the reextractor's `converted`), not the raw units they replace.
            stored.update(await self._extract_written(bank_id, pending, stored, now=now, policy=policy))
        else:
            await self.learning.after_retain(bank_id, len(pending))
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
        if self.extractor is None:
            return await write_items(conn, bank_id, batch, vectors)
        return await write_translated(conn, bank_id, batch, vectors, self.settings)

    def _embed_items(self, items: list[PreparedItem]) -> asyncio.Future[np.ndarray]:
        texts = [unit.embed_text for item in items for unit in item.units]
        return asyncio.ensure_future(self.embedder.embed(texts))

    async def _add_session_context(self, bank_id: str, items: list[PreparedItem]) -> None:
        """Embed each unit together with the unit before it in its session.

        A reply such as "Yes, it was amazing!" means nothing alone; with the question before it, its vector
        lands near the questions it answers. Only the vector sees the context: the stored text is the unit's own.
        (LoCoMo evidence recall at 1,024 tokens went from 0.790 to 0.809 with it.)
        """
        sessions = sorted({u.session_key for item in items for u in item.units if u.session_key})
        if not sessions:
            return
        rows = await self.store.pool.fetch(LAST_TEXT_OF_SESSIONS, bank_id, sessions)
        previous: dict[str, str] = {r["session_key"]: r["text"] for r in rows}
        for item in items:
            for unit in item.units:
                if unit.session_key is None:
                    continue
                unit.embed_text = embedding_text(unit.text, previous.get(unit.session_key))
                previous[unit.session_key] = unit.text

    async def _defense_policy(self, bank_id: str) -> str:
        return await bank_settings.defense_policy(self.store.pool, bank_id, self.settings.defense_policy)

    async def _legacy_item_key(self) -> bytes | None:
        """The key the item hashes of a store older than schema v11 were rewritten under (None: no such rows)."""
        if self._legacy_key is _UNREAD:
            stored = await self.store.get_meta("legacy_item_hash_key")
            self._legacy_key = bytes.fromhex(stored) if stored else None
        return self._legacy_key  # type: ignore[return-value]  # _UNREAD was replaced just above

    async def import_memories(
        self,
        bank_id: str,
        memories: str | Path | Iterable[Any] | AsyncIterable[Any],
        *,
        batch_size: int = IMPORT_BATCH,
        rebuild_vector_index: bool = False,
    ) -> int:
        """Write memories (a JSONL file, or ImportedMemory or their dicts; memwrap/engine/memories_jsonl.py) with
        COPY, a batch per transaction; rows with an `embedding` are not embedded again. Returns how many were new.
        `rebuild_vector_index`: drop the vector index for the load and build it once at the end
        (memwrap/store/vector_index.py)."""
        bank_id = validate.bank_id(bank_id)
        await bank_ids.admit(self.store.pool, bank_id)
        if isinstance(memories, str | Path):
            memories = read_jsonl_file(memories)
        if not 1 <= batch_size <= 100_000:
            raise validate.InvalidInputError("import_memories takes 1 <= batch_size <= 100000.")
        policy = await self._defense_policy(bank_id)
        report = BulkLoadReport()
        if rebuild_vector_index:
            async with index_down(self.store.pool, memory_cap=self.store.index_memory_cap):
                await self._import_batches(bank_id, memories, batch_size, policy, report)
        else:
            await self._import_batches(bank_id, memories, batch_size, policy, report)
        await self.learning.after_retain(bank_id, report.imported)
        return report.imported

    async def _import_batches(
        self, bank_id: str, memories: Iterable[Any] | AsyncIterable[Any], batch_size: int, policy: str,
        report: BulkLoadReport,
    ) -> None:
        async for batch in batches(memories, batch_size):
            async with self.store.pool.acquire() as conn:
                written = await import_batch(
                    conn, bank_id, batch, dim=self.embedder.dim, embed=self.embedder.embed, defense_policy=policy,
                    report=report, legacy_key=await self._legacy_item_key(),
                    max_metadata_bytes=self.settings.max_metadata_bytes,
                )
            self.store.planner_stats.note_writes(bank_id, len(written))

    # --- recall -----------------------------------------------------------------------------------------

    async def recall(self, bank_id: str | Sequence[str], query: str, **options: Any) -> Recall:
        """The declared recall (memwrap/verbs.py): one bank or a list read as one; also `fusion` and
        `query_vector` (a precomputed embedding of `query`), which benchmarks use and no public surface offers."""
        return await self.searcher.recall(RecallRequest.checked(self.settings, bank_id=bank_id, query=query, **options))

    # --- reflect ----------------------------------------------------------------------------------------

    async def reflect(self, bank_id: str, query: str, **options: Any) -> ReflectResult:
        """Answer `query` with a budgeted tool loop over mental models, observations and facts (engine/reflect)."""
        return await reflect(self, bank_id, query, **options)

    # --- catalog ----------------------------------------------------------------------------------------

    async def list(
        self,
        bank_id: str,
        *,
        limit: int = 100,
        offset: int = 0,
        types: Sequence[str] | None = None,
        tags: Sequence[str] | None = None,
        document_id: str | None = None,
        filters: RecallFilter | Mapping[str, Any] | None = None,
    ) -> list[MemoryRecord]:
        limit = validate.bounded(limit, what="limit", low=1, high=10_000)
        offset = validate.bounded(offset, what="offset", low=0, high=MAX_PAGE_OFFSET)
        selection = Filters(
            validate.bank_id(bank_id), validate.memory_types(types), validate.tags(tags), recall_filter(filters)
        )
        if isinstance(document_id, str) and await self._defense_policy(selection.bank_id) != "off":
            document_id = apply_policy(document_id, "redact").text  # stored redacted: the id given finds it
        return await catalog.list_memories(
            self.store.pool, selection, limit=limit, offset=offset, document_id=document_id
        )

    async def get(self, bank_id: str, memory_id: UUID | str) -> MemoryRecord:
        return await catalog.get_memory(self.store.pool, validate.bank_id(bank_id), validate.memory_id(memory_id))

    async def delete(self, bank_id: str, memory_id: UUID | str) -> None:
        bank_id, memory_id = validate.bank_id(bank_id), validate.memory_id(memory_id)
        # What was learnt from it forgets it first (observations, mental models); then the memory goes.
        await self.learning.before_delete(bank_id, [memory_id])
        await catalog.delete_memory(self.store.pool, bank_id, memory_id)

    async def delete_bank(self, bank_id: str) -> int:
        return await catalog.delete_bank(self.store.pool, validate.bank_id(bank_id))

    async def banks(self) -> builtins.list[BankInfo]:
        return await catalog.banks(self.store.pool)

    async def bank_config(self, bank_id: str) -> dict[str, Any]:
        """The bank's stored configuration (banks.config); BankNotFoundError if the bank does not exist."""
        return await bank_settings.read(self.store.pool, validate.bank_id(bank_id))

    async def create_bank(self, bank_id: str, **settings: Any) -> dict[str, Any]:
        """Create a new bank with `settings`; BankExistsError if the id is taken (one statement: no race)."""
        bank_id = validate.bank_id(bank_id)
        clean = {k: v for k, v in validate.bank_config(settings).items() if v is not None}
        await bank_ids.admit(self.store.pool, bank_id)
        return await bank_settings.create(self.store.pool, bank_id, await self._defended_config(bank_id, clean))

    async def configure_bank(self, bank_id: str, **changes: Any) -> dict[str, Any]:
        """Create the bank if needed and merge `changes` into its config (a None value removes the key)."""
        bank_id = validate.bank_id(bank_id)
        await bank_ids.admit(self.store.pool, bank_id)
        changes = await self._defended_config(bank_id, validate.bank_config(changes))
        return await bank_settings.update(self.store.pool, bank_id, changes)

    async def _defended_config(self, bank_id: str, config: dict[str, Any]) -> dict[str, Any]:
        """The disposition's directives (text a person wrote, read by reflect's LLM) through the memory defense,
        under the policy the bank will have."""
        disposition = config.get("disposition")
        if not isinstance(disposition, dict) or not disposition.get("directives"):
            return config
        policy = config.get("defense_policy") or await self._defense_policy(bank_id)
        directives = defend({"disposition.directives": disposition["directives"]}, policy)["disposition.directives"]
        return {**config, "disposition": {**disposition, "directives": directives}}

    # --- maintenance ------------------------------------------------------------------------------------

    async def reembed(self, *, batch_size: int = 256) -> int:
        """Re-embed every memory with the configured model, in place (memwrap/engine/reembed.py)."""
        return await reembed_store(
            self.store, self.embedder, self.settings.embedding_space, batch_size=batch_size
        )

    # --- update, history, export/import (engine/update.py, engine/transfer.py) -----------------------------

    async def update(
        self,
        bank_id: str,
        memory_id: UUID | str,
        *,
        text: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        tags: Sequence[str] | None = None,
    ) -> MemoryRecord:
        """Change a memory in place (re-embedded, re-dated, entities re-linked); the old version goes to its
        history and the observations citing it are queued for revision."""
        return await update(self, bank_id, memory_id, text=text, metadata=metadata, tags=tags)

    async def history(self, bank_id: str, memory_id: UUID | str) -> builtins.list[MemoryVersion]:
        """Every version of a memory, oldest first; the last is the current one."""
        return await history(self, bank_id, memory_id)

    def export_stream(self, bank_id: str, *, include_embeddings: bool = True) -> AsyncIterator[str]:
        """The bank as JSON lines (memwrap/engine/transfer.py): memories with their times, metadata, tags,
        entities and links, observations, mental models, histories; vectors too with include_embeddings."""
        return export_lines(self, bank_id, include_embeddings=include_embeddings)

    async def import_stream(
        self, bank_id: str, lines: AsyncIterable[str | bytes] | Iterable[str | bytes]
    ) -> ImportReport:
        """Load an export stream into `bank_id` (created if needed). Ids are kept; rows already present are
        skipped, so importing twice changes nothing. Vectors of the configured model's size are used as they are."""
        return await import_lines(self, bank_id, lines)

    async def export_bank(self, bank_id: str, path: str | Path, *, include_embeddings: bool = True) -> int:
        """The declared export_bank: the stream written to `path` (complete or not at all: a temporary file is
        renamed at the end). Returns the number of lines."""
        return await write_lines(Path(path), self.export_stream(bank_id, include_embeddings=include_embeddings))

    async def import_bank(self, bank_id: str, path: str | Path) -> ImportReport:
        return await self.import_stream(bank_id, read_lines(Path(path)))
