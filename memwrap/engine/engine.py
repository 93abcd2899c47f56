"""The engine: the store, the embedding model and the verbs (retain, recall, reflect, list, get, delete, update)
over them; the stages get its parts (engine/parts.py), never the engine itself.

Mixed in: opening and closing (start_stop.py), the bulk verbs (transfer/verbs.py: import_memories, export/import of
a bank, reembed), a bank's settings (banks/config_verbs.py), the learning verbs (learn/verbs.py), the read-only
views of a bank (views/verbs.py) and the webhook verbs (webhooks/verbs.py).
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any
from uuid import UUID

import numpy as np

from memwrap import validate
from memwrap.config import Settings
from memwrap.defense.policy import apply_policy
from memwrap.engine.banks import ids as bank_ids
from memwrap.engine.banks import settings as bank_settings
from memwrap.engine.banks.config_verbs import BankConfigVerbs
from memwrap.engine.embed.embedder import Embedder
from memwrap.engine.learn.service import Learning
from memwrap.engine.learn.verbs import LearningVerbs
from memwrap.engine.llm import usage as llm_usage
from memwrap.engine.llm.client import LLM, Usage
from memwrap.engine.memories import catalog
from memwrap.engine.parts import EngineParts
from memwrap.engine.recall.arms import Filters
from memwrap.engine.recall.filters import recall_filter
from memwrap.engine.recall.search import RecallRequest, Searcher
from memwrap.engine.reflect.service import reflect
from memwrap.engine.retain.facts import Extractor
from memwrap.engine.retain.pipeline import Retainer
from memwrap.engine.retain.reextract import Reextractor
from memwrap.engine.start_stop import StartStop, open_store
from memwrap.engine.startup import StartParts
from memwrap.engine.transfer.verbs import TransferVerbs
from memwrap.engine.update import history, update
from memwrap.engine.views.verbs import ViewVerbs
from memwrap.engine.webhooks.verbs import WebhookVerbs
from memwrap.filters import RecallFilter
from memwrap.models import (
    KEEP,
    MAX_PAGE,
    MAX_PAGE_OFFSET,
    BankInfo,
    DeleteReport,
    Disposition,
    Keep,
    MemoryRecord,
    MemoryVersion,
    Recall,
    ReflectResult,
    RetainItem,
)
from memwrap.store.db import Store


class Engine(StartStop, TransferVerbs, BankConfigVerbs, LearningVerbs, ViewVerbs, WebhookVerbs):
    def __init__(self, store: Store, embedder: Embedder, settings: Settings) -> None:
        self.store = store
        self.embedder = embedder
        self.settings = settings
        # A former default model this home keeps until `memwrap reembed` (engine/embed/legacy.py), else None.
        self.kept_model: str | None = None
        self.searcher = Searcher(store.pool, embedder.embed_query, settings)
        self.llm: LLM | None = None
        self.reextractor: Reextractor | None = None
        self.parts = EngineParts(  # what the stages get instead of the engine (engine/parts.py)
            pool=store.pool,
            database_url=store.url,
            planner_stats=store.planner_stats,
            settings=settings,
            embedder=embedder,
            llm=lambda: self.llm,
            reextractor=lambda: self.reextractor,
            learning=lambda: self.learning,
            recall=self.recall,
            get=self.get,
            defense_policy=self.defense_policy,
            count_llm_usage=self.count_llm_usage,
        )
        self.learning = Learning(self.parts)  # jobs, observations, mental models, forgetting (engine/learn)
        self.retainer = Retainer(store, embedder, settings, after_retain=self.learning.after_retain)
        self.extractor: Extractor | None = None  # None: retain stores raw units (none mode)
        self.startup_ms: dict[str, float] = {}  # how long each part of Engine.open took (ms)
        self._change_cues: asyncio.Task[None] | None = None
        self.use_llm(LLM.from_settings(settings))

    def use_llm(self, llm: LLM | None) -> None:
        """The LLM for extraction (and, later, consolidation and reflect); None or provider none: no LLM.

        The hook for `wrap_openai(client, llm="gpt-4o-mini")`: engine.use_llm(llm_from_client(client, model)).
        """
        self.llm = llm
        if llm is not None:
            llm.usage_sink = self.count_llm_usage
        self.extractor = self.reextractor = None
        if llm is not None and llm.configured("extraction"):
            self.extractor = Extractor(llm, self.store.pool, self.embedder.embed, self.settings)
            self.reextractor = Reextractor(
                self.store.pool,
                self.extractor,
                self.embedder.embed,
                self.settings,
                self.defense_policy,
                converted=self.learning.after_retain,
            )
        self.retainer.use(self.extractor, self.reextractor)

    async def count_llm_usage(self, bank_id: str, purpose: str, usage: Usage) -> None:
        """One LLM request made for `bank_id`, added to its counters of the day (memwrap/engine/llm/usage.py)."""
        await llm_usage.record(
            self.store.pool,
            bank_id,
            purpose,
            requests=max(usage.calls, 1),
            input_tokens=usage.prompt_tokens,
            output_tokens=usage.completion_tokens,
            cached_input_tokens=usage.cached_tokens,
        )

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
        how long each part took (engine/start_stop.py)."""
        parts = parts or StartParts.begin(settings)
        store, embedder, settings, kept = await open_store(settings, parts, allow_model_change=allow_model_change)
        try:
            with contextlib.suppress(Exception):  # no offline encoding: the first recall says so, clearly
                await parts.tokenizer
            engine = cls(store, embedder, settings)
            engine.kept_model = kept
            await engine._started(parts, allow_model_change=allow_model_change)
        except BaseException:
            await store.close()
            raise
        return engine

    # --- retain -----------------------------------------------------------------------------------------

    async def retain(
        self,
        bank_id: str,
        content: str,
        *,
        timestamp: datetime | None = None,
        context: str | None = None,
        document_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        tags: Sequence[str] | str | None = None,
        expires_at: datetime | None = None,
    ) -> list[UUID]:
        """One item, validated as `retain_many` does."""
        fields = {
            "timestamp": timestamp,
            "context": context,
            "document_id": document_id,
            "metadata": metadata,
            "tags": tags,
            "expires_at": expires_at,
        }
        item = {"content": content, **{k: v for k, v in fields.items() if v is not None}}
        return await self.retain_many(bank_id, [item])

    # upsert_memory in the GenAI conventions: a retain may add memories, merge a duplicate or revise what was learnt.
    async def retain_many(self, bank_id: str, items: Sequence[RetainItem | Mapping[str, Any] | str]) -> list[UUID]:
        """Validated here, at the boundary; written by retain's pipeline (engine/retain/pipeline.py)."""
        bank_id = validate.bank_id(bank_id)
        checked = validate.retain_items(items, max_metadata_bytes=self.settings.max_metadata_bytes)
        await bank_ids.admit(self.store.pool, bank_id)  # a new bank may not pass for another (banks/ids.py)
        if not checked:
            return []
        return await self.retainer.retain(bank_id, checked, await self.defense_policy(bank_id))

    async def defense_policy(self, bank_id: str) -> str:
        """The bank's memory-defense policy (off, redact or block): its own setting, else the configured default."""
        return await bank_settings.defense_policy(self.store.pool, bank_id, self.settings.defense_policy)

    # --- recall -----------------------------------------------------------------------------------------

    async def recall(
        self,
        bank_id: str | Sequence[str],
        query: str,
        *,
        token_budget: int | None = None,
        now: datetime | None = None,
        types: Sequence[str] | str | None = None,
        tags: Sequence[str] | str | None = None,
        filters: RecallFilter | Mapping[str, Any] | None = None,
        top_k: int | None = None,
        min_score: float | None = None,
        model: str | None = None,
        neighbours: bool | None = None,
        prefer_observations: bool | None = None,
        explain: bool = False,
        ids_in_block: bool = False,
        fusion: str | None = None,
        query_vector: np.ndarray | None = None,
    ) -> Recall:
        """The declared recall (memwrap/verbs.py): one bank or a list read as one; also `fusion` and
        `query_vector` (a precomputed embedding of `query`), which benchmarks use and no public surface offers."""
        return await self.searcher.recall(
            RecallRequest.checked(
                self.settings,
                bank_id=bank_id,
                query=query,
                token_budget=token_budget,
                now=now,
                types=types,
                tags=tags,
                filters=filters,
                top_k=top_k,
                min_score=min_score,
                model=model,
                neighbours=neighbours,
                prefer_observations=prefer_observations,
                explain=explain,
                ids_in_block=ids_in_block,
                fusion=fusion,
                query_vector=query_vector,
            )
        )

    # --- reflect ----------------------------------------------------------------------------------------

    async def reflect(
        self,
        bank_id: str,
        query: str,
        *,
        context_budget: int | None = None,
        context: str | None = None,
        response_schema: Any = None,
        tags: Sequence[str] | str | None = None,
        disposition: Disposition | Mapping[str, Any] | None = None,
        max_iterations: int | None = None,
        timeout: float | None = None,
        now: datetime | None = None,
    ) -> ReflectResult:
        """Answer `query` with a budgeted tool loop over mental models, observations and facts (engine/reflect)."""
        return await reflect(
            self.parts,
            bank_id,
            query,
            context_budget=context_budget,
            context=context,
            response_schema=response_schema,
            tags=tags,
            disposition=disposition,
            max_iterations=max_iterations,
            timeout=timeout,
            now=now,
        )

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
        include_expired: bool = False,
        include_invalidated: bool = False,
    ) -> list[MemoryRecord]:
        limit = validate.bounded(limit, what="limit", low=1, high=MAX_PAGE)
        offset = validate.bounded(offset, what="offset", low=0, high=MAX_PAGE_OFFSET)
        selection = Filters(
            validate.bank_id(bank_id),
            validate.memory_types(types),
            validate.tags(tags),
            recall_filter(filters),
            include_expired=bool(include_expired),
            include_invalidated=bool(include_invalidated),
        )
        if isinstance(document_id, str) and await self.defense_policy(selection.bank_id) != "off":
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

    async def delete_memories(
        self,
        bank_id: str,
        *,
        filters: RecallFilter | Mapping[str, Any] | None = None,
        tags: Sequence[str] | None = None,
        types: Sequence[str] | None = None,
        document_id: str | None = None,
        dry_run: bool = True,
    ) -> DeleteReport:
        selection = Filters(
            validate.bank_id(bank_id),
            validate.memory_types(types),
            validate.tags(tags),
            recall_filter(filters),
            include_expired=True,  # an expired memory is still stored: a purge takes it too
        )
        if not (selection.narrowed or document_id):
            raise validate.InvalidInputError(
                "delete_memories needs filters, tags, types or a document_id; to delete every memory of the bank, "
                "use delete_bank."
            )
        if isinstance(document_id, str) and await self.defense_policy(selection.bank_id) != "off":
            document_id = apply_policy(document_id, "redact").text  # stored redacted: the id given finds it
        ids = await catalog.matching_ids(self.store.pool, selection, document_id=document_id)
        deleted = 0
        if ids and not dry_run:
            await self.learning.before_delete(selection.bank_id, ids)
            deleted = await catalog.delete_memories(self.store.pool, selection.bank_id, ids)
        return DeleteReport(bank_id=selection.bank_id, matched=len(ids), deleted=deleted, dry_run=bool(dry_run))

    async def delete_bank(self, bank_id: str) -> int:
        return await catalog.delete_bank(self.store.pool, validate.bank_id(bank_id))

    async def banks(self) -> builtins.list[BankInfo]:
        return await catalog.banks(self.store.pool)

    # --- update, history, export/import (engine/update.py, engine/transfer/bank_stream.py) ------------------

    async def update(
        self,
        bank_id: str,
        memory_id: UUID | str,
        *,
        text: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        tags: Sequence[str] | None = None,
        occurred_start: datetime | None = None,
        occurred_end: datetime | None = None,
        expires_at: datetime | None | Keep = KEEP,
    ) -> MemoryRecord:
        """Change a memory in place (re-embedded, re-dated, entities re-linked); the old version goes to its
        history and the observations citing it are queued for revision. `expires_at`: set, cleared (None) or
        kept (KEEP)."""
        return await update(
            self.parts,
            bank_id,
            memory_id,
            text=text,
            metadata=metadata,
            tags=tags,
            occurred_start=occurred_start,
            occurred_end=occurred_end,
            expires_at=expires_at,
        )

    async def history(self, bank_id: str, memory_id: UUID | str) -> builtins.list[MemoryVersion]:
        """Every version of a memory, oldest first; the last is the current one."""
        return await history(self.parts, bank_id, memory_id)
