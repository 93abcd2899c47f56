"""`wrap_anthropic`: long-term memory for every Messages call of an Anthropic (or AsyncAnthropic) client."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

import anthropic

from memwrap.filters import RecallFilter
from memwrap.wrappers._wrap import wrap
from memwrap.wrappers.proxies import Resource, Tree
from memwrap.wrappers.scope import BankId, ToolLoop

C = TypeVar("C")


def _surfaces(mode: str) -> Tree:
    messages = Resource("anthropic.messages", mode)
    return {"messages": messages, "beta": {"messages": messages}}


ANTHROPIC_TREE: Tree = {
    **_surfaces("plain"),
    "with_raw_response": _surfaces("raw"),
    "with_streaming_response": _surfaces("streaming"),
}


def wrap_anthropic(
    client: C,
    *,
    bank_id: BankId = None,
    memory: Any = None,
    inject: bool = True,
    retain: bool = True,
    token_budget: int = 1024,
    session_id: str | None = None,
    tags: str | Sequence[str] | None = None,
    filters: RecallFilter | Mapping[str, Any] | None = None,
    recall_timeout: float = 0.2,
    llm: str | bool | None = None,
    tool_loop: ToolLoop = "turn",
    retain_tools: bool = False,
    retain_assistant: bool = True,
    memory_api_key: str | None = None,
    max_tokens: int | None = None,
) -> C:
    """Return `client` with memory: recalled into `system` before each Messages call, retained after it.

    Covers `messages.create` (also `stream=True`), `messages.stream` and `messages.parse`, sync and async, and
    their `beta.`/`with_raw_response`/`with_streaming_response` forms. `system` may be a string or a list of
    blocks; the memory block goes after the app's own (its cached prefix stays cacheable). Options as for
    `wrap_openai`.
    """
    if not isinstance(client, (anthropic.Anthropic, anthropic.AsyncAnthropic)):
        raise TypeError(
            "wrap_anthropic takes an anthropic.Anthropic or anthropic.AsyncAnthropic client, "
            f"not {type(client).__name__}."
        )
    return wrap(
        client,
        family="anthropic",
        is_async=isinstance(client, anthropic.AsyncAnthropic),
        tree=ANTHROPIC_TREE,
        bank_id=bank_id,
        memory=memory,
        inject=inject,
        retain=retain,
        token_budget=token_budget,
        session_id=session_id,
        tags=tags,
        filters=filters,
        recall_timeout=recall_timeout,
        llm=llm,
        tool_loop=tool_loop,
        retain_tools=retain_tools,
        retain_assistant=retain_assistant,
        memory_api_key=memory_api_key,
        max_tokens=max_tokens,
    )
