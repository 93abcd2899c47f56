"""Every kind of background job, in one table: the function that runs it, its retry policy, and where it can run.

The worker (engine/jobs/worker.py) is handed this table by learn/service.py and `memwrap worker`; nothing registers
itself by being imported. A worker only claims the kinds it can run in its process (extraction needs an extraction
LLM), so a worker without one leaves them to one that has.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from memwrap.engine.jobs.queue import JobContext
from memwrap.engine.jobs.retry_policy import RetryPolicy
from memwrap.engine.jobs.worker import JobKind
from memwrap.engine.learn import consolidate, forgetting, mental_models
from memwrap.engine.retain import reextract
from memwrap.engine.webhooks import delivery as webhook_delivery
from memwrap.engine.webhooks.events import KIND as WEBHOOK

__all__ = ["BUILTIN_KINDS", "JobKind", "noop"]


async def noop(ctx: JobContext) -> dict[str, Any]:
    """Does nothing (for `sleep` seconds): a probe of the queue itself, used by health checks and tests."""
    await asyncio.sleep(float(ctx.job.payload.get("sleep", 0.0)))
    return {"ok": True}


BUILTIN_KINDS: Mapping[str, JobKind] = MappingProxyType(
    {
        "noop": JobKind(noop),
        consolidate.KIND: JobKind(consolidate.run_job),
        consolidate.PARKED_KIND: JobKind(consolidate.run_parked_job, policy=RetryPolicy.for_parked_units),
        mental_models.KIND: JobKind(mental_models.run_job),
        forgetting.REVISE: JobKind(forgetting.run_revise),
        forgetting.EXPIRE: JobKind(forgetting.run_expire),
        reextract.KIND: JobKind(reextract.run_job, policy=RetryPolicy.for_extraction, runs_here=reextract.can_run),
        WEBHOOK: JobKind(
            webhook_delivery.run_job,
            policy=webhook_delivery.retry_policy,
            in_flight_per_bank=webhook_delivery.in_flight_per_bank,
        ),
    }
)
