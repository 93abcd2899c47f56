"""The outermost ASGI layer: what every request passes before any route sees it.

In order: the Host and Origin (without API keys: the DNS-rebinding guard of memwrap_server/hosts.py), the API key
(every route but /health and /ready), the key's failure budget (a key that keeps sending
requests the server refuses is held, then answered 429: memwrap_server/throttle.py), the body limit (413 past
MEMWRAP_MAX_REQUEST_BYTES,
from Content-Length up front or counted as the body streams in), the database (503 at once on data routes while
the monitor says it is down), then MCP or the FastAPI routes. A data request still waiting on the database when
the monitor finds it stopped answering is answered 503 then (its work is cancelled and left to finish in the
background once the database answers again). An exception no route handler took is answered here (500, or 503
for a lost database connection) and logged once, without reaching the server's own logger.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from memwrap.engine.webhooks.urls import scoped_caller
from memwrap_server.auth import PUBLIC_PATHS, Auth, is_public
from memwrap_server.database import DatabaseMonitor
from memwrap_server.errors import error_response, unexpected
from memwrap_server.hosts import TARGET_EXTENSION, HostCheck
from memwrap_server.logs import is_client_disconnect
from memwrap_server.throttle import FailureBudget

log = logging.getLogger("memwrap.server")

DATA_PREFIXES = ("/v1/banks", "/mcp/")


class BodyTooLarge(HTTPException):
    """Raised from `receive` once the body passes the limit. An HTTPException, so FastAPI's body reading lets
    it through as it is (it turns other errors into 400) and our handler answers 413."""

    def __init__(self, limit: int) -> None:
        super().__init__(
            413, f"The request body is larger than this server accepts ({limit:,} bytes; MEMWRAP_MAX_REQUEST_BYTES)."
        )


def too_large(limit: int, path: str) -> Any:
    return error_response(413, "request_too_large", BodyTooLarge(limit).detail, path=path)


class Gate:
    def __init__(
        self,
        app: ASGIApp,
        auth: Auth,
        mcp: ASGIApp,
        database: DatabaseMonitor,
        max_body: int,
        failures: FailureBudget,
        hosts: HostCheck,
    ) -> None:
        self.app, self.auth, self.mcp, self.database, self.max_body = app, auth, mcp, database, max_body
        self.failures, self.hosts = failures, hosts
        self._abandoned: set[asyncio.Task[None]] = set()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = scope["path"]
        if path not in PUBLIC_PATHS:
            target = scope.get("extensions", {}).get(TARGET_EXTENSION)
            if target is None and not path.startswith("/"):  # h11 leaves an absolute-form target in the path
                target = path.encode("latin-1", "replace")
            refused = self.hosts.refusal(scope["headers"], target)
            if refused is not None:
                await error_response(421, "host_not_allowed", refused, path=path)(scope, receive, send)
                return
        if self.auth.enabled and not is_public(path):
            headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
            key = self.auth.authenticate(self.auth.presented_key(path, headers))
            if key is None:
                response = error_response(
                    401,
                    "unauthorized",
                    "Missing or unknown API key: send `Authorization: Bearer <key>` "
                    "(or `X-Memwrap-Key: <key>`; on the proxy routes only the latter).",
                    path=path,
                    headers={"WWW-Authenticate": 'Bearer realm="memwrap"'},
                )
                await response(scope, receive, send)
                return
            scope.setdefault("state", {})["memwrap_key"] = key
            retry_after = await self.failures.admit(key)
            if retry_after is not None:
                response = error_response(
                    429,
                    "too_many_failures",
                    "This API key sent more refused requests than the server accepts "
                    f"({self.failures.rate:g}/s beyond a burst of {self.failures.burst}); fix the failing calls "
                    "or slow down (MEMWRAP_FAILURE_RATE).",
                    path=path,
                    headers={"Retry-After": str(int(retry_after))},
                )
                await response(scope, receive, send)
                return
            # A bank-scoped key's webhooks reach public addresses only, and it reads their log as failure classes
            # (memwrap/engine/webhooks/urls.py): the verbs it calls learn so from this context.
            with scoped_caller(key.banks is not None):
                status = await self._answer(scope, receive, send)
            if status is not None:
                self.failures.charge(key, status)
            return
        await self._answer(scope, receive, send)

    async def _answer(self, scope: Scope, receive: Receive, send: Send) -> int | None:
        """Everything after the key: body limit, database, then MCP or the routes. Returns the status answered
        (None when nothing was)."""
        path = scope["path"]
        declared = _content_length(scope)
        if declared is not None and declared > self.max_body:
            await too_large(self.max_body, path)(scope, receive, send)
            return 413
        if self.database.down and path.startswith(DATA_PREFIXES):
            response = error_response(
                503,
                "store_unavailable",
                "The memory database is unavailable; try again shortly.",
                path=path,
                headers={"Retry-After": "1"},
            )
            await response(scope, receive, send)
            return 503
        status: int | None = None
        cut = False  # answered here while the request's own task goes on: what it sends goes nowhere

        async def tracking_send(message: Message) -> None:
            nonlocal status
            if cut:
                return
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        inner = self.mcp if path.startswith("/mcp/") else self.app
        try:
            if self.database.watching and path.startswith(DATA_PREFIXES):
                if await self._unless_frozen(inner(scope, self._limited(receive), tracking_send)):
                    return status
                cut = True
                if status is None:
                    log.warning(
                        "%s %s: the database stopped answering; answered 503", scope.get("method"), _route(scope)
                    )
                    await error_response(
                        503,
                        "store_unavailable",
                        "The memory database stopped answering; try again shortly.",
                        path=path,
                        headers={"Retry-After": "1"},
                    )(scope, receive, send)
                    return 503
                return status  # a stream cut off: the server closes the connection, the client sees it
            await inner(scope, self._limited(receive), tracking_send)
        except BodyTooLarge:
            # Reached only where no FastAPI handler answered (MCP reads bodies itself).
            if status is None:
                await too_large(self.max_body, path)(scope, receive, send)
                return 413
        except Exception as exc:  # noqa: BLE001 - what no handler took: answered and logged here, once
            if is_client_disconnect(exc):  # the caller hung up while its body was read: nobody to answer
                log.debug("%s %s: client disconnected", scope.get("method"), _route(scope))
                return status
            if status is not None:
                # A stream broke after its first byte: nothing can be answered any more. Returning leaves the
                # response incomplete, so the server closes the connection and the client sees the failure.
                if not getattr(exc, "expected", False):
                    unexpected(scope, exc, self.database)
                return status
            response = unexpected(scope, exc, self.database)
            await response(scope, receive, send)
            return response.status_code
        return status

    async def _unless_frozen(self, call: Any) -> bool:
        """Run a data request until it ends (True) or the monitor finds the database down first (False: the
        request is cancelled, and what is left of it finishes in the background, its sends going nowhere).
        Exceptions of the request propagate."""
        task: asyncio.Task[None] = asyncio.ensure_future(call)
        signal = self.database.down_signal
        try:
            await asyncio.wait((task, signal), return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            task.cancel()
            raise
        if task.done():
            task.result()
            return True
        task.cancel()
        self._abandoned.add(task)  # the loop holds tasks weakly; its cleanup may wait for the database
        task.add_done_callback(self._forget)
        return False

    def _forget(self, task: asyncio.Task[None]) -> None:
        self._abandoned.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.info("a request answered 503 while the database was frozen ended with %r", task.exception())

    def _limited(self, receive: Receive) -> Receive:
        received = 0
        limit = self.max_body

        async def limited() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    raise BodyTooLarge(limit)
            return message

        return limited


def _route(scope: Scope) -> str:
    """The route's template (bank ids are the callers' data, not log material)."""
    return getattr(scope.get("route"), "path", None) or "/" + scope["path"].split("/")[1] + "/…"


def _content_length(scope: Scope) -> int | None:
    for key, value in scope["headers"]:
        if key == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None
