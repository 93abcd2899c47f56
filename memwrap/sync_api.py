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
import warnings
from collections.abc import Coroutine
from concurrent.futures import Future
from pathlib import Path
from typing import Any, TypeVar

from memwrap import lifecycle
from memwrap.async_api import AsyncMemory
from memwrap.config import Settings
from memwrap.engine_verbs import EngineVerbs
from memwrap.errors import ClosedError
from memwrap.sync_verbs import SyncVerbs

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


class Memory(SyncVerbs):
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
        engine: EngineVerbs | None = None,
    ) -> None:
        self._async = AsyncMemory(
            home=home,
            database_url=database_url,
            embedding_model=embedding_model,
            settings=settings,
            url=url,
            api_key=api_key,
            timeout=timeout,
            engine=engine,
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
            self._async = AsyncMemory(
                settings=self.settings,
                url=self.url,
                api_key=old._api_key,
                timeout=old._timeout,
                engine=old._given_engine,
            )
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

    # The verbs (retain, recall, reflect, list, ...) are the declared ones (memwrap/verbs.py), each the sync twin
    # of AsyncMemory's, generated into memwrap/sync_verbs.py and inherited from SyncVerbs.

    def use_llm(self, llm: Any) -> None:
        """See AsyncMemory.use_llm. Runs on this Memory's loop (the engine's background tasks live there)."""

        async def apply() -> None:
            self._async.use_llm(llm)

        self._run(apply())

    def set_raw_ttl(self, bank_id: str, days: float | None) -> None:
        """Deprecated: `configure_bank(bank_id, raw_ttl_days=days)`."""
        warnings.warn(
            "set_raw_ttl(bank_id, days) is now configure_bank(bank_id, raw_ttl_days=days).",
            DeprecationWarning,
            stacklevel=2,
        )
        self.configure_bank(bank_id, raw_ttl_days=days)

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
