"""Reflect: the tool-loop agent over mental models, observations and facts (memwrap/engine/reflect)."""

from __future__ import annotations

from typing import Any, Literal
from uuid import UUID

from pydantic import AliasChoices, BaseModel, ConfigDict, Field

from memwrap.models.memories import _renamed


class Disposition(BaseModel):
    """How a bank's reflect reasons and speaks (1-5 each, 3 is neutral), plus free-text directives.

    Stored per bank (`configure_bank(bank, disposition={...})`); a reflect call may override any part of it.
    """

    model_config = ConfigDict(extra="forbid")

    skepticism: int = Field(default=3, ge=1, le=5, description="1 takes memories at face value; 5 wants corroboration")
    literalism: int = Field(default=3, ge=1, le=5, description="1 reads intent between the lines; 5 only what is said")
    empathy: int = Field(default=3, ge=1, le=5, description="1 matter-of-fact; 5 warm and attentive to feelings")
    directives: list[str] = Field(default_factory=list, description="free-text rules the answer must follow")


class ReflectUsage(BaseModel):
    """What one reflect cost: LLM tokens and calls (loop and synthesis together), and time."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    calls: int = 0  # LLM requests, retries of one request not counted
    tool_calls: int = 0
    latency_ms: float = 0.0  # wall clock of the whole reflect
    llm_ms: float = 0.0  # of which waiting for the LLM
    tools_ms: float = 0.0  # of which running tools (concurrent calls of a turn count once)


TraceKind = Literal["llm", "tool", "synthesis", "limit"]


class ReflectTraceEntry(BaseModel):
    """One step of a reflect: an LLM turn, a tool call, or the forced synthesis."""

    kind: TraceKind
    iteration: int
    name: str = ""  # the tool's name (kind "tool"), the limit hit (kind "limit")
    arguments: dict[str, Any] = Field(default_factory=dict)
    cap_tokens: int | None = None  # the most tokens the tool's result was allowed (its share of the budget)
    result_tokens: int = 0  # size of what the model was shown (tool result, or the LLM's reply)
    result_chars: int = 0
    truncated: bool = False  # the result was cut to its cap
    request_tokens: int | None = None  # LLM turns: our count of the prompt sent
    latency_ms: float = 0.0
    error: str | None = None
    detail: str | None = None


class ReflectResult(BaseModel):
    """The answer of `reflect`, the memories it cites, and how it got there.

    `forced`: a limit (iterations, context budget, time) or a context overflow ended the loop, and the answer was
    synthesised from what had been gathered. `unknown_ids`: ids the model cited that are not in the bank (dropped).
    """

    bank_id: str
    query: str
    answer: str
    structured: Any = None
    memory_ids: list[UUID] = Field(default_factory=list)
    mental_model_ids: list[UUID] = Field(default_factory=list)
    citations: dict[str, UUID] = Field(default_factory=dict)  # the short refs the model used (F3, O1, M2) -> ids
    unknown_ids: list[str] = Field(default_factory=list)
    iterations: int = 0
    forced: bool = False
    forced_reason: str | None = None  # iterations | context_budget | timeout | context_overflow | uncited
    context_budget: int = Field(default=0, validation_alias=AliasChoices("context_budget", "max_tokens"))
    disposition: Disposition = Field(default_factory=Disposition)
    usage: ReflectUsage = Field(default_factory=ReflectUsage)
    trace: list[ReflectTraceEntry] = Field(default_factory=list)

    @property
    def max_tokens(self) -> int:
        """Deprecated name of `context_budget`."""
        _renamed("ReflectResult.max_tokens", "context_budget")
        return self.context_budget
