"""Learning, as the engine holds it: the inline worker's lifecycle, the retain hook, the LLM, and the verbs.

`Engine.learning` is one of these, built from the engine's parts (engine/parts.py); the public verbs on Engine
(see verbs.py) delegate here.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any
from uuid import UUID

import asyncpg

from memwrap.engine.jobs import queue as jobs
from memwrap.engine.jobs.worker import Worker, default_worker_id
from memwrap.engine.learn import consolidate, export, forgetting, mental_models, observation_views, reconcile
from memwrap.engine.learn.kinds import BUILTIN_KINDS
from memwrap.engine.learn.mental_models import Generator
from memwrap.engine.llm.usage import charged_to
from memwrap.models import ConsolidationReport, Job, MentalModel, MentalModelVersion, Observation, ObservationVersion
from memwrap.store.pg_types import Connection

if TYPE_CHECKING:
    from memwrap.engine.parts import EngineParts

log = logging.getLogger("memwrap.learn")

# Closing waits this long for a running job, then cancels it: its batch rolls back and the job is queued again
# (batches are atomic), so a close never waits for a long consolidation.
WORKER_STOP_SECONDS = 1.0


class Learning:
    def __init__(self, parts: EngineParts) -> None:
        self.parts = parts
        self.settings = parts.settings
        self.worker: Worker | None = None
        # Reflect installs its own generator here; None means mental_models.default_generator.
        self.mental_model_generator: Generator | None = None
        self._llm: Any = None
        self._llm_loaded = False
        self._wakers: set[asyncio.TimerHandle] = set()

    @property
    def pool(self) -> asyncpg.Pool:
        return self.parts.pool

    @property
    def llm(self) -> Any:
        """The engine's LLM (its own when it has one), built on first use; None when no provider is configured."""
        shared = self.parts.llm()
        if shared is not None:
            return shared
        if not self._llm_loaded:
            self._llm_loaded = True
            s = self.settings
            if (getattr(s, "consolidation_provider", None) or s.llm_provider) != "none":
                from memwrap.engine.llm.client import LLM

                self._llm = LLM.from_settings(s)
                self._llm.usage_sink = self.parts.count_llm_usage
        return self._llm

    # --- lifecycle -------------------------------------------------------------------------------------------

    async def start(self) -> None:
        if self.settings.worker == "inline" and self.worker is None:
            self.worker = Worker(
                self.parts,
                worker_id=default_worker_id("inline"),
                registry=BUILTIN_KINDS,
                # A worker held to one bank (a one-shot CLI command's) does no server-wide pass either.
                reconcile=None if self.settings.worker_bank else reconcile.run,
                start_delay=self.settings.worker_start_delay_seconds,
                bank_id=self.settings.worker_bank,
            )
            await self.worker.start()

    async def stop(self) -> None:
        for handle in self._wakers:
            handle.cancel()
        self._wakers.clear()
        if self.worker is not None:
            worker, self.worker = self.worker, None
            await worker.stop(timeout=WORKER_STOP_SECONDS)
        if self._llm is not None:
            llm, self._llm = self._llm, None
            await llm.aclose()

    def _wake_after(self, delay: float) -> None:
        if self.worker is None:
            return
        loop = asyncio.get_running_loop()
        handle = loop.call_later(max(delay, 0.0) + 0.01, self._wake_now)
        self._wakers.add(handle)

    def _wake_now(self) -> None:
        self._wakers = {h for h in self._wakers if not h.cancelled() and h.when() > asyncio.get_running_loop().time()}
        if self.worker is not None:
            self.worker.wake()

    # --- hooks -----------------------------------------------------------------------------------------------

    async def enqueue_consolidation(self, bank_id: str, *, conn: Connection | None = None) -> None:
        delay = self.settings.consolidation_delay_seconds
        await jobs.enqueue(
            conn or self.pool,
            consolidate.KIND,
            bank_id=bank_id,
            dedupe_key=consolidate.lock_key(bank_id),
            serial_key=consolidate.lock_key(bank_id),
            delay=delay,
            max_attempts=self.settings.job_max_attempts,
            priority=50,
        )
        self._wake_after(delay)

    async def after_retain(self, bank_id: str, new_units: int) -> None:
        """New units were committed: queue the bank's consolidation. Never fails the retain (reconciliation
        re-enqueues anything a failure here leaves behind)."""
        if not new_units:
            return
        try:
            await self.enqueue_consolidation(bank_id)
        except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
            log.warning("could not queue consolidation for %s (reconciliation will): %s", bank_id, exc)

    # --- jobs ------------------------------------------------------------------------------------------------

    async def jobs(self, *, bank_id: str | None, status: str | None, kind: str | None, limit: int) -> list[Job]:
        return await jobs.list_jobs(self.pool, bank_id=bank_id, status=status, kind=kind, limit=limit)

    async def wait_for_jobs(self, bank_id: str | None, timeout: float) -> bool:
        """Wait until no job (of the bank) is queued or running. False on timeout."""
        deadline = time.monotonic() + timeout
        while True:
            if await jobs.open_jobs(self.pool, bank_id) == 0:
                return True
            if time.monotonic() >= deadline:
                return False
            if self.worker is not None:
                self.worker.wake()
            await asyncio.sleep(0.05)

    # --- observations ----------------------------------------------------------------------------------------

    async def consolidate(self, bank_id: str) -> ConsolidationReport:
        with charged_to(bank_id):
            return await consolidate.consolidate_now(self.parts, bank_id)

    async def observations(self, selection: observation_views.ObservationSelection) -> list[Observation]:
        return await observation_views.list_observations(self.pool, selection)

    async def observation(self, bank_id: str, observation_id: UUID, now: datetime | None) -> Observation:
        return await observation_views.get_observation(self.pool, bank_id, observation_id, now=now or datetime.now(UTC))

    async def observation_history(self, bank_id: str, observation_id: UUID) -> list[ObservationVersion]:
        return await observation_views.observation_history(self.pool, bank_id, observation_id)

    # --- mental models ---------------------------------------------------------------------------------------

    async def create_mental_model(
        self,
        bank_id: str,
        name: str,
        question: str,
        *,
        tags: Sequence[str] | None,
        max_tokens: int,
        refresh_every: float | None,
    ) -> MentalModel:
        model = await mental_models.create(
            self.parts, bank_id, name, question, tags=tags, max_tokens=max_tokens, refresh_every=refresh_every
        )
        self._wake_after(0.0)
        return model

    async def get_mental_model(self, bank_id: str, name: str) -> MentalModel:
        return await mental_models.get(self.pool, bank_id, name)

    async def mental_models(self, bank_id: str) -> list[MentalModel]:
        return await mental_models.list_models(self.pool, bank_id)

    async def mental_model_history(self, bank_id: str, name: str) -> list[MentalModelVersion]:
        return await mental_models.history(self.pool, bank_id, name)

    async def refresh_mental_model(self, bank_id: str, name: str) -> MentalModel:
        with charged_to(bank_id):
            model = await mental_models.refresh(self.parts, bank_id, name=name, reason="refreshed on request")
        if model is None:
            return await mental_models.get(self.pool, bank_id, name)  # raises the not-found error
        return model

    async def delete_mental_model(self, bank_id: str, name: str) -> None:
        await mental_models.delete(self.pool, bank_id, name)

    async def export(self, directory: Path, bank_id: str | None) -> list[Path]:
        return await export.export_markdown(self.parts, directory, bank_id=bank_id)

    # --- forgetting ------------------------------------------------------------------------------------------

    async def before_delete(self, bank_id: str, memory_ids: Sequence[UUID]) -> None:
        await forgetting.before_delete(self.parts, bank_id, memory_ids)
        self._wake_after(self.settings.mental_model_refresh_delay_seconds)

    async def invalidate(self, bank_id: str, memory_id: UUID, reason: str) -> None:
        await forgetting.invalidate(self.parts, bank_id, memory_id, reason)
        self._wake_after(self.settings.mental_model_refresh_delay_seconds)

    async def restore(self, bank_id: str, memory_id: UUID) -> None:
        await forgetting.restore(self.parts, bank_id, memory_id)
        self._wake_after(self.settings.mental_model_refresh_delay_seconds)

    async def expire(self, bank_id: str, now: datetime | None) -> int:
        return await forgetting.expire_raw(self.parts, bank_id, now=now)
