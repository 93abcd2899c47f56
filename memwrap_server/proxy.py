"""The memory proxy: OpenAI- and Anthropic-compatible endpoints that add memory and forward upstream.

Point any SDK's `base_url` here and add `X-Memwrap-Bank: alice`. Each call goes through the Python wrappers'
own core (memwrap/wrappers/core.py), not a copy: `Memwrap.begin` reads the conversation, `Call.prepare_async`
recalls under a deadline (failing open) and places the block with the same injection code, and `Call.finish`
queues the exchange in the same durable spool, from which it is retained. Streams are relayed chunk by chunk
as they arrive; a copy of each SSE event feeds the wrappers' stream accumulators, and the turn is queued for
retain when the stream ends (or is cut: then marked partial).

Headers (read as UTF-8; X-Memwrap-Bank may be percent-encoded UTF-8): X-Memwrap-Bank (no bank: plain pass-through),
X-Memwrap-Session, X-Memwrap-Token-Budget (old name: X-Memwrap-Max-Tokens),
X-Memwrap-Tags (comma-separated), X-Memwrap-Filter (a recall filter as JSON: what may be injected),
X-Memwrap-Inject / X-Memwrap-Retain ("false" turns one off), X-Memwrap-Key
(memwrap's own key when MEMWRAP_API_KEYS is set). The caller's Authorization / x-api-key go upstream as they
are and are never stored or logged. The headers are checked before anything is sent (400 with the reason):
a call memwrap could not file is refused up front, never answered and then silently not remembered.

Failures are relayed, not smoothed over: a stream the upstream cuts ends with the provider's error event and a
broken connection, as it would directly. A caller that hangs up before its answer arrives still has the turn
retained, marked `unseen`. Error bodies never name the upstream's address.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Mapping
from dataclasses import asdict
from typing import Any
from urllib.parse import unquote

import httpx
from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse

from memwrap import validate
from memwrap.api import AsyncMemory
from memwrap.engine.banks import ids as bank_ids
from memwrap.errors import BankNotFoundError, InvalidBankIdError, InvalidInputError
from memwrap.filters import filter_from_json, split_tags
from memwrap.wrappers.core import Call, backend_for
from memwrap.wrappers.scope import Options, scope
from memwrap.wrappers.streams import ACCUMULATORS, Capture
from memwrap_server.auth import ApiKey, allowed
from memwrap_server.config import ServerSettings
from memwrap_server.database import DatabaseMonitor
from memwrap_server.errors import error_body
from memwrap_server.proxy_turns import ProxyMemwrap, turn_marks

log = logging.getLogger("memwrap.server.proxy")

# Request headers never forwarded: hop-by-hop, recomputed ones, and memwrap's own.
_DROP_REQUEST = {
    "host",
    "content-length",
    "connection",
    "keep-alive",
    "transfer-encoding",
    "te",
    "upgrade",
    "proxy-authorization",
    "proxy-connection",
    "accept-encoding",
    "expect",
}
# Response headers passed back to the caller (the rest is hop-by-hop or describes our own framing).
_KEEP_RESPONSE_PREFIXES = (
    "x-ratelimit-",
    "openai-",
    "anthropic-",
    "x-request-id",
    "request-id",
    "retry-after",
    "cf-ray",
    "x-should-retry",
)

# A session id becomes document ids "session:turn-N" (at most validate.MAX_DOCUMENT_ID_CHARS).
MAX_SESSION_CHARS = 256
MAX_TAGS = 50
# Provider bodies are shallow (a JSON schema for structured output is the deepest part); deeper is an attack
# on recursive code somewhere, refused before any of it runs.
MAX_BODY_DEPTH = 128

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


class RequestRefused(InvalidInputError):
    code = "invalid_request"


class UpstreamStreamCut(Exception):
    """The upstream broke a stream off; raised after the error event is relayed, so the connection breaks too."""

    expected = True  # the Gate does not log it again as an unexpected error


def _parse(raw: bytes) -> Any:
    """The body as JSON, None when it is not JSON (the upstream then says what is wrong with it)."""
    if not raw:
        return None
    try:
        body = json.loads(raw)
    except RecursionError:
        raise RequestRefused(f"The request body nests deeper than {MAX_BODY_DEPTH} levels.") from None
    except ValueError:
        return None
    if validate.nesting_depth(body, MAX_BODY_DEPTH) > MAX_BODY_DEPTH:
        raise RequestRefused(f"The request body nests deeper than {MAX_BODY_DEPTH} levels.")
    return body


def memwrap_headers(raw: list[tuple[bytes, bytes]]) -> dict[str, str]:
    """The X-Memwrap-* headers, read as UTF-8 (what REST paths and MCP paths carry, percent-decoded, so one bank
    id means the same bank everywhere). X-Memwrap-Bank may also be percent-encoded UTF-8, for clients that
    send only ASCII headers (browsers' fetch, Node): `%E5%BC%A0%E4%BC%9F` is 张伟 (a bank id holds no `%`).
    HTTP frameworks read header bytes as Latin-1, which made a UTF-8 bank that works over REST a 400 here."""
    found: dict[str, str] = {}
    for name, value in raw:
        key = name.decode("latin-1").lower()
        if not key.startswith("x-memwrap-"):
            continue
        try:
            text = value.decode("utf-8")
        except UnicodeDecodeError:
            raise RequestRefused(f"{_title(key)} is not valid UTF-8; send UTF-8, or percent-encode it.") from None
        if key == "x-memwrap-bank" and "%" in text:
            try:
                text = unquote(text, errors="strict")
            except UnicodeDecodeError:
                raise RequestRefused("X-Memwrap-Bank is percent-encoded, but not UTF-8.") from None
        found[key] = text
    return found


def _title(header: str) -> str:
    return "-".join(part.capitalize() for part in header.split("-"))


def memwrap_options(headers: Mapping[str, str]) -> dict[str, Any]:
    """The X-Memwrap-* headers as wrapper options, checked: RequestRefused says which one is wrong and why."""
    options: dict[str, Any] = {"bank_id": validate.bank_id(headers["x-memwrap-bank"])}
    session = headers.get("x-memwrap-session")
    if session is not None:
        if len(session) > MAX_SESSION_CHARS:
            raise RequestRefused(f"X-Memwrap-Session is {len(session)} characters; the limit is {MAX_SESSION_CHARS}.")
        if session.strip():
            options["session_id"] = validate.text_field(
                session.strip(), what="X-Memwrap-Session", max_chars=MAX_SESSION_CHARS
            )
    name = "X-Memwrap-Token-Budget" if "x-memwrap-token-budget" in headers else "X-Memwrap-Max-Tokens"
    budget = headers.get(name.lower())
    if budget is not None:
        if not budget.strip().isascii() or not budget.strip().isdigit():
            raise RequestRefused(f"{name} must be an integer from 1 to {validate.MAX_BUDGET_TOKENS:,}.")
        options["token_budget"] = validate.budget(int(budget.strip()), what=name)
    tags = headers.get("x-memwrap-tags")
    if tags is not None:
        found = split_tags(tags)
        if len(found) > MAX_TAGS:
            raise RequestRefused(f"X-Memwrap-Tags has {len(found)} tags; the limit is {MAX_TAGS}.")
        too_long = [t for t in found if len(t) > validate.MAX_TAG_CHARS]
        if too_long:
            raise RequestRefused(
                f"X-Memwrap-Tags: a tag is {len(too_long[0])} characters; the limit is {validate.MAX_TAG_CHARS}."
            )
        options["tags"] = found
    raw_filter = headers.get("x-memwrap-filter")
    if raw_filter is not None and raw_filter.strip():
        try:
            options["filters"] = filter_from_json(raw_filter, what="X-Memwrap-Filter")
        except InvalidInputError as exc:
            raise RequestRefused(str(exc)) from None
    if _false(headers.get("x-memwrap-inject")):
        options["inject"] = False
    if _false(headers.get("x-memwrap-retain")):
        options["retain"] = False
    return options


class Proxy:
    def __init__(self, settings: ServerSettings, memory: AsyncMemory, database: DatabaseMonitor) -> None:
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
        self.handle = ProxyMemwrap(
            memory,
            Options(recall_timeout=settings.proxy_recall_timeout, token_budget=settings.proxy_token_budget),
            family="proxy",
            database=database,
        )
        backend = backend_for(memory).backend
        backend.max_inflight = settings.proxy_max_inflight
        backend.retain_timeout = settings.proxy_retain_timeout

    def start(self) -> None:
        """On the server's loop, before the first call: turns that a previous run left in the spool are
        delivered now. The spool delivers to an async memory through the loop it was first used on; without
        this, it learnt that loop only from the next proxied call (and backed off until then)."""
        backend, retainer = backend_for(self.memory)
        backend.bind_loop()
        retainer.flush(timeout=0)  # wakes the delivery thread and cuts its backoff short; does not wait
        self.handle.background(self.handle.expire_responses())

    def stats(self) -> dict[str, Any]:
        return asdict(self.handle.stats)

    async def close(self, timeout: float = 10.0) -> None:
        # Deliver queued retains while the event loop (which runs the engine) still turns; the rest stays
        # spooled on disk and is replayed by the next process on this home.
        await self.handle.drain()
        await asyncio.to_thread(self.handle.close, timeout)
        await self.client.aclose()

    # -- one call ----------------------------------------------------------------------------------------------

    async def handle_request(self, request: Request, key: ApiKey | None) -> Response:
        provider, family, upstream_path = ROUTES[request.url.path]
        anthropic = family == "anthropic"
        raw = await request.body()
        call: Call | None = None
        try:
            headers = memwrap_headers(request.scope["headers"])
            bank = headers.get("x-memwrap-bank")
            body = _parse(raw)
            if isinstance(body, dict):
                body.pop("memwrap", None)  # options come from headers only: the bank is what the key was checked for
                if bank:
                    options = memwrap_options(headers)
                    if not allowed(key, options["bank_id"]):
                        return _error(403, "bank_forbidden", f"This API key may not use bank {bank!r}.", anthropic)
                    await self._admit(options["bank_id"])
                    call, body = await self._begin(provider, body, options)
                    if call is not None:
                        body = await call.prepare_async()
                raw = json.dumps(body).encode()  # ASCII escapes: a lone surrogate in the JSON still encodes
        except InvalidInputError as exc:
            return _error(400, exc.code, str(exc), anthropic)
        return await self._forward(request, family, upstream_path, raw, call, anthropic)

    async def _admit(self, bank_id: str) -> None:
        """A bank this call would create must not pass for another (memwrap/engine/banks/ids.py): refused up
        front, as any header the turn could not be filed under, rather than answered and then not remembered."""
        reason = bank_ids.lookalike(bank_id)
        if reason is None:
            return
        try:
            await self.memory.bank_config(bank_id)  # BankNotFoundError: it would be created
        except BankNotFoundError:
            raise InvalidBankIdError(reason) from None
        except Exception:  # noqa: BLE001 - the database is away: the call fails open, the spool decides later
            return

    async def _begin(
        self, provider: str, body: dict[str, Any], options: dict[str, Any]
    ) -> tuple[Call | None, dict[str, Any]]:
        previous = body.get("previous_response_id")
        if provider == "openai.responses" and isinstance(previous, str) and "session_id" not in options:
            await self.handle.load_response(options["bank_id"], previous)  # the bank's map, from the database
        # A scope is a ContextVar: it applies to this request's task only, as for concurrent users of a wrapper.
        with scope(**options):
            return self.handle.begin(provider, body)

    async def _forward(
        self, request: Request, family: str, path: str, raw: bytes, call: Call | None, anthropic: bool
    ) -> Response:
        out_headers = {
            k: v
            for k, v in request.headers.items()
            if k.lower() not in _DROP_REQUEST and not k.lower().startswith("x-memwrap-")
        }
        out_headers["accept-encoding"] = "identity"  # events are read on the way: keep them uncompressed
        url = self.bases[family] + path
        if request.url.query:
            url += "?" + request.url.query
        upstream = self.client.build_request("POST", url, content=raw, headers=out_headers)
        try:
            response = await self.client.send(upstream, stream=True)
        except httpx.TimeoutException as exc:
            log.warning("the %s upstream timed out (%s)", family, type(exc).__name__)
            return _error(504, "upstream_timeout", "The upstream LLM API did not answer in time.", anthropic)
        except httpx.TransportError as exc:
            log.warning("the %s upstream could not be reached (%s)", family, type(exc).__name__)
            return _error(502, "upstream_unavailable", "Could not reach the upstream LLM API.", anthropic)
        keep = {k: v for k, v in response.headers.items() if k.lower().startswith(_KEEP_RESPONSE_PREFIXES)}
        content_type = response.headers.get("content-type", "application/json")
        if response.status_code < 400 and content_type.startswith("text/event-stream"):
            return StreamingResponse(
                self._relay(response, call, anthropic),
                status_code=response.status_code,
                headers={**keep, "cache-control": "no-cache"},
                media_type=content_type,
            )
        try:
            content = await response.aread()
        except httpx.HTTPError as exc:
            log.warning("the %s upstream broke off its answer (%s)", family, type(exc).__name__)
            return _error(502, "upstream_unavailable", "The upstream LLM API broke off its answer.", anthropic)
        finally:
            await response.aclose()
        if call is not None and response.status_code < 400:
            # The caller may have hung up while the upstream worked: the answer is still kept, marked unseen.
            unseen = await request.is_disconnected()
            token = turn_marks.set({"unseen": True} if unseen else None)
            try:
                call.finish_result(json.loads(content))
            except ValueError:
                pass  # a 2xx that is not JSON: nothing we can read an answer from
            finally:
                turn_marks.reset(token)
        return Response(content, status_code=response.status_code, headers=keep, media_type=content_type)

    async def _relay(self, response: httpx.Response, call: Call | None, anthropic: bool) -> AsyncIterator[bytes]:
        capture = Capture(call, ACCUMULATORS[call.provider.name]()) if call is not None else None
        parser = SSEParser()
        broken: httpx.HTTPError | None = None
        try:
            async for chunk in response.aiter_raw():
                yield chunk  # the caller gets each chunk as it came; reading it for memory comes second
                if capture is not None:
                    for event in parser.feed(chunk):
                        capture.feed(event)
        except httpx.HTTPError as exc:
            broken = exc
        finally:
            if capture is not None:  # first: a caller that hung up cancels us, and the await below may not return
                capture.finish()  # complete or cut short (then retained as partial), as the wrapper does
            await response.aclose()
        if broken is not None:
            log.warning("the upstream broke a stream off (%s); relaying the failure", type(broken).__name__)
            # The provider's own error event (its SDK raises on it), then a broken connection (what a client
            # talking to the upstream directly would have seen).
            yield _stream_error_event(anthropic)
            raise UpstreamStreamCut(str(broken))


def _stream_error_event(anthropic: bool) -> bytes:
    message = "The upstream LLM API broke the stream off before it was complete."
    if anthropic:
        data = {"type": "error", "error": {"type": "api_error", "message": message}}
        return b"event: error\ndata: " + json.dumps(data).encode() + b"\n\n"
    data = {"error": {"message": message, "type": "api_error", "code": "upstream_stream_cut"}}
    return b"data: " + json.dumps(data).encode() + b"\n\n"


def _error(status: int, code: str, message: str, anthropic: bool) -> JSONResponse:
    return JSONResponse(error_body(status, code, message, anthropic=anthropic), status_code=status)


router = APIRouter(tags=["proxy"])


async def _proxy(request: Request) -> Response:
    key = request.scope.get("state", {}).get("memwrap_key")
    return await request.app.state.proxy.handle_request(request, key)


_DESCRIPTION = (
    "Forwarded to the configured upstream with memory added (X-Memwrap-Bank) and the turn retained. "
    "The body is the provider's own; streaming is relayed event by event. Without X-Memwrap-Bank the "
    "call passes through untouched."
)
_HEADERS = [
    {
        "name": "X-Memwrap-Key",
        "in": "header",
        "required": False,
        "schema": {"type": "string"},
        "description": "memwrap's API key (when MEMWRAP_API_KEYS is set); Authorization goes upstream.",
    },
    {
        "name": "X-Memwrap-Bank",
        "in": "header",
        "required": False,
        "schema": {"type": "string", "maxLength": 1536},
        "description": "The bank (the REST paths' rule), as UTF-8 or percent-encoded UTF-8 (`%E5%BC%A0%E4%BC%9F`).",
    },
    {
        "name": "X-Memwrap-Session",
        "in": "header",
        "required": False,
        "schema": {"type": "string", "maxLength": MAX_SESSION_CHARS},
    },
    {
        "name": "X-Memwrap-Token-Budget",
        "in": "header",
        "required": False,
        "schema": {"type": "integer", "minimum": 1, "maximum": validate.MAX_BUDGET_TOKENS},
        "description": "Tokens of memory injected (default MEMWRAP_PROXY_TOKEN_BUDGET).",
    },
    {
        "name": "X-Memwrap-Max-Tokens",
        "in": "header",
        "required": False,
        "deprecated": True,
        "schema": {"type": "integer", "minimum": 1, "maximum": validate.MAX_BUDGET_TOKENS},
        "description": "Old name of X-Memwrap-Token-Budget.",
    },
    {
        "name": "X-Memwrap-Tags",
        "in": "header",
        "required": False,
        "schema": {"type": "string"},
        "description": "Comma-separated tags for the retained turn and the recall filter.",
    },
    {
        "name": "X-Memwrap-Filter",
        "in": "header",
        "required": False,
        "schema": {"type": "string"},
        "description": "A recall filter as JSON (as `filters` of /v1/banks/{bank}/recall), e.g. "
        '`{"metadata": {"project": "apollo"}}`: only matching memories are injected.',
    },
    {"name": "X-Memwrap-Inject", "in": "header", "required": False, "schema": {"type": "string"}},
    {"name": "X-Memwrap-Retain", "in": "header", "required": False, "schema": {"type": "string"}},
]
_OPENAPI = {
    "parameters": _HEADERS,
    "requestBody": {
        "required": True,
        "content": {
            "application/json": {
                "schema": {
                    "type": "object",
                    "description": "The provider's request body (OpenAI or Anthropic), forwarded as it is.",
                    "additionalProperties": True,
                }
            }
        },
    },
    "responses": {
        "200": {"description": "The upstream's answer (JSON, or text/event-stream when streaming)"},
        "400": {"description": "An X-Memwrap-* header or the body is invalid"},
        "413": {"description": "The body is larger than MEMWRAP_MAX_REQUEST_BYTES"},
        "502": {"description": "The upstream could not be reached"},
        "504": {"description": "The upstream did not answer in time"},
    },
}

for _path, (_provider, _, _) in ROUTES.items():
    router.add_api_route(
        _path,
        _proxy,
        methods=["POST"],
        summary=f"Memory proxy: {_provider}",
        description=_DESCRIPTION,
        openapi_extra=_OPENAPI,
    )
