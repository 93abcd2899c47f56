"""Structured replies: the request that asks for a JSON schema (or describes it in the prompt, for an endpoint
that rejects schemas), and the reply read back as the pydantic model (repaired where it can be, else an error
that says what does not match). client.LLM.structured drives them, re-asking once."""

from __future__ import annotations

import json
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from memwrap.engine.llm.json_reply import repair_json
from memwrap.engine.llm.providers import Provider
from memwrap.engine.llm.types import ChatRequest, ChatResult, Message
from memwrap.errors import LLMOutputError

__all__ = ["REASK", "OutputTruncatedError", "parse_reply", "raw_reply", "structured_request"]


class OutputTruncatedError(LLMOutputError):
    """The reply hit the output token limit: whatever parsed may be missing its end. Ask for less per call."""


T = TypeVar("T", bound=BaseModel)

# What a model is told when its structured reply did not validate (one re-ask, then LLMOutputError).
REASK = (
    "Your reply could not be used: {error}\n"
    "Reply again with only the corrected JSON object, following the required structure exactly."
)
_PROMPT_FOR_JSON = "\n\nReply with only one JSON object (no prose, no code fence) that follows this JSON schema:\n"


def structured_request(
    provider: Provider,
    system: str,
    messages: list[Message],
    json_schema: tuple[str, dict[str, Any]],
    max_tokens: int,
) -> ChatRequest:
    if provider.schema_supported:
        return ChatRequest(system, messages, json_schema=json_schema, max_tokens=max_tokens)
    # The endpoint rejected schemas once: describe the schema in the (still stable) system prompt.
    schema_text = json.dumps(json_schema[1], ensure_ascii=False, separators=(",", ":"))
    return ChatRequest(system + _PROMPT_FOR_JSON + schema_text, messages, max_tokens=max_tokens)


def raw_reply(result: ChatResult) -> str:
    if result.tool_calls:
        call = result.tool_calls[0]
        return call.raw_arguments if call.raw_arguments is not None else json.dumps(call.arguments, ensure_ascii=False)
    return result.text


def parse_reply(result: ChatResult, schema: type[T]) -> T:
    if result.stop_reason == "length":
        raise OutputTruncatedError("the reply was cut off at the output token limit")
    if result.tool_calls and result.tool_calls[0].raw_arguments is None:
        data: Any = result.tool_calls[0].arguments
    else:
        data = repair_json(raw_reply(result), truncated=result.stop_reason == "length")
    try:
        return schema.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'reply'}: {e['msg']}" for e in exc.errors()[:8])
        raise LLMOutputError(f"the reply does not match the required structure ({problems})") from None
