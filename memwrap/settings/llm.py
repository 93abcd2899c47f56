"""The engine's LLM: its provider per role (extraction, consolidation, reflect), how it is called, and what
extraction (retain with an LLM) asks of it."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from memwrap.settings.section import EXTRACTION, LLM, SettingsPart, section


class LLMSettings(SettingsPart):
    llm_provider: Literal["none", "openai", "anthropic"] = Field(
        default="none",
        description=(
            "LLM for the engine's own work (extraction, consolidation, reflect): `openai` (and any "
            "OpenAI-compatible server), `anthropic` or `none`; with one, retain extracts typed facts."
        ),
        json_schema_extra=section(LLM),
    )
    llm_model: str | None = Field(
        default=None,
        description="Its model; unset: `gpt-4o-mini` (openai) or `claude-haiku-4-5` (anthropic).",
        json_schema_extra=section(LLM),
    )
    llm_base_url: str | None = Field(
        default=None,
        description="Its endpoint (vLLM, Ollama, llama.cpp: `http://host/v1`).",
        json_schema_extra=section(LLM),
    )
    llm_api_key: str | None = Field(
        default=None,
        description="Its key; unset: the SDK's own `OPENAI_API_KEY` / `ANTHROPIC_API_KEY`.",
        json_schema_extra=section(LLM),
    )
    # Per-role overrides: each unset one falls back on its llm_* value.
    extraction_provider: Literal["none", "openai", "anthropic"] | None = Field(
        default=None,
        description=(
            "Extraction's provider (retain's facts); unset: `MEMWRAP_LLM_PROVIDER`. `none` keeps retain LLM-free "
            "while reflect still uses the LLM."
        ),
        json_schema_extra=section(LLM),
    )
    extraction_model: str | None = Field(
        default=None, description="Extraction's model; unset: `MEMWRAP_LLM_MODEL`.", json_schema_extra=section(LLM)
    )
    extraction_base_url: str | None = Field(
        default=None,
        description="Extraction's endpoint; unset: `MEMWRAP_LLM_BASE_URL`.",
        json_schema_extra=section(LLM),
    )
    extraction_api_key: str | None = Field(
        default=None, description="Extraction's key; unset: `MEMWRAP_LLM_API_KEY`.", json_schema_extra=section(LLM)
    )
    consolidation_provider: Literal["none", "openai", "anthropic"] | None = Field(
        default=None,
        description="Consolidation's provider (observations); unset: `MEMWRAP_LLM_PROVIDER`.",
        json_schema_extra=section(LLM),
    )
    consolidation_model: str | None = Field(
        default=None, description="Consolidation's model; unset: `MEMWRAP_LLM_MODEL`.", json_schema_extra=section(LLM)
    )
    consolidation_base_url: str | None = Field(
        default=None,
        description="Consolidation's endpoint; unset: `MEMWRAP_LLM_BASE_URL`.",
        json_schema_extra=section(LLM),
    )
    consolidation_api_key: str | None = Field(
        default=None, description="Consolidation's key; unset: `MEMWRAP_LLM_API_KEY`.", json_schema_extra=section(LLM)
    )
    reflect_provider: Literal["none", "openai", "anthropic"] | None = Field(
        default=None, description="Reflect's provider; unset: `MEMWRAP_LLM_PROVIDER`.", json_schema_extra=section(LLM)
    )
    reflect_model: str | None = Field(
        default=None, description="Reflect's model; unset: `MEMWRAP_LLM_MODEL`.", json_schema_extra=section(LLM)
    )
    reflect_base_url: str | None = Field(
        default=None, description="Reflect's endpoint; unset: `MEMWRAP_LLM_BASE_URL`.", json_schema_extra=section(LLM)
    )
    reflect_api_key: str | None = Field(
        default=None, description="Reflect's key; unset: `MEMWRAP_LLM_API_KEY`.", json_schema_extra=section(LLM)
    )
    llm_timeout: float = Field(
        default=60.0,
        description="Seconds per request someone waits on (reflect), and the least a background request gets.",
        json_schema_extra=section(LLM),
    )
    llm_background_timeout: float = Field(
        default=900.0,
        description=(
            "The most a background request (extraction) may take: 3× its expected time at the server's measured "
            "speed, within [`MEMWRAP_LLM_TIMEOUT`, this]; before the first measurement, this."
        ),
        json_schema_extra=section(LLM),
    )
    # `json` is for servers whose models write tool calls as text; `auto` probes (engine/llm/capabilities.py).
    llm_tool_protocol: Literal["auto", "native", "json"] = Field(
        default="auto",
        description=(
            "Reflect's protocol: `native` tool calls, `json` next-action replies (JSON schema), or `auto` (probe "
            "the server once per model)."
        ),
        json_schema_extra=section(LLM),
    )
    llm_max_retries: int = Field(
        default=3,
        description=(
            "Retries after the first attempt, on 429, 5xx, timeouts and connection errors (Retry-After honoured)."
        ),
        json_schema_extra=section(LLM),
    )
    llm_backoff: float = Field(
        default=1.0,
        description="First wait (s) before a retry, doubled per retry, with jitter; a Retry-After header wins.",
        json_schema_extra=section(LLM),
    )
    llm_max_backoff: float = Field(
        default=30.0,
        description="A provider asking to wait longer than this (s) is treated as unavailable.",
        json_schema_extra=section(LLM),
    )
    llm_max_concurrency: int = Field(
        default=4,
        description=(
            "Most requests in flight per engine, all roles together (halved when the server is overloaded, grows back)."
        ),
        json_schema_extra=section(LLM),
    )

    # Extraction (retain with an LLM)
    extraction_turns_per_call: int = Field(
        default=16, description="Turns per extraction request.", json_schema_extra=section(EXTRACTION)
    )
    extraction_tokens_per_call: int = Field(
        default=2400,
        description="Turn text per extraction request (cl100k tokens); long items are cut at sentences.",
        json_schema_extra=section(EXTRACTION),
    )
    # Retain stores the turns raw at once (recallable); past the deadline extraction goes on in the background
    # (nothing is cancelled).
    extraction_deadline: float = Field(
        default=45.0,
        description=(
            "Seconds retain waits for the facts of what it stored raw; then it returns the raw ids and the facts "
            "replace them when they land."
        ),
        json_schema_extra=section(EXTRACTION),
    )
    extraction_output_tokens: int = Field(
        default=1024,
        description="`max_tokens` of one extraction request (a cut reply is split and redone).",
        json_schema_extra=section(EXTRACTION),
    )
    extraction_retry_interval: float = Field(
        default=60.0,
        description="First wait (s) before a failed extraction job runs again, doubled per attempt.",
        json_schema_extra=section(EXTRACTION),
    )
    extraction_max_attempts: int = Field(
        default=8,
        description="Attempts before an extraction job is dead; its raw memory stays as it is (still recalled).",
        json_schema_extra=section(EXTRACTION),
    )
