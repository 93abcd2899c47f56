"""Two-line memory for LLM clients: `wrap_openai`, `wrap_anthropic`, and `scope` for per-block options.

    client = memwrap.wrap_openai(OpenAI(), bank_id="alice")
    claude = memwrap.wrap_anthropic(Anthropic(), bank_id="alice")

`inject` and `transcript` work on plain JSON payloads and are shared with the sidecar proxy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memwrap.wrappers.core import Memwrap, Stats
from memwrap.wrappers.scope import Options, scope

if TYPE_CHECKING:
    from memwrap.wrappers.anthropic import wrap_anthropic
    from memwrap.wrappers.openai import wrap_openai


def __getattr__(name: str) -> Any:
    # Each wrapper imports its SDK, and an SDK takes a second or more to import: a script that wraps an OpenAI
    # client must not pay for the Anthropic SDK (nor the reverse).
    if name == "wrap_openai":
        from memwrap.wrappers.openai import wrap_openai

        return wrap_openai
    if name == "wrap_anthropic":
        from memwrap.wrappers.anthropic import wrap_anthropic

        return wrap_anthropic
    raise AttributeError(f"module 'memwrap.wrappers' has no attribute {name!r}")


__all__ = ["Memwrap", "Options", "Stats", "scope", "wrap_anthropic", "wrap_openai"]
