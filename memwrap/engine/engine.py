"""The engine: the store, the embedding model and the verbs (retain, recall, list, get, delete) over them.

The learning verbs (memwrap/engine/learn/verbs.py), the read-only views of a bank (banks/view_verbs.py) and the webhook
verbs (webhooks/verbs.py) are mixed in.
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import logging
import time
from collections.abc import AsyncIterable, AsyncIterator, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from uuid import UUID

import numpy as np

from memwrap import lifecycle, tracing, validate
from memwrap.config import Settings
from memwrap.defense.policy import apply_policy, defend
from memwrap.engine.banks import catalog
from memwrap.engine.banks import ids as bank_ids
from memwrap.engine.banks import settings as bank_settings
from memwrap.engine.banks.view_verbs import ViewVerbs
from memwrap.engine.change_cues import fill_quietly
from memwrap.engine.embed.embedder import Embedder
from memwrap.engine.embed.legacy import settings_for_home
from memwrap.engine.embed.reembed import reembed_store
from memwrap.engine.learn.service import Learning
from memwrap.engine.learn.verbs import LearningVerbs
from memwrap.engine.llm import usage as llm_usage
from memwrap.engine.llm.client import LLM, Usage
from memwrap.engine.parts import EngineParts
from memwrap.engine.recall.arms import Filters
from memwrap.engine.recall.filters import recall_filter
from memwrap.engine.recall.search import RecallRequest, Searcher
from memwrap.engine.reflect.service import reflect
from memwrap.engine.retain.facts import Extractor
from memwrap.engine.retain.pipeline import Retainer
from memwrap.engine.retain.reextract import Reextractor
from memwrap.engine.startup import StartParts, drop_result, home_embedder
from memwrap.engine.transfer.bank_stream import export_lines, import_lines, read_lines, write_lines
from memwrap.engine.transfer.import_memories import IMPORT_BATCH, BulkLoadReport, batches, import_batch
from memwrap.engine.transfer.memories_jsonl import read_jsonl_file
from memwrap.engine.update import history, update
from memwrap.engine.webhooks.verbs import WebhookVerbs
from memwrap.filters import RecallFilter
from memwrap.models import (
    KEEP,
    MAX_PAGE,
    MAX_PAGE_OFFSET,
    BankInfo,
    DeleteReport,
    Disposition,
    EntityType,
    ImportReport,
    Keep,
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

# Engine.open's warm-up recall reads this bank, which holds nothing (bank ids cannot start with two underscores
# followed by this name by accident: it is just an unlikely name; a recall on it reads, never writes).
WARMUP_BANK = "__memwrap_warmup__"


class Engine(LearningVerbs, ViewVerbs, WebhookVerbs):
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

    async def _warm_up(self) -> None:
        """Every recall arm once, on connections of their own, on a bank that holds nothing: the connections,
        their catalog and plan caches and the model's first run are then ready for the first real call."""
        # Nobody asked for it: no trace of it in the app's exporter (tracing.quiet).
        with tracing.quiet(), contextlib.suppress(Exception):  # the first real recall reports real errors
            await self.searcher.recall(
                RecallRequest(
                    bank_id=WARMUP_BANK,
                    query="what did we say last week?",
                    token_budget=64,
                    now=datetime.now(UTC),
                    types=None,
                    tags=None,
                    model=None,
                    neighbours=True,
                    fusion=None,
                    warm_up=True,
                )
            )
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
            kept = None
            if not allow_model_change:  # a home of the former default keeps it until reembed (embed/legacy.py)
                settings, kept = await settings_for_home(url, settings)
            if kept is None:
                embedder = await parts.model
            else:
                parts.model.add_done_callback(drop_result)  # the default model, loaded for nothing
                embedder = await asyncio.get_running_loop().run_in_executor(None, home_embedder, settings)
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
            engine.kept_model = kept
            start = time.perf_counter()
            if not allow_model_change:  # reembed: the stored vectors may not fit the model yet
                await engine._warm_up()
            timings["first_query"] = round((time.perf_counter() - start) * 1000, 1)
            engine.startup_ms = {**timings, "total": parts.elapsed_ms()}
            lifecycle.engine_started()
            log.debug("memwrap: engine started in %s ms", engine.startup_ms)
            if not allow_model_change:  # no learning while every vector is being rewritten
                await engine.learning.start()
            # Memories written before migration 0023 (or since changed) get their change cue (engine/change_cues.py).
            engine._change_cues = asyncio.get_running_loop().create_task(
                fill_quietly(store.pool), name="memwrap-change-cues"
            )
        except BaseException:
            await store.close()
            raise
        return engine

    async def close(self) -> None:
        if self._change_cues is not None:
            self._change_cues.cancel()
            await asyncio.gather(self._change_cues, return_exceptions=True)
        await self.learning.stop()
        if self.reextractor is not None:
            await self.reextractor.stop()
        if self.llm is not None:
            await self.llm.aclose()
        await self.searcher.close()
        await self.store.close()

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
    @tracing.traced(
        "retain",
        lambda _self, bank_id, items, *_a, **_k: {
            "bank_id": bank_id,
            "items": len(items),
            **tracing.memory_operation("upsert_memory", bank_id),
            "gen_ai.memory.record.count": len(items),
        },
    )
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

    async def import_memories(
        self,
        bank_id: str,
        memories: str | Path | Iterable[Any] | AsyncIterable[Any],
        *,
        batch_size: int = IMPORT_BATCH,
        rebuild_vector_index: bool = False,
    ) -> int:
        """Write memories (a JSONL file, or ImportedMemory or their dicts; engine/transfer/memories_jsonl.py) with
        COPY, a batch per transaction; rows with an `embedding` are not embedded again. Returns how many were new.
        `rebuild_vector_index`: drop the vector index for the load and build it once at the end
        (memwrap/store/vector_index.py)."""
        bank_id = validate.bank_id(bank_id)
        await bank_ids.admit(self.store.pool, bank_id)
        if isinstance(memories, str | Path):
            memories = read_jsonl_file(memories)
        if not 1 <= batch_size <= 100_000:
            raise validate.InvalidInputError("import_memories takes 1 <= batch_size <= 100000.")
        policy = await self.defense_policy(bank_id)
        report = BulkLoadReport()
        if rebuild_vector_index:
            async with index_down(self.store.pool, memory_cap=self.store.index_memory_cap):
                await self._import_batches(bank_id, memories, batch_size, policy, report)
        else:
            await self._import_batches(bank_id, memories, batch_size, policy, report)
        await self.learning.after_retain(bank_id, report.imported)
        return report.imported

    async def _import_batches(
        self,
        bank_id: str,
        memories: Iterable[Any] | AsyncIterable[Any],
        batch_size: int,
        policy: str,
        report: BulkLoadReport,
    ) -> None:
        async for batch in batches(memories, batch_size):
            async with self.store.pool.acquire() as conn:
                written = await import_batch(
                    conn,
                    bank_id,
                    batch,
                    dim=self.embedder.dim,
                    embed=self.embedder.embed,
                    defense_policy=policy,
                    report=report,
                    legacy_key=await self.retainer.legacy_item_key(),
                    max_metadata_bytes=self.settings.max_metadata_bytes,
                )
            self.store.planner_stats.note_writes(bank_id, len(written))

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

    @tracing.traced(
        "delete",
        lambda _self, bank_id, memory_id, *_a, **_k: tracing.memory_record("delete_memory", bank_id, memory_id),
    )
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

    async def bank_config(self, bank_id: str) -> dict[str, Any]:
        """The bank's stored configuration (banks.config); BankNotFoundError if the bank does not exist."""
        return await bank_settings.read(self.store.pool, validate.bank_id(bank_id))

    async def create_bank(
        self,
        bank_id: str,
        *,
        defense_policy: str | None = None,
        disposition: Disposition | Mapping[str, Any] | None = None,
        raw_ttl_days: float | None = None,
        extraction_instructions: str | None = None,
        entity_types: Sequence[EntityType | Mapping[str, Any]] | None = None,
    ) -> dict[str, Any]:
        """Create a new bank with these settings; BankExistsError if the id is taken (one statement: no race)."""
        bank_id = validate.bank_id(bank_id)
        settings = {
            "defense_policy": defense_policy,
            "disposition": disposition,
            "raw_ttl_days": raw_ttl_days,
            "extraction_instructions": extraction_instructions,
            "entity_types": entity_types,
        }
        clean = {k: v for k, v in validate.bank_config(settings).items() if v is not None}
        await bank_ids.admit(self.store.pool, bank_id)
        return await bank_settings.create(self.store.pool, bank_id, await self._defended_config(bank_id, clean))

    async def configure_bank(
        self,
        bank_id: str,
        *,
        defense_policy: str | None | Keep = KEEP,
        disposition: Disposition | Mapping[str, Any] | None | Keep = KEEP,
        raw_ttl_days: float | None | Keep = KEEP,
        extraction_instructions: str | None | Keep = KEEP,
        entity_types: Sequence[EntityType | Mapping[str, Any]] | None | Keep = KEEP,
    ) -> dict[str, Any]:
        """Create the bank if needed and merge the settings given into its config (None removes one; KEEP, the
        default, leaves it as it is)."""
        bank_id = validate.bank_id(bank_id)
        given = {
            "defense_policy": defense_policy,
            "disposition": disposition,
            "raw_ttl_days": raw_ttl_days,
            "extraction_instructions": extraction_instructions,
            "entity_types": entity_types,
        }
        await bank_ids.admit(self.store.pool, bank_id)
        changes = await self._defended_config(
            bank_id, validate.bank_config({k: v for k, v in given.items() if v is not KEEP})
        )
        return await bank_settings.update(self.store.pool, bank_id, changes)

    async def _defended_config(self, bank_id: str, config: dict[str, Any]) -> dict[str, Any]:
        """The disposition's directives (text a person wrote, read by reflect's LLM) through the memory defense,
        under the policy the bank will have; so are the extraction instructions and the entity types' descriptions
        (read by extraction's LLM)."""
        disposition = config.get("disposition")
        texts: dict[str, Any] = {}
        if isinstance(disposition, dict) and disposition.get("directives"):
            texts["disposition.directives"] = disposition["directives"]
        if config.get("extraction_instructions"):
            texts["extraction_instructions"] = config["extraction_instructions"]
        types = config.get("entity_types") or []
        for position, declared in enumerate(types):
            if declared.get("description"):
                texts[f"entity_types.{position}"] = declared["description"]
        if not texts:
            return config
        policy = config.get("defense_policy") or await self.defense_policy(bank_id)
        defended = defend(texts, policy)
        config = dict(config)
        if "disposition.directives" in defended and isinstance(disposition, dict):
            config["disposition"] = {**disposition, "directives": defended["disposition.directives"]}
        if "extraction_instructions" in defended:
            config["extraction_instructions"] = defended["extraction_instructions"]
        if types:
            config["entity_types"] = [
                {**declared, "description": defended.get(f"entity_types.{n}", declared["description"])}
                for n, declared in enumerate(types)
            ]
        return config

    # --- maintenance ------------------------------------------------------------------------------------

    async def reembed(self, *, batch_size: int = 256) -> int:
        """Re-embed every memory with the configured model, in place (memwrap/engine/embed/reembed.py)."""
        return await reembed_store(self.store, self.embedder, self.settings.embedding_space, batch_size=batch_size)

    # --- update, history, export/import (engine/update.py, engine/transfer/bank_stream.py) ------------------

    @tracing.traced(
        "update", lambda _self, bank_id, memory_id, **_k: tracing.memory_record("update_memory", bank_id, memory_id)
    )
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

    def export_stream(self, bank_id: str, *, include_embeddings: bool = True) -> AsyncIterator[str]:
        """The bank as JSON lines (memwrap/engine/transfer/bank_stream.py): memories with their times, metadata, tags,
        entities and links, observations, mental models, histories; vectors too with include_embeddings."""
        return export_lines(self.parts, bank_id, include_embeddings=include_embeddings)

    async def import_stream(
        self, bank_id: str, lines: AsyncIterable[str | bytes] | Iterable[str | bytes]
    ) -> ImportReport:
        """Load an export stream into `bank_id` (created if needed). Ids are kept; rows already present are
        skipped, so importing twice changes nothing. Vectors of the configured model's size are used as they are."""
        return await import_lines(self.parts, bank_id, lines)

    async def export_bank(self, bank_id: str, path: str | Path, *, include_embeddings: bool = True) -> int:
        """The declared export_bank: the stream written to `path` (complete or not at all: a temporary file is
        renamed at the end). Returns the number of lines."""
        return await write_lines(Path(path), self.export_stream(bank_id, include_embeddings=include_embeddings))

    async def import_bank(self, bank_id: str, path: str | Path) -> ImportReport:
        return await self.import_stream(bank_id, read_lines(Path(path)))
