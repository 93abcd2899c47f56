"""`wrap_openai` and `wrap_anthropic` share this: check the options, build the handle, build the proxy."""

from __future__ import annotations

from typing import Any

from memwrap import validate
from memwrap.wrappers.backend import memory_kind
from memwrap.wrappers.core import Memwrap
from memwrap.wrappers.memories import resolve_memory
from memwrap.wrappers.options import WrapOptions
from memwrap.wrappers.proxies import ClientProxy, Tree

__all__ = ["WrapOptions", "wrap"]


def wrap(client: Any, options: WrapOptions, *, family: str, is_async: bool, tree: Tree) -> Any:
    """`client` with memory, as `options` say (memwrap/wrappers/options.py declares them)."""
    if isinstance(client, ClientProxy):
        # Wrapping twice would recall and inject twice: wrap the original client again with the new options.
        client = client.__wrapped__
    # A sidecar: memory="http://host:8765" means the process's one Memory(url=..., api_key=...) for that URL.
    memory = resolve_memory(options.memory, api_key=options.memory_api_key)
    if memory is not None and not is_async and memory_kind(memory) == "async":
        raise TypeError(
            f"A sync {type(client).__name__} needs a sync memory: pass memwrap.Memory(), not AsyncMemory() "
            "(Memory runs its own event loop, so it also works inside async apps)."
        )
    if isinstance(options.bank_id, str):
        validate.bank_id(options.bank_id)
    if options.recall_timeout <= 0:
        raise ValueError("recall_timeout must be positive (seconds); use inject=False to turn recall off.")
    handle = Memwrap(memory, options.per_call(), family=family)
    if options.llm:
        _use_client_llm(handle.memory, client, options.llm)
    handle.start()  # the engine starts while the app gets on with its work; the first call waits for it if needed
    return ClientProxy(client, handle, is_async, tree)


def _use_client_llm(memory: Any, client: Any, llm: str | bool) -> None:
    """`llm="gpt-4o-mini"` (or True: MEMWRAP_LLM_MODEL): the engine's own LLM work (extraction, consolidation,
    reflect) goes through this client's key and endpoint, with that model, instead of MEMWRAP_LLM_*."""
    from memwrap.llm import llm_from_client  # the engine's LLM modules load only when llm= is used

    use = getattr(memory, "use_llm", None)
    if use is None:
        raise TypeError(f"llm= needs a memwrap Memory or AsyncMemory (with use_llm), not {type(memory).__name__}.")
    use(llm_from_client(client, llm if isinstance(llm, str) else None))  # True: MEMWRAP_LLM_MODEL
