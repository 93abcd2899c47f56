"""The declared verbs of a bank's learning: background jobs, observations, mental models, forgetting.

A section of `MemoryVerbs` (memwrap/verbs.py, which says how declarations work).
"""

from __future__ import annotations

import builtins
from datetime import datetime

from memwrap.declare import Route, verb
from memwrap.models import (
    ConsolidationReport,
    Job,
    JobStatus,
    MentalModel,
    MentalModelVersion,
    Observation,
    ObservationVersion,
)
from memwrap.verb_types import (
    BANK,
    MemoryId,
    PageLimit,
    PageOffset,
    RefreshEvery,
    Tags,
    TokenBudget,
    VerbSection,
)


class LearningVerbs(VerbSection):
    """What the engine learns from a bank's memories, and how it forgets (memwrap/engine/learn)."""

    # --- learning: jobs, observations, mental models, forgetting (memwrap/engine/learn) -----------------------

    @verb(Route("GET", f"{BANK}/jobs"), optional_bank="over HTTP, jobs are listed per bank")
    async def jobs(
        self,
        bank_id: str | None = None,
        *,
        status: JobStatus | None = None,
        kind: str | None = None,
        limit: PageLimit = 100,
    ) -> builtins.list[Job]:
        """The background job queue, newest first (status: queued, running, done, failed, cancelled)."""
        ...

    @verb(composed="jobs", optional_bank="over HTTP, it waits for one bank")
    async def wait_for_jobs(self, bank_id: str | None = None, *, timeout: float = 60.0) -> bool:
        """Wait until the bank (or every bank) has no queued or running job. False if `timeout` passed first."""
        ...

    @verb(Route("POST", f"{BANK}/consolidate"), cli=True)
    async def consolidate(self, bank_id: str) -> ConsolidationReport:
        """Turn the bank's pending facts into observations now (the background worker does it anyway)."""
        ...

    @verb(Route("GET", f"{BANK}/observations"), cli=True)
    async def observations(
        self,
        bank_id: str,
        *,
        tags: Tags = None,
        include_invalidated: bool = False,
        limit: PageLimit = 100,
        offset: PageOffset = 0,
        now: datetime | None = None,
    ) -> builtins.list[Observation]:
        """The bank's observations, best supported first, with proof count, trend and evidence."""
        ...

    @verb(Route("GET", f"{BANK}/observations/{{observation_id}}"), cli=True)
    async def get_observation(
        self, bank_id: str, observation_id: MemoryId, *, now: datetime | None = None
    ) -> Observation:
        """One observation with all its evidence (quote, time, source, stance)."""
        ...

    @verb(Route("GET", f"{BANK}/observations/{{observation_id}}/history"), cli=True)
    async def observation_history(self, bank_id: str, observation_id: MemoryId) -> builtins.list[ObservationVersion]:
        """Every version of an observation, oldest first, each with its reason and timestamps."""
        ...

    @verb(Route("POST", f"{BANK}/mental-models", status=201), cli=True, renamed={"max_tokens": "max_answer_tokens"})
    async def create_mental_model(
        self,
        bank_id: str,
        name: str,
        question: str,
        *,
        tags: Tags = None,
        max_answer_tokens: TokenBudget = 512,
        refresh_every: RefreshEvery | None = None,
    ) -> MentalModel:
        """A named standing question, answered and kept fresh in the background (`refresh_every`: seconds,
        from 1 to 31,536,000, a year).

        `max_answer_tokens`: the longest answer kept; `tags`: only memories with one of these tags inform it."""
        ...

    @verb(Route("GET", f"{BANK}/mental-models/{{name}}"), mcp=True, cli=True)
    async def get_mental_model(self, bank_id: str, name: str) -> MentalModel:
        """A mental model's current content and state (fresh, stale, pending, failed), read with one query."""
        ...

    @verb(Route("GET", f"{BANK}/mental-models"), mcp=True, cli=True)
    async def mental_models(self, bank_id: str) -> builtins.list[MentalModel]:
        """The bank's mental models: named standing questions and their current answers."""
        ...

    @verb(Route("GET", f"{BANK}/mental-models/{{name}}/history"), cli=True)
    async def mental_model_history(self, bank_id: str, name: str) -> builtins.list[MentalModelVersion]:
        """Every version of a mental model's content, oldest first."""
        ...

    @verb(Route("POST", f"{BANK}/mental-models/{{name}}/refresh"), cli=True)
    async def refresh_mental_model(self, bank_id: str, name: str) -> MentalModel:
        """Regenerate a mental model now."""
        ...

    @verb(Route("DELETE", f"{BANK}/mental-models/{{name}}", status=204), cli=True)
    async def delete_mental_model(self, bank_id: str, name: str) -> None:
        """Delete a mental model and its history."""
        ...

    @verb(
        Route("POST", f"{BANK}/memories/{{memory_id}}/invalidate", status=204),
        mcp="invalidate_memory",
        cli=True,
        span=("invalidate", "update_memory"),
    )
    async def invalidate(self, bank_id: str, memory_id: MemoryId, reason: str = "") -> None:
        """Hide a memory from recall and from what was learnt from it, reversibly (`restore`)."""
        ...

    @verb(Route("POST", f"{BANK}/memories/{{memory_id}}/restore", status=204), mcp="restore_memory", cli=True)
    async def restore(self, bank_id: str, memory_id: MemoryId) -> None:
        """Undo `invalidate` (and the invalidations of observations it caused)."""
        ...
