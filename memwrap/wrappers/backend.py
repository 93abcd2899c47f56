"""The memory, as the wrappers use it: recall under a deadline (from sync or async code) and retain delivery.

What the wrappers need of a memory is `MemoryLike`: one of three protocols, told apart by `memory_kind`:
  * "loop":  `LoopMemory`, e.g. `Memory` (has `submit` and `aio`): coroutines run on its private loop thread;
  * "async": `AsyncMemoryLike`, an object whose `recall` is a coroutine function (`AsyncMemory`, an async HTTP
             client). It is tied to the event loop it was first used on (asyncpg pools are), so deliveries are
             sent to that loop;
  * "sync":  `SyncMemoryLike`, any other object with blocking `recall`/`retain_many`; calls run in a small
             thread pool.

Start-up is not a recall timeout. Wrapping starts the engine in the background (`start`); a call made while it
is still starting waits for it (`wait_ready_*`) up to the memory's `startup_timeout`, counted from the start, and
also for the spool to hand over what earlier processes left in it, so a fresh process's first call already
recalls the last one's exchange. Only then does the call's `recall_timeout` apply. One INFO line says how long a
call waited. A start that fails (database refused, say) fails the waiting calls open at once.

A recall that misses its deadline is not cancelled: cancelling it would make the next call wait again.
Instead, at most MAX_INFLIGHT recalls may be outstanding; beyond that, and for a while after an error,
recalls are skipped at once (a small circuit breaker), so a hung engine costs a call nothing.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import inspect
import logging
import threading
import time
from collections.abc import Awaitable, Coroutine, Sequence
from functools import partial
from pathlib import Path
from typing import Any, Literal, Protocol, TypeVar, cast

from memwrap.config import load_settings
from memwrap.errors import ClosedError, InvalidInputError
from memwrap.filters import RecallFilter
from memwrap.wrappers.spool_store import SPOOL_FILE, HomeLoopEnded

log = logging.getLogger("memwrap.wrappers")

MAX_INFLIGHT = 4
COOLDOWN_START = 1.0
COOLDOWN_MAX = 30.0


class RecallSkipped(Exception):
    """The engine is known to be unavailable or overloaded: recall was not attempted."""


class RecallTimeout(Exception):
    """Recall did not answer within the call's `recall_timeout`."""


class RecallFailed(Exception):
    """The engine could not be reached (its start failed)."""


T = TypeVar("T")


class SyncMemoryLike(Protocol):
    """A memory with blocking verbs: what a wrapper calls (recall before a call, retain_many after it)."""

    def recall(self, bank_id: str, query: str, **options: Any) -> Any: ...

    def retain_many(self, bank_id: str, items: Any) -> Any: ...


class AsyncMemoryLike(Protocol):
    """A memory whose verbs are coroutines (`AsyncMemory`), bound to the event loop it was first used on."""

    def recall(self, bank_id: str, query: str, **options: Any) -> Awaitable[Any]: ...

    def retain_many(self, bank_id: str, items: Any) -> Awaitable[Any]: ...


class LoopMemory(SyncMemoryLike, Protocol):
    """`Memory`: blocking verbs, and its async twin (`aio`) whose coroutines run on its loop (`submit`)."""

    @property
    def aio(self) -> AsyncMemoryLike: ...

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]: ...


# What `memory=` takes (besides a sidecar's URL). Optional parts are read when present: `settings`
# (startup_timeout, spool_dir, exit_timeout), `start()`/`started`, `closed`, `use_llm` (wrap_openai(llm=...)).
MemoryLike = LoopMemory | AsyncMemoryLike | SyncMemoryLike
MemoryKind = Literal["loop", "async", "sync"]


def memory_kind(memory: MemoryLike) -> MemoryKind:
    if callable(getattr(memory, "submit", None)) and getattr(memory, "aio", None) is not None:
        return "loop"
    if inspect.iscoroutinefunction(getattr(memory, "recall", None)):
        return "async"
    return "sync"


class Backend:
    """One memory object, shared by every wrapper that uses it in this process."""

    def __init__(self, memory: MemoryLike, *, retain_timeout: float = 60.0) -> None:
        # Any: the methods called depend on `kind` (a narrowing the type checker cannot follow).
        self.memory: Any = memory
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
        settings = getattr(memory, "settings", None) or load_settings()
        self.startup_timeout = float(getattr(settings, "startup_timeout", 15.0))
        self._startup_began: float | None = None  # the start-up limit counts from the first start (or wait)
        # Set by the retainer once what earlier processes left in the spool is delivered (or cannot be now).
        self.caught_up: threading.Event | None = None

    @property
    def spool_path(self) -> Path:
        settings = getattr(self.memory, "settings", None) or load_settings()
        return Path(settings.spool_dir) / SPOOL_FILE

    # -- start-up --------------------------------------------------------------------------------------------

    def start(self) -> Any:
        """Start the engine in the background (idempotent) and return the start's future; None when it is up or
        cannot be started from here (an async memory starts on its own loop, at its first call)."""
        starter = getattr(self.memory, "start", None)
        if not callable(starter) or getattr(self.memory, "started", False) or self.closed:
            return None
        if self.kind == "async" and not in_loop(self.home_loop):
            return None
        if self._startup_began is None:
            self._startup_began = time.monotonic()
        try:
            return starter()
        except Exception as exc:  # noqa: BLE001 - closed meanwhile: the call fails open on its own
            log.debug("memwrap: the memory engine did not start: %r", exc)
            return None

    def _startup_left(self) -> float:
        """Seconds a call may still wait for the engine to start (0 once the start-up limit has passed)."""
        if self._startup_began is None:  # the engine was up before this backend: only the spool's catch-up counts
            self._startup_began = time.monotonic()
        return max(0.0, self._startup_began + self.startup_timeout - time.monotonic())

    def _waited(self, began: float, what: str) -> None:
        waited = time.monotonic() - began
        if waited >= 0.001:
            log.info(
                "memwrap: the call waited %.2f s for %s (start-up limit %.0f s)", waited, what, self.startup_timeout
            )

    def _still_starting(self, began: float) -> RecallSkipped:
        self._waited(began, "the memory engine to start, in vain")
        return RecallSkipped(
            f"the memory engine is still starting after {self.startup_timeout:.0f}s (MEMWRAP_STARTUP_TIMEOUT)"
        )

    def _start_failed(self, error: BaseException) -> RecallFailed:
        self._trip()
        return RecallFailed(f"the memory engine could not start: {error}")

    def wait_ready_sync(self) -> None:
        """Wait (within the start-up limit) for the engine to start and the spool to catch up."""
        if self.known_down():
            raise RecallSkipped("the memory engine failed recently; retrying after a cooldown")
        began = time.monotonic()
        future = self.start()
        if future is not None and self.kind == "loop":
            try:
                future.result(self._startup_left())
            except concurrent.futures.TimeoutError:
                raise self._still_starting(began) from None
            except Exception as exc:
                raise self._start_failed(exc) from exc
        caught_up = self.caught_up
        if caught_up is not None and not caught_up.is_set():
            caught_up.wait(self._startup_left())
        self._waited(began, "the memory engine to start")

    async def wait_ready_async(self) -> None:
        if self.known_down():
            raise RecallSkipped("the memory engine failed recently; retrying after a cooldown")
        began = time.monotonic()
        future = self.start()  # "async": a task on this very loop (start() returns None elsewhere)
        if future is not None and self.kind in ("loop", "async"):
            waitable = asyncio.wrap_future(future) if self.kind == "loop" else future
            try:
                await asyncio.wait_for(asyncio.shield(waitable), self._startup_left())
            except TimeoutError:
                raise self._still_starting(began) from None
            except Exception as exc:
                raise self._start_failed(exc) from exc
        caught_up = self.caught_up
        if caught_up is not None and not caught_up.is_set():
            await asyncio.to_thread(caught_up.wait, self._startup_left())
        self._waited(began, "the memory engine to start")

    # -- circuit breaker -------------------------------------------------------------------------------------

    def _trip(self) -> None:
        """The engine failed: skip recalls for a cooldown that doubles while it keeps failing."""
        with self._lock:
            self._skip_until = time.monotonic() + self._cooldown
            self._cooldown = min(self._cooldown * 2, COOLDOWN_MAX)

    def known_down(self) -> bool:
        """The engine failed recently (within the cooldown): waiting for it now would be in vain."""
        return time.monotonic() < self._skip_until

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

    def _recall_kwargs(
        self, token_budget: int, tags: Sequence[str], model: str | None, filters: RecallFilter | None
    ) -> dict[str, Any]:
        kwargs: dict[str, Any] = {"token_budget": token_budget, "model": model}
        if tags:
            kwargs["tags"] = list(tags)
        if filters is not None:
            kwargs["filters"] = filters
        return kwargs

    def recall_sync(
        self,
        bank_id: str,
        query: str,
        *,
        token_budget: int,
        tags: Sequence[str],
        model: str | None,
        timeout: float,
        filters: RecallFilter | None = None,
    ) -> Any:
        kwargs = self._recall_kwargs(token_budget, tags, model, filters)
        if self.kind == "async" and (self.home_loop is None or self.home_loop.is_closed()):
            raise RecallSkipped("an async memory can only be reached from its event loop (use Memory for sync code)")
        self._admit()
        try:
            if self.kind == "loop":
                future = self._submit(self.memory.aio.recall(bank_id, query, **kwargs))
            elif self.kind == "async":
                future = asyncio.run_coroutine_threadsafe(
                    self.memory.recall(bank_id, query, **kwargs),
                    cast(asyncio.AbstractEventLoop, self.home_loop),  # not None: checked above
                )
            else:
                # In a copy of the caller's context: the engine's spans nest under the wrapper's (the loop and
                # async kinds get that from asyncio already).
                future = self._executor().submit(
                    contextvars.copy_context().run, partial(self.memory.recall, bank_id, query, **kwargs)
                )
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
        self,
        bank_id: str,
        query: str,
        *,
        token_budget: int,
        tags: Sequence[str],
        model: str | None,
        timeout: float,
        filters: RecallFilter | None = None,
    ) -> Any:
        kwargs = self._recall_kwargs(token_budget, tags, model, filters)
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
                call = partial(contextvars.copy_context().run, self.memory.recall, bank_id, query, **kwargs)
                future = loop.run_in_executor(self._executor(), call)
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
                raise HomeLoopEnded("the async memory's event loop is not running; retains wait in the spool")
            coro = self.memory.retain_many(bank_id, items)
            try:
                future = asyncio.run_coroutine_threadsafe(coro, loop)
            except RuntimeError as exc:  # the loop closed between the check and the call
                coro.close()
                raise HomeLoopEnded("the async memory's event loop closed; retains wait in the spool") from exc
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
            return self.memory.submit(coro)
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


def in_loop(loop: asyncio.AbstractEventLoop | None) -> bool:
    """True when called on `loop` itself (the one loop the wrappers' async backend belongs to)."""
    try:
        return loop is not None and asyncio.get_running_loop() is loop
    except RuntimeError:
        return False
