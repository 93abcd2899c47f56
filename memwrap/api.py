"""The public API: `AsyncMemory`, and `Memory`, its synchronous twin.

There is one implementation, `AsyncMemory`. `Memory` runs it on a private event loop in a background thread,
so it works the same from plain scripts, from threads, and from code that already runs an event loop
(Jupyter, FastAPI handlers): it never calls `run_until_complete` on the caller's loop.
"""

from __future__ import annotations

import asyncio
import atexit
import threading
import weakref
from collections.abc import Coroutine, Mapping, Sequence
from concurrent.futures import Future
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar
from uuid import UUID

from memwrap.config import Settings, load_settings
from memwrap.errors import ClosedError
from memwrap.models import BankInfo, MemoryRecord, Recall, RetainItem

T = TypeVar("T")

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
    ) -> None:
        self.settings = settings or load_settings(home=home, database_url=database_url, embedding_model=embedding_model)
        self._engine: Any = None
        self._open_lock: asyncio.Lock | None = None
        self._closed = False

    async def _get_engine(self) -> Any:
        if self._closed:
            raise ClosedError("This memory was closed; create a new Memory()/AsyncMemory() to keep going.")
        if self._engine is not None:
            return self._engine
        if self._open_lock is None:
            self._open_lock = asyncio.Lock()
        async with self._open_lock:
            if self._engine is None:
                from memwrap.engine.engine import Engine

                self._engine = await Engine.open(self.settings)
        return self._engine

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
    ) -> Recall:
        """Find what matters for `query` and render it within `max_tokens` (exact, counted with tiktoken)."""
        engine = await self._get_engine()
        return await engine.recall(
            bank_id, query, max_tokens=max_tokens, now=now, types=types, tags=tags, model=model, neighbours=neighbours
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

    async def reembed(self, *, batch_size: int = 256) -> int:
        """Re-embed every memory with the configured embedding model. Returns how many were re-embedded."""
        from memwrap.engine.engine import Engine

        if self._engine is None:
            self._engine = await Engine.open(self.settings, allow_model_change=True)
        return await self._engine.reembed(batch_size=batch_size)

    async def close(self) -> None:
        self._closed = True
        if self._engine is not None:
            engine, self._engine = self._engine, None
            await engine.close()

    async def __aenter__(self) -> AsyncMemory:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


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

    def stop(self) -> None:
        if self.loop.is_running():
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(timeout=5)
        if not self.loop.is_running() and not self.loop.is_closed():
            self.loop.close()


_open_memories: weakref.WeakSet[Memory] = weakref.WeakSet()


@atexit.register
def _close_open_memories() -> None:
    for memory in list(_open_memories):
        try:
            memory.close()
        except Exception:  # noqa: BLE001 - best effort at interpreter exit
            pass


class Memory:
    """Long-term memory, synchronous. Same surface as `AsyncMemory`, which it runs on a private loop thread."""

    def __init__(
        self,
        *,
        home: str | Path | None = None,
        database_url: str | None = None,
        embedding_model: str | None = None,
        settings: Settings | None = None,
    ) -> None:
        self._async = AsyncMemory(home=home, database_url=database_url, embedding_model=embedding_model, settings=settings)
        self.settings = self._async.settings
        self._loop = _LoopThread()
        self._closed = False
        _open_memories.add(self)

    @property
    def aio(self) -> AsyncMemory:
        """The async twin (bound to this Memory's private loop; use it only through `submit`)."""
        return self._async

    def submit(self, coro: Coroutine[Any, Any, T]) -> Future[T]:
        """Run a coroutine on this Memory's loop without waiting (used by the wrappers for background retains)."""
        return self._loop.submit(coro)

    def _run(self, coro: Coroutine[Any, Any, T]) -> T:
        if self._closed:
            coro.close()
            raise ClosedError("This memory was closed; create a new Memory() to keep going.")
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
    ) -> Recall:
        return self._run(
            self._async.recall(
                bank_id, query, max_tokens=max_tokens, now=now, types=types, tags=tags, model=model, neighbours=neighbours
            )
        )

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

    def reembed(self, *, batch_size: int = 256) -> int:
        return self._run(self._async.reembed(batch_size=batch_size))

    def close(self) -> None:
        if self._closed:
            return
        try:
            self._loop.run(self._async.close(), timeout=30)
        finally:
            self._closed = True
            self._loop.stop()
            _open_memories.discard(self)

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
