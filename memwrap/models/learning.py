"""Learning: background jobs, observations with their evidence and history, mental models, consolidation."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal
from uuid import UUID

from pydantic import AliasChoices, BaseModel, Field

from memwrap.models.memories import _renamed

JobStatus = Literal["queued", "running", "done", "failed", "cancelled"]
Trend = Literal["new", "strengthening", "stable", "weakening", "stale"]
MentalModelStatus = Literal["pending", "fresh", "stale", "failed"]


class Job(BaseModel):
    """One row of the background work queue (`memwrap jobs`)."""

    id: int
    kind: str
    bank_id: str | None = None
    status: JobStatus
    attempts: int = 0
    max_attempts: int = 0
    payload: dict[str, Any] = Field(default_factory=dict)
    result: dict[str, Any] | None = None
    last_error: str | None = None
    locked_by: str | None = None
    run_after: datetime | None = None
    lease_until: datetime | None = None
    created_at: datetime | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None


class Evidence(BaseModel):
    """A source memory behind an observation: what it said and when. `source` identifies independent sources."""

    memory_id: UUID
    quote: str
    at: datetime
    source: str
    stance: Literal["supports", "superseded"] = "supports"
    active: bool = True  # False while the source memory is invalidated


class ObservationVersion(BaseModel):
    """One entry of an observation's history: the text it had from `valid_from` on, and why it changed."""

    version: int
    text: str
    action: str
    reason: str = ""
    proof_count: int = 0
    evidence_ids: list[UUID] = Field(default_factory=list)
    valid_from: datetime | None = None
    recorded_at: datetime | None = None


class Observation(BaseModel):
    """Consolidated knowledge (a memory of type 'observation') with the evidence it rests on."""

    id: UUID
    bank_id: str
    text: str
    tags: list[str] = Field(default_factory=list)
    origin: Literal["heuristic", "llm"]
    proof_count: int = 0
    evidence_count: int = 0
    trend: Trend = "new"
    version: int = 1
    first_evidence_at: datetime | None = None
    last_evidence_at: datetime | None = None
    created_at: datetime | None = None
    updated_at: datetime | None = None
    invalidated_at: datetime | None = None
    evidence: list[Evidence] = Field(default_factory=list)


class MentalModel(BaseModel):
    """A named standing question per bank and its current answer, kept up to date in the background."""

    id: UUID
    bank_id: str
    name: str
    question: str
    tags: list[str] = Field(default_factory=list)
    max_answer_tokens: int = Field(validation_alias=AliasChoices("max_answer_tokens", "max_tokens"))
    refresh_every: float | None = None
    content: str = ""
    version: int = 0
    status: MentalModelStatus = "pending"
    generator: str | None = None
    source_ids: list[UUID] = Field(default_factory=list)
    stale_since: datetime | None = None
    stale_reason: str | None = None
    last_error: str | None = None
    refreshed_at: datetime | None = None
    created_at: datetime | None = None

    @property
    def max_tokens(self) -> int:
        """Deprecated name of `max_answer_tokens`."""
        _renamed("MentalModel.max_tokens", "max_answer_tokens")
        return self.max_answer_tokens


class MentalModelVersion(BaseModel):
    version: int
    content: str
    generator: str
    source_ids: list[UUID] = Field(default_factory=list)
    reason: str = ""
    generated_at: datetime | None = None


class ConsolidationReport(BaseModel):
    """What one consolidation pass did."""

    bank_id: str
    units: int = 0
    created: int = 0
    updated: int = 0
    deleted: int = 0
    evidence_added: int = 0
    failed: int = 0
    mode: Literal["heuristic", "llm"] = "heuristic"
    llm_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
