"""Wire adapters: neutral ChatRequest → one provider call through its official async SDK → ChatResult.

Retries, the concurrency limit, structured-output parsing and usage totals live in llm.py; an adapter only
translates and classifies errors. The SDKs' own retries are off (max_retries=0) so that one policy, ours,
decides (and honours Retry-After).
"""

from __future__ import annotations

import json
import re
import time
from email.utils import parsedate_to_datetime
from typing import Any, Protocol

from memwrap.engine.llm.types import ChatRequest, ChatResult, ErrorInfo, Message, StopReason, ToolCall, Usage

# The SDKs are imported where used: anthropic alone takes ~1 s to import, and a provider needs only its own.

# Provider messages that mean "the prompt is longer than the context window" (OpenAI, Anthropic, vLLM,
# llama.cpp, Ollama word it differently).
_OVERFLOW_RE = re.compile(
    r"context[_ ]length|context window|maximum context|prompt is too long|too many tokens|"
    r"exceeds? the (?:model'?s? )?(?:maximum|max)|input is too long|reduce the length",
    re.IGNORECASE,
)
# A 400/422 naming these, on a request that asked for a JSON schema, means the endpoint does not support it.
_SCHEMA_RE = re.compile(r"response_format|json_schema|structured output|guided|grammar|schema", re.IGNORECASE)
_RETRY_STATUS = frozenset({408, 409, 425, 429})
# A 400 naming the output-limit parameter: the server wants the other name (max_tokens / max_completion_tokens).
_TOKEN_PARAM_RE = re.compile(r"max_(?:completion_)?tokens", re.IGNORECASE)


class Provider(Protocol):
    name: str
    model: str
    schema_supported: bool  # False once the endpoint rejected a JSON-schema request; then we prompt for JSON

    @property
    def endpoint(self) -> str: ...

    async def chat(self, request: ChatRequest) -> ChatResult: ...

    def classify(self, exc: BaseException, request: ChatRequest) -> ErrorInfo | None: ...

    async def aclose(self) -> None: ...


def retry_after_seconds(headers: Any) -> float | None:
    """Seconds a 429/5xx response asks us to wait: retry-after-ms, or Retry-After (seconds or an HTTP date)."""
    if headers is None:
        return None
    value = headers.get("retry-after-ms")
    if value:
        try:
            return max(0.0, float(value) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError, IndexError):
        return None


def _classify_status(status: int, message: str, headers: Any, request: ChatRequest) -> ErrorInfo:
    if status in _RETRY_STATUS or status >= 500:
        return ErrorInfo("retry", message, status, retry_after_seconds(headers))
    if status == 413 or (status in (400, 422) and _OVERFLOW_RE.search(message)):
        return ErrorInfo("overflow", message, status)
    if status in (400, 422) and request.json_schema is not None and _SCHEMA_RE.search(message):
        return ErrorInfo("schema_unsupported", message, status)
    if status in (400, 422) and _TOKEN_PARAM_RE.search(message):
        return ErrorInfo("token_param", message, status)
    return ErrorInfo("reject", message, status)


def _is_openai(client: Any) -> bool:
    host = getattr(getattr(client, "base_url", None), "host", "") or ""
    return host == "api.openai.com" or host.endswith(".openai.azure.com")


def _timings(response: Any) -> tuple[float, float] | None:
    """llama.cpp's `timings` (prompt_per_second, predicted_per_second), kept by the SDK as an extra field."""
    extra = getattr(response, "model_extra", None) or {}
    timings = extra.get("timings") if isinstance(extra, dict) else None
    if not isinstance(timings, dict):
        return None
    prompt, predicted = timings.get("prompt_per_second"), timings.get("predicted_per_second")
    if isinstance(prompt, (int, float)) and isinstance(predicted, (int, float)) and prompt > 0 and predicted > 0:
        return float(prompt), float(predicted)
    return None


def _arguments(raw: str | dict[str, Any] | None) -> tuple[dict[str, Any], str | None]:
    if isinstance(raw, dict):
        return raw, None
    try:
        parsed = json.loads(raw or "{}")
    except json.JSONDecodeError:
        return {}, raw
    return (parsed, None) if isinstance(parsed, dict) else ({}, raw)


# ---------------------------------------------------------------------------------------------- OpenAI


class OpenAIProvider:
    """OpenAI and every endpoint that speaks its Chat Completions API (vLLM, Ollama, llama.cpp server, ...)."""

    name = "openai"

    def __init__(self, model: str, client: Any, *, owns_client: bool = True) -> None:  # openai.AsyncOpenAI
        self.model = model
        self.client = client
        self.owns_client = owns_client  # False: the app's own client (its connections are the app's to close)
        self.schema_supported = True
        self.token_param = "max_completion_tokens" if _is_openai(client) else "max_tokens"

    @property
    def endpoint(self) -> str:
        return str(getattr(self.client, "base_url", "") or "")

    async def chat(self, request: ChatRequest) -> ChatResult:
        kwargs: dict[str, Any] = {"model": self.model, "messages": self._messages(request)}
        if request.tools:
            kwargs["tools"] = [
                {
                    "type": "function",
                    "function": {"name": t.name, "description": t.description, "parameters": t.parameters},
                }
                for t in request.tools
            ]
            if request.tool_choice in ("auto", "required", "none"):
                kwargs["tool_choice"] = request.tool_choice
            elif request.tool_choice:
                kwargs["tool_choice"] = {"type": "function", "function": {"name": request.tool_choice}}
        if request.json_schema is not None:
            name, schema = request.json_schema
            kwargs["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": name, "schema": schema, "strict": True},
            }
        # Always bounded: a compatible server's default may be unlimited output (llama.cpp's is). OpenAI itself
        # wants max_completion_tokens (its reasoning models reject max_tokens); most other servers know only
        # max_tokens. A server that refuses the name we chose gets the other one (llm.py, "token_param").
        kwargs[self.token_param] = request.max_tokens
        if request.timeout is not None:
            kwargs["timeout"] = request.timeout
        response = await self.client.chat.completions.create(**kwargs)
        choice = response.choices[0]
        message = choice.message
        calls = []
        for call in message.tool_calls or []:
            function = getattr(call, "function", None)
            if function is None:
                continue
            arguments, raw = _arguments(function.arguments)
            calls.append(ToolCall(id=call.id, name=function.name, arguments=arguments, raw_arguments=raw))
        usage = Usage(calls=1)
        if response.usage is not None:
            details = getattr(response.usage, "prompt_tokens_details", None)
            usage = Usage(
                prompt_tokens=response.usage.prompt_tokens or 0,
                completion_tokens=response.usage.completion_tokens or 0,
                cached_tokens=(getattr(details, "cached_tokens", 0) or 0) if details else 0,
                calls=1,
            )
        stop: StopReason = {
            "stop": "stop",
            "tool_calls": "tool_calls",
            "function_call": "tool_calls",
            "length": "length",
        }.get(choice.finish_reason or "stop", "other")  # type: ignore[assignment]  # every value is a FinishReason
        return ChatResult(message.content or "", calls, stop, usage, response.model or self.model, _timings(response))

    def switch_token_param(self) -> None:
        self.token_param = "max_tokens" if self.token_param == "max_completion_tokens" else "max_completion_tokens"

    @staticmethod
    def _messages(request: ChatRequest) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = [{"role": "system", "content": request.system}] if request.system else []
        for m in request.messages:
            if m.role == "tool":
                out.append({"role": "tool", "tool_call_id": m.tool_call_id or "", "content": m.content})
            elif m.role == "assistant" and m.tool_calls:
                out.append(
                    {
                        "role": "assistant",
                        "content": m.content or None,
                        "tool_calls": [
                            {
                                "id": c.id,
                                "type": "function",
                                "function": {"name": c.name, "arguments": c.raw_arguments or json.dumps(c.arguments)},
                            }
                            for c in m.tool_calls
                        ],
                    }
                )
            else:
                out.append({"role": m.role, "content": m.content})
        return out

    def classify(self, exc: BaseException, request: ChatRequest) -> ErrorInfo | None:
        import openai

        if isinstance(exc, openai.APIConnectionError):  # includes APITimeoutError
            return ErrorInfo("retry", f"{type(exc).__name__}: {exc}")
        if isinstance(exc, openai.APIStatusError):
            return _classify_status(exc.status_code, str(exc.message), exc.response.headers, request)
        if isinstance(exc, openai.APIResponseValidationError):
            return ErrorInfo("retry", f"unreadable response: {exc}")
        return None

    async def aclose(self) -> None:
        if self.owns_client:
            await self.client.close()


# ---------------------------------------------------------------------------------------------- Anthropic


class AnthropicProvider:
    name = "anthropic"

    def __init__(self, model: str, client: Any, *, owns_client: bool = True) -> None:  # anthropic.AsyncAnthropic
        self.model = model
        self.client = client
        self.owns_client = owns_client  # False: the app's own client (its connections are the app's to close)
        self.schema_supported = True

    @property
    def endpoint(self) -> str:
        return str(getattr(self.client, "base_url", "") or "")

    async def chat(self, request: ChatRequest) -> ChatResult:
        system = "\n\n".join([request.system, *(m.content for m in request.messages if m.role == "system")]).strip()
        kwargs: dict[str, Any] = {
            "model": self.model,
            "max_tokens": request.max_tokens,
            "messages": self._messages(request.messages),
        }
        if system:
            # The system prompt is the stable prefix: mark it so Anthropic caches it (ignored below its minimum size).
            kwargs["system"] = [{"type": "text", "text": system, "cache_control": {"type": "ephemeral"}}]
        tools = [{"name": t.name, "description": t.description, "input_schema": t.parameters} for t in request.tools]
        choice: dict[str, Any] | None = None
        if request.json_schema is not None:
            name, schema = request.json_schema
            tools.append(
                {"name": name, "description": "Record the result in exactly this structure.", "input_schema": schema}
            )
            choice = {"type": "tool", "name": name}
        elif request.tool_choice == "required":
            choice = {"type": "any"}
        elif request.tool_choice in ("auto", "none"):
            choice = {"type": request.tool_choice}
        elif request.tool_choice:
            choice = {"type": "tool", "name": request.tool_choice}
        if tools:
            kwargs["tools"] = tools
            if choice is not None:
                kwargs["tool_choice"] = choice
        if request.timeout is not None:
            kwargs["timeout"] = request.timeout
        response = await self.client.messages.create(**kwargs)
        texts: list[str] = []
        calls: list[ToolCall] = []
        for block in response.content:
            if block.type == "text":
                texts.append(block.text)
            elif block.type == "tool_use":
                arguments, raw = _arguments(block.input if isinstance(block.input, dict) else str(block.input))
                calls.append(ToolCall(id=block.id, name=block.name, arguments=arguments, raw_arguments=raw))
        u = response.usage
        cache_read = getattr(u, "cache_read_input_tokens", 0) or 0
        cache_write = getattr(u, "cache_creation_input_tokens", 0) or 0
        usage = Usage(
            prompt_tokens=(u.input_tokens or 0) + cache_read + cache_write,
            completion_tokens=u.output_tokens or 0,
            cached_tokens=cache_read,
            calls=1,
        )
        stop: StopReason = {
            "end_turn": "stop",
            "stop_sequence": "stop",
            "tool_use": "tool_calls",
            "max_tokens": "length",
        }.get(response.stop_reason or "end_turn", "other")  # type: ignore[assignment]  # every value is a FinishReason
        if request.json_schema is not None and stop == "tool_calls":
            stop = "stop"  # the forced tool is the answer, not a request to run something
        return ChatResult("".join(texts), calls, stop, usage, response.model or self.model)

    @staticmethod
    def _messages(messages: list[Message]) -> list[dict[str, Any]]:
        """Anthropic wants user/assistant alternation; tool results are user content blocks."""
        out: list[dict[str, Any]] = []
        for m in messages:
            if m.role == "system":
                continue  # joined into the system prompt
            if m.role == "assistant":
                blocks: list[dict[str, Any]] = [{"type": "text", "text": m.content}] if m.content else []
                blocks += [{"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments} for c in m.tool_calls]
                role = "assistant"
            elif m.role == "tool":
                blocks = [
                    {
                        "type": "tool_result",
                        "tool_use_id": m.tool_call_id or "",
                        "content": m.content,
                        "is_error": m.is_error,
                    }
                ]
                role = "user"
            else:
                blocks = [{"type": "text", "text": m.content}]
                role = "user"
            if out and out[-1]["role"] == role:
                out[-1]["content"].extend(blocks)
            else:
                out.append({"role": role, "content": blocks})
        return out

    def classify(self, exc: BaseException, request: ChatRequest) -> ErrorInfo | None:
        import anthropic

        if isinstance(exc, anthropic.APIConnectionError):
            return ErrorInfo("retry", f"{type(exc).__name__}: {exc}")
        if isinstance(exc, anthropic.APIStatusError):
            return _classify_status(exc.status_code, str(exc.message), exc.response.headers, request)
        if isinstance(exc, anthropic.APIResponseValidationError):
            return ErrorInfo("retry", f"unreadable response: {exc}")
        return None

    async def aclose(self) -> None:
        if self.owns_client:
            await self.client.close()
