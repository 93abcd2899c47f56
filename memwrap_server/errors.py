"""Errors as JSON with a stable code: `{"error": {"code": "...", "message": "...", "type": "..."}}`.

The shape is OpenAI's (so SDKs pointed at the proxy parse it); `code` is memwrap's error code (errors.py), which
the HTTP client turns back into the same exception. Anthropic's routes get Anthropic's envelope instead.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from memwrap import errors
from memwrap_server.database import is_connection_error

log = logging.getLogger("memwrap.server")

# Most specific first: the first class an error is an instance of decides its status.
STATUS: list[tuple[type[errors.MemwrapError], int]] = [
    (errors.MemoryNotFoundError, 404),
    (errors.BankNotFoundError, 404),
    (errors.EntityNotFoundError, 404),
    (errors.WebhookNotFoundError, 404),
    (errors.BankExistsError, 409),
    (errors.ConflictError, 409),  # before InvalidInputError, its base
    (errors.ContextOverflowError, 422),
    (errors.InvalidInputError, 422),
    (errors.LLMNotConfiguredError, 409),
    (errors.LLMUnavailableError, 503),  # the engine's own LLM is down or rate-limited: try again later
    (errors.LLMError, 502),  # it refused the request or answered nonsense
    (errors.StoreError, 503),
    (errors.EmbeddingModelError, 503),
    (errors.ClosedError, 503),
]

_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    409: "conflict_error",
    413: "request_too_large",
    422: "invalid_request_error",
    429: "rate_limit_error",
    502: "api_error",
    503: "api_error",
    504: "api_error",
}
_HTTP_CODES = {404: "not_found", 405: "method_not_allowed", 413: "request_too_large"}


class ApiError(Exception):
    def __init__(self, status: int, code: str, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status, self.code, self.message, self.headers = status, code, message, headers


def error_body(status: int, code: str, message: str, *, anthropic: bool = False) -> dict[str, Any]:
    kind = _TYPES.get(status, "api_error")
    if anthropic:
        return {"type": "error", "error": {"type": kind, "message": message, "code": code}}
    return {"error": {"code": code, "message": message, "type": kind}}


def error_response(
    status: int, code: str, message: str, *, path: str = "", headers: Mapping[str, str] | None = None
) -> JSONResponse:
    body = error_body(status, code, message, anthropic=path == "/v1/messages")
    return JSONResponse(body, status_code=status, headers=headers)


def status_of(exc: errors.MemwrapError) -> int:
    return next((status for cls, status in STATUS if isinstance(exc, cls)), 500)


def install(app: FastAPI) -> None:
    @app.exception_handler(errors.MemwrapError)
    async def memwrap_error(request: Request, exc: errors.MemwrapError) -> JSONResponse:
        status = status_of(exc)
        if status >= 500:  # one line, no traceback: these are known conditions, not bugs
            log.warning("%s %s failed: %s", request.method, _route(request), exc)
        return error_response(status, exc.code, str(exc), path=request.url.path)

    @app.exception_handler(ApiError)
    async def api_error(request: Request, exc: ApiError) -> JSONResponse:
        return error_response(exc.status, exc.code, exc.message, path=request.url.path, headers=exc.headers)

    @app.exception_handler(RequestValidationError)
    async def invalid_request(request: Request, exc: RequestValidationError) -> JSONResponse:
        problems = exc.errors()
        if any(p.get("type") == "json_invalid" for p in problems):
            return error_response(400, "invalid_json", "The request body is not valid JSON.", path=request.url.path)
        parts = []
        for p in problems[:5]:
            where = ".".join(str(x) for x in p.get("loc", ()) if x != "body") or "request"
            parts.append(f"{where}: {p.get('msg')}")
        # A budget out of its declared bounds keeps the code the engine gave it before the bounds were declared
        # (clients match on codes: tests/test_server_rest.py's stable codes).
        budgets = {"token_budget", "context_budget", "max_answer_tokens"}
        code = "invalid_budget" if all(_field(p) in budgets for p in problems) else "invalid_request"
        return error_response(422, code, "; ".join(parts), path=request.url.path)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = _HTTP_CODES.get(exc.status_code, f"http_{exc.status_code}")
        message = str(exc.detail)
        if exc.status_code == 400:  # FastAPI's only 400: a body json.loads gave up on (nested too deeply, ...)
            code, message = (
                "invalid_json",
                "The request body could not be read as JSON (malformed, or nested too deeply).",
            )
        headers = exc.headers
        if exc.status_code == 405 and (allowed := _allowed_methods(request)):
            headers = {**(headers or {}), "Allow": allowed}
        return error_response(exc.status_code, code, message, path=request.url.path, headers=headers)


def _allowed_methods(request: Request) -> str:
    """Every method some route of this path takes: Starlette's 405 names only the first route that matched the
    path, and a path's methods are several routes here (GET and POST /v1/banks are two)."""
    from starlette.routing import Match

    scope = {**request.scope, "method": "\x00"}  # no route takes it: a route whose path matches says PARTIAL
    methods: set[str] = set()

    def visit(routes: Any) -> None:
        for route in routes:
            inner = getattr(getattr(route, "original_router", None), "routes", None)  # an included router
            if inner is not None:
                visit(inner)
            elif route.matches(scope)[0] is not Match.NONE:
                methods.update(getattr(route, "methods", None) or ())

    visit(request.app.router.routes)
    return ", ".join(sorted(methods - {"HEAD"}))


def unexpected(scope: Mapping[str, Any], exc: BaseException, database: Any) -> JSONResponse:
    """The answer to an exception no handler took (called by the Gate, outside FastAPI's stack, so that the
    exception is logged once, by us, and is not re-raised to the server to be logged again with a traceback).

    A connection error means the database went away under this request: 503, and the monitor looks now.
    """
    path, method = scope.get("path", ""), scope.get("method", "")
    route = getattr(scope.get("route"), "path", None) or path
    cause = _connection_error(exc)
    if cause is not None:
        database.suspect(cause)
        log.warning("%s %s: the database is unreachable (%s)", method, route, type(cause).__name__)
        return error_response(
            503,
            "store_unavailable",
            "The memory database is unavailable; try again shortly.",
            path=path,
            headers={"Retry-After": "1"},
        )
    # Formatted by the log's own thread (memwrap_server/logs.py), never on the event loop.
    log.error("%s %s: unexpected error", method, route, exc_info=exc)
    return error_response(500, "internal_error", "Internal server error (logged on the server).", path=path)


def _route(request: Request) -> str:
    """The route's template (bank ids and document ids are the callers' data, not log material)."""
    route = request.scope.get("route")
    return getattr(route, "path", None) or request.url.path


def _connection_error(exc: BaseException) -> BaseException | None:
    seen: BaseException | None = exc
    for _ in range(5):  # the error itself or what it was raised from
        if seen is None:
            return None
        if is_connection_error(seen):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None


def _field(problem: Mapping[str, Any]) -> str:
    """The name of the field a validation problem is about (the last name of its location)."""
    names = [x for x in problem.get("loc", ()) if isinstance(x, str)]
    return names[-1] if names else ""
