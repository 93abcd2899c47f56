"""Two-line memory for LLM clients: `wrap_openai`, `wrap_anthropic`, and `scope` for per-block options.

    client = memwrap.wrap_openai(OpenAI(), bank_id="alice")
    claude = memwrap.wrap_anthropic(Anthropic(), bank_id="alice")

`inject` and `transcript` work on plain JSON payloads and are shared with the sidecar proxy.
"""

from __future__ import annotations

from memwrap.wrappers.anthropic import wrap_anthropic
from memwrap.wrappers.core import Memwrap, Stats
from memwrap.wrappers.openai import wrap_openai
from memwrap.wrappers.scope import Options, scope

__all__ = ["Memwrap", "Options", "Stats", "scope", "wrap_anthropic", "wrap_openai"]
