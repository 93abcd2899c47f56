"""The worker: claims jobs and runs them by their kind (the table it is given: learn/kinds.py has every kind);
also, now and then, reconciles (re-enqueues stranded work, with the function it is given: learn/reconcile.py).

The same class runs inline (an asyncio task inside the engine's process, MEMWRAP_WORKER=inline) and as
`memwrap worker` processes; any number of them may share one PostgreSQL.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import asyncpg

from memwrap import tracing
from memwrap.config import Settings
from memwrap.engine.jobs import queue as jobs
from memwrap.engine.jobs.queue import NOTIFY_CHANNEL, ClaimedJob, JobContext, default_worker_id, serial_lock
from memwrap.engine.jobs.retry_policy import RetryPolicy
from memwrap.engine.llm.usage import charged_to
from memwrap.store.pg_types import Connection

if TYPE_CHECKING:
    from memwrap.engine.parts import EngineParts

log = logging.getLogger("memwrap.worker")

Handler = Callable[[JobContext], Awaitable[dict[str, Any] | None]]
# One reconciliation pass over the engine (deep: below the watermarks too); returns how many jobs it queued.
Reconcile = Callable[..., Awaitable[int]]


def _anywhere(parts: Any) -> bool:
    del parts
    return True


@dataclass(frozen=True)
class JobKind:
    run: Handler  # returns the job's result, a small JSON dict; raising is a failed attempt
    policy: Callable[[Settings], RetryPolicy] = RetryPolicy.for_jobs
    runs_here: Callable[[Any], bool] = _anywhere  # can this process's engine parts run it?
    # The most jobs of this kind one bank may have running at once, over every worker (None: no cap). Kinds whose
    # work waits on someone else's server (webhook receivers) are capped, so one bank's slow or dead receivers
    # cannot hold every worker slot; the claim's round-robin over banks does the rest (queue.CLAIM).
    in_flight_per_bank: Callable[[Settings], int] | None = None


class Worker:
    def __init__(
        self,
        parts: EngineParts,
        *,
        worker_id: str | None = None,
        concurrency: int | None = None,
        kinds: list[str] | None = None,
        listen: bool = False,
        registry: Mapping[str, JobKind],
        reconcile: Reconcile | None = None,
        start_delay: float = 0.0,
        bank_id: str | None = None,
    ) -> None:
        self.parts = parts
        self.settings = parts.settings
        self.pool: asyncpg.Pool = parts.pool
        self.worker_id = worker_id or default_worker_id()
        self.concurrency = max(1, concurrency or self.settings.worker_concurrency)
        self.registry = registry
        self._only_kinds = list(kinds) if kinds else None
        self.listen = listen
        self.reconcile = reconcile  # None: this worker does not reconcile
        self.start_delay = start_delay  # seconds before the first claim (and reconciliation) after start()
        self.bank_id = bank_id  # only this bank's jobs (a one-shot command's worker); None: every bank's
        self.completed = 0
        self._wake = asyncio.Event()
        self._stopping = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._listener: Connection | None = None
        self._last_bank: str | None = None  # the bank served last: the next claim starts after it (round-robin)

    # --- lifecycle -------------------------------------------------------------------------------------------

    async def start(self) -> None:
        if self._tasks:
            return
        if self.listen:
            await self._start_listener()
        self._tasks = [asyncio.create_task(self._loop(i), name=f"memwrap-worker-{i}") for i in range(self.concurrency)]
        if self.reconcile is not None:
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
    def kinds(self) -> list[str]:
        """The kinds this worker claims: those its engine can run now (an older release leaves newer kinds to
        newer workers; an engine without an extraction LLM leaves extraction to one with)."""
        names = self._only_kinds if self._only_kinds is not None else sorted(self.registry)
        return [n for n in names if n in self.registry and self.registry[n].runs_here(self.parts)]

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
        assert self.reconcile is not None
        tick = 0
        await self._wait_start_delay()
        while not self._stopping.is_set():
            try:
                # Every 20th tick also looks below the watermarks (stragglers of very slow transactions).
                if await self.reconcile(self.parts, deep=tick % 20 == 0):
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
            self._listener = await asyncpg.connect(self.parts.database_url)
            await self._listener.add_listener(NOTIFY_CHANNEL, lambda *_: self._wake.set())
        except (OSError, asyncpg.PostgresError) as exc:  # polling still works
            log.warning(
                "worker %s: LISTEN unavailable (%s); polling every %ss",
                self.worker_id,
                exc,
                self.settings.worker_poll_seconds,
            )
            self._listener = None

    # --- one job ---------------------------------------------------------------------------------------------

    async def run_one(self) -> bool:
        """Claim and run one due job. False when there was none."""
        kinds = self.kinds
        capped = {n: self.registry[n].in_flight_per_bank for n in kinds if self.registry[n].in_flight_per_bank}
        caps = [cap(self.settings) for cap in capped.values() if cap is not None]
        claimed = await jobs.claim_many(
            self.pool,
            self.worker_id,
            lease_seconds=self.settings.worker_lease_seconds,
            kinds=kinds,
            bank_id=self.bank_id,
            after_bank=self._last_bank,
            capped_kinds=sorted(capped),
            cap_per_bank=min(caps) if caps else 0,
        )
        if not claimed:
            return False
        job = claimed[0]
        self._last_bank = job.bank_id or ""
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
        kind = self.registry.get(job.kind)
        if kind is None:
            await jobs.fail_now(self.pool, job, f"no handler for job kind {job.kind!r}")
            return
        async with serial_lock(self.pool, job.serial_key, wait=False) as held:
            if not held:
                # Another claim of the same key is still at work (its lease may have lapsed): try again soon.
                await jobs.release(self.pool, job, delay=1.0)
                return
            # A trace of its own (never the span that happened to be current when the loop started), and
            # only for a bank this process serves: tracing.background.
            with (
                tracing.background("job", job.bank_id, job_kind=job.kind, attempt=job.attempts),
                charged_to(job.bank_id),  # the job's LLM requests count against its bank
            ):
                result = await jobs.run_claimed(
                    self.pool,
                    job,
                    lambda: kind.run(JobContext(self.parts, job)),
                    policy=kind.policy(self.settings),
                    lease_seconds=self.settings.worker_lease_seconds,
                )
            if result is not None:
                self.completed += 1
