"""What the engine's stages get from it: the parts they use, not the engine.

Learning, the job worker and its handlers, reflect, update, re-extraction and transfer take an `EngineParts`
(built once by `Engine.__init__`, engine/engine.py) instead of the `Engine`: each sees the pool, the settings, the
embedding model, the LLM and the few verbs it calls, and nothing below engine/engine.py imports the engine class,
so the stages do not sit in one import circle with it.

Three parts change while the engine runs, so the parts hold a callable that reads the current one at each use,
never the object itself:
- `llm`: `Engine.use_llm` swaps the LLM (`wrap_openai(client, llm=...)` installs the app's client after start);
- `reextractor`: rebuilt with the LLM by `Engine.use_llm`;
- `learning`: Learning (engine/learn/service.py) is built *from* these parts, so they reach it after it exists.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol
from uuid import UUID

import asyncpg

from memwrap.config import Settings
from memwrap.engine.embed.embedder import Embedder
from memwrap.engine.llm.client import LLM
from memwrap.engine.llm.usage import UsageSink
from memwrap.models import MemoryRecord, Recall
from memwrap.store.pg_types import Connection
from memwrap.store.planner_stats import PlannerStats


class RecallVerb(Protocol):
    """What the stages ask of `Engine.recall` (memwrap/verbs.py declares all of it): reflect's tools and mental
    models recall one bank with these; `Engine.recall` takes them, and more."""

    async def __call__(
        self,
        bank_id: str,
        query: str,
        *,
        token_budget: int | None = None,
        now: datetime | None = None,
        types: Sequence[str] | None = None,
        tags: Sequence[str] | None = None,
        neighbours: bool | None = None,
        prefer_observations: bool | None = None,
    ) -> Recall: ...


class ExtractionJobs(Protocol):
    """The re-extractor (engine/retain/reextract.py) as extraction jobs use it."""

    async def extract_job(self, job: Any) -> dict[str, Any]: ...


class LearningHooks(Protocol):
    """What stages ask of Learning (engine/learn/service.py): its queue hooks, its LLM and reflect's seam."""

    # Reflect may install its own; None: learn/mental_models.default_generator (a learn/mental_models.Generator).
    mental_model_generator: Any

    @property
    def llm(self) -> Any: ...

    async def enqueue_consolidation(self, bank_id: str, *, conn: Connection | None = None) -> None: ...

    async def after_retain(self, bank_id: str, new_units: int) -> None: ...


@dataclass(frozen=True)
class EngineParts:
    pool: asyncpg.Pool
    database_url: str  # a worker's own LISTEN connection (engine/jobs/worker.py)
    planner_stats: PlannerStats  # bulk writers report their rows (store/planner_stats.py)
    settings: Settings
    embedder: Embedder
    llm: Callable[[], LLM | None]  # the current LLM (see above); None: no LLM
    reextractor: Callable[[], ExtractionJobs | None]  # the current one; None without an extraction LLM
    learning: Callable[[], LearningHooks]
    recall: RecallVerb
    get: Callable[[str, UUID | str], Awaitable[MemoryRecord]]
    defense_policy: Callable[[str], Awaitable[str]]  # the bank's memory-defense policy (off, redact or block)
    count_llm_usage: UsageSink  # adds one LLM request to its bank's counters of the day (engine/llm/usage.py)
