"""The memory, as the wrappers use it: recall under a deadline (from sync or async code) and retain delivery.

Three kinds of `memory=` are accepted, told apart by shape, so a future HTTP client with the same methods fits:
  * "loop":  `Memory` (has `submit` and `aio`): coroutines run on its private loop thread;
  * "async": an object whose `recall` is a coroutine function (`AsyncMemory`, an async HTTP client). It is tied
             to the event loop it was first used on (asyncpg pools are), so deliveries are sent to that loop;
  * "sync":  any other object with blocking `recall`/`retain_many`; calls run in a small thread pool.

A recall that misses its deadline is not cancelled: the first one usually waits for the engine to start
(embedded PostgreSQL, the embedding model), and cancelling it would make every later call wait again.
Instead, at most MAX_INFLIGHT recalls may be outstanding; beyond that, and for a while after an error,
recalls are skipped at once (a small circuit breaker), so a hung engine costs a call nothing.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
import threading
import time
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import Any

from memwrap.config import load_settings
from memwrap.errors import ClosedError, InvalidInputError

MAX_INFLIGHT = 4
COOLDOWN_START = 1.0
COOLDOWN_MAX = 30.0


class RecallSkipped(Exception):
    """The engine is known to be unavailable or overloaded: recall was not attempted."""


class RecallTimeout(Exception):
    """Recall did not answer within the call's `recall_timeout`."""


def memory_kind(memory: Any) -> str:
    if callable(getattr(memory, "submit", None)) and getattr(memory, "aio", None) is not None:
        return "loop"
    if inspect.iscoroutinefunction(getattr(memory, "recall", None)):
        return "async"
    return "sync"


class Backend:
    """One memory object, shared by every wrapper that uses it in this process."""

    def __init__(self, memory: Any, *, retain_timeout: float = 60.0) -> None:
        self.memory = memory
        self.kind = memory_kind(memory)
        self.retain_timeout = retain_timeout
        # A server embedding the engine (the sidecar proxy) serves many calls at once: it raises this.
        self.max_inflight = MAX_INFLIGHT
        self.home_loop: asyncio.AbstractEventLoop | None = None
        self._lock = threading.Lock()
        self._inflight = 0
        self._skip_until = 0.0
        self._cooldown = COOLDOWN_START
        self._pool: concurrent.futures.ThreadPoolExecutor | None = None
        self._tasks: set[asyncio.Future[Any]] = set()

    @property
    def spool_path(self) -> Path:
        settings = getattr(self.memory, "settings", None) or load_settings()
        return Path(settings.spool_dir) / "retains.sqlite3"

    # -- circuit breaker -------------------------------------------------------------------------------------

    def _admit(self) -> None:
        with self._lock:
            if time.monotonic() < self._skip_until:
                raise RecallSkipped("the memory engine failed recently; retrying after a cooldown")
            if self._inflight >= self.max_inflight:
                raise RecallSkipped(f"{self._inflight} recalls are still waiting for the memory engine")
            self._inflight += 1

    def _done(self, future: concurrent.futures.Future[Any] | asyncio.Future[Any]) -> None:
        with self._lock:
            self._inflight -= 1
            error = None if future.cancelled() else future.exception()
            # Bad input (say, an invalid bank id) is the caller's problem, not a sign the engine is down.
            failed = error is not None and not isinstance(error, InvalidInputError)
            if failed:
                self._skip_until = time.monotonic() + self._cooldown
                self._cooldown = min(self._cooldown * 2, COOLDOWN_MAX)
            elif not future.cancelled():
                self._cooldown = COOLDOWN_START

    # -- recall ----------------------------------------------------------------------------------------------

    def _recall_kwargs(self, max_tokens: int, tags: Sequence[str], model: str | None) -> dict[str, Any]:
        kwargs: dict[str, Any] = {"max_tokens": max_tokens, "model": model}
        if tags:
            kwargs["tags"] = list(tags)
        return kwargs

    def recall_sync(
        self, bank_id: str, query: str, *, max_tokens: int, tags: Sequence[str], model: str | None, timeout: float
    ) -> Any:
        kwargs = self._recall_kwargs(max_tokens, tags, model)
        if self.kind == "async" and (self.home_loop is None or self.home_loop.is_closed()):
            raise RecallSkipped("an async memory can only be reached from its event loop (use Memory for sync code)")
        self._admit()
        try:
            if self.kind == "loop":
                future = self._submit(self.memory.aio.recall(bank_id, query, **kwargs))
            elif self.kind == "async":
                future = asyncio.run_coroutine_threadsafe(self.memory.recall(bank_id, query, **kwargs), self.home_loop)
            else:
                future = self._executor().submit(self.memory.recall, bank_id, query, **kwargs)
        except BaseException:
            with self._lock:
                self._inflight -= 1
            raise
        future.add_done_callback(self._done)
        try:
            return future.result(timeout)
        except concurrent.futures.TimeoutError:
            raise RecallTimeout(f"recall took longer than {timeout:.3f}s") from None

    async def recall_async(
        self, bank_id: str, query: str, *, max_tokens: int, tags: Sequence[str], model: str | None, timeout: float
    ) -> Any:
        kwargs = self._recall_kwargs(max_tokens, tags, model)
        loop = asyncio.get_running_loop()
        if self.kind == "async" and self.home_loop is None:
            self.home_loop = loop
        self._admit()
        try:
            if self.kind == "loop":
                future: asyncio.Future[Any] = asyncio.wrap_future(
                    self._submit(self.memory.aio.recall(bank_id, query, **kwargs))
                )
            elif self.kind == "async" and loop is self.home_loop:
                future = asyncio.ensure_future(self.memory.recall(bank_id, query, **kwargs))
            elif self.kind == "async":  # another loop: the memory's connections belong to its first one
                assert self.home_loop is not None
                coro = self.memory.recall(bank_id, query, **kwargs)
                future = asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coro, self.home_loop))
            else:
                future = loop.run_in_executor(self._executor(), partial(self.memory.recall, bank_id, query, **kwargs))
        except BaseException:
            with self._lock:
                self._inflight -= 1
            raise
        future.add_done_callback(self._done)
        self._tasks.add(future)  # keep a strong reference until it ends, even if we stop waiting
        future.add_done_callback(self._tasks.discard)
        try:
            return await asyncio.wait_for(asyncio.shield(future), timeout)
        except TimeoutError:
            raise RecallTimeout(f"recall took longer than {timeout:.3f}s") from None

    # -- retain ----------------------------------------------------------------------------------------------

    def deliver(self, bank_id: str, items: list[dict[str, Any]]) -> None:
        """Blocking delivery, called from the spool's worker thread. Raises on any failure."""
        if self.kind == "loop":
            future = self._submit(self.memory.aio.retain_many(bank_id, items))
        elif self.kind == "async":
            loop = self.home_loop
            if loop is None or loop.is_closed() or not loop.is_running():
                raise ConnectionError("the async memory's event loop is not running; retains wait in the spool")
            future = asyncio.run_coroutine_threadsafe(self.memory.retain_many(bank_id, items), loop)
        else:
            self.memory.retain_many(bank_id, items)
            return
        deadline = time.monotonic() + self.retain_timeout
        while True:
            try:
                future.result(min(1.0, max(0.0, deadline - time.monotonic())))
                return
            except concurrent.futures.TimeoutError:
                # A closed Memory's loop no longer runs: its futures would never end.
                if self.closed:
                    raise ClosedError("the memory was closed; retains wait in the spool") from None
                if time.monotonic() >= deadline:
                    future.cancel()  # the engine writes a batch in one transaction: cancelled means not stored
                    raise TimeoutError(f"retain did not finish within {self.retain_timeout:.0f}s") from None

    @property
    def closed(self) -> bool:
        # `_closed` until Memory/AsyncMemory expose a public flag.
        return bool(getattr(self.memory, "_closed", False))

    def _submit(self, coro: Any) -> concurrent.futures.Future[Any]:
        """Memory.submit, turning "its loop is gone" into ClosedError (and not leaking the coroutine)."""
        if self.closed:
            coro.close()
            raise ClosedError("the memory was closed")
        try:
            return self.memory.submit(coro)  # type: ignore[no-any-return]
        except RuntimeError as exc:  # the loop was closed under us
            coro.close()
            raise ClosedError("the memory was closed") from exc

    def bind_loop(self) -> None:
        """Remember the running loop as an async memory's home (its first use through a wrapper)."""
        if self.kind == "async" and self.home_loop is None:
            try:
                self.home_loop = asyncio.get_running_loop()
            except RuntimeError:
                pass

    def _executor(self) -> concurrent.futures.ThreadPoolExecutor:
        with self._lock:
            if self._pool is None:
                self._pool = concurrent.futures.ThreadPoolExecutor(
                    max_workers=MAX_INFLIGHT, thread_name_prefix="memwrap-recall"
                )
            return self._pool
