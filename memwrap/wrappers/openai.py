"""`wrap_openai`: long-term memory for every chat call of an OpenAI (or AsyncOpenAI) client."""

from __future__ import annotations

from typing import TypeVar

import openai

from memwrap.wrappers._wrap import wrap
from memwrap.wrappers.options import WrapOptions, takes_options
from memwrap.wrappers.proxies import Resource, Tree

C = TypeVar("C")


def _surfaces(mode: str) -> Tree:
    chat: Tree = {"completions": Resource("openai.chat", mode)}
    # `parse` moved from beta.chat.completions to chat.completions; both exist in openai 1.x, so both are covered.
    return {"chat": chat, "beta": {"chat": chat}, "responses": Resource("openai.responses", mode)}


OPENAI_TREE: Tree = {
    **_surfaces("plain"),
    "with_raw_response": _surfaces("raw"),
    "with_streaming_response": _surfaces("streaming"),
}


@takes_options(WrapOptions)
def wrap_openai(client: C, options: WrapOptions) -> C:
    """Return `client` with memory: recalled into the system prompt before each chat call, retained after it.

    Covers `chat.completions.create/parse/stream`, `responses.create/parse/stream` (also under `beta.` and
    `with_raw_response`/`with_streaming_response`), sync and async, streaming or not. Everything else is the
    client's own. `bank_id` may be a string or a callable returning one; `memory` defaults to one `Memory()`
    per process. Per call: `memwrap={"bank_id": ..., "inject": False, ...}`; per block: `memwrap.scope(...)`.
    `llm="gpt-4o-mini"`: the memory's own LLM work (extraction, consolidation, reflect) reuses this client.
    Tool loops (`tool_loop="turn"`, the default): one recall per user turn, its later steps reuse the block, and
    the user's message is retained once with the final answer; `retain_tools=True` keeps tool calls and results;
    `retain_assistant=False` retains only the
    user's words (by default the answers are kept too, as memories that recall ranks below the user's);
    `tool_loop="step"` treats each request as its own exchange. `token_budget`: tokens of memory injected per
    call (`max_tokens`, its old name, still works with a DeprecationWarning). `filters` narrows what is recalled
    (as `recall(filters=...)`: e.g. `{"metadata": {"project": "apollo"}, "mentioned_after": ...}`). `memory_api_key`:
    the key of a
    sidecar given as `memory="http://..."` (default MEMWRAP_API_KEY).
    """
    if not isinstance(client, (openai.OpenAI, openai.AsyncOpenAI)):
        raise TypeError(
            f"wrap_openai takes an openai.OpenAI or openai.AsyncOpenAI client, not {type(client).__name__}."
        )
    wrapped: C = wrap(
        client, options, family="openai", is_async=isinstance(client, openai.AsyncOpenAI), tree=OPENAI_TREE
    )
    return wrapped
