"""The sidecar app: REST API, memory proxy and MCP over one engine, in one ASGI app.

    uvicorn.run(create_app(), host="127.0.0.1", port=8765)       # what `memwrap serve` does

The process is stateless: everything lives in PostgreSQL (MEMWRAP_DATABASE_URL, or the embedded one under
MEMWRAP_HOME), so several processes on one database serve the same banks. The engine opens before the first
request is accepted (a slow first call would look like an outage); on shutdown uvicorn lets in-flight requests
finish, the proxy's queued retains are delivered (or left in the on-disk spool for the next process), and the
engine closes last.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI
from starlette.types import ASGIApp, Receive, Scope, Send

import memwrap
from memwrap.api import AsyncMemory
from memwrap_server import errors as server_errors
from memwrap_server.auth import PUBLIC_PATHS, Auth, parse_api_keys
from memwrap_server.config import ServerSettings
from memwrap_server.errors import error_response
from memwrap_server.mcp import McpEndpoint, build_server, session_manager
from memwrap_server.metrics import Metrics, MetricsMiddleware
from memwrap_server.proxy import Proxy
from memwrap_server.proxy import router as proxy_router
from memwrap_server.routes import ROUTERS

DESCRIPTION = """Long-term memory as a service.

* **REST**: banks, memories (retain, list, get, delete), recall.
* **Memory proxy**: `POST /v1/chat/completions`, `/v1/responses`, `/v1/messages` — point an OpenAI or Anthropic
  SDK's `base_url` here and send `X-Memwrap-Bank`.
* **MCP**: `/mcp/{bank_id}/` (streamable HTTP).

Errors are `{"error": {"code", "message", "type"}}` with a stable `code`. With `MEMWRAP_API_KEYS` set, every route
but `/health` needs `Authorization: Bearer <key>` (or `X-Memwrap-Key`; the proxy routes take only the latter).
"""


class Gate:
    """Outermost ASGI layer: authentication for every route but /health, then MCP or the FastAPI routes."""

    def __init__(self, app: ASGIApp, auth: Auth, mcp: ASGIApp) -> None:
        self.app, self.auth, self.mcp = app, auth, mcp

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = scope["path"]
        if self.auth.enabled and path not in PUBLIC_PATHS:
            headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
            key = self.auth.authenticate(self.auth.presented_key(path, headers))
            if key is None:
                response = error_response(
                    401, "unauthorized", "Missing or unknown API key: send `Authorization: Bearer <key>` "
                    "(or `X-Memwrap-Key: <key>`; on the proxy routes only the latter).",
                    path=path, headers={"WWW-Authenticate": 'Bearer realm="memwrap"'},
                )
                await response(scope, receive, send)
                return
            scope.setdefault("state", {})["memwrap_key"] = key
        if path.startswith("/mcp/"):
            await self.mcp(scope, receive, send)
            return
        await self.app(scope, receive, send)


def create_app(settings: ServerSettings | None = None, *, memory: AsyncMemory | None = None) -> FastAPI:
    """The app. `memory` defaults to `AsyncMemory()` on MEMWRAP_HOME / MEMWRAP_DATABASE_URL, opened at start-up."""
    settings = settings or ServerSettings()
    auth = Auth(parse_api_keys(settings.api_keys))
    metrics = Metrics()
    state: dict[str, Any] = {}
    mcp_server = build_server(lambda: state["memory"])
    mcp_manager = session_manager(mcp_server, settings.host)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        owned = memory is None
        mem = memory or AsyncMemory()
        # Open the engine now: start-up fails loudly if the database is unreachable, and no call pays for it.
        await (mem.warmup() if hasattr(mem, "warmup") else mem.banks())
        state["memory"] = app.state.memory = mem
        proxy = app.state.proxy = Proxy(settings, mem)
        metrics.add_stats_source("proxy", proxy.stats)
        try:
            async with mcp_manager.run():
                yield
        finally:
            await proxy.close()
            if owned:
                await mem.close()

    app = FastAPI(title="memwrap", version=memwrap.__version__, description=DESCRIPTION, lifespan=lifespan)
    app.state.settings = settings
    app.state.metrics = metrics
    app.state.auth = auth
    server_errors.install(app)
    for router in ROUTERS:
        app.include_router(router)
    app.include_router(proxy_router)
    # Starlette builds the middleware stack at start-up: Gate runs first (auth, MCP), MetricsMiddleware inside it
    # sees every answered request, MCP and 401s included, because it is added last (outermost).
    app.add_middleware(Gate, auth=auth, mcp=McpEndpoint(mcp_manager))
    app.add_middleware(MetricsMiddleware, metrics=metrics)
    return app
