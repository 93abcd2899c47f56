"""Raw turns become facts: right after retain wrote them, and later again for those whose extraction failed.

Retain stores an item's turns raw (recall finds them from the moment retain returns) and, in the same
transaction, queues an 'extract' job for the items it wrote: a row of the one job queue (engine/jobs/queue.py).
`Reextractor.start_inline` claims that job at once and extracts its items in a task that retain waits on only up
to `extraction_deadline`: past it retain returns the raw ids and the task goes on (nothing is cancelled; the
claim's lease is renewed meanwhile). A failed extraction is retried like every job, by the one retry policy
(engine/jobs/retry_policy.py: backoff from MEMWRAP_EXTRACTION_RETRY_INTERVAL; after
MEMWRAP_EXTRACTION_MAX_ATTEMPTS the job is dead and the raw memory simply stays): by any worker whose engine
has an extraction LLM (`run_job`), or at once by `run_once(force=True)` (`Engine.retry_extractions`). A retry
rebuilds the items from their raw units; either way raw_to_facts.replace_raw swaps raw units for facts in one
transaction, skipping items another run converted first.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime
from functools import partial
from typing import TYPE_CHECKING, Any
from uuid import UUID

import asyncpg
import numpy as np

from memwrap.config import Settings
from memwrap.defense.policy import redact
from memwrap.engine.jobs import queue as jobs
from memwrap.engine.jobs.queue import ClaimedJob, JobContext, default_worker_id
from memwrap.engine.jobs.retry_policy import RetryPolicy
from memwrap.engine.retain.facts import EXTRACT_JOB, Extractor
from memwrap.engine.retain.prepare import PreparedItem
from memwrap.engine.retain.raw_to_facts import link_raw_entities, rebuild_items, replace_raw
from memwrap.errors import MemwrapError

if TYPE_CHECKING:
    from memwrap.engine.parts import EngineParts

log = logging.getLogger("memwrap.extract")

KIND = EXTRACT_JOB

# The queued extraction jobs that hold some of these items (those retain just wrote).
JOBS_OF_ITEMS = """
SELECT id FROM jobs
WHERE bank_id = $1 AND kind = $2 AND status = 'queued' AND payload->'item_hashes' ?| $3::text[]
"""


class ExtractionIncompleteError(MemwrapError):
    """Some items of an extraction job are still raw after this attempt (the job is retried)."""


class ExtractionUnavailableError(MemwrapError):
    """The process running an extraction job has no extraction LLM (any more)."""


def can_run(parts: EngineParts) -> bool:
    """Extraction jobs need an engine with an extraction LLM."""
    return parts.reextractor() is not None


async def run_job(ctx: JobContext) -> dict[str, Any]:
    """The worker's entry point for one extraction job."""
    reextractor = ctx.parts.reextractor()
    if reextractor is None:
        raise ExtractionUnavailableError("this process has no extraction LLM: set MEMWRAP_LLM_PROVIDER")
    return await reextractor.extract_job(ctx.job)


class Reextractor:
    def __init__(
        self,
        pool: asyncpg.Pool,
        extractor: Extractor,
        embed: Callable[[list[str]], Awaitable[np.ndarray]],
        settings: Settings,
        defense_policy: Callable[[str], Awaitable[str]],
        converted: Callable[[str, int], Awaitable[None]] | None = None,
    ) -> None:
        self.pool = pool
        self.extractor = extractor
        self.embed = embed
        self.settings = settings
        self.defense_policy = defense_policy
        self.converted = converted  # told (bank, new units) after facts landed: consolidation follows
        self.policy = RetryPolicy.for_extraction(settings)
        self.worker_id = default_worker_id("extract")
        self._inline: set[asyncio.Task[dict[str, list[UUID]]]] = set()

    @property
    def lease_seconds(self) -> float:
        return self.settings.worker_lease_seconds

    # --- right after retain ----------------------------------------------------------------------------------

    def start_inline(
        self, bank_id: str, items: Sequence[PreparedItem], *, now: datetime, policy: str
    ) -> asyncio.Task[dict[str, list[UUID]]]:
        """Extract just-retained (raw, queued) items now, in a task of their own that outlives the retain."""
        task = asyncio.get_running_loop().create_task(
            self._extract_inline(bank_id, list(items), now=now, policy=policy), name="memwrap-extract"
        )
        self._inline.add(task)
        task.add_done_callback(self._inline_done)
        return task

    def _inline_done(self, task: asyncio.Task[dict[str, list[UUID]]]) -> None:
        self._inline.discard(task)
        if not task.cancelled() and task.exception() is not None:
            exc = task.exception()
            log.warning(
                "extraction after retain failed (the turns stay raw and queued): %s: %s",
                type(exc).__name__,
                redact(str(exc)),
            )

    async def wait_inline(self, timeout: float | None = None) -> bool:
        """Wait for the extractions started by retains of this process; False if some still run at `timeout`."""
        tasks = set(self._inline)
        if not tasks:
            return True
        _, pending = await asyncio.wait(tasks, timeout=timeout)
        return not pending

    async def _extract_inline(
        self, bank_id: str, items: list[PreparedItem], *, now: datetime, policy: str
    ) -> dict[str, list[UUID]]:
        ids = [r["id"] for r in await self.pool.fetch(JOBS_OF_ITEMS, bank_id, KIND, [i.item_hash for i in items])]
        if not ids:
            return {}
        claimed = await jobs.claim_many(
            self.pool,
            self.worker_id,
            lease_seconds=self.lease_seconds,
            kinds=[KIND],
            bank_id=bank_id,
            ids=ids,
            any_time=True,
            limit=len(ids),
        )
        if not claimed:
            return {}  # a retry_extractions elsewhere took them first
        wanted = [h for job in claimed for h in _hashes(job)]
        given = {i.item_hash: i for i in items}
        todo = [given[h] for h in wanted if h in given]
        todo += await rebuild_items(self.pool, bank_id, [h for h in wanted if h not in given])
        heartbeat = asyncio.create_task(jobs.keep_leased(self.pool, claimed, self.lease_seconds))
        try:
            converted, failed = await self.convert(bank_id, todo, now=now, policy=policy)
        except asyncio.CancelledError:
            await asyncio.shield(
                asyncio.gather(*(jobs.release(self.pool, j, delay=0.0, outcome="cancelled") for j in claimed))
            )
            raise
        except Exception as exc:
            failed = {h: f"{type(exc).__name__}: {redact(str(exc))}" for h in wanted}
            await self._settle(claimed, {}, failed)
            raise
        finally:
            heartbeat.cancel()
        await self._settle(claimed, converted, failed)
        return converted

    async def _settle(
        self, claimed: list[ClaimedJob], converted: dict[str, list[UUID]], failed: dict[str, str]
    ) -> None:
        """Each claimed job ends as one attempt: done, or retried/dead by the policy when an item is still raw."""
        for job in claimed:
            hashes = _hashes(job)
            errors = [failed[h] for h in hashes if h in failed]
            if errors:
                await jobs.retry_or_fail(self.pool, job, _incomplete(len(errors), len(hashes), errors[0]), self.policy)
            else:
                await jobs.finish(self.pool, job, {"converted": sum(h in converted for h in hashes)})

    # --- later: a job claimed from the queue -----------------------------------------------------------------

    async def extract_job(self, job: ClaimedJob) -> dict[str, Any]:
        """Extract the items of one claimed job that are still raw; raises when some stay raw (a failed attempt)."""
        bank_id = job.bank_id or ""
        items = await rebuild_items(self.pool, bank_id, _hashes(job))
        if not items:
            return {"converted": 0}  # converted by another run, or deleted meanwhile
        policy = await self.defense_policy(bank_id)
        converted, failed = await self.convert(bank_id, items, now=datetime.now(UTC), policy=policy)
        if failed:
            raise ExtractionIncompleteError(_incomplete(len(failed), len(items), next(iter(failed.values()))))
        return {"converted": len(converted)}

    async def run_once(self, *, bank_id: str | None = None, limit: int = 64, force: bool = False) -> int:
        """Run up to `limit` due extraction jobs (of one bank, or all) in this process, now; `force`: every
        queued job, due or not, and the dead ones get one more attempt. Returns how many items became facts."""
        if force:
            await jobs.revive(self.pool, KIND, bank_id=bank_id)
        claimed = await jobs.claim_many(
            self.pool,
            self.worker_id,
            lease_seconds=self.lease_seconds,
            kinds=[KIND],
            bank_id=bank_id,
            any_time=force,
            limit=limit,
        )
        waiting = asyncio.create_task(jobs.keep_leased(self.pool, claimed, self.lease_seconds))
        converted = 0
        try:
            for index, job in enumerate(claimed):
                try:
                    result = await jobs.run_claimed(
                        self.pool,
                        job,
                        partial(self.extract_job, job),
                        policy=self.policy,
                        lease_seconds=self.lease_seconds,
                    )
                except asyncio.CancelledError:
                    await asyncio.shield(
                        asyncio.gather(
                            *(jobs.release(self.pool, j, delay=0.0, outcome="cancelled") for j in claimed[index + 1 :])
                        )
                    )
                    raise
                converted += int((result or {}).get("converted", 0))
        finally:
            waiting.cancel()
        return converted

    # --- the extraction itself -------------------------------------------------------------------------------

    async def convert(
        self, bank_id: str, items: list[PreparedItem], *, now: datetime, policy: str
    ) -> tuple[dict[str, list[UUID]], dict[str, str]]:
        """Extract items and put their facts in place of their raw units. Returns (item_hash → unit ids of the
        items this call converted, item_hash → why it failed for the items still raw)."""
        translated = await self.extractor.translate(bank_id, items, now=now, policy=policy)
        failed = {i.item_hash: i.error for i in translated if i.error}
        if failed:
            await link_raw_entities(self.pool, bank_id, list(failed))
        done = [i for i in translated if not i.error]
        if not done:
            return {}, failed
        vectors = await self.embed([u.embed_text for i in done for u in i.units])
        async with self.pool.acquire() as conn, conn.transaction():
            result = await replace_raw(conn, bank_id, done, vectors)
        if result and self.converted is not None:
            await self.converted(bank_id, sum(len(ids) for ids in result.values()))
        return result, failed

    async def stop(self) -> None:
        """Cancel the extractions still running: their jobs go back to the queue for the next worker."""
        tasks = list(self._inline)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


def _hashes(job: ClaimedJob) -> list[str]:
    return [str(h) for h in job.payload.get("item_hashes", [])]


def _incomplete(failed: int, total: int, reason: str) -> str:
    return f"{failed} of {total} item(s) still raw: {reason}"
