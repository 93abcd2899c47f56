"""`AsyncMemory`: the one implementation of the public API (re-exported by memwrap.api).

It drives the engine in this process (memwrap/engine), or a `memwrap serve` sidecar over HTTP when given `url=`
(memwrap/client/http.py). The synchronous `Memory` (memwrap/sync_api.py) runs it on a private loop thread.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any
from uuid import UUID

from memwrap import lifecycle
from memwrap.config import Settings, load_settings
from memwrap.errors import ClosedError
from memwrap.models import (
    BankInfo,
    ConsolidationReport,
    Disposition,
    Job,
    MemoryRecord,
    MentalModel,
    MentalModelVersion,
    Observation,
    ObservationVersion,
    Recall,
    ReflectResult,
    RetainItem,
)

ItemLike = RetainItem | Mapping[str, Any] | str


class AsyncMemory:
    """Long-term memory, async. The engine (database, embedding model) starts on first use."""

    def __init__(
        self,
        *,
        home: str | Path | None = None,
        database_url: str | None = None,
        embedding_model: str | None = None,
        settings: Settings | None = None,
        url: str | None = None,
        api_key: str | None = None,
        timeout: float | None = None,
    ) -> None:
        self.settings = settings or load_settings(home=home, database_url=database_url, embedding_model=embedding_model)
        # With `url`, the engine is a `memwrap serve` sidecar reached over HTTP (memwrap/client/http.py).
        self.url = url
        self._api_key = api_key
        self._timeout = timeout
        self._engine: Any = None
        self._llm: Any = None  # set by use_llm before the engine starts; applied when it does
        self._open_lock: asyncio.Lock | None = None
        self._starting: asyncio.Future[Any] | None = None
        self._pid = os.getpid()
        self._closed = False

    def _own_process(self) -> None:
        """After a fork, the engine (its pool, its event loop) is the parent's: leave it to the parent."""
        if self._pid != os.getpid():
            lifecycle.keep_inherited(self._engine, self._open_lock, self._starting)
            self._engine = self._open_lock = self._starting = None
            self._pid = os.getpid()

    async def _get_engine(self) -> Any:
        if self._closed:
            raise ClosedError("This memory was closed; create a new Memory()/AsyncMemory() to keep going.")
        self._own_process()
        if self._engine is not None:
            return self._engine
        if self._open_lock is None:
            self._open_lock = asyncio.Lock()
        async with self._open_lock:
            if self._engine is None and self.url is not None:
                from memwrap.client.http import DEFAULT_TIMEOUT, HttpEngine

                self._engine = HttpEngine(self.url, api_key=self._api_key, timeout=self._timeout or DEFAULT_TIMEOUT)
            elif self._engine is None:
                from memwrap.engine.startup import open_engine

                engine = await open_engine(self.settings)  # its parts load while its modules import
                if self._closed:  # closed while it was starting: nobody will close it later
                    await engine.close()
                    raise ClosedError("This memory was closed while its engine was starting.")
                self._engine = engine
                if self._llm is not None:
                    self._engine.use_llm(self._llm)
        return self._engine

    def start(self) -> asyncio.Future[Any]:
        """Start the engine in the background on the running event loop and return at once.

        Calls made meanwhile wait for it (the wrappers up to MEMWRAP_STARTUP_TIMEOUT). Returns the start's
        future (awaiting it is optional); after a failed start, the next `start()` tries again.
        """
        if self._closed:
            raise ClosedError("This memory was closed; create a new Memory()/AsyncMemory() to keep going.")
        self._own_process()
        starting = self._starting
        if starting is None or (starting.done() and (starting.cancelled() or starting.exception() is not None)):
            starting = self._starting = asyncio.ensure_future(self._get_engine())
            starting.add_done_callback(_quiet)
        return starting

    @property
    def started(self) -> bool:
        """True once the engine is up in this process (database reachable, model loaded)."""
        return self._engine is not None and self._pid == os.getpid()

    def use_llm(self, llm: Any) -> None:
        """The LLM the engine uses for its own work (extraction, consolidation, reflect), instead of MEMWRAP_LLM_*.

        E.g. `memory.use_llm(llm_from_client(openai_client, "gpt-4o-mini"))` (memwrap.engine.llm) reuses an app's
        client; `wrap_openai(client, llm="gpt-4o-mini")` does this for you. Applied when the engine starts.
        """
        if self.url is not None:
            raise TypeError("use_llm applies to an embedded engine; configure a sidecar's LLM with MEMWRAP_LLM_*.")
        self._llm = llm
        if self._engine is not None:
            self._engine.use_llm(llm)

    @property
    def closed(self) -> bool:
        return self._closed

    async def warmup(self) -> None:
        """Start the engine now (database, embedding model) instead of on first use."""
        await self._get_engine()

    async def retain(
        self,
        bank_id: str,
        content: str,
        *,
        timestamp: datetime | None = None,
        context: str | None = None,
        document_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        tags: Sequence[str] | None = None,
    ) -> list[UUID]:
        """Remember `content`. Returns the ids of the memory units it became (existing ids if already retained)."""
        item = {
            "content": content,
            "timestamp": timestamp,
            "context": context,
            "document_id": document_id,
            "metadata": dict(metadata or {}),
            "tags": list(tags or []),
        }
        return await self.retain_many(bank_id, [item])  # validated there, with the batch's error messages

    async def retain_many(self, bank_id: str, items: Sequence[ItemLike]) -> list[UUID]:
        """Remember many items at once (embedded and written in batches). Returns all unit ids, in item order."""
        engine = await self._get_engine()
        return await engine.retain_many(bank_id, items)

    async def recall(
        self,
        bank_id: str,
        query: str,
        *,
        max_tokens: int = 1024,
        now: datetime | None = None,
        types: Sequence[str] | None = None,
        tags: Sequence[str] | None = None,
        model: str | None = None,
        neighbours: bool | None = None,
        prefer_observations: bool | None = None,
        explain: bool = False,
    ) -> Recall:
        """Find what matters for `query` and render it within `max_tokens` (exact, counted with tiktoken).

        `prefer_observations=True`: an observation takes the place of the facts it covers (saves budget).
        `explain=True`: `Recall.considered` lists every candidate weighed, with its arm ranks, its rendered line
        and whether it fit the budget (the sidecar's recall debugger shows it).
        """
        engine = await self._get_engine()
        extra: dict[str, Any] = {} if prefer_observations is None else {"prefer_observations": prefer_observations}
        if explain:
            extra["explain"] = True
        return await engine.recall(
            bank_id, query, max_tokens=max_tokens, now=now, types=types, tags=tags, model=model, neighbours=neighbours,
            **extra,
        )

    async def reflect(
        self,
        bank_id: str,
        query: str,
        *,
        max_tokens: int | None = None,
        context: str | None = None,
        response_schema: Any = None,
        tags: Sequence[str] | None = None,
        disposition: Disposition | Mapping[str, Any] | None = None,
        max_iterations: int | None = None,
        timeout: float | None = None,
        now: datetime | None = None,
    ) -> ReflectResult:
        """Answer `query` from memory: an LLM agent searches mental models, then observations, then raw facts,
        and answers citing the memories it used (needs an LLM: MEMWRAP_LLM_* or `use_llm`).

        `max_tokens`: the context budget, the most tokens the agent's prompt may hold (default
        MEMWRAP_REFLECT_MAX_TOKENS); with `max_iterations` and `timeout`, a limit reached ends in an answer from
        what was gathered (`forced=True`), not an error. `context`: the caller's situation (not memory, not cited).
        `response_schema`: a pydantic model or a JSON schema; the answer is also returned validated, as
        `structured`. `disposition`: skepticism, literalism, empathy (1-5) and directives, over the bank's own.
        """
        engine = await self._get_engine()
        return await engine.reflect(
            bank_id, query, max_tokens=max_tokens, context=context, response_schema=response_schema, tags=tags,
            disposition=disposition, max_iterations=max_iterations, timeout=timeout, now=now,
        )

    async def list(
        self,
        bank_id: str,
        *,
        limit: int = 100,
        offset: int = 0,
        types: Sequence[str] | None = None,
        tags: Sequence[str] | None = None,
        document_id: str | None = None,
    ) -> list[MemoryRecord]:
        engine = await self._get_engine()
        return await engine.list(bank_id, limit=limit, offset=offset, types=types, tags=tags, document_id=document_id)

    async def get(self, bank_id: str, memory_id: UUID | str) -> MemoryRecord:
        engine = await self._get_engine()
        return await engine.get(bank_id, memory_id)

    async def delete(self, bank_id: str, memory_id: UUID | str) -> None:
        engine = await self._get_engine()
        await engine.delete(bank_id, memory_id)

    async def delete_bank(self, bank_id: str) -> int:
        """Delete a bank and everything in it. Returns how many memories were removed."""
        engine = await self._get_engine()
        return await engine.delete_bank(bank_id)

    async def banks(self) -> list[BankInfo]:
        engine = await self._get_engine()
        return await engine.banks()

    async def bank_config(self, bank_id: str) -> dict[str, Any]:
        """The bank's settings (e.g. {"defense_policy": "block"}). BankNotFoundError if there is no such bank."""
        engine = await self._get_engine()
        return await engine.bank_config(bank_id)

    async def create_bank(self, bank_id: str, **settings: Any) -> dict[str, Any]:
        """Create a bank with its settings; BankExistsError if it exists (retain creates banks on its own too)."""
        engine = await self._get_engine()
        return await engine.create_bank(bank_id, settings)

    async def configure_bank(self, bank_id: str, **changes: Any) -> dict[str, Any]:
        """Create the bank if needed and change its settings, e.g. `defense_policy="block"` (None resets one)."""
        engine = await self._get_engine()
        return await engine.configure_bank(bank_id, changes)

    # --- learning: jobs, observations, mental models, forgetting (memwrap/engine/learn) ----------------------

    async def jobs(
        self, bank_id: str | None = None, status: str | None = None, *, kind: str | None = None, limit: int = 100
    ) -> list[Job]:
        """The background job queue, newest first (status: queued, running, done, failed, cancelled)."""
        engine = await self._get_engine()
        return await engine.jobs(bank_id, status, kind=kind, limit=limit)

    async def wait_for_jobs(self, bank_id: str | None = None, *, timeout: float = 60.0) -> bool:
        """Wait until the bank (or every bank) has no queued or running job. False if `timeout` passed first."""
        engine = await self._get_engine()
        return await engine.wait_for_jobs(bank_id, timeout=timeout)

    async def consolidate(self, bank_id: str) -> ConsolidationReport:
        """Turn the bank's pending facts into observations now (the background worker does it anyway)."""
        engine = await self._get_engine()
        return await engine.consolidate(bank_id)

    async def observations(
        self, bank_id: str, *, tags: Sequence[str] | None = None, include_invalidated: bool = False,
        limit: int = 100, offset: int = 0, now: datetime | None = None,
    ) -> list[Observation]:
        """The bank's observations, best supported first, with proof count and trend (evidence: get_observation)."""
        engine = await self._get_engine()
        return await engine.observations(
            bank_id, tags=tags, include_invalidated=include_invalidated, limit=limit, offset=offset, now=now
        )

    async def get_observation(self, bank_id: str, observation_id: UUID | str, *, now: datetime | None = None) -> Observation:
        engine = await self._get_engine()
        return await engine.get_observation(bank_id, observation_id, now=now)

    async def observation_history(self, bank_id: str, observation_id: UUID | str) -> list[ObservationVersion]:
        engine = await self._get_engine()
        return await engine.observation_history(bank_id, observation_id)

    async def create_mental_model(
        self, bank_id: str, name: str, question: str, *, tags: Sequence[str] | None = None, max_tokens: int = 512,
        refresh_every: float | None = None,
    ) -> MentalModel:
        """A named standing question, answered and kept fresh in the background (`refresh_every`: seconds)."""
        engine = await self._get_engine()
        return await engine.create_mental_model(
            bank_id, name, question, tags=tags, max_tokens=max_tokens, refresh_every=refresh_every
        )

    async def get_mental_model(self, bank_id: str, name: str) -> MentalModel:
        """Its current content and state (fresh, stale, pending, failed), read with one SQL query."""
        engine = await self._get_engine()
        return await engine.get_mental_model(bank_id, name)

    async def mental_models(self, bank_id: str) -> list[MentalModel]:
        engine = await self._get_engine()
        return await engine.mental_models(bank_id)

    async def mental_model_history(self, bank_id: str, name: str) -> list[MentalModelVersion]:
        engine = await self._get_engine()
        return await engine.mental_model_history(bank_id, name)

    async def refresh_mental_model(self, bank_id: str, name: str) -> MentalModel:
        engine = await self._get_engine()
        return await engine.refresh_mental_model(bank_id, name)

    async def delete_mental_model(self, bank_id: str, name: str) -> None:
        engine = await self._get_engine()
        await engine.delete_mental_model(bank_id, name)

    async def export(self, directory: str | Path, *, bank_id: str | None = None) -> list[Path]:
        """Mental models and observations as Markdown files under `directory`. Returns the files written."""
        engine = await self._get_engine()
        return await engine.export(directory, bank_id=bank_id)

    async def invalidate(self, bank_id: str, memory_id: UUID | str, reason: str = "") -> None:
        """Hide a memory from recall and from what was learnt from it, reversibly (`restore`)."""
        engine = await self._get_engine()
        await engine.invalidate(bank_id, memory_id, reason)

    async def restore(self, bank_id: str, memory_id: UUID | str) -> None:
        """Undo `invalidate`."""
        engine = await self._get_engine()
        await engine.restore(bank_id, memory_id)

    async def set_raw_ttl(self, bank_id: str, days: float | None) -> None:
        """Raw facts of the bank older than `days` are deleted in the background (None keeps them)."""
        engine = await self._get_engine()
        await engine.set_raw_ttl(bank_id, days)

    async def reembed(self, *, batch_size: int = 256) -> int:
        """Re-embed every memory with the configured embedding model. Returns how many were re-embedded."""
        from memwrap.engine.engine import Engine

        if self._engine is None and self.url is not None:
            await self._get_engine()  # the sidecar's transport says where reembed runs
        if self._engine is None:
            self._engine = await Engine.open(self.settings, allow_model_change=True)
        return await self._engine.reembed(batch_size=batch_size)

    async def close(self) -> None:
        """Close the engine (after the wrappers delivered what they queued for this memory, see lifecycle)."""
        if self._closed:
            return
        await asyncio.to_thread(lifecycle.memory_closing, self)
        self._closed = True
        self._own_process()
        if self._engine is not None:
            engine, self._engine = self._engine, None
            await engine.close()

    async def __aenter__(self) -> AsyncMemory:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


def _quiet(future: asyncio.Future[Any]) -> None:
    """A background start's error is reported by the call that waits for it (or the next start), not here."""
    if not future.cancelled():
        future.exception()
