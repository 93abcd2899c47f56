"""The memory proxy: OpenAI- and Anthropic-compatible endpoints that add memory and forward upstream.

Point any SDK's `base_url` here and add `X-Memwrap-Bank: alice`. Each call goes through the Python wrappers'
own core (memwrap/wrappers/core.py), not a copy: `Memwrap.begin` reads the conversation, `Call.prepare_async`
recalls under a deadline (failing open) and places the block with the same injection code, and `Call.finish`
queues the exchange in the same durable spool, from which it is retained. Streams are relayed chunk by chunk
as they arrive; a copy of each SSE event feeds the wrappers' stream accumulators, and the turn is queued for
retain when the stream ends (or is cut: then marked partial).

Headers: X-Memwrap-Bank (no bank: plain pass-through), X-Memwrap-Session, X-Memwrap-Max-Tokens,
X-Memwrap-Tags (comma-separated), X-Memwrap-Inject / X-Memwrap-Retain ("false" turns one off), X-Memwrap-Key
(memwrap's own key when MEMWRAP_API_KEYS is set). The caller's Authorization / x-api-key go upstream as they
are and are never stored or logged.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Mapping
from dataclasses import asdict
from typing import Any

import httpx
from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse

from memwrap.api import AsyncMemory
from memwrap.errors import InvalidInputError
from memwrap.wrappers.core import Call, Memwrap, backend_for
from memwrap.wrappers.scope import Options, scope
from memwrap.wrappers.streams import ACCUMULATORS, Capture
from memwrap_server.auth import ApiKey, allowed
from memwrap_server.config import ServerSettings
from memwrap_server.errors import error_body

log = logging.getLogger("memwrap.server.proxy")

# Request headers never forwarded: hop-by-hop, recomputed ones, and memwrap's own.
_DROP_REQUEST = {"host", "content-length", "connection", "keep-alive", "transfer-encoding", "te", "upgrade",
                 "proxy-authorization", "proxy-connection", "accept-encoding", "expect"}
# Response headers passed back to the caller (the rest is hop-by-hop or describes our own framing).
_KEEP_RESPONSE_PREFIXES = ("x-ratelimit-", "openai-", "anthropic-", "x-request-id", "request-id", "retry-after",
                           "cf-ray", "x-should-retry")

ROUTES = {
    "/v1/chat/completions": ("openai.chat", "openai", "/chat/completions"),
    "/v1/responses": ("openai.responses", "openai", "/responses"),
    "/v1/messages": ("anthropic.messages", "anthropic", "/v1/messages"),
}


def _false(value: str | None) -> bool:
    return value is not None and value.strip().lower() in ("0", "false", "no", "off")


class SSEParser:
    """Splits a byte stream into server-sent events and yields each event's JSON data (skipping [DONE])."""

    def __init__(self) -> None:
        self._buffer = b""

    def feed(self, chunk: bytes) -> list[Any]:
        self._buffer += chunk.replace(b"\r\n", b"\n")
        events = []
        while b"\n\n" in self._buffer:
            raw, self._buffer = self._buffer.split(b"\n\n", 1)
            data = "\n".join(
                line[5:].lstrip() for line in raw.decode("utf-8", "replace").split("\n") if line.startswith("data:")
            )
            if not data or data == "[DONE]":
                continue
            try:
                events.append(json.loads(data))
            except ValueError:
                continue
        return events


class Proxy:
    def __init__(self, settings: ServerSettings, memory: AsyncMemory) -> None:
        self.settings = settings
        self.memory = memory
        self.bases = {
            "openai": settings.upstream_openai_url.rstrip("/"),
            "anthropic": settings.upstream_anthropic_url.rstrip("/"),
        }
        self.client = httpx.AsyncClient(
            timeout=httpx.Timeout(settings.upstream_timeout, connect=10.0),
            limits=httpx.Limits(max_connections=None, max_keepalive_connections=100),
        )
        # One handle for the whole server: its statistics are the proxy's, its spool the server's.
        self.handle = Memwrap(memory, Options(recall_timeout=settings.proxy_recall_timeout,
                                              max_tokens=settings.proxy_max_tokens), family="proxy")
        backend_for(memory)[0].max_inflight = settings.proxy_max_inflight

    def stats(self) -> dict[str, Any]:
        return asdict(self.handle.stats)

    async def close(self, timeout: float = 10.0) -> None:
        # Deliver queued retains while the event loop (which runs the engine) still turns; the rest stays
        # spooled on disk and is replayed by the next process on this home.
        await asyncio.to_thread(self.handle.close, timeout)
        await self.client.aclose()

    # -- one call ----------------------------------------------------------------------------------------------

    async def handle_request(self, request: Request, key: ApiKey | None) -> Response:
        provider, family, upstream_path = ROUTES[request.url.path]
        anthropic = family == "anthropic"
        raw = await request.body()
        headers = request.headers
        bank = headers.get("x-memwrap-bank")
        call: Call | None = None
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None  # not JSON: the upstream says what is wrong with it
        if isinstance(body, dict):
            body.pop("memwrap", None)  # options come from headers only: the bank is what the key was checked for
            if bank:
                if not allowed(key, bank):
                    return _error(403, "bank_forbidden", f"This API key may not use bank {bank!r}.", anthropic)
                try:
                    call, body = self._begin(provider, body, headers)
                except (InvalidInputError, ValueError) as exc:
                    return _error(400, getattr(exc, "code", "invalid_request"), str(exc), anthropic)
                if call is not None:
                    body = await call.prepare_async()
            raw = json.dumps(body).encode()  # ASCII escapes: a lone surrogate in the JSON still encodes
        return await self._forward(request, family, upstream_path, raw, call, anthropic)

    def _begin(self, provider: str, body: dict[str, Any], headers: Mapping[str, str]) -> tuple[Call | None, dict[str, Any]]:
        options: dict[str, Any] = {"bank_id": headers["x-memwrap-bank"]}
        if headers.get("x-memwrap-session"):
            options["session_id"] = headers["x-memwrap-session"]
        if headers.get("x-memwrap-max-tokens"):
            options["max_tokens"] = int(headers["x-memwrap-max-tokens"])
            if options["max_tokens"] < 1:
                raise ValueError("X-Memwrap-Max-Tokens must be a positive integer.")
        if headers.get("x-memwrap-tags"):
            options["tags"] = [t.strip() for t in headers["x-memwrap-tags"].split(",") if t.strip()]
        if _false(headers.get("x-memwrap-inject")):
            options["inject"] = False
        if _false(headers.get("x-memwrap-retain")):
            options["retain"] = False
        # A scope is a ContextVar: it applies to this request's task only, as for concurrent users of a wrapper.
        with scope(**options):
            return self.handle.begin(provider, body)

    async def _forward(
        self, request: Request, family: str, path: str, raw: bytes, call: Call | None, anthropic: bool
    ) -> Response:
        out_headers = {k: v for k, v in request.headers.items()
                       if k.lower() not in _DROP_REQUEST and not k.lower().startswith("x-memwrap-")}
        out_headers["accept-encoding"] = "identity"  # events are read on the way: keep them uncompressed
        url = self.bases[family] + path
        if request.url.query:
            url += "?" + request.url.query
        upstream = self.client.build_request("POST", url, content=raw, headers=out_headers)
        try:
            response = await self.client.send(upstream, stream=True)
        except httpx.TimeoutException as exc:
            return _error(504, "upstream_timeout", f"The upstream at {self.bases[family]} timed out ({exc!r}).", anthropic)
        except httpx.TransportError as exc:
            return _error(502, "upstream_unavailable", f"Could not reach the upstream at {self.bases[family]} ({exc!r}).", anthropic)
        keep = {k: v for k, v in response.headers.items() if k.lower().startswith(_KEEP_RESPONSE_PREFIXES)}
        content_type = response.headers.get("content-type", "application/json")
        if response.status_code < 400 and content_type.startswith("text/event-stream"):
            return StreamingResponse(self._relay(response, call), status_code=response.status_code,
                                     headers={**keep, "cache-control": "no-cache"}, media_type=content_type)
        try:
            content = await response.aread()
        finally:
            await response.aclose()
        if call is not None and response.status_code < 400:
            try:
                call.finish_result(json.loads(content))
            except ValueError:
                pass  # a 2xx that is not JSON: nothing we can read an answer from
        return Response(content, status_code=response.status_code, headers=keep, media_type=content_type)

    async def _relay(self, response: httpx.Response, call: Call | None) -> AsyncIterator[bytes]:
        capture = Capture(call, ACCUMULATORS[call.provider.name]()) if call is not None else None
        parser = SSEParser()
        try:
            async for chunk in response.aiter_raw():
                yield chunk  # the caller gets each chunk as it came; reading it for memory comes second
                if capture is not None:
                    for event in parser.feed(chunk):
                        capture.feed(event)
        except httpx.HTTPError as exc:
            log.warning("memwrap proxy: upstream stream broke off: %r", exc)
        finally:
            if capture is not None:  # first: a caller that hung up cancels us, and the await below may not return
                capture.finish()  # complete or cut short (then retained as partial), as the wrapper does
            await response.aclose()


def _error(status: int, code: str, message: str, anthropic: bool) -> JSONResponse:
    return JSONResponse(error_body(status, code, message, anthropic=anthropic), status_code=status)


router = APIRouter(tags=["proxy"])


async def _proxy(request: Request) -> Response:
    key = request.scope.get("state", {}).get("memwrap_key")
    return await request.app.state.proxy.handle_request(request, key)  # type: ignore[no-any-return]


_DESCRIPTION = ("Forwarded to the configured upstream with memory added (X-Memwrap-Bank) and the turn retained. "
                "The body is the provider's own; streaming is relayed event by event.")

for _path, (_provider, _, _) in ROUTES.items():
    router.add_api_route(_path, _proxy, methods=["POST"], summary=f"Memory proxy: {_provider}",
                         description=_DESCRIPTION, include_in_schema=False)
