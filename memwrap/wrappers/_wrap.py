"""`wrap_openai` and `wrap_anthropic` share this: check the arguments, build the handle, build the proxy."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypedDict

from memwrap.engine import validate
from memwrap.filters import RecallFilter, parse_filter
from memwrap.wrappers.backend import memory_kind
from memwrap.wrappers.core import Memwrap
from memwrap.wrappers.memories import resolve_memory
from memwrap.wrappers.proxies import ClientProxy, Tree
from memwrap.wrappers.scope import BankId, Options, ToolLoop, as_tags, renamed_options


class WrapOptions(TypedDict, total=False):
    """The keyword options of `wrap_openai` / `wrap_anthropic`, for integrations that pass them on."""

    bank_id: BankId
    memory: Any
    inject: bool
    retain: bool
    token_budget: int
    session_id: str | None
    tags: str | Sequence[str] | None
    recall_timeout: float
    tool_loop: ToolLoop
    retain_tools: bool
    retain_assistant: bool


def wrap(
    client: Any,
    *,
    family: str,
    is_async: bool,
    tree: Tree,
    bank_id: BankId,
    memory: Any,
    inject: bool,
    retain: bool,
    token_budget: int,
    session_id: str | None,
    tags: str | Sequence[str] | None,
    recall_timeout: float,
    filters: RecallFilter | Mapping[str, Any] | None = None,
    llm: str | bool | None = None,
    tool_loop: ToolLoop = "turn",
    retain_tools: bool = False,
    retain_assistant: bool = True,
    memory_api_key: str | None = None,
    max_tokens: int | None = None,
) -> Any:
    if max_tokens is not None:  # the old name, beside the SDK's own max_tokens
        token_budget = renamed_options({"max_tokens": max_tokens}, stacklevel=4)["token_budget"]
    if isinstance(client, ClientProxy):
        # Wrapping twice would recall and inject twice: wrap the original client again with the new options.
        client = client.__wrapped__
    # A sidecar: memory="http://host:8765" means the process's one Memory(url=..., api_key=...) for that URL.
    memory = resolve_memory(memory, api_key=memory_api_key)
    if memory is not None and not is_async and memory_kind(memory) == "async":
        raise TypeError(
            f"A sync {type(client).__name__} needs a sync memory: pass memwrap.Memory(), not AsyncMemory() "
            "(Memory runs its own event loop, so it also works inside async apps)."
        )
    if isinstance(bank_id, str):
        validate.bank_id(bank_id)
    if recall_timeout <= 0:
        raise ValueError("recall_timeout must be positive (seconds); use inject=False to turn recall off.")
    options = Options(
        bank_id=bank_id,
        inject=inject,
        retain=retain,
        token_budget=token_budget,
        session_id=session_id,
        tags=as_tags(tags),
        filters=parse_filter(filters),
        recall_timeout=recall_timeout,
        tool_loop=tool_loop,
        retain_tools=retain_tools,
        retain_assistant=retain_assistant,
    )
    handle = Memwrap(memory, options, family=family)
    if llm:
        _use_client_llm(handle.memory, client, llm)
    handle.start()  # the engine starts while the app gets on with its work; the first call waits for it if needed
    return ClientProxy(client, handle, is_async, tree)


def _use_client_llm(memory: Any, client: Any, llm: str | bool) -> None:
    """`llm="gpt-4o-mini"` (or True: MEMWRAP_LLM_MODEL): the engine's own LLM work (extraction, consolidation,
    reflect) goes through this client's key and endpoint, with that model, instead of MEMWRAP_LLM_*."""
    from memwrap.engine.llm_clients import llm_from_client  # the SDK adapters load only when llm= is used

    use = getattr(memory, "use_llm", None)
    if use is None:
        raise TypeError(f"llm= needs a memwrap Memory or AsyncMemory (with use_llm), not {type(memory).__name__}.")
    use(llm_from_client(client, llm if isinstance(llm, str) else None))  # True: MEMWRAP_LLM_MODEL
