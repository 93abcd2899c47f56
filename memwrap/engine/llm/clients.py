"""An LLM that reuses an application's own OpenAI or Anthropic client (its key, endpoint and connections).

See `llm_from_client`.
"""

from __future__ import annotations

import sys
from typing import Any

from memwrap.config import Settings
from memwrap.engine.llm.client import LLM, policy
from memwrap.engine.llm.providers import AnthropicProvider, OpenAIProvider, Provider
from memwrap.engine.llm.types import DEFAULT_MODELS, ROLES


def llm_from_client(client: Any, model: str | None = None, *, settings: Settings | None = None) -> LLM:
    """An LLM for every role that reuses an OpenAI/Anthropic client's credentials and endpoint.

    For `wrap_openai(client, bank_id=..., llm="gpt-4o-mini")`. A memwrap-wrapped client is unwrapped first, so
    the engine's own calls are neither recalled into nor retained. Sync clients are mirrored by an async
    client with the same key, base URL, organisation and project; async clients are reused as they are
    (with SDK retries off). Per-role model overrides (MEMWRAP_EXTRACTION_MODEL, ...) still apply.
    """
    settings = settings or Settings()
    client = getattr(client, "__wrapped__", client)
    # A client of an SDK that was never imported cannot exist: no need to import it (anthropic takes ~1 s).
    openai = sys.modules.get("openai")
    anthropic = sys.modules.get("anthropic")
    sdk: Any
    if openai is not None and isinstance(client, (openai.AsyncOpenAI, openai.OpenAI)):
        kind = "openai"
        owns_client = not isinstance(client, openai.AsyncOpenAI)
        if not owns_client:
            sdk = client.with_options(max_retries=0, timeout=settings.llm_timeout)
        elif isinstance(client, openai.AzureOpenAI):
            raise TypeError("For Azure OpenAI pass an AsyncAzureOpenAI client (its settings are reused as they are).")
        else:
            sdk = openai.AsyncOpenAI(
                api_key=client.api_key,
                organization=client.organization,
                project=client.project,
                base_url=client.base_url,
                max_retries=0,
                timeout=settings.llm_timeout,
            )
    elif anthropic is not None and isinstance(client, (anthropic.AsyncAnthropic, anthropic.Anthropic)):
        kind = "anthropic"
        owns_client = not isinstance(client, anthropic.AsyncAnthropic)
        if not owns_client:
            sdk = client.with_options(max_retries=0, timeout=settings.llm_timeout)
        else:
            sdk = anthropic.AsyncAnthropic(
                api_key=client.api_key,
                auth_token=client.auth_token,
                base_url=client.base_url,
                max_retries=0,
                timeout=settings.llm_timeout,
            )
    else:
        raise TypeError(f"llm_from_client takes an OpenAI or Anthropic client, not {type(client).__name__}.")
    base_model = model or settings.llm_model or DEFAULT_MODELS[kind]
    shared: dict[str, Provider] = {}
    providers: dict[str, Provider | None] = {}
    for role in ROLES:
        role_model = getattr(settings, f"{role}_model") or base_model
        if role_model not in shared:
            provider_cls = OpenAIProvider if kind == "openai" else AnthropicProvider
            # An async client's copy (with_options) shares the app's connection pool: closing memwrap must not
            # close it. A mirror of a sync client is ours.
            shared[role_model] = provider_cls(role_model, sdk, owns_client=owns_client)
        providers[role] = shared[role_model]
    return LLM(providers, **policy(settings))
