"""LangChain: memory for a `ChatOpenAI` (or `AzureChatOpenAI`) model in one call.

    from langchain_openai import ChatOpenAI
    from memwrap.integrations.langchain import wrap_chat_model

    llm = wrap_chat_model(ChatOpenAI(model="gpt-4o-mini"), bank_id="alice")
    llm.invoke("What should I cook tonight?")          # also ainvoke, stream, astream, batch, bind_tools,
                                                       # with_structured_output, use_responses_api=True

Why the clients and not a `BaseChatModel` wrapper or a callback: a `ChatOpenAI` reaches OpenAI through four
SDK objects (`client`, `async_client`, `root_client`, `root_async_client`), and which one a call uses depends
on the path (sync or async, Chat Completions or Responses API, structured output through `parse`). Wrapping
all four with one memory handle puts memory on every path while the model stays LangChain's own class: tool
binding, structured output, streaming, LangGraph and LangSmith tracing work unchanged. A callback cannot
change the request (no injection), and a wrapper model would have to re-implement every provider option.
"""

from __future__ import annotations

import importlib.util
from typing import Any, TypeVar

from memwrap.integrations import needs
from memwrap.wrappers import wrap_openai
from memwrap.wrappers.core import Memwrap
from memwrap.wrappers.openai import OPENAI_TREE
from memwrap.wrappers.options import WrapOptions, takes_options
from memwrap.wrappers.proxies import ClientProxy

# Nothing here imports LangChain (the model's clients are wrapped as they are), but the models it takes are
# langchain-openai's: without it there is nothing to wrap, and the import says what to install.
if importlib.util.find_spec("langchain_openai") is None:
    raise ImportError(needs("langchain", "langchain-openai", "langchain"))

M = TypeVar("M")

_CLIENT_FIELDS = ("client", "async_client", "root_client", "root_async_client")


@takes_options(WrapOptions)
def wrap_chat_model(model: M, options: WrapOptions) -> M:
    """A copy of `model` whose OpenAI clients (sync and async, all four) carry memory; `model` is unchanged.

    Options as for `memwrap.wrap_openai`; per call, `memwrap.scope(bank_id=...)` around `invoke` sets the bank
    for that call (e.g. one model object serving many users). `memory` must be a `Memory` or a sidecar URL (the
    sync and async paths share it). The copy's handle (stats, `flush()`) is `memwrap_handle(copy)`.
    """
    missing = [name for name in _CLIENT_FIELDS if getattr(model, name, None) is None]
    if missing or not hasattr(model, "model_copy"):
        raise TypeError(
            f"wrap_chat_model takes a langchain_openai ChatOpenAI (or AzureChatOpenAI) model, not "
            f"{type(model).__name__}" + (f" (it has no {', '.join(missing)})" if missing else "") + "."
        )
    # getattr: `M` is any model type, so a checker cannot see the fields the check above found.
    root = getattr(model, "root_client")  # noqa: B009 - see above
    root_async = getattr(model, "root_async_client")  # noqa: B009 - see above
    if isinstance(root, ClientProxy):  # wrapped before: wrap the SDK clients again, with these options
        root, root_async = root.__wrapped__, root_async.__wrapped__
    wrapped = wrap_openai(root, **options.as_arguments())
    handle: Memwrap = wrapped.memwrap
    wrapped_async = ClientProxy(root_async, handle, True, OPENAI_TREE)
    # model_copy: the app's own model object stays as it was (no memory), the copy shares its settings.
    return model.model_copy(
        update={
            "root_client": wrapped,
            "root_async_client": wrapped_async,
            "client": wrapped.chat.completions,
            "async_client": wrapped_async.chat.completions,
        }
    )


def memwrap_handle(model: Any) -> Memwrap:
    """The memory handle of a model from `wrap_chat_model`: `.stats`, `.flush()`, `.options`."""
    root = getattr(model, "root_client", None)
    if not isinstance(root, ClientProxy):
        raise TypeError(f"{type(model).__name__} was not wrapped with memwrap.integrations.langchain.wrap_chat_model.")
    return root.memwrap


__all__ = ["memwrap_handle", "wrap_chat_model"]
