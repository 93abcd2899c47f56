"""Provider-neutral shapes of LLM calls: messages, tools, tool calls, usage. Import them from memwrap.engine.llm.client.

They are the same for OpenAI-compatible endpoints and Anthropic; providers.py translates them to each
wire format, so a tool loop (reflect) or a structured call (extraction, consolidation) is written once.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from pydantic import BaseModel, Field

Role = Literal["extraction", "consolidation", "reflect"]
ROLES: tuple[Role, ...] = ("extraction", "consolidation", "reflect")
StopReason = Literal["stop", "tool_calls", "length", "other"]
# Used when MEMWRAP_LLM_MODEL is unset.
DEFAULT_MODELS = {"openai": "gpt-4o-mini", "anthropic": "claude-haiku-4-5"}


class Usage(BaseModel):
    """Tokens one call (or a sum of calls) cost, as the provider reported them."""

    prompt_tokens: int = 0  # every input token, cached ones included
    completion_tokens: int = 0
    cached_tokens: int = 0  # the part of prompt_tokens served from the provider's prompt cache
    calls: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            cached_tokens=self.cached_tokens + other.cached_tokens,
            calls=self.calls + other.calls,
        )


class ToolCall(BaseModel):
    id: str
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    # The model's argument text when it was not a JSON object (arguments is then {}): tell the model, retry.
    raw_arguments: str | None = None


class Message(BaseModel):
    """One message of a conversation. role "tool" answers the assistant's tool call `tool_call_id`."""

    role: Literal["system", "user", "assistant", "tool"]
    content: str = ""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    tool_call_id: str | None = None
    is_error: bool = False  # a tool result that reports a failure

    @classmethod
    def system(cls, text: str) -> Message:
        return cls(role="system", content=text)

    @classmethod
    def user(cls, text: str) -> Message:
        return cls(role="user", content=text)

    @classmethod
    def assistant(cls, text: str = "", tool_calls: list[ToolCall] | None = None) -> Message:
        return cls(role="assistant", content=text, tool_calls=list(tool_calls or []))

    @classmethod
    def tool_result(cls, tool_call_id: str, content: str, *, is_error: bool = False) -> Message:
        return cls(role="tool", content=content, tool_call_id=tool_call_id, is_error=is_error)


class Tool(BaseModel):
    """A function the model may call. `parameters` is a JSON schema of an object."""

    name: str
    description: str = ""
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})

    @classmethod
    def from_model(cls, model: type[BaseModel], *, name: str | None = None, description: str | None = None) -> Tool:
        """A tool whose arguments are `model` (validate a call with model.model_validate(call.arguments))."""
        return cls(
            name=name or snake_name(model.__name__),
            description=description if description is not None else (model.__doc__ or "").strip(),
            parameters=strict_schema(model),
        )


class ToolStep(BaseModel):
    """One model turn of a tool loop: text and/or tool calls. Append `message()` and the tool results, call again."""

    text: str = ""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    stop_reason: StopReason = "stop"
    usage: Usage = Field(default_factory=Usage)
    model: str = ""

    @property
    def done(self) -> bool:
        return not self.tool_calls

    def message(self) -> Message:
        return Message.assistant(self.text, self.tool_calls)


# --- what providers exchange with the LLM facade ---------------------------------------------------------


@dataclass
class ChatRequest:
    system: str
    messages: list[Message]
    tools: list[Tool] = field(default_factory=list)
    tool_choice: str | None = None  # "auto" | "required" | "none" | a tool's name
    json_schema: tuple[str, dict[str, Any]] | None = None  # (name, strict schema): structured output
    max_tokens: int = 4096  # always sent: a server's default output limit may be unbounded (llama.cpp's is)
    timeout: float | None = None  # seconds for this request; None: the client's (MEMWRAP_LLM_TIMEOUT)

    def with_messages(self, messages: list[Message]) -> ChatRequest:
        return replace(self, messages=messages)


@dataclass
class ChatResult:
    text: str
    tool_calls: list[ToolCall]
    stop_reason: StopReason
    usage: Usage
    model: str = ""
    # The server's own speed report when it gives one (llama.cpp `timings`): prompt and generation tokens/s.
    timings: tuple[float, float] | None = None


@dataclass
class ErrorInfo:
    """How the LLM facade should treat a provider exception."""

    kind: Literal["retry", "overflow", "reject", "schema_unsupported", "token_param"]
    message: str
    status: int | None = None
    retry_after: float | None = None  # seconds, from Retry-After / retry-after-ms


# --- JSON schema for structured output -------------------------------------------------------------------


def snake_name(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()[:64] or "result"


def strict_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The model's JSON schema in the form OpenAI's strict structured outputs accept, minus noise.

    Every object gets additionalProperties=false and lists all its properties as required (fields with
    defaults stay optional for our own validation, which is pydantic's). Titles and defaults are dropped:
    they cost prompt tokens on every call and say nothing the field names do not.
    """
    return _strict(model.model_json_schema())


# Titles and defaults only cost tokens; OpenAI's strict mode rejects length and count bounds (pydantic checks them).
_DROPPED = frozenset({"title", "default", "minLength", "maxLength", "minItems", "maxItems"})


def _strict(node: Any) -> Any:
    if isinstance(node, list):
        return [_strict(n) for n in node]
    if not isinstance(node, dict):
        return node
    out = {k: _strict(v) for k, v in node.items() if k not in _DROPPED}
    if "properties" in node and isinstance(node["properties"], dict):
        # property names are data here, not keywords: keep a property called "title"
        out["properties"] = {name: _strict(sub) for name, sub in node["properties"].items()}
    if out.get("type") == "object" or "properties" in out:
        out["additionalProperties"] = False
        out["required"] = list(out.get("properties", {}))
    if "$ref" in out and len(out) > 1:
        out = {"$ref": out["$ref"]}  # strict mode forbids siblings of $ref (a description, usually)
    return out
