"""The sidecar's settings, read from MEMWRAP_* like the engine's (memwrap/config.py holds those)."""

from __future__ import annotations

from pydantic import AliasChoices, Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from memwrap.models import DEFAULT_TOKEN_BUDGET


class ServerSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="MEMWRAP_", extra="ignore")

    host: str = "127.0.0.1"
    port: int = 8765
    log_level: str = "info"
    # Seconds uvicorn lets in-flight requests (streams included) finish after SIGTERM/SIGINT.
    graceful_timeout: float = 30.0
    # Seconds an idle keep-alive connection stays open. Above the clients' own pool expiry (httpx, which memwrap's
    # HTTP client uses: 5 s; aiohttp: 15 s) and a load balancer's idle timeout (60 s is common), so the server is
    # never the side that closes a connection a client is about to reuse: uvicorn's default, 5 s, equals httpx's,
    # and a request sent on the connection as the server closes it fails with an empty read.
    keep_alive_timeout: int = Field(default=75, ge=1)

    # Bearer keys, comma-separated; "key:bankA|bankB" limits a key to those banks (shell-style patterns allowed).
    # Unset: no authentication (the default bind is loopback only).
    api_keys: str | None = None
    # Host names this server answers besides localhost and IP addresses (comma-separated; ".example.com" takes
    # its subdomains too; "*" turns the check off). The DNS-rebinding guard: on without API keys, and with
    # keys only when set (memwrap_server/hosts.py).
    allowed_hosts: str | None = None

    # Where the memory proxy forwards, as an SDK's base_url: OpenAI's includes /v1, Anthropic's does not.
    upstream_openai_url: str = "https://api.openai.com/v1"
    upstream_anthropic_url: str = "https://api.anthropic.com"
    upstream_timeout: float = 600.0
    # The proxy's recall deadline (fail open after it) and default memory budget (X-Memwrap-Token-Budget overrides;
    # MEMWRAP_PROXY_MAX_TOKENS is its old name).
    proxy_recall_timeout: float = 2.0
    proxy_token_budget: int = Field(
        default=DEFAULT_TOKEN_BUDGET,
        ge=1,
        validation_alias=AliasChoices("MEMWRAP_PROXY_TOKEN_BUDGET", "MEMWRAP_PROXY_MAX_TOKENS"),
    )
    # Concurrent proxy recalls before further calls skip memory (the wrappers' circuit breaker, sized for a server).
    proxy_max_inflight: int = Field(default=256, ge=1)
    # Seconds one delivery of spooled turns may take before it is retried: a server has time, and a turn of
    # 500k characters is ~500 units to embed (the wrappers' 60 s would retry such a turn forever on a busy host).
    proxy_retain_timeout: float = Field(default=600.0, gt=0)
    # Largest request body accepted, in bytes (413 past it): the proxy holds a call's body in memory while it
    # reads the conversation, so an unbounded body is unbounded memory. 32 MiB fits images sent inline.
    max_request_bytes: int = Field(default=32 * 1024 * 1024, ge=1024)
    # The failure budget of each API key (memwrap_server/throttle.py): refused requests (4xx but 404/409/429) a
    # key may send per second, beyond a burst, before its requests are held (429 past MEMWRAP_FAILURE_MAX_WAIT
    # seconds). 0 turns it off. Only keyed requests are budgeted.
    failure_rate: float = Field(default=20.0, ge=0)
    failure_burst: int = Field(default=200, ge=1)
    failure_max_wait: float = Field(default=1.0, gt=0, le=30)
    # Seconds the database has to answer the server's probe (SELECT 1, every second) before it counts as down:
    # /ready answers 503, data routes 503 at once, and requests already waiting on it are answered 503 too.
    database_probe_timeout: float = Field(default=2.0, gt=0, le=60)
