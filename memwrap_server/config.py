"""The sidecar's settings, read from MEMWRAP_* like the engine's (memwrap/config.py holds those). Each field says
what it means where it is declared, for docs/configuration.md (memwrap/settings/section.py)."""

from __future__ import annotations

from pydantic import AliasChoices, Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from memwrap.models import DEFAULT_TOKEN_BUDGET
from memwrap.settings.section import section

SIDECAR = "Sidecar: `memwrap serve`"


class ServerSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="MEMWRAP_", extra="ignore")

    host: str = Field(
        default="127.0.0.1", description="Address the server binds (`--host`).", json_schema_extra=section(SIDECAR)
    )
    port: int = Field(default=8765, description="Port the server binds (`--port`).", json_schema_extra=section(SIDECAR))
    log_level: str = Field(
        default="info",
        description="uvicorn's and memwrap's log level (`--log-level`; `debug` adds the access log).",
        json_schema_extra=section(SIDECAR),
    )
    graceful_timeout: float = Field(
        default=30.0,
        description="Seconds in-flight requests (streams included) may take to finish after SIGTERM/SIGINT.",
        json_schema_extra=section(SIDECAR),
    )
    # Above the clients' own pool expiry (httpx, which memwrap's HTTP client uses: 5 s; aiohttp: 15 s) and a load
    # balancer's idle timeout (60 s is common), so the server is never the side that closes a connection a client is
    # about to reuse: uvicorn's default, 5 s, equals httpx's, and a request sent on the connection as the server
    # closes it fails with an empty read.
    keep_alive_timeout: int = Field(
        default=75,
        ge=1,
        description=(
            "Seconds an idle keep-alive connection stays open; keep it above your clients' pool expiry and your "
            "load balancer's idle timeout, so the server never closes a connection a client reuses."
        ),
        json_schema_extra=section(SIDECAR),
    )

    # Unset is safe by default: the default bind is loopback only.
    api_keys: str | None = Field(
        default=None,
        description=(
            "Bearer keys, comma-separated; `key:alice|team-*` limits a key to those banks (shell-style "
            "patterns). Unset: no authentication (docs/security.md)."
        ),
        json_schema_extra=section(SIDECAR),
    )
    # With API keys, the guard is on only when this is set (memwrap_server/hosts.py).
    allowed_hosts: str | None = Field(
        default=None,
        description=(
            "Host names answered besides localhost and IP addresses (comma-separated; `.example.com` takes its "
            "subdomains; `*` turns the check off): the DNS-rebinding guard, on without keys."
        ),
        json_schema_extra=section(SIDECAR),
    )

    # As an SDK's base_url.
    upstream_openai_url: str = Field(
        default="https://api.openai.com/v1",
        description="Where the memory proxy forwards OpenAI calls (a base URL with /v1).",
        json_schema_extra=section(SIDECAR),
    )
    upstream_anthropic_url: str = Field(
        default="https://api.anthropic.com",
        description="Where the memory proxy forwards Anthropic calls (a base URL without /v1).",
        json_schema_extra=section(SIDECAR),
    )
    upstream_timeout: float = Field(
        default=600.0, description="Seconds the proxy waits on the upstream.", json_schema_extra=section(SIDECAR)
    )
    proxy_recall_timeout: float = Field(
        default=2.0,
        description="The proxy's recall deadline (s); past it the call goes out without memory.",
        json_schema_extra=section(SIDECAR),
    )
    proxy_token_budget: int = Field(
        default=DEFAULT_TOKEN_BUDGET,
        ge=1,
        validation_alias=AliasChoices("MEMWRAP_PROXY_TOKEN_BUDGET", "MEMWRAP_PROXY_MAX_TOKENS"),
        description="The proxy's default memory budget (`X-Memwrap-Token-Budget` overrides).",
        json_schema_extra=section(SIDECAR),
    )
    # The wrappers' circuit breaker, sized for a server.
    proxy_max_inflight: int = Field(
        default=256,
        ge=1,
        description="Concurrent proxy recalls before further calls skip memory (a circuit breaker).",
        json_schema_extra=section(SIDECAR),
    )
    # A server has time, and a turn of 500k characters is ~500 units to embed (the wrappers' 60 s would retry such a
    # turn forever on a busy host).
    proxy_retain_timeout: float = Field(
        default=600.0,
        gt=0,
        description="Seconds one delivery of spooled turns may take before it is retried.",
        json_schema_extra=section(SIDECAR),
    )
    # The proxy holds a call's body in memory while it reads the conversation, so an unbounded body is unbounded
    # memory. 32 MiB fits images sent inline.
    max_request_bytes: int = Field(
        default=32 * 1024 * 1024,
        ge=1024,
        description="Largest request body accepted, in bytes (413 past it).",
        json_schema_extra=section(SIDECAR),
    )
    # The failure budget of each API key (memwrap_server/throttle.py): refused requests are 4xx but 404/409/429.
    failure_rate: float = Field(
        default=20.0,
        ge=0,
        description=(
            "Refused requests per second a key may send past its burst before its requests are held (0: off; "
            "only keyed requests)."
        ),
        json_schema_extra=section(SIDECAR),
    )
    failure_burst: int = Field(
        default=200,
        ge=1,
        description="Refused requests a key may send at once before its failure budget applies.",
        json_schema_extra=section(SIDECAR),
    )
    failure_max_wait: float = Field(
        default=1.0,
        gt=0,
        le=30,
        description="Seconds a held request waits before it is answered 429 `too_many_failures`.",
        json_schema_extra=section(SIDECAR),
    )
    # Down: data routes answer 503 at once, and requests already waiting on the database are answered 503 too.
    database_probe_timeout: float = Field(
        default=2.0,
        gt=0,
        le=60,
        description=(
            "Seconds the database has to answer the server's probe (`SELECT 1`, every second) before it counts "
            "as down (503s, `/ready` 503)."
        ),
        json_schema_extra=section(SIDECAR),
    )
