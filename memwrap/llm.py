"""The engine's LLM as the layers above it hand one in (`Memory.use_llm`): the public face of memwrap/engine/llm/.

The wrappers build one from the app's own SDK client (`wrap_openai(client, llm="gpt-4o-mini")`:
`llm_from_client`), LiteLLM's callback from `litellm` itself (an `OpenAIProvider` per role, the call policy of the
settings). Wrappers and integrations import these from here, never from the engine's modules (the import
contracts in pyproject.toml hold them to it).
"""

from __future__ import annotations

from memwrap.engine.llm.client import LLM, policy
from memwrap.engine.llm.clients import llm_from_client
from memwrap.engine.llm.providers import OpenAIProvider
from memwrap.engine.llm.types import ROLES

__all__ = ["LLM", "ROLES", "OpenAIProvider", "llm_from_client", "policy"]
