"""What goes into retain and what comes out of recall, get and list; a memory's versions; import and delete
reports."""

from __future__ import annotations

import enum
import warnings
from datetime import datetime
from typing import Any, Literal
from uuid import UUID

from pydantic import AliasChoices, BaseModel, ConfigDict, Field


def _renamed(old: str, new: str) -> None:
    warnings.warn(
        f"{old} is now {new}; the old name will stop working in a later release.", DeprecationWarning, stacklevel=3
    )


class Keep(enum.Enum):
    """The default of a setting `configure_bank` changes only when given: absent keeps it, None resets it."""

    KEEP = "keep"

    def __repr__(self) -> str:
        return "KEEP"


KEEP = Keep.KEEP

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
    expires_at: datetime | None = None  # past it, the memory is no longer recalled (None: never)


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
    speaker: str | None = Field(default=None, description='who said it: "user", "assistant", a participant\'s name')
    expires_at: datetime | None = Field(default=None, description="when it stops being recalled (None: never)")
    invalidated_at: datetime | None = Field(
        default=None, description="when it was invalidated (None: it is not); `restore` brings it back"
    )


class RecalledMemory(BaseModel):
    """A memory chosen by recall, with its fused score and its rank in each arm that found it (1 = best)."""

    id: UUID
    bank_id: str | None = None  # the bank it came from (a recall may read several)
    text: str
    type: MemoryType
    document_id: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    tags: list[str] = Field(default_factory=list)
    entities: list[str] = Field(default_factory=list)
    occurred_start: datetime | None = None
    occurred_end: datetime | None = None
    mentioned_at: datetime | None = None
    speaker: str | None = Field(default=None, description='who said it: "user", "assistant", a participant\'s name')
    session_id: str | None = Field(default=None, description="the conversation it belongs to (session_key)")
    message_id: str | None = Field(
        default=None,
        description="the message a chunk belongs to: the same for every chunk of one long message (None when the "
        "message is one memory)",
    )
    part: int | None = Field(default=None, description="which chunk of its message this is (0 = the first)")
    parts: int | None = Field(default=None, description="how many chunks its message was split into")
    replaced_by: UUID | None = Field(
        default=None, description="a newer memory among those recalled that states a change of what this one says"
    )
    replaced_at: datetime | None = Field(default=None, description="when that newer memory was said")
    score: float = 0.0
    arms: dict[str, int] = Field(default_factory=dict)
    tokens: int = 0
    neighbour_of: UUID | None = None


class ConsideredMemory(RecalledMemory):
    """A candidate recall weighed for the block (recall with explain=True), in ranking order."""

    rank: int = Field(description="1-based place in the final ranking (after fusion, rerank, observations)")
    fit: bool = Field(description="whether its line went into the block")
    line: str = Field(description="the line exactly as rendered into the block")
    budget_left: int = Field(description="tokens of the budget left when this line was weighed")
    reason: str = Field(default="", description="why it was left out (empty when it fit)")


class TimeWindow(BaseModel):
    start: datetime
    end: datetime
    expression: str
    vague: bool = Field(default=False, description='a rough window ("recently": the last 30 days), not a date')


class Recall(BaseModel):
    """The result of a recall: `context` is exactly the block a wrapper injects; `tokens` is its exact size."""

    bank_id: str
    query: str
    context: str
    tokens: int
    token_budget: int = Field(validation_alias=AliasChoices("token_budget", "max_tokens"))
    bank_ids: list[str] = Field(default_factory=list)  # every bank read, bank_id first
    encoding: str
    memories: list[RecalledMemory] = Field(default_factory=list)
    time_window: TimeWindow | None = None
    candidates: int = 0
    timings_ms: dict[str, float] = Field(default_factory=dict)
    considered: list[ConsideredMemory] | None = Field(
        default=None, description="explain=True: every candidate weighed, fit or not (tokens = its line's cost)"
    )

    @property
    def max_tokens(self) -> int:
        """Deprecated name of `token_budget`."""
        _renamed("Recall.max_tokens", "token_budget")
        return self.token_budget


class BankInfo(BaseModel):
    bank_id: str
    memories: int
    created_at: datetime | None = None
    last_retain_at: datetime | None = None
    config: dict[str, Any] = Field(default_factory=dict)  # its stored settings, as bank_config(bank_id) gives them


# --- update and history of a memory (memwrap/engine/update.py) ------------------------------------------------

MemoryField = Literal["text", "metadata", "tags", "occurred"]


class MemoryVersion(BaseModel):
    """One version of a memory: what it said from `valid_from` until `valid_until` (None: it still does), and
    which fields differ from the version before it (`changed`; empty for the first)."""

    version: int
    text: str
    metadata: dict[str, Any] = Field(default_factory=dict)
    tags: list[str] = Field(default_factory=list)
    occurred_start: datetime | None = None
    occurred_end: datetime | None = None
    valid_from: datetime | None = None
    valid_until: datetime | None = None
    changed: list[MemoryField] = Field(default_factory=list)
    current: bool = False


# --- export / import of a bank (memwrap/engine/transfer/bank_stream.py) -------------------------------------------


class ImportReport(BaseModel):
    """What `import_bank` did: records read and rows written by kind. Rows already present are skipped (not
    counted as written), so importing the same file twice writes nothing the second time."""

    bank_id: str
    read: dict[str, int] = Field(default_factory=dict)
    written: dict[str, int] = Field(default_factory=dict)
    embedded: int = 0  # memories embedded on import (the file had no vector for them, or one of another size)


class DeleteReport(BaseModel):
    """What `delete_memories` found (`matched`) and removed (`deleted`: 0 on a dry run)."""

    bank_id: str
    matched: int
    deleted: int
    dry_run: bool
