"""Errors as JSON with a stable code: `{"error": {"code": "...", "message": "...", "type": "..."}}`.

The shape is OpenAI's (so SDKs pointed at the proxy parse it); `code` is memwrap's error code (errors.py), which
the HTTP client turns back into the same exception. Anthropic's routes get Anthropic's envelope instead.
"""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from memwrap import errors

log = logging.getLogger("memwrap.server")

# Most specific first: the first class an error is an instance of decides its status. By name, so a class that
# a newer engine adds (or an older one lacks) needs no change here.
_STATUS_BY_NAME = [
    ("MemoryNotFoundError", 404),
    ("BankNotFoundError", 404),
    ("BankExistsError", 409),
    ("ContextOverflowError", 422),
    ("InvalidInputError", 422),
    ("LLMNotConfiguredError", 409),
    ("LLMUnavailableError", 503),  # the engine's own LLM is down or rate-limited: try again later
    ("LLMError", 502),  # it refused the request or answered nonsense
    ("StoreError", 503),
    ("EmbeddingModelError", 503),
    ("ClosedError", 503),
]
STATUS: list[tuple[type[errors.MemwrapError], int]] = [
    (getattr(errors, name), status) for name, status in _STATUS_BY_NAME if hasattr(errors, name)
]

_TYPES = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error", 404: "not_found_error",
          409: "conflict_error", 422: "invalid_request_error", 502: "api_error", 503: "api_error", 504: "api_error"}


class ApiError(Exception):
    def __init__(self, status: int, code: str, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status, self.code, self.message, self.headers = status, code, message, headers


def error_body(status: int, code: str, message: str, *, anthropic: bool = False) -> dict[str, Any]:
    kind = _TYPES.get(status, "api_error")
    if anthropic:
        return {"type": "error", "error": {"type": kind, "message": message, "code": code}}
    return {"error": {"code": code, "message": message, "type": kind}}


def error_response(status: int, code: str, message: str, *, path: str = "", headers: dict[str, str] | None = None) -> JSONResponse:
    body = error_body(status, code, message, anthropic=path == "/v1/messages")
    return JSONResponse(body, status_code=status, headers=headers)


def status_of(exc: errors.MemwrapError) -> int:
    return next((status for cls, status in STATUS if isinstance(exc, cls)), 500)


def install(app: FastAPI) -> None:
    @app.exception_handler(errors.MemwrapError)
    async def memwrap_error(request: Request, exc: errors.MemwrapError) -> JSONResponse:
        status = status_of(exc)
        if status >= 500:
            log.warning("%s %s failed: %s", request.method, request.url.path, exc)
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
        return error_response(422, "invalid_request", "; ".join(parts), path=request.url.path)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, f"http_{exc.status_code}")
        return error_response(exc.status_code, code, str(exc.detail), path=request.url.path, headers=exc.headers)

    @app.exception_handler(Exception)
    async def unexpected(request: Request, exc: Exception) -> JSONResponse:
        log.exception("%s %s: unexpected error", request.method, request.url.path)
        return error_response(500, "internal_error", "Internal server error (logged on the server).", path=request.url.path)
