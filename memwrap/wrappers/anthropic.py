"""`wrap_anthropic`: long-term memory for every Messages call of an Anthropic (or AsyncAnthropic) client."""

from __future__ import annotations

from typing import TypeVar

import anthropic

from memwrap.wrappers._wrap import wrap
from memwrap.wrappers.options import WrapOptions, takes_options
from memwrap.wrappers.proxies import Resource, Tree

C = TypeVar("C")


def _surfaces(mode: str) -> Tree:
    messages = Resource("anthropic.messages", mode)
    return {"messages": messages, "beta": {"messages": messages}}


ANTHROPIC_TREE: Tree = {
    **_surfaces("plain"),
    "with_raw_response": _surfaces("raw"),
    "with_streaming_response": _surfaces("streaming"),
}


@takes_options(WrapOptions)
def wrap_anthropic(client: C, options: WrapOptions) -> C:
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
    wrapped: C = wrap(
        client, options, family="anthropic", is_async=isinstance(client, anthropic.AsyncAnthropic), tree=ANTHROPIC_TREE
    )
    return wrapped
