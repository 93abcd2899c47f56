"""The sidecar app: REST API, memory proxy and MCP over one engine, in one ASGI app.

    uvicorn.run(create_app(), host="127.0.0.1", port=8765)       # what `memwrap serve` does

The process is stateless: everything lives in PostgreSQL (MEMWRAP_DATABASE_URL, or the embedded one under
MEMWRAP_HOME), so several processes on one database serve the same banks. The engine opens before the first
request is accepted (a slow first call would look like an outage); on shutdown uvicorn lets in-flight requests
finish, the proxy's queued retains are delivered (or left in the on-disk spool for the next process), and the
engine closes last.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from fastapi import FastAPI

import memwrap
from memwrap.api import AsyncMemory
from memwrap_server import docs, openapi_rules, ui
from memwrap_server import errors as server_errors
from memwrap_server.auth import Auth, parse_api_keys
from memwrap_server.config import ServerSettings
from memwrap_server.database import DatabaseMonitor
from memwrap_server.gate import Gate
from memwrap_server.hosts import HostCheck
from memwrap_server.logs import remove_foreign_handlers
from memwrap_server.mcp import McpEndpoint, build_server, session_manager, tool_names
from memwrap_server.metrics import Metrics, MetricsMiddleware
from memwrap_server.proxy import Proxy
from memwrap_server.proxy import router as proxy_router
from memwrap_server.routes import ROUTERS
from memwrap_server.throttle import FailureBudget

DESCRIPTION = f"""Long-term memory as a service.

* **REST**: banks, memories (retain, list, get, delete), recall.
* **Memory proxy**: `POST /v1/chat/completions`, `/v1/responses`, `/v1/messages` — point an OpenAI or Anthropic
  SDK's `base_url` here and send `X-Memwrap-Bank`.
* **MCP**: `/mcp/{{bank_id}}/` (streamable HTTP; tools {", ".join(tool_names())}; same key rules).
* **Memory browser**: `/ui` (static pages over this API; the key is asked for once per tab).

Errors are `{{"error": {{"code", "message", "type"}}}}` with a stable `code`. Text anywhere in a request may not hold
a NUL character or a lone surrogate (PostgreSQL cannot store them: 422). With `MEMWRAP_API_KEYS` set, every
route but `/health`, `/ready` and this description needs `Authorization: Bearer <key>` (or `X-Memwrap-Key`; the proxy
routes take only the latter). Without keys, only requests to localhost, an IP address or `MEMWRAP_ALLOWED_HOSTS`
are answered (421 otherwise: DNS rebinding). While the database is unreachable or does not answer, data routes
answer 503 `store_unavailable` at once and `/ready` is 503.
"""


def _database_url(memory: AsyncMemory) -> str | None:
    """The URL the engine's pool uses, for the monitor's own probe connection (None: an HTTP-backed memory)."""
    if getattr(memory, "url", None):
        return None
    if memory.settings.database_url:
        return memory.settings.database_url
    from memwrap.store.embedded_pg import embedded_database_url

    return embedded_database_url(memory.settings.pgdata)  # started by warmup already: this only reads its URL


def _store_failure(memory: AsyncMemory) -> Callable[[], str | None]:
    """What /health asks on every call: why the store is down for good (the embedded server stopped and every
    restart attempt failed: memwrap/store/embedded_pg.py), or None. An external database is never down for good
    here: restarting this process would not bring it back."""
    if getattr(memory, "url", None) or memory.settings.database_url:
        return lambda: None
    from memwrap.store.embedded_pg import restart_failure

    pgdata = Path(memory.settings.pgdata).expanduser().resolve()
    return lambda: restart_failure(pgdata)


def create_app(settings: ServerSettings | None = None, *, memory: AsyncMemory | None = None) -> FastAPI:
    """The app. `memory` defaults to `AsyncMemory()` on MEMWRAP_HOME / MEMWRAP_DATABASE_URL, opened at start-up."""
    settings = settings or ServerSettings()
    auth = Auth(parse_api_keys(settings.api_keys))
    metrics = Metrics()
    state: dict[str, Any] = {}
    handlers_before = list(logging.getLogger().handlers)
    mcp_server = build_server(lambda: state["memory"])
    remove_foreign_handlers(handlers_before)  # the MCP SDK's RichHandler renders tracebacks on the event loop
    mcp_manager = session_manager(mcp_server)
    database = DatabaseMonitor(lambda: _database_url(state["memory"]), probe_timeout=settings.database_probe_timeout)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        owned = memory is None
        mem = memory or AsyncMemory()
        # Open the engine now: start-up fails loudly if the database is unreachable, and no call pays for it.
        await mem.warmup()
        state["memory"] = app.state.memory = mem
        app.state.store_fingerprint = mem.settings.store_fingerprint  # /health says it; probed constantly
        app.state.store_failure = _store_failure(mem)
        await database.start()
        proxy = app.state.proxy = Proxy(settings, mem, database)
        metrics.add_stats_source("proxy", proxy.stats)
        proxy.start()  # turns a previous run left in the spool are delivered now, not on the next call
        try:
            async with mcp_manager.run():
                yield
        finally:
            await proxy.close()
            await database.stop()
            if owned:
                await mem.close()

    app = FastAPI(
        title="memwrap",
        version=memwrap.__version__,
        description=DESCRIPTION,
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
    )  # served by memwrap_server.docs with local assets
    app.state.settings = settings
    app.state.metrics = metrics
    app.state.auth = auth
    app.state.database = database
    server_errors.install(app)
    for router in ROUTERS:
        app.include_router(router)
    app.include_router(proxy_router)
    app.include_router(docs.router)
    docs.declare_security(app, keys_set=auth.enabled)
    build_openapi = app.openapi
    app.openapi = lambda: openapi_rules.amend(build_openapi())  # type: ignore[method-assign]  # idempotent
    app.include_router(ui.router)
    # Starlette builds the middleware stack at start-up: Gate runs first (auth, MCP), MetricsMiddleware inside it
    # sees every answered request, MCP and 401s included, because it is added last (outermost).
    failures = FailureBudget(settings.failure_rate, settings.failure_burst, settings.failure_max_wait, label=auth.label)
    hosts = HostCheck(settings.allowed_hosts, keys_set=auth.enabled)
    app.add_middleware(
        Gate,
        auth=auth,
        mcp=McpEndpoint(mcp_manager),
        database=database,
        max_body=settings.max_request_bytes,
        failures=failures,
        hosts=hosts,
    )
    app.add_middleware(MetricsMiddleware, metrics=metrics)
    return app
