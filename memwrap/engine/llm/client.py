"""The LLM the engine uses for its own work: extraction (retain), consolidation (learn) and reflect.

    llm = LLM.from_settings(settings)                 # MEMWRAP_LLM_* plus per-role MEMWRAP_<ROLE>_* overrides
    facts, usage = await llm.structured(system, user, Facts, role="extraction")
    step = await llm.tool_step(messages, tools, role="reflect")      # native function calling, one turn
    text, usage = await llm.complete(system, user, role="consolidation")

Providers: OpenAI and any OpenAI-compatible endpoint (`base_url`), Anthropic, or none (every call raises
LLMNotConfiguredError). One policy for every call: an output limit always sent (`max_tokens`), a per-request
timeout (for background work: bounded by the server's measured speed, pacing.py), retries with exponential
backoff and jitter that honour Retry-After on 429/5xx, timeouts and dropped connections, a limit on requests
in flight (all roles together) that adapts to the server, and usage totals per role (`llm.usage`). What a
server can do (native tool calls, a named tool_choice, JSON schema) is probed once per model
(`llm.capabilities(role)`, capabilities.py). Plain text cut at the output limit is continued. Errors are
specific: LLMUnavailableError (gave up retrying), LLMRequestError (refused: key, model, request),
ContextOverflowError, LLMOutputError.
Structured output is validated by pydantic: OpenAI gets a strict json_schema response_format, Anthropic a
forced tool; an endpoint that rejects schemas is asked for JSON in the prompt instead, and a reply that still
does not validate is repaired (fences, trailing commas, truncation) and, failing that, re-asked once.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from pydantic import BaseModel

from memwrap import tracing
from memwrap.config import Settings
from memwrap.defense.policy import redact
from memwrap.engine.llm.capabilities import Capabilities, detect_capabilities
from memwrap.engine.llm.configure import policy, providers_from_settings
from memwrap.engine.llm.json_reply import repair_json
from memwrap.engine.llm.pacing import AdaptiveLimit, SpeedMeter
from memwrap.engine.llm.providers import Provider
from memwrap.engine.llm.structured import REASK, OutputTruncatedError, parse_reply, raw_reply, structured_request
from memwrap.engine.llm.types import (
    ROLES,
    ChatRequest,
    ChatResult,
    Message,
    Role,
    Tool,
    ToolCall,
    ToolStep,
    Usage,
    snake_name,
    strict_schema,
)
from memwrap.engine.llm.usage import UsageSink, charged_bank
from memwrap.errors import (
    ContextOverflowError,
    LLMError,
    LLMNotConfiguredError,
    LLMOutputError,
    LLMRequestError,
    LLMUnavailableError,
)
from memwrap.tokens import count_tokens

__all__ = [
    "LLM",
    "Capabilities",
    "ROLES",
    "ContextOverflowError",
    "LLMError",
    "LLMNotConfiguredError",
    "LLMOutputError",
    "LLMRequestError",
    "LLMUnavailableError",
    "Message",
    "OutputTruncatedError",
    "Role",
    "Tool",
    "ToolCall",
    "ToolStep",
    "Usage",
    "repair_json",
]

log = logging.getLogger("memwrap.llm")

T = TypeVar("T", bound=BaseModel)


_CONTINUE = "Your reply was cut off. Continue exactly where it stopped, without repeating anything."


class LLM:
    """Calls to the engine's LLM, one provider per role (roles with the same settings share one client)."""

    def __init__(
        self,
        providers: Mapping[str, Provider | None],
        *,
        max_retries: int = 3,
        backoff: float = 1.0,
        max_backoff: float = 30.0,
        max_concurrency: int = 4,
        timeout: float = 60.0,
        background_timeout: float = 900.0,
        tool_protocol: str = "auto",
    ) -> None:
        self._providers: dict[str, Provider | None] = {role: providers.get(role) for role in ROLES}
        self.max_retries = max(0, max_retries)
        self.backoff = max(0.0, backoff)
        self.max_backoff = max_backoff
        self.max_concurrency = max(1, max_concurrency)
        self.timeout = timeout
        self.background_timeout = max(timeout, background_timeout)
        self.tool_protocol = tool_protocol
        self.usage: dict[str, Usage] = {role: Usage() for role in ROLES}
        # Where each request's usage is counted for the bank it was made for (usage.py; the engine's counters).
        self.usage_sink: UsageSink | None = None
        # All roles share the server's slots; the limit adapts to what the server takes (pacing.py).
        self.limit = AdaptiveLimit(self.max_concurrency)
        self._meters: dict[int, SpeedMeter] = {}
        self._capabilities: dict[int, Capabilities] = {}

    # -- construction ------------------------------------------------------------------------------------

    @classmethod
    def from_settings(cls, settings: Settings) -> LLM:
        """Providers from MEMWRAP_LLM_* and the per-role MEMWRAP_EXTRACTION_*/CONSOLIDATION_*/REFLECT_* overrides."""
        return cls(providers_from_settings(settings), **policy(settings))

    def configured(self, role: Role) -> bool:
        return self._providers.get(role) is not None

    def model(self, role: Role) -> str | None:
        provider = self._providers.get(role)
        return provider.model if provider else None

    def provider_name(self, role: Role) -> str:
        provider = self._providers.get(role)
        return provider.name if provider else "none"

    def meter(self, role: Role) -> SpeedMeter:
        """The measured speed of the server behind `role` (shared by roles on the same server)."""
        provider = self._provider(role)
        return self._meters.setdefault(id(provider), SpeedMeter())

    async def capabilities(self, role: Role) -> Capabilities:
        """What the server behind `role` can do (native tools, a named tool_choice, JSON schema): probed once
        per model with tiny requests, or set by MEMWRAP_LLM_TOOL_PROTOCOL."""
        provider = self._provider(role)
        found = self._capabilities.get(id(provider))
        if found is None:
            found = await detect_capabilities(provider, self.tool_protocol, self._call_provider)
            self._capabilities[id(provider)] = found
        return found

    def request_timeout(self, role: Role, request: ChatRequest) -> float:
        """Background work: bounded by the server's measured speed (pacing.py), never below
        MEMWRAP_LLM_TIMEOUT nor above MEMWRAP_LLM_BACKGROUND_TIMEOUT."""
        prompt = count_tokens(request.system) + sum(count_tokens(m.content) + 4 for m in request.messages)
        return self.meter(role).background_timeout(
            prompt, request.max_tokens, floor=self.timeout, ceiling=self.background_timeout
        )

    # -- calls -------------------------------------------------------------------------------------------

    async def structured(
        self,
        system: str,
        user: str | Sequence[Message],
        schema: type[T],
        *,
        role: Role,
        name: str | None = None,
        max_tokens: int = 4096,
        background: bool = False,
        timeout: float | None = None,
        json_schema: dict[str, Any] | None = None,
    ) -> tuple[T, Usage]:
        """One reply validated as `schema`. Put what never changes in `system` (prompt caching), data in `user`
        (a text, or a conversation of messages without tool calls).

        `background`: each request is bounded by the server's measured speed instead of MEMWRAP_LLM_TIMEOUT
        (for work nobody waits on, on servers that may take minutes); `timeout` sets it explicitly.
        `json_schema`: the schema sent, when it is not `schema`'s own (a union pydantic cannot express strictly).
        Raises LLMOutputError (with `.usage`) when the reply does not validate after repair and one re-ask, and
        OutputTruncatedError at once when the reply hit the output token limit (ask for less per call).
        """
        provider = self._provider(role)
        schema_pair = (name or snake_name(schema.__name__), json_schema or strict_schema(schema))
        messages = [Message.user(user)] if isinstance(user, str) else list(user)
        request = structured_request(provider, system, messages, schema_pair, max_tokens)
        request.timeout = (
            timeout if timeout is not None else (self.request_timeout(role, request) if background else None)
        )
        result = await self._call(role, request)
        usage = result.usage
        try:
            return parse_reply(result, schema), usage
        except OutputTruncatedError as cut:
            cut.usage = usage
            raise  # asking again gets the same cut: the caller must ask for less
        except LLMOutputError as first:
            log.info("LLM %s reply did not validate (%s); asking once more", role, redact(str(first)))
            bad = raw_reply(result)
            followup = [*request.messages, Message.assistant(bad[:4000]), Message.user(REASK.format(error=first))]
            timeout = request.timeout
            request = structured_request(provider, system, followup, schema_pair, max_tokens)
            request.timeout = timeout
            result = await self._call(role, request)
            usage = usage + result.usage
            try:
                return parse_reply(result, schema), usage
            except LLMOutputError as second:  # truncated or not: we asked twice
                second.usage = usage
                raise

    async def complete(
        self,
        system: str,
        user: str,
        *,
        role: Role,
        max_tokens: int = 2048,
        continuations: int = 2,
        timeout: float | None = None,
    ) -> tuple[str, Usage]:
        """Plain text. A reply cut off at `max_tokens` is continued (up to `continuations` more requests, each
        asked to go on from where the text stopped); OutputTruncatedError if it is still cut after those."""
        messages = [Message.user(user)]
        text, usage = "", Usage()
        for _ in range(continuations + 1):
            result = await self._call(role, ChatRequest(system, messages, max_tokens=max_tokens, timeout=timeout))
            text += result.text
            usage = usage + result.usage
            if result.stop_reason != "length":
                return text, usage
            messages = [Message.user(user), Message.assistant(text), Message.user(_CONTINUE)]
        error = OutputTruncatedError(f"the reply was still cut off after {continuations} continuation(s)")
        error.usage = usage
        raise error

    async def tool_step(
        self,
        messages: Sequence[Message],
        tools: Sequence[Tool],
        *,
        role: Role,
        system: str = "",
        tool_choice: str = "auto",
        max_tokens: int = 4096,
        timeout: float | None = None,
    ) -> ToolStep:
        """One model turn with native function calling: text and/or tool calls.

        `tool_choice`: "auto", "required", "none" or a tool's name. Raises ContextOverflowError when the
        conversation no longer fits (drop or shorten old tool results and call again).
        """
        request = ChatRequest(system, list(messages), list(tools), tool_choice, None, max_tokens, timeout)
        result = await self._call(role, request)
        return ToolStep(
            text=result.text,
            tool_calls=result.tool_calls,
            stop_reason=result.stop_reason,
            usage=result.usage,
            model=result.model,
        )

    def total_usage(self) -> Usage:
        total = Usage()
        for usage in self.usage.values():
            total = total + usage
        return total

    async def aclose(self) -> None:
        closed: set[int] = set()
        for provider in self._providers.values():
            if provider is not None and id(provider) not in closed:
                closed.add(id(provider))
                await provider.aclose()

    # -- policy ------------------------------------------------------------------------------------------

    def _provider(self, role: Role) -> Provider:
        if role not in ROLES:
            raise ValueError(f"unknown LLM role {role!r}; use one of {', '.join(ROLES)}")
        provider = self._providers.get(role)
        if provider is None:
            raise LLMNotConfiguredError(
                f"No LLM is configured for {role}: set MEMWRAP_LLM_PROVIDER=openai or anthropic (with "
                f"MEMWRAP_LLM_MODEL and MEMWRAP_LLM_API_KEY, and MEMWRAP_LLM_BASE_URL for an OpenAI-compatible "
                f"server), or MEMWRAP_{role.upper()}_PROVIDER for this role only."
            )
        return provider

    async def _call_provider(self, provider: Provider, request: ChatRequest) -> ChatResult:
        """One request in a slot of the adaptive limit, its speed recorded."""
        async with self.limit.slot():
            started = time.monotonic()
            result = await provider.chat(request)
        elapsed = time.monotonic() - started
        self.limit.succeeded()
        prompt_rate, generation_rate = result.timings or (None, None)
        self._meters.setdefault(id(provider), SpeedMeter()).record(
            result.usage.prompt_tokens,
            result.usage.completion_tokens,
            elapsed,
            prompt_per_second=prompt_rate,
            generation_per_second=generation_rate,
        )
        return result

    async def _call(self, role: Role, request: ChatRequest) -> ChatResult:
        provider = self._provider(role)
        # One span for the logical request, its retries inside (the GenAI conventions' inference span).
        with tracing.llm_call(provider.name, provider.model, provider.endpoint, role, request.max_tokens) as span:
            result = await self._call_with_retries(provider, role, request)
            tracing.llm_result(
                span,
                response_model=result.model,
                input_tokens=result.usage.prompt_tokens,
                output_tokens=result.usage.completion_tokens,
                cached_tokens=result.usage.cached_tokens,
                finish_reason=str(result.stop_reason),
            )
            return result

    async def _call_with_retries(self, provider: Provider, role: Role, request: ChatRequest) -> ChatResult:
        attempt = 0
        switched_token_param = False
        while True:
            try:
                result = await self._call_provider(provider, request)
            except (asyncio.CancelledError, LLMError):
                raise
            except Exception as exc:
                info = provider.classify(exc, request)
                if info is None:
                    raise
                what = f"{provider.name} {provider.model} ({role})"
                detail = redact(info.message)[:500]
                if info.kind == "token_param" and not switched_token_param and hasattr(provider, "switch_token_param"):
                    log.info("%s refused the output limit's parameter name (%s); trying the other one", what, detail)
                    provider.switch_token_param()
                    switched_token_param = True
                    continue
                if info.kind == "retry":
                    self.limit.overloaded()
                if info.kind == "schema_unsupported" and request.json_schema is not None:
                    log.warning("%s does not accept a JSON schema (%s); asking for JSON in the prompt", what, detail)
                    provider.schema_supported = False
                    timeout = request.timeout
                    request = structured_request(
                        provider, request.system, request.messages, request.json_schema, request.max_tokens
                    )
                    request.timeout = timeout
                    continue
                if info.kind == "overflow":
                    raise ContextOverflowError(
                        f"The prompt does not fit the context window of {what}: {detail}. Send less: fewer or "
                        "shorter messages and tool results."
                    ) from exc
                if info.kind in ("reject", "schema_unsupported", "token_param"):
                    raise LLMRequestError(
                        f"{what} refused the request (HTTP {info.status}): {detail}. Check the model name, the "
                        "API key and MEMWRAP_LLM_BASE_URL."
                    ) from exc
                if info.retry_after is not None and info.retry_after > self.max_backoff:
                    raise LLMUnavailableError(
                        f"{what} asks to retry after {info.retry_after:.0f}s, longer than MEMWRAP_LLM_MAX_BACKOFF="
                        f"{self.max_backoff:g}s: {detail}"
                    ) from exc
                if attempt >= self.max_retries:
                    raise LLMUnavailableError(
                        f"{what} failed {attempt + 1} time(s), last: {detail}. Check that the provider is reachable "
                        "(MEMWRAP_LLM_BASE_URL), or raise MEMWRAP_LLM_TIMEOUT / MEMWRAP_LLM_MAX_RETRIES."
                    ) from exc
                wait = info.retry_after if info.retry_after is not None else self._backoff(attempt)
                attempt += 1
                log.info("%s: %s; retry %d/%d in %.2fs", what, detail, attempt, self.max_retries, wait)
                await asyncio.sleep(wait)  # outside the semaphore: a waiting call holds no slot
                continue
            self.usage[role] = self.usage[role] + result.usage
            await self._count_for_bank(role, result.usage)
            return result

    async def _count_for_bank(self, role: Role, usage: Usage) -> None:
        bank_id = charged_bank()
        if self.usage_sink is None or bank_id is None:
            return
        try:
            await self.usage_sink(bank_id, role, usage)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - a counter that could not be written must not fail the work
            log.warning("LLM usage of bank %s (%s) not counted: %s", bank_id, role, redact(str(exc))[:300])

    def _backoff(self, attempt: int) -> float:
        # Full jitter between half and all of the exponential step, so a burst of failures spreads out.
        step = min(self.max_backoff, self.backoff * (2**attempt))
        return step * (0.5 + random.random() / 2)
