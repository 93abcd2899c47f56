"""The engine's LLM from its settings: a provider per role (MEMWRAP_LLM_* and the per-role
MEMWRAP_EXTRACTION_*/CONSOLIDATION_*/REFLECT_* overrides; roles with the same settings share one client) and the
call policy (retries, backoff, concurrency, timeouts). client.LLM.from_settings puts them together."""

from __future__ import annotations

import importlib
import os
from typing import Any

from memwrap.config import Settings
from memwrap.engine.llm.providers import AnthropicProvider, OpenAIProvider, Provider
from memwrap.engine.llm.types import DEFAULT_MODELS, ROLES
from memwrap.errors import LLMNotConfiguredError

__all__ = ["policy", "providers_from_settings"]


def providers_from_settings(settings: Settings) -> dict[str, Provider | None]:
    """Each role's provider (None: MEMWRAP_<ROLE>_PROVIDER or MEMWRAP_LLM_PROVIDER is none)."""
    shared: dict[tuple[str, str, str | None, str | None], Provider] = {}
    providers: dict[str, Provider | None] = {}
    for role in ROLES:
        kind = getattr(settings, f"{role}_provider") or settings.llm_provider
        if kind == "none":
            providers[role] = None
            continue
        model = getattr(settings, f"{role}_model") or settings.llm_model or DEFAULT_MODELS[kind]
        base_url = getattr(settings, f"{role}_base_url") or settings.llm_base_url
        api_key = getattr(settings, f"{role}_api_key") or settings.llm_api_key
        key = (kind, model, base_url, api_key)
        if key not in shared:
            shared[key] = _make_provider(kind, model, base_url, api_key, settings.llm_timeout, role)
        providers[role] = shared[key]
    return providers


def policy(settings: Settings) -> dict[str, Any]:
    return {
        "max_retries": settings.llm_max_retries,
        "backoff": settings.llm_backoff,
        "max_backoff": settings.llm_max_backoff,
        "max_concurrency": settings.llm_max_concurrency,
        "timeout": settings.llm_timeout,
        "background_timeout": settings.llm_background_timeout,
        "tool_protocol": settings.llm_tool_protocol,
    }


def _make_provider(
    kind: str, model: str, base_url: str | None, api_key: str | None, timeout: float, role: str
) -> Provider:
    if kind not in ("openai", "anthropic"):
        raise LLMNotConfiguredError(f"Unknown LLM provider {kind!r}: use openai, anthropic or none.")
    env = "OPENAI_API_KEY" if kind == "openai" else "ANTHROPIC_API_KEY"
    sdk = importlib.import_module(kind)  # only the SDK in use: importing anthropic alone takes ~1 s
    missing_key: type[Exception] = sdk.OpenAIError if kind == "openai" else sdk.AnthropicError
    try:
        if kind == "openai":
            # A local OpenAI-compatible server usually needs no key, but the SDK insists on one.
            key = api_key or (None if not base_url else _env_or(env, "unused"))
            return OpenAIProvider(
                model, sdk.AsyncOpenAI(api_key=key, base_url=base_url, max_retries=0, timeout=timeout)
            )
        return AnthropicProvider(
            model, sdk.AsyncAnthropic(api_key=api_key, base_url=base_url, max_retries=0, timeout=timeout)
        )
    except missing_key as exc:
        raise LLMNotConfiguredError(
            f"The {kind} LLM for {role} has no API key: set MEMWRAP_LLM_API_KEY (or MEMWRAP_{role.upper()}_API_KEY, "
            f"or {env}). ({exc})"
        ) from exc


def _env_or(name: str, default: str) -> str:
    return os.environ.get(name) or default
