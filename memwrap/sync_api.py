"""`Memory`: the synchronous twin of `AsyncMemory` (re-exported by memwrap.api).

It runs an `AsyncMemory` on a private event loop in a background thread (`_LoopThread`), so it works the same from
plain scripts, from threads, and from code that already runs an event loop (Jupyter, FastAPI handlers): it never
calls `run_until_complete` on the caller's loop.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections.abc import Coroutine, Mapping, Sequence
from concurrent.futures import Future
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar
from uuid import UUID

from memwrap import lifecycle
from memwrap.async_api import AsyncMemory, ItemLike
from memwrap.config import Settings
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
)

T = TypeVar("T")


class _LoopThread:
    """A private event loop in a daemon thread; callers submit coroutines and wait on their results."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, name="memwrap-loop", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def submit(self, coro: Coroutine[Any, Any, T]) -> Future[T]:
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def run(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        if threading.current_thread() is self._thread:
            coro.close()
            raise RuntimeError("Memory's sync methods cannot be called from its own loop; use AsyncMemory there.")
        return self.submit(coro).result(timeout)

    def stop(self, timeout: float = 5.0) -> None:
        if self.loop.is_running():
            # Cancel what is still pending (a recall that timed out in a wrapper, say) so it ends cleanly.
            async def cancel_pending() -> None:
                tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
                for task in tasks:
                    task.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)

            try:
                asyncio.run_coroutine_threadsafe(cancel_pending(), self.loop).result(timeout=timeout)
            except Exception:  # noqa: BLE001 - best effort: the loop is going away either way
                pass
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(timeout=timeout)
        if not self.loop.is_running() and not self.loop.is_closed():
            self.loop.close()


# Strong references: a Memory dropped without close() (`Memory().retain(...)`) still runs its loop and pool,
# which must close at exit before the database server goes.
_open_memories: set[Memory] = set()
_fork_lock = threading.Lock()  # one reset per Memory in a forked child, even if several threads race to it

# At exit the open Memories get this long to close their engines (a running learning job is cancelled and
# re-queued; connections that do not close in time are cut).
EXIT_CLOSE_SECONDS = 5.0


def _close_open_memories() -> None:
    deadline = time.monotonic() + EXIT_CLOSE_SECONDS
    for memory in list(_open_memories):
        try:
            memory.close(timeout=max(0.1, deadline - time.monotonic()))
        except Exception:  # noqa: BLE001 - best effort at interpreter exit
            lifecycle.keep_servers_running()


def _after_fork_in_child() -> None:
    global _fork_lock
    _fork_lock = threading.Lock()


lifecycle.at_exit(lifecycle.MEMORIES, _close_open_memories)
os.register_at_fork(after_in_child=_after_fork_in_child)


class Memory:
    """Long-term memory, synchronous. Same surface as `AsyncMemory`, which it runs on a private loop thread."""

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
        self._async = AsyncMemory(
            home=home,
            database_url=database_url,
            embedding_model=embedding_model,
            settings=settings,
            url=url,
            api_key=api_key,
            timeout=timeout,
        )
        self.url = url
        self.settings = self._async.settings
        self._loop = _LoopThread()
        self._closed = False
        self._start_lock = threading.Lock()
        self._start_future: Future[None] | None = None
        self._pid = os.getpid()
        _open_memories.add(self)

    def _own_process(self) -> None:
        """In a forked child: a loop thread and an engine of its own (the parent's are not usable here)."""
        if self._pid == os.getpid():
            return
        with _fork_lock:
            if self._pid == os.getpid():
                return
            old = self._async
            lifecycle.keep_inherited(self._loop, old, self._start_future)
            self._async = AsyncMemory(settings=self.settings, url=self.url, api_key=old._api_key, timeout=old._timeout)
            self._async._llm = old._llm
            self._loop = _LoopThread()
            self._start_lock = threading.Lock()
            self._start_future = None
            self._pid = os.getpid()

    @property
    def aio(self) -> AsyncMemory:
        """The async twin (bound to this Memory's private loop; use it only through `submit`)."""
        self._own_process()
        return self._async

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def started(self) -> bool:
        """True once the engine is up in this process (database reachable, model loaded)."""
        return self._pid == os.getpid() and self._async.started

    def submit(self, coro: Coroutine[Any, Any, T]) -> Future[T]:
        """Run a coroutine on this Memory's loop without waiting (used by the wrappers for background retains)."""
        if self._closed:
            coro.close()
            raise ClosedError("This memory was closed; create a new Memory() to keep going.")
        self._own_process()
        return self._loop.submit(coro)

    def start(self) -> Future[None]:
        """Start the engine (database, embedding model) in the background and return at once.

        Calls made meanwhile wait for it; the wrappers call this when they wrap a client. Returns the start's
        future (`.result()` waits); after a failed start, the next `start()` tries again.
        """
        if self._closed:
            raise ClosedError("This memory was closed; create a new Memory() to keep going.")
        self._own_process()
        with self._start_lock:
            future = self._start_future
            if future is None or (future.done() and (future.cancelled() or future.exception() is not None)):
                future = self._start_future = self._loop.submit(self._async.warmup())
            return future

    def warmup(self) -> None:
        """Start the engine now (database, embedding model) and wait until it is up."""
        self.start().result()

    def _run(self, coro: Coroutine[Any, Any, T]) -> T:
        if self._closed:
            coro.close()
            raise ClosedError("This memory was closed; create a new Memory() to keep going.")
        self._own_process()
        return self._loop.run(coro)

    def retain(
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
        return self._run(
            self._async.retain(
                bank_id, content, timestamp=timestamp, context=context, document_id=document_id, metadata=metadata, tags=tags
            )
        )

    def retain_many(self, bank_id: str, items: Sequence[ItemLike]) -> list[UUID]:
        return self._run(self._async.retain_many(bank_id, items))

    def recall(
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
        return self._run(
            self._async.recall(
                bank_id, query, max_tokens=max_tokens, now=now, types=types, tags=tags, model=model,
                neighbours=neighbours, prefer_observations=prefer_observations, explain=explain,
            )
        )

    def reflect(
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
        return self._run(
            self._async.reflect(
                bank_id, query, max_tokens=max_tokens, context=context, response_schema=response_schema, tags=tags,
                disposition=disposition, max_iterations=max_iterations, timeout=timeout, now=now,
            )
        )

    def use_llm(self, llm: Any) -> None:
        """See AsyncMemory.use_llm. Runs on this Memory's loop (the engine's background tasks live there)."""

        async def apply() -> None:
            self._async.use_llm(llm)

        self._run(apply())

    def list(
        self,
        bank_id: str,
        *,
        limit: int = 100,
        offset: int = 0,
        types: Sequence[str] | None = None,
        tags: Sequence[str] | None = None,
        document_id: str | None = None,
    ) -> list[MemoryRecord]:
        return self._run(
            self._async.list(bank_id, limit=limit, offset=offset, types=types, tags=tags, document_id=document_id)
        )

    def get(self, bank_id: str, memory_id: UUID | str) -> MemoryRecord:
        return self._run(self._async.get(bank_id, memory_id))

    def delete(self, bank_id: str, memory_id: UUID | str) -> None:
        self._run(self._async.delete(bank_id, memory_id))

    def delete_bank(self, bank_id: str) -> int:
        return self._run(self._async.delete_bank(bank_id))

    def banks(self) -> list[BankInfo]:
        return self._run(self._async.banks())

    def bank_config(self, bank_id: str) -> dict[str, Any]:
        return self._run(self._async.bank_config(bank_id))

    def create_bank(self, bank_id: str, **settings: Any) -> dict[str, Any]:
        return self._run(self._async.create_bank(bank_id, **settings))

    def configure_bank(self, bank_id: str, **changes: Any) -> dict[str, Any]:
        return self._run(self._async.configure_bank(bank_id, **changes))

    # --- learning ---------------------------------------------------------------------------------------------

    def jobs(
        self, bank_id: str | None = None, status: str | None = None, *, kind: str | None = None, limit: int = 100
    ) -> list[Job]:
        return self._run(self._async.jobs(bank_id, status, kind=kind, limit=limit))

    def wait_for_jobs(self, bank_id: str | None = None, *, timeout: float = 60.0) -> bool:
        return self._run(self._async.wait_for_jobs(bank_id, timeout=timeout))

    def consolidate(self, bank_id: str) -> ConsolidationReport:
        return self._run(self._async.consolidate(bank_id))

    def observations(
        self, bank_id: str, *, tags: Sequence[str] | None = None, include_invalidated: bool = False,
        limit: int = 100, offset: int = 0, now: datetime | None = None,
    ) -> list[Observation]:
        return self._run(
            self._async.observations(
                bank_id, tags=tags, include_invalidated=include_invalidated, limit=limit, offset=offset, now=now
            )
        )

    def get_observation(self, bank_id: str, observation_id: UUID | str, *, now: datetime | None = None) -> Observation:
        return self._run(self._async.get_observation(bank_id, observation_id, now=now))

    def observation_history(self, bank_id: str, observation_id: UUID | str) -> list[ObservationVersion]:
        return self._run(self._async.observation_history(bank_id, observation_id))

    def create_mental_model(
        self, bank_id: str, name: str, question: str, *, tags: Sequence[str] | None = None, max_tokens: int = 512,
        refresh_every: float | None = None,
    ) -> MentalModel:
        return self._run(
            self._async.create_mental_model(
                bank_id, name, question, tags=tags, max_tokens=max_tokens, refresh_every=refresh_every
            )
        )

    def get_mental_model(self, bank_id: str, name: str) -> MentalModel:
        return self._run(self._async.get_mental_model(bank_id, name))

    def mental_models(self, bank_id: str) -> list[MentalModel]:
        return self._run(self._async.mental_models(bank_id))

    def mental_model_history(self, bank_id: str, name: str) -> list[MentalModelVersion]:
        return self._run(self._async.mental_model_history(bank_id, name))

    def refresh_mental_model(self, bank_id: str, name: str) -> MentalModel:
        return self._run(self._async.refresh_mental_model(bank_id, name))

    def delete_mental_model(self, bank_id: str, name: str) -> None:
        self._run(self._async.delete_mental_model(bank_id, name))

    def export(self, directory: str | Path, *, bank_id: str | None = None) -> list[Path]:
        return self._run(self._async.export(directory, bank_id=bank_id))

    def invalidate(self, bank_id: str, memory_id: UUID | str, reason: str = "") -> None:
        self._run(self._async.invalidate(bank_id, memory_id, reason))

    def restore(self, bank_id: str, memory_id: UUID | str) -> None:
        self._run(self._async.restore(bank_id, memory_id))

    def set_raw_ttl(self, bank_id: str, days: float | None) -> None:
        self._run(self._async.set_raw_ttl(bank_id, days))

    def reembed(self, *, batch_size: int = 256) -> int:
        return self._run(self._async.reembed(batch_size=batch_size))

    def close(self, timeout: float = 30.0) -> None:
        """Deliver what the wrappers queued for this memory, then close the engine (at most `timeout` s)."""
        if self._closed:
            return
        _open_memories.discard(self)
        if self._pid != os.getpid():  # a forked child that never used it: the engine is the parent's
            self._closed = True
            return
        deadline = time.monotonic() + timeout
        try:
            lifecycle.memory_closing(self)
            self._closed = True
            self._loop.run(self._async.close(), timeout=max(0.1, deadline - time.monotonic()))
        finally:
            self._closed = True
            self._loop.stop(timeout=max(0.1, min(5.0, deadline - time.monotonic())))

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
