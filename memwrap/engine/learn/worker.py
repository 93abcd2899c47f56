"""The worker: claims jobs and runs their handlers; also, now and then, reconciles (re-enqueues stranded work).

The same class runs inline (an asyncio task inside the engine's process, MEMWRAP_WORKER=inline) and as
`memwrap worker` processes; any number of them may share one PostgreSQL.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import time
from collections.abc import Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import asyncpg

from memwrap.engine.learn import jobs
from memwrap.engine.learn.jobs import LOCK_NAMESPACE, NOTIFY_CHANNEL, ClaimedJob

log = logging.getLogger("memwrap.worker")


@dataclass
class JobContext:
    engine: Any  # memwrap.engine.engine.Engine
    job: ClaimedJob


Handler = Callable[[JobContext], Awaitable[dict[str, Any] | None]]
HANDLERS: dict[str, Handler] = {}


def handler(kind: str) -> Callable[[Handler], Handler]:
    """Register the function that runs jobs of `kind` (it returns the job's result, a small JSON dict)."""

    def register(fn: Handler) -> Handler:
        HANDLERS[kind] = fn
        return fn

    return register


def _load_handlers() -> None:
    from memwrap.engine.learn import handlers  # noqa: F401 - registers the built-in kinds


@asynccontextmanager
async def serial_lock(pool: asyncpg.Pool, key: str, *, wait: bool):
    """Hold the advisory lock of a serial key on a connection of our own (released if our session dies).

    Yields True when held; with wait=False, yields False at once if someone else holds it.
    """
    async with pool.acquire() as conn:
        if wait:
            await conn.execute("SELECT pg_advisory_lock($1, hashtext($2))", LOCK_NAMESPACE, key)
            held = True
        else:
            held = bool(await conn.fetchval("SELECT pg_try_advisory_lock($1, hashtext($2))", LOCK_NAMESPACE, key))
        try:
            yield held
        finally:
            if held and not conn.is_closed():
                # Best effort: if this fails (a cancelled query left the connection busy), the pool's reset on
                # release runs pg_advisory_unlock_all(), and a closed session drops its locks anyway.
                with contextlib.suppress(asyncpg.PostgresError, asyncpg.InterfaceError):
                    await conn.execute("SELECT pg_advisory_unlock($1, hashtext($2))", LOCK_NAMESPACE, key)


def default_worker_id(suffix: str = "") -> str:
    return f"{socket.gethostname()}:{os.getpid()}{':' + suffix if suffix else ''}"


class Worker:
    def __init__(
        self,
        engine: Any,
        *,
        worker_id: str | None = None,
        concurrency: int | None = None,
        kinds: list[str] | None = None,
        listen: bool = False,
        reconcile: bool = True,
        start_delay: float = 0.0,
    ) -> None:
        _load_handlers()
        self.engine = engine
        self.settings = engine.settings
        self.pool: asyncpg.Pool = engine.store.pool
        self.worker_id = worker_id or default_worker_id()
        self.concurrency = max(1, concurrency or self.settings.worker_concurrency)
        # Only kinds this process can run: a worker of an older release leaves newer kinds to newer workers.
        self.kinds = list(kinds) if kinds else sorted(HANDLERS)
        self.listen = listen
        self.reconcile_enabled = reconcile
        self.start_delay = start_delay  # seconds before the first claim (and reconciliation) after start()
        self.completed = 0
        self._wake = asyncio.Event()
        self._stopping = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._listener: asyncpg.Connection | None = None

    # --- lifecycle -------------------------------------------------------------------------------------------

    async def start(self) -> None:
        if self._tasks:
            return
        if self.listen:
            await self._start_listener()
        self._tasks = [asyncio.create_task(self._loop(i), name=f"memwrap-worker-{i}") for i in range(self.concurrency)]
        if self.reconcile_enabled:
            self._tasks.append(asyncio.create_task(self._reconcile_loop(), name="memwrap-reconcile"))

    async def stop(self, timeout: float = 10.0) -> None:
        """Let running jobs finish (up to `timeout`), then cancel them: a cancelled job goes back to the queue."""
        self._stopping.set()
        self._wake.set()
        if self._tasks:
            done, pending = await asyncio.wait(self._tasks, timeout=timeout)
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)
            for task in done:
                if not task.cancelled() and task.exception() is not None:
                    log.error("worker task ended with %r", task.exception())
        self._tasks = []
        if self._listener is not None:
            listener, self._listener = self._listener, None
            await listener.close(timeout=2)

    async def wait_stopped(self) -> None:
        await self._stopping.wait()

    def request_stop(self) -> None:
        self._stopping.set()
        self._wake.set()

    def wake(self) -> None:
        self._wake.set()

    @property
    def running(self) -> bool:
        return bool(self._tasks) and not self._stopping.is_set()

    # --- the loop --------------------------------------------------------------------------------------------

    async def _wait_start_delay(self) -> None:
        if self.start_delay > 0:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stopping.wait(), timeout=self.start_delay)

    async def _loop(self, index: int) -> None:
        await self._wait_start_delay()
        while not self._stopping.is_set():
            try:
                ran = await self.run_one()
            except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
                if self._stopping.is_set():
                    return
                log.warning("worker %s: database error while claiming: %s", self.worker_id, exc)
                ran = False
            if ran:
                continue
            self._wake.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout=self.settings.worker_poll_seconds)

    async def _reconcile_loop(self) -> None:
        from memwrap.engine.learn import reconcile

        tick = 0
        await self._wait_start_delay()
        while not self._stopping.is_set():
            try:
                # Every 20th tick also looks below the watermarks (stragglers of very slow transactions).
                if await reconcile.run(self.engine, deep=tick % 20 == 0):
                    self.wake()
            except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
                if self._stopping.is_set():
                    return
                log.warning("worker %s: reconciliation failed: %s", self.worker_id, exc)
            tick += 1
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stopping.wait(), timeout=self.settings.reconcile_seconds)

    async def _start_listener(self) -> None:
        try:
            self._listener = await asyncpg.connect(self.engine.store.url)
            await self._listener.add_listener(NOTIFY_CHANNEL, lambda *_: self._wake.set())
        except (OSError, asyncpg.PostgresError) as exc:  # polling still works
            log.warning("worker %s: LISTEN unavailable (%s); polling every %ss", self.worker_id, exc,
                        self.settings.worker_poll_seconds)
            self._listener = None

    # --- one job ---------------------------------------------------------------------------------------------

    async def run_one(self) -> bool:
        """Claim and run one due job. False when there was none."""
        job = await jobs.claim(self.pool, self.worker_id, lease_seconds=self.settings.worker_lease_seconds,
                               kinds=self.kinds)
        if job is None:
            return False
        await self.execute(job)
        return True

    async def drain(self, *, timeout: float = 60.0) -> int:
        """Run due jobs until none is left (tests, `memwrap worker --drain`). Returns how many ran."""
        deadline = time.monotonic() + timeout
        ran = 0
        while time.monotonic() < deadline and await self.run_one():
            ran += 1
        return ran

    async def execute(self, job: ClaimedJob) -> None:
        if job.attempts > job.max_attempts:
            # Its claims kept dying (a worker crash, an OOM kill): do not let it take workers down forever.
            await jobs.fail_now(self.pool, job, f"gave up after {job.attempts - 1} claims whose worker stopped")
            return
        run = HANDLERS.get(job.kind)
        if run is None:
            await jobs.fail_now(self.pool, job, f"no handler for job kind {job.kind!r}")
            return
        async with serial_lock(self.pool, job.serial_key, wait=False) as held:
            if not held:
                # Another claim of the same key is still at work (its lease may have lapsed): try again soon.
                await jobs.release(self.pool, job, delay=1.0)
                return
            heartbeat = asyncio.create_task(self._heartbeat(job))
            started = time.perf_counter()
            try:
                result = await run(JobContext(self.engine, job))
            except asyncio.CancelledError:
                await asyncio.shield(jobs.release(self.pool, job, delay=0.0, outcome="cancelled"))
                raise
            except Exception as exc:  # noqa: BLE001 - any handler failure becomes a retry, never a dead worker
                log.warning("job %s (%s, bank %s) attempt %s failed: %s", job.id, job.kind, job.bank_id,
                            job.attempts, exc, exc_info=log.isEnabledFor(logging.DEBUG))
                await jobs.retry_or_fail(
                    self.pool, job, f"{type(exc).__name__}: {exc}",
                    base=self.settings.job_backoff_seconds, cap=self.settings.job_backoff_cap_seconds,
                )
            else:
                result = dict(result or {})
                result.setdefault("seconds", round(time.perf_counter() - started, 3))
                await jobs.finish(self.pool, job, result)
                self.completed += 1
            finally:
                heartbeat.cancel()

    async def _heartbeat(self, job: ClaimedJob) -> None:
        lease = self.settings.worker_lease_seconds
        while True:
            await asyncio.sleep(max(lease / 3, 0.05))
            try:
                if not await jobs.renew(self.pool, job, lease):
                    log.warning("job %s: lease renewal found the claim gone; finishing under the lock", job.id)
                    return
            except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
                log.warning("job %s: lease renewal failed: %s", job.id, exc)
