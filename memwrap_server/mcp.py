"""MCP, one endpoint per bank: `/mcp/{bank_id}/` (streamable HTTP, the official `mcp` SDK, stateless).

One MCP server serves every bank. `McpEndpoint` (an ASGI app in front of it) takes the bank from the path,
checks the caller's key may use it, and hands it to the tools in a request header that it sets itself
(any client-sent copy is removed first), so a tool never sees a bank the caller did not pass auth for.
Stateless mode keeps the server free of session state: any of several `memwrap serve` processes can answer.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any, TypeVar

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.types import Receive, Scope, Send

from memwrap.api import AsyncMemory
from memwrap.engine import validate
from memwrap.errors import InvalidBankIdError, MemwrapError
from memwrap_server.auth import allowed
from memwrap_server.errors import error_response

BANK_HEADER = "x-memwrap-mcp-bank"
_PATH = re.compile(r"/mcp/([^/]+)/?")  # fullmatch; the bank itself is checked by validate.bank_id
T = TypeVar("T")
LOOPBACK = ("127.0.0.1", "localhost", "::1")

INSTRUCTIONS = (
    "Long-term memory of one user or agent (this endpoint's bank). Call `recall` with the user's question before "
    "answering anything that may depend on the past; call `retain` with facts worth remembering."
)


def _bank(ctx: Context) -> str:
    headers = ctx.headers or {}
    bank = headers.get(BANK_HEADER)
    if not bank:  # only reachable if the server were mounted without McpEndpoint in front
        raise MemwrapError("No bank for this MCP request; connect to /mcp/{bank_id}/.")
    return str(bank)


def _explained(tool: Callable[..., Awaitable[T]]) -> Callable[..., Awaitable[T]]:
    """memwrap's errors reach the MCP client with their message (the SDK hides other exceptions' text)."""

    @functools.wraps(tool)
    async def run(*args: Any, **kwargs: Any) -> T:
        try:
            return await tool(*args, **kwargs)
        except MemwrapError as exc:
            raise ToolError(f"{exc.code}: {exc}") from None

    return run


def build_server(memory_of: Callable[[], AsyncMemory]) -> MCPServer:
    server: MCPServer = MCPServer(name="memwrap", instructions=INSTRUCTIONS)

    @server.tool()
    @_explained
    async def recall(query: str, ctx: Context, max_tokens: int = 1024) -> dict[str, Any]:
        """Memories relevant to `query`, rendered as one block within `max_tokens` (plus the memories themselves)."""
        result = await memory_of().recall(_bank(ctx), query, max_tokens=max_tokens)
        return {
            "context": result.context,
            "tokens": result.tokens,
            "memories": [
                {"id": str(m.id), "text": m.text, "mentioned_at": m.mentioned_at.isoformat() if m.mentioned_at else None}
                for m in result.memories
            ],
        }

    @server.tool()
    @_explained
    async def retain(
        content: str,
        ctx: Context,
        context: str | None = None,
        document_id: str | None = None,
        timestamp: datetime | None = None,
        tags: list[str] | None = None,
    ) -> dict[str, Any]:
        """Remember `content` (a fact, a message, a note). Returns the ids of the stored memories."""
        ids = await memory_of().retain(
            _bank(ctx), content, context=context, document_id=document_id, timestamp=timestamp, tags=tags
        )
        return {"ids": [str(i) for i in ids]}

    @server.tool()
    @_explained
    async def list_memories(ctx: Context, limit: int = 20, offset: int = 0) -> dict[str, Any]:
        """Stored memories of this bank, oldest first, `limit` at a time."""
        records = await memory_of().list(_bank(ctx), limit=limit, offset=offset)
        return {"memories": [r.model_dump(mode="json", exclude={"bank_id"}) for r in records]}

    @server.tool()
    @_explained
    async def get_memory(memory_id: str, ctx: Context) -> dict[str, Any]:
        """One stored memory by id."""
        record = await memory_of().get(_bank(ctx), memory_id)
        return record.model_dump(mode="json", exclude={"bank_id"})

    @server.tool()
    @_explained
    async def mental_models(ctx: Context) -> dict[str, Any]:
        """This bank's mental models: named standing questions and their current answers."""
        found = await memory_of().mental_models(_bank(ctx))
        return {"mental_models": [{"name": m.name, "question": m.question, "content": m.content,
                                   "status": m.status} for m in found]}

    @server.tool()
    @_explained
    async def get_mental_model(name: str, ctx: Context) -> dict[str, Any]:
        """One mental model's current answer, by name."""
        model = await memory_of().get_mental_model(_bank(ctx), name)
        return model.model_dump(mode="json", exclude={"bank_id"})

    @server.tool()
    @_explained
    async def reflect(query: str, ctx: Context, context: str | None = None, max_tokens: int | None = None) -> dict[str, Any]:
        """Answer `query` from this bank's memory: an agent reads mental models, observations and facts and
        answers citing the memories it used (`forced`: a limit cut the search short). Needs the server's LLM
        (MEMWRAP_LLM_*); without one the tool answers with the error `llm_not_configured`."""
        result = await memory_of().reflect(_bank(ctx), query, context=context, max_tokens=max_tokens)
        return result.model_dump(
            mode="json", include={"answer", "structured", "memory_ids", "mental_model_ids", "unknown_ids",
                                  "iterations", "forced", "forced_reason"},
        )

    return server


def session_manager(server: MCPServer, host: str) -> StreamableHTTPSessionManager:
    # DNS-rebinding protection fits a loopback bind (browsers on this machine); behind a real hostname it would
    # refuse every client, so it is on only when we listen on loopback.
    if host in LOOPBACK:
        security = TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*"],
            allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"],
        )
    else:
        security = TransportSecuritySettings(enable_dns_rebinding_protection=False)
    return StreamableHTTPSessionManager(
        app=server._lowlevel_server,  # noqa: SLF001 - what MCPServer.streamable_http_app passes too
        json_response=True,
        stateless=True,
        security_settings=security,
    )


class McpEndpoint:
    """ASGI app for `/mcp/{bank_id}/`: bank from the path, key checked, then the SDK's transport."""

    def __init__(self, manager: StreamableHTTPSessionManager) -> None:
        self.manager = manager

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        match = _PATH.fullmatch(scope["path"])
        if match is None:
            await error_response(404, "not_found", "MCP lives at /mcp/{bank_id}/.")(scope, receive, send)
            return
        try:
            bank = validate.bank_id(match.group(1))  # the one rule of every surface: no "team-a\n" banks
        except InvalidBankIdError as exc:
            await error_response(422, exc.code, str(exc))(scope, receive, send)
            return
        key = scope.get("state", {}).get("memwrap_key")
        if not allowed(key, bank):
            await error_response(403, "bank_forbidden", f"This API key may not use bank {bank!r}.")(scope, receive, send)
            return
        headers = [(k, v) for k, v in scope["headers"] if k.lower() != BANK_HEADER.encode()]
        headers.append((BANK_HEADER.encode(), bank.encode()))
        await self.manager.handle_request({**scope, "headers": headers, "path": "/", "raw_path": b"/"}, receive, send)
