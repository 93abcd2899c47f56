"""The built-in job kinds. Importing this module registers them with the worker."""

from __future__ import annotations

import asyncio
from typing import Any

from memwrap.engine.learn import consolidate, forgetting, mental_models  # noqa: F401 - registers their kinds
from memwrap.engine.learn.worker import JobContext, handler


@handler("noop")
async def noop(ctx: JobContext) -> dict[str, Any]:
    """Does nothing (for `sleep` seconds): a probe of the queue itself, used by health checks and tests."""
    await asyncio.sleep(float(ctx.job.payload.get("sleep", 0.0)))
    return {"ok": True}
