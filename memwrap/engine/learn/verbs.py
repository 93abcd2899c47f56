"""The learning verbs of the engine (jobs, observations, mental models, forgetting), checked at the boundary.

`Engine` inherits them; each validates its input and delegates to `self.learning` (service.py). Kept apart so
the engine module stays about retain and recall, and so a remote engine (HTTP client) can mirror one list.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, get_args
from uuid import UUID

from memwrap import validate
from memwrap.defense.policy import defend
from memwrap.engine.learn.observation_views import ObservationSelection
from memwrap.errors import InvalidInputError
from memwrap.models import (
    MAX_PAGE,
    MAX_PAGE_OFFSET,
    ConsolidationReport,
    Job,
    JobStatus,
    MentalModel,
    MentalModelVersion,
    Observation,
    ObservationVersion,
)

if TYPE_CHECKING:
    from memwrap.engine.learn.service import Learning

MAX_REASON_CHARS = 2000


def _status(value: str | None) -> str | None:
    if value is not None and value not in get_args(JobStatus):
        raise InvalidInputError(f"Unknown job status {value!r}; choose from {list(get_args(JobStatus))}.")
    return value


_JOB_KIND = re.compile(r"[A-Za-z0-9_.:-]{1,100}")


def _kind(value: str | None) -> str | None:
    """A job kind is a short name ("consolidate", "mental_model"): anything else is refused, not sent to SQL."""
    if value is not None and not (isinstance(value, str) and _JOB_KIND.fullmatch(value)):
        raise InvalidInputError(
            "kind is a job kind's name: up to 100 letters, digits, '_', '.', ':' or '-' (e.g. 'consolidate')."
        )
    return value


def _limit(limit: int) -> int:
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_PAGE:
        raise InvalidInputError(f"limit is an integer from 1 to {MAX_PAGE}.")
    return limit


class LearningVerbs:
    learning: Learning

    async def defense_policy(self, bank_id: str) -> str:  # Engine.defense_policy
        raise NotImplementedError

    async def _defended(self, bank_id: str, **fields: Any) -> dict[str, Any]:  # each value keeps its type
        """What a person or an agent wrote, through the bank's memory defense before it is stored."""
        return defend(fields, await self.defense_policy(bank_id))

    # --- jobs ------------------------------------------------------------------------------------------------

    async def jobs(
        self, bank_id: str | None = None, *, status: str | None = None, kind: str | None = None, limit: int = 100
    ) -> list[Job]:
        """The job queue, newest first: what the background worker did, does and will do."""
        bank = validate.bank_id(bank_id) if bank_id is not None else None
        return await self.learning.jobs(bank_id=bank, status=_status(status), kind=_kind(kind), limit=_limit(limit))

    async def wait_for_jobs(self, bank_id: str | None = None, *, timeout: float = 60.0) -> bool:
        """Wait until no job (of the bank) is queued or running; False if `timeout` seconds pass first."""
        bank = validate.bank_id(bank_id) if bank_id is not None else None
        return await self.learning.wait_for_jobs(bank, timeout)

    # --- observations ----------------------------------------------------------------------------------------

    async def consolidate(self, bank_id: str) -> ConsolidationReport:
        """Consolidate the bank's pending facts now, in this process (the worker does it in the background)."""
        return await self.learning.consolidate(validate.bank_id(bank_id))

    async def observations(
        self,
        bank_id: str,
        *,
        tags: Sequence[str] | None = None,
        include_invalidated: bool = False,
        limit: int = 100,
        offset: int = 0,
        now: datetime | None = None,
    ) -> list[Observation]:
        selection = ObservationSelection(
            validate.bank_id(bank_id),
            now=validate.timestamp(now) or datetime.now(UTC),
            tags=validate.tags(tags),
            include_invalidated=include_invalidated,
            limit=_limit(limit),
            offset=validate.bounded(offset, what="offset", low=0, high=MAX_PAGE_OFFSET),
        )
        return await self.learning.observations(selection)

    async def get_observation(
        self, bank_id: str, observation_id: UUID | str, *, now: datetime | None = None
    ) -> Observation:
        """One observation with all its evidence (quote, time, source, stance)."""
        return await self.learning.observation(
            validate.bank_id(bank_id), validate.memory_id(observation_id), validate.timestamp(now)
        )

    async def observation_history(self, bank_id: str, observation_id: UUID | str) -> list[ObservationVersion]:
        """Every version of the observation, oldest first, each with its reason and timestamps."""
        return await self.learning.observation_history(validate.bank_id(bank_id), validate.memory_id(observation_id))

    # --- mental models ---------------------------------------------------------------------------------------

    async def create_mental_model(
        self,
        bank_id: str,
        name: str,
        question: str,
        *,
        tags: Sequence[str] | None = None,
        max_answer_tokens: int = 512,
        refresh_every: float | None = None,
    ) -> MentalModel:
        """A standing question, answered in the background (status 'pending' until the first refresh)."""
        bank_id = validate.bank_id(bank_id)
        defended = await self._defended(bank_id, name=name, question=validate.query(question), tags=validate.tags(tags))
        return await self.learning.create_mental_model(
            bank_id,
            defended["name"],
            defended["question"],
            tags=defended["tags"],
            max_tokens=validate.budget(max_answer_tokens, what="max_answer_tokens"),
            refresh_every=refresh_every,
        )

    async def get_mental_model(self, bank_id: str, name: str) -> MentalModel:
        """The model's current content and state: one SQL query."""
        return await self.learning.get_mental_model(validate.bank_id(bank_id), name)

    async def mental_models(self, bank_id: str) -> list[MentalModel]:
        return await self.learning.mental_models(validate.bank_id(bank_id))

    async def mental_model_history(self, bank_id: str, name: str) -> list[MentalModelVersion]:
        return await self.learning.mental_model_history(validate.bank_id(bank_id), name)

    async def refresh_mental_model(self, bank_id: str, name: str) -> MentalModel:
        """Regenerate the content now, in this process."""
        return await self.learning.refresh_mental_model(validate.bank_id(bank_id), name)

    async def delete_mental_model(self, bank_id: str, name: str) -> None:
        await self.learning.delete_mental_model(validate.bank_id(bank_id), name)

    async def export(self, directory: str | Path, *, bank_id: str | None = None) -> list[Path]:
        """Write mental models and observations as Markdown files under `directory`; returns the paths."""
        bank = validate.bank_id(bank_id) if bank_id is not None else None
        return await self.learning.export(Path(directory), bank)

    # --- forgetting ------------------------------------------------------------------------------------------

    async def invalidate(self, bank_id: str, memory_id: UUID | str, reason: str = "") -> None:
        """Hide a memory from recall and from what was learnt from it, reversibly (`restore`)."""
        if not isinstance(reason, str) or len(reason) > MAX_REASON_CHARS:
            raise InvalidInputError(f"reason is a string of at most {MAX_REASON_CHARS} characters.")
        bank_id, memory_id = validate.bank_id(bank_id), validate.memory_id(memory_id)
        reason = str((await self._defended(bank_id, reason=reason))["reason"])
        await self.learning.invalidate(bank_id, memory_id, reason)

    async def restore(self, bank_id: str, memory_id: UUID | str) -> None:
        """Undo `invalidate` (and the invalidations of observations it caused)."""
        await self.learning.restore(validate.bank_id(bank_id), validate.memory_id(memory_id))

    async def expire(self, bank_id: str, *, now: datetime | None = None) -> int:
        """Delete the bank's raw facts past its TTL now. Returns how many."""
        return await self.learning.expire(validate.bank_id(bank_id), validate.timestamp(now))
