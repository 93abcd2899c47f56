"""`Engine.reflect`: check the call, settle its disposition and limits, run the agent (agent.py).

Disposition, from least to most specific: the MEMWRAP_REFLECT_* defaults, the bank's stored one
(`configure_bank(bank, disposition={...})`, banks.config), the call's own (only the parts it names).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from memwrap import tracing, validate
from memwrap.engine.llm.usage import charged_to
from memwrap.engine.reflect import queries
from memwrap.engine.reflect.agent import Agent, ReflectRequest
from memwrap.engine.reflect.budget import Limits
from memwrap.engine.reflect.output import OutputSchema
from memwrap.errors import InvalidInputError, LLMNotConfiguredError
from memwrap.models import MAX_REFLECT_ITERATIONS, MAX_REFLECT_TIMEOUT_SECONDS, Disposition, ReflectResult

if TYPE_CHECKING:
    from memwrap.engine.parts import EngineParts

NOT_CONFIGURED = (
    "reflect needs an LLM, and none is configured (memwrap runs in none mode). Set MEMWRAP_LLM_PROVIDER=openai or "
    "anthropic with MEMWRAP_LLM_API_KEY (and MEMWRAP_LLM_MODEL; MEMWRAP_LLM_BASE_URL for an OpenAI-compatible "
    "server such as vLLM or Ollama), or MEMWRAP_REFLECT_PROVIDER/_MODEL/_API_KEY for reflect only; or reuse your "
    "app's client: memory.use_llm(llm_from_client(client, 'gpt-4o-mini')), or wrap_openai(client, llm='gpt-4o-mini')."
)
MAX_ITERATIONS = MAX_REFLECT_ITERATIONS
MAX_CONTEXT_CHARS = 200_000


async def reflect(
    parts: EngineParts,
    bank_id: str,
    query: str,
    *,
    context_budget: int | None = None,
    context: str | None = None,
    response_schema: Any = None,
    tags: Sequence[str] | None = None,
    disposition: Disposition | Mapping[str, Any] | None = None,
    max_iterations: int | None = None,
    timeout: float | None = None,
    now: datetime | None = None,
) -> ReflectResult:
    settings = parts.settings
    bank_id = validate.bank_id(bank_id)
    query = validate.query(query)
    budget = validate.budget(
        settings.reflect_max_tokens if context_budget is None else context_budget, what="context_budget"
    )
    if context is not None:
        context = (
            validate.text_field(context, what="context", max_chars=MAX_CONTEXT_CHARS)
            if not validate.blank(context)
            else None
        )
    iterations = settings.reflect_max_iterations if max_iterations is None else max_iterations
    if isinstance(iterations, bool) or not isinstance(iterations, int) or not 1 <= iterations <= MAX_ITERATIONS:
        raise InvalidInputError(f"max_iterations is an integer from 1 to {MAX_ITERATIONS}, not {iterations!r}.")
    seconds = settings.reflect_timeout if timeout is None else timeout
    # The caller's timeout is bounded (declared on the verb); the operator's MEMWRAP_REFLECT_TIMEOUT is not.
    high = MAX_REFLECT_TIMEOUT_SECONDS if timeout is not None else float("inf")
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not 0 < seconds <= high:
        raise InvalidInputError(
            f"timeout is a number of seconds > 0 and at most {MAX_REFLECT_TIMEOUT_SECONDS:g}, not {seconds!r}."
        )
    output = OutputSchema.build(response_schema)
    checked_tags = validate.tags(tags)
    if disposition is not None:
        validate.disposition(disposition)  # bad input is told as such, with an LLM or without

    llm = parts.llm()
    if llm is None or not llm.configured("reflect"):
        raise LLMNotConfiguredError(NOT_CONFIGURED)

    request = ReflectRequest(
        bank_id=bank_id,
        query=query,
        context=context,
        tags=checked_tags,
        now=validate.now_or(now),
        disposition=await settle_disposition(parts, bank_id, disposition),
        output=output,
        limits=Limits(
            max_tokens=budget,
            max_iterations=iterations,
            timeout=float(seconds),
            synthesis_timeout=settings.reflect_synthesis_timeout,
            answer_tokens=settings.reflect_answer_tokens,
        ),
    )
    with (
        charged_to(bank_id),
        tracing.span(
            "reflect",
            bank_id=bank_id,
            context_budget=budget,
            # A budgeted tool-loop agent over the bank: the GenAI conventions' agent invocation.
            **{"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "memwrap.reflect"},
            max_iterations=iterations,
            **tracing.content_attributes(query=query),
        ) as current,
    ):
        result = await Agent(parts, llm, request).run()
        tracing.set_attributes(
            current,
            iterations=result.iterations,
            forced=result.forced,
            forced_reason=result.forced_reason,
            memories=len(result.memory_ids),
            llm_calls=result.usage.calls,
            tool_calls=result.usage.tool_calls,
            prompt_tokens=result.usage.prompt_tokens,
            completion_tokens=result.usage.completion_tokens,
        )
        return result


async def settle_disposition(
    parts: EngineParts, bank_id: str, override: Disposition | Mapping[str, Any] | None
) -> Disposition:
    s = parts.settings
    merged: dict[str, Any] = {
        "skepticism": s.reflect_skepticism,
        "literalism": s.reflect_literalism,
        "empathy": s.reflect_empathy,
        "directives": list(s.reflect_directives),
    }
    stored = await queries.stored_disposition(parts.pool, bank_id)
    if stored:
        merged.update({k: v for k, v in stored.items() if k in Disposition.model_fields})
    if isinstance(override, Disposition):
        merged.update(override.model_dump(include=override.model_fields_set))
    elif isinstance(override, Mapping):
        merged.update(override)
    elif override is not None:
        raise InvalidInputError(
            f"disposition takes a Disposition or a mapping (skepticism, literalism, empathy, directives), "
            f"not {type(override).__name__}."
        )
    return validate.disposition(merged)
