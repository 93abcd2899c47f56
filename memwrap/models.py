"""Pydantic models that cross layers: what goes into retain and what comes out of recall."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field

# "raw": a piece of the retained text itself (no-LLM mode, or an extraction that has not happened yet).
# "world"/"experience": facts an LLM extracted (what others state vs what the assistant did).
# "observation": consolidated knowledge backed by evidence.
MemoryType = Literal["raw", "world", "experience", "observation"]
MEMORY_TYPES: tuple[str, ...] = ("raw", "world", "experience", "observation")

Arm = Literal["semantic", "keyword", "graph", "temporal"]


class RetainItem(BaseModel):
    """One thing to remember. `document_id` of the form "session:part" groups items into a session."""

    model_config = ConfigDict(extra="forbid")

    content: str
    timestamp: datetime | None = None
    context: str | None = None
    document_id: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    tags: list[str] = Field(default_factory=list)


class MemoryRecord(BaseModel):
    """A stored memory unit, as `list`/`get` return it."""

    id: UUID
    bank_id: str
    text: str
    type: MemoryType
    document_id: str | None = None
    context: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    tags: list[str] = Field(default_factory=list)
    entities: list[str] = Field(default_factory=list)
    occurred_start: datetime | None = None
    occurred_end: datetime | None = None
    mentioned_at: datetime | None = None
    created_at: datetime | None = None


class RecalledMemory(BaseModel):
    """A memory chosen by recall, with its fused score and its rank in each arm that found it (1 = best)."""

    id: UUID
    text: str
    type: MemoryType
    document_id: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    tags: list[str] = Field(default_factory=list)
    entities: list[str] = Field(default_factory=list)
    occurred_start: datetime | None = None
    occurred_end: datetime | None = None
    mentioned_at: datetime | None = None
    score: float = 0.0
    arms: dict[str, int] = Field(default_factory=dict)
    tokens: int = 0
    neighbour_of: UUID | None = None


class TimeWindow(BaseModel):
    start: datetime
    end: datetime
    expression: str


class Recall(BaseModel):
    """The result of a recall: `context` is exactly the block a wrapper injects; `tokens` is its exact size."""

    bank_id: str
    query: str
    context: str
    tokens: int
    max_tokens: int
    encoding: str
    memories: list[RecalledMemory] = Field(default_factory=list)
    time_window: TimeWindow | None = None
    candidates: int = 0
    timings_ms: dict[str, float] = Field(default_factory=dict)


class BankInfo(BaseModel):
    bank_id: str
    memories: int
    created_at: datetime | None = None
    last_retain_at: datetime | None = None
