"""A local fake of the OpenAI and Anthropic HTTP APIs, for tests that must not reach a real model.

    with FakeLLMServer() as server:
        server.script(["Hello!", Reply(tool_calls=[ToolCall("get_weather", {"city": "Paris"})]), {"a": 1}])
        client = OpenAI(base_url=server.openai_base_url, api_key="test")
        ...
        server.requests[-1].body          # the JSON the SDK sent

Endpoints: POST /v1/chat/completions, /v1/responses (OpenAI) and /v1/messages (Anthropic), each with
`stream: true` in the provider's real SSE wire format, so the real SDKs (and their stream helpers) parse them.
Replies come from a FIFO script shared by all endpoints; when it is empty, `server.responder(request)` answers
(default: "OK"). A reply can carry tool calls, JSON, an HTTP error, a delay before headers, a delay between
stream chunks, or a cut-off after N chunks.

Small local servers behave differently, and the server can act like one (OpenAI chat endpoint):

    server.tools_as_text = True             # scripted tool calls arrive as text, `tool_calls` empty (llama.cpp +
                                            # a small model)
    server.refuse_named_tool_choice = True  # 400 for a tool_choice object naming a tool
    server.refuse_json_schema = True        # 400 for response_format json_schema
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterable
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from .llm_wire import (
    Ids,
    RecordedRequest,
    Reply,
    ReplyLike,
    ToolCall,
    anthropic_message,
    anthropic_stream,
    as_reply,
    chat_completion,
    chat_stream,
    response_object,
    responses_stream,
)

# ---------------------------------------------------------------------------------------------- server


def _error_body(provider: str, reply: Reply) -> dict[str, Any]:
    if provider.startswith("anthropic"):
        kind = {400: "invalid_request_error", 401: "authentication_error", 429: "rate_limit_error"}.get(
            reply.status, "api_error"
        )
        return {"type": "error", "error": {"type": kind, "message": reply.error}}
    return {"error": {"message": reply.error, "type": "server_error", "param": None, "code": None}}


class FakeLLMServer:
    """Runs on 127.0.0.1 at a random port, in a daemon thread. Use as a context manager or start()/stop()."""

    def __init__(self) -> None:
        self.requests: list[RecordedRequest] = []
        self.responder: Callable[[RecordedRequest], ReplyLike] = lambda request: Reply(text="OK")
        self.tools_as_text = False
        self.refuse_named_tool_choice = False
        self.refuse_json_schema = False
        self._script: deque[Reply] = deque()
        self._lock = threading.Lock()
        self._ids = Ids()
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self.port = 0
        self.app = Starlette(
            routes=[
                Route("/v1/chat/completions", self._handle("openai.chat"), methods=["POST"]),
                Route("/v1/responses", self._handle("openai.responses"), methods=["POST"]),
                Route("/v1/messages", self._handle("anthropic.messages"), methods=["POST"]),
            ]
        )

    # -- test-facing API -------------------------------------------------------------------------------------

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def openai_base_url(self) -> str:
        return f"{self.url}/v1"

    @property
    def anthropic_base_url(self) -> str:
        return self.url

    def script(self, replies: Iterable[ReplyLike]) -> FakeLLMServer:
        """Queue replies; each request takes the next one, whatever its endpoint."""
        with self._lock:
            self._script.extend(as_reply(r) for r in replies)
        return self

    def reset(self) -> None:
        with self._lock:
            self._script.clear()
            self.requests.clear()
        self.responder = lambda request: Reply(text="OK")
        self.tools_as_text = self.refuse_named_tool_choice = self.refuse_json_schema = False

    @property
    def pending(self) -> int:
        return len(self._script)

    def last(self, provider: str | None = None) -> RecordedRequest:
        for request in reversed(self.requests):
            if provider is None or request.provider == provider:
                return request
        raise LookupError(f"no request recorded for {provider or 'any provider'}")

    # -- lifecycle -------------------------------------------------------------------------------------------

    def start(self) -> FakeLLMServer:
        # proto=IPPROTO_TCP: asyncio sets TCP_NODELAY only on sockets that say so; without it every response
        # waits ~40 ms for a delayed ACK (headers and body are two writes).
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.bind(("127.0.0.1", 0))
        self.port = sock.getsockname()[1]
        config = uvicorn.Config(self.app, log_level="warning", lifespan="off", timeout_keep_alive=30)
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [sock]}, daemon=True, name="fake-llm"
        )
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("the fake LLM server did not start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)

    def __enter__(self) -> FakeLLMServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- request handling ------------------------------------------------------------------------------------

    def _next_reply(self, request: RecordedRequest) -> Reply:
        with self._lock:
            if self._script:
                return self._script.popleft()
        return as_reply(self.responder(request))

    def _handle(self, provider: str) -> Callable[[Request], Any]:
        async def endpoint(http: Request) -> Response:
            raw = await http.body()
            try:
                body = json.loads(raw) if raw else {}
            except (json.JSONDecodeError, UnicodeDecodeError):  # a real API answers 400 to either
                body = raw.decode(errors="replace")
            request = RecordedRequest(http.method, http.url.path, dict(http.headers), body, provider)
            with self._lock:
                self.requests.append(request)
            refusal = self._refusal(provider, body)
            if refusal is not None:
                request.reply = refusal
                return JSONResponse(_error_body(provider, refusal), status_code=refusal.status)
            reply = request.reply = self._as_small_server(provider, self._next_reply(request))
            if reply.delay:
                await asyncio.sleep(reply.delay)
            if reply.status >= 400:
                return JSONResponse(_error_body(provider, reply), status_code=reply.status, headers=reply.headers)
            data = body if isinstance(body, dict) else {}
            model = str(data.get("model", "fake-model"))
            if request.stream:
                events = self._stream_events(provider, reply, data, model)
                return StreamingResponse(_paced(events, reply), media_type="text/event-stream", headers=reply.headers)
            return JSONResponse(self._complete(provider, reply, data, model), headers=reply.headers)

        return endpoint

    def _refusal(self, provider: str, body: Any) -> Reply | None:
        """What a small server says to a request form it does not take (no script entry is used)."""
        if provider != "openai.chat" or not isinstance(body, dict):
            return None
        if self.refuse_named_tool_choice and isinstance(body.get("tool_choice"), dict):
            return Reply(status=400, error="Invalid tool_choice: only 'auto', 'none' and 'required' are supported")
        response_format = body.get("response_format") or {}
        if self.refuse_json_schema and response_format.get("type") == "json_schema":
            return Reply(status=400, error="response_format json_schema is not supported")
        return None

    def _as_small_server(self, provider: str, reply: Reply) -> Reply:
        if provider != "openai.chat" or not self.tools_as_text or not reply.tool_calls:
            return reply
        # What llama.cpp returns when a small model writes its tool call as text.
        calls = [{"name": tc.name, "arguments": tc.arguments} for tc in reply.tool_calls]
        text = json.dumps(calls[0] if len(calls) == 1 else calls)
        return Reply(text=f"{reply.content}\n{text}".strip(), delay=reply.delay, finish_reason=reply.finish_reason)

    def _complete(self, provider: str, reply: Reply, body: dict[str, Any], model: str) -> dict[str, Any]:
        if provider == "openai.chat":
            return chat_completion(reply, model, self._ids, json.dumps(body.get("messages", [])))
        if provider == "openai.responses":
            return response_object(reply, body, self._ids)
        return anthropic_message(reply, body, self._ids)

    def _stream_events(self, provider: str, reply: Reply, body: dict[str, Any], model: str) -> Iterable[bytes]:
        if provider == "openai.chat":
            return chat_stream(reply, model, self._ids)
        if provider == "openai.responses":
            return responses_stream(reply, body, self._ids)
        return anthropic_stream(reply, body, self._ids)


class _CutOff(Exception):
    """Raised inside the response body to make the server drop the connection mid-stream."""


async def _paced(events: Iterable[bytes], reply: Reply) -> AsyncIterator[bytes]:
    for index, event in enumerate(events):
        if reply.cut_after is not None and index >= reply.cut_after:
            raise _CutOff("stream cut by the script")
        if reply.chunk_delay and index:
            await asyncio.sleep(reply.chunk_delay)
        yield event


__all__ = ["FakeLLMServer", "RecordedRequest", "Reply", "ToolCall", "as_reply"]
