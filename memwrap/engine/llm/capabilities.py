"""What an LLM server can do, found out once per model: native tool calls, a named tool_choice, JSON schema.

OpenAI and Anthropic themselves do all three. A server that speaks their API may not: llama.cpp with a small
model writes tool calls as text (and `tool_calls` stays empty), refuses a named tool_choice object, and follows a
`response_format` JSON schema through a grammar. Reflect picks its protocol from this (native tool calls, or a
JSON-schema "next action" loop), and its forced synthesis avoids a named tool_choice where it is refused.

The probe is three tiny requests (max_tokens 48) to an endpoint that is not OpenAI's or Anthropic's own;
MEMWRAP_LLM_TOOL_PROTOCOL=native|json skips it.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from memwrap.engine.llm.types import ChatRequest, ChatResult, Message, Tool
from memwrap.errors import LLMUnavailableError

log = logging.getLogger("memwrap.llm")

PROBE_TOKENS = 48
PROBE_TIMEOUT = 300.0  # a slow local server answers a tiny prompt in seconds; one still loading may take longer
_PROBE_TOOL = Tool(
    name="lookup",
    description="Look something up.",
    parameters={
        "type": "object",
        "properties": {"query": {"type": "string"}},
        "required": ["query"],
        "additionalProperties": False,
    },
)
_PROBE_SCHEMA = (
    "probe",
    {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"], "additionalProperties": False},
)
_HOSTED = ("api.openai.com", "api.anthropic.com")


@dataclass(frozen=True)
class Capabilities:
    native_tools: bool = True  # tool calls come back as tool calls, not as text
    named_tool_choice: bool = True  # tool_choice naming one tool is accepted
    json_schema: bool = True  # response_format json_schema is accepted (and followed)

    @property
    def protocol(self) -> str:
        """Reflect's protocol: "native" tool calls, or "json" next-action replies."""
        return "native" if self.native_tools or not self.json_schema else "json"


Call = Callable[[Any, ChatRequest], Awaitable[ChatResult]]


async def detect_capabilities(provider: Any, protocol: str, call: Call) -> Capabilities:
    """Probe `provider` unless told (protocol "native"/"json") or it is OpenAI's or Anthropic's own API."""
    if protocol == "native":
        return Capabilities()
    if protocol == "json":
        return Capabilities(native_tools=False, named_tool_choice=False, json_schema=provider.schema_supported)
    if provider.name == "anthropic" or any(host in provider.endpoint for host in _HOSTED):
        return Capabilities()
    ask = [Message.user("Call the lookup tool with the query 'weather'.")]
    named = await _answers(
        call, provider, ChatRequest("", ask, [_PROBE_TOOL], "lookup", None, PROBE_TOKENS, PROBE_TIMEOUT)
    )
    auto = named
    if named is None:
        auto = await _answers(
            call, provider, ChatRequest("", ask, [_PROBE_TOOL], "auto", None, PROBE_TOKENS, PROBE_TIMEOUT)
        )
    native = auto is not None and any(c.name == "lookup" for c in auto.tool_calls)
    schema_reply = await _answers(
        call,
        provider,
        ChatRequest(
            "",
            [Message.user('Reply {"ok": true}.')],
            json_schema=_PROBE_SCHEMA,
            max_tokens=PROBE_TOKENS,
            timeout=PROBE_TIMEOUT,
        ),
    )
    schema = schema_reply is not None and _is_probe_json(schema_reply.text)
    if not schema:
        provider.schema_supported = False
    found = Capabilities(native_tools=native, named_tool_choice=named is not None and native, json_schema=schema)
    log.info(
        "%s %s at %s: native tool calls %s, named tool_choice %s, JSON schema %s",
        provider.name,
        provider.model,
        provider.endpoint,
        found.native_tools,
        found.named_tool_choice,
        found.json_schema,
    )
    return found


async def _answers(call: Call, provider: Any, request: ChatRequest) -> ChatResult | None:
    """The reply, or None when the server refused the request (a 4xx: it does not take this form)."""
    try:
        return await call(provider, request)
    except Exception as exc:  # a refusal is the answer we are looking for
        info = provider.classify(exc, request)
        if info is None:
            raise
        if info.kind == "retry":
            raise LLMUnavailableError(
                f"{provider.name} {provider.model} did not answer the capability probe: {info.message[:300]}"
            ) from exc
        return None


def _is_probe_json(text: str) -> bool:
    try:
        value = json.loads(text.strip())
    except (json.JSONDecodeError, AttributeError):
        return False
    return isinstance(value, dict) and isinstance(value.get("ok"), bool)


__all__ = ["Capabilities", "detect_capabilities"]
