"""MCP, one endpoint per bank: `/mcp/{bank_id}/` (streamable HTTP, the official `mcp` SDK, stateless).

One MCP server serves every bank. `McpEndpoint` (an ASGI app in front of it) takes the bank from the path,
checks the caller's key may use it, and hands it to the tools in a request header that it sets itself
(any client-sent copy is removed first), so a tool never sees a bank the caller did not pass auth for.
Stateless mode keeps the server free of session state: any of several `memwrap serve` processes can answer.
The same tools serve one bank over stdio (`memwrap mcp --bank …`, memwrap_server/mcp_stdio.py): there the bank
is the process's, given on its command line.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Awaitable, Callable
from typing import Any, get_type_hints
from urllib.parse import quote, unquote

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from mcp.types import Tool as MCPTool
from mcp.types import ToolAnnotations
from pydantic import TypeAdapter
from starlette.types import Receive, Scope, Send

import memwrap
from memwrap import validate
from memwrap.api import AsyncMemory
from memwrap.block.fence import neutralise
from memwrap.declare import Verb
from memwrap.defense.policy import map_strings
from memwrap.errors import InvalidBankIdError, MemwrapError
from memwrap.models import RecalledMemory
from memwrap.verbs import VERBS
from memwrap_server.auth import allowed
from memwrap_server.errors import error_response

BANK_HEADER = "x-memwrap-mcp-bank"
_PATH = re.compile(r"/mcp/([^/]+)/?")  # fullmatch; the bank itself is checked by validate.bank_id

INSTRUCTIONS = (
    "Long-term memory of one user or agent (this endpoint's bank). Call `recall` with the user's question before "
    "answering anything that may depend on the past; call `retain` with facts worth remembering."
)


BankOf = Callable[[Context], str]  # the bank a tool call is for: the endpoint's (HTTP) or the process's (stdio)


def bank_from_header(ctx: Context) -> str:
    headers = ctx.headers or {}
    bank = headers.get(BANK_HEADER)
    if not bank:  # only reachable if the server were mounted without McpEndpoint in front
        raise MemwrapError("No bank for this MCP request; connect to /mcp/{bank_id}/.")
    return unquote(str(bank))  # percent-encoded by McpEndpoint: the SDK reads header bytes as Latin-1


# What each tool returns (JSON for the model): the verb's result, trimmed to what an agent needs. A verb declared
# with `mcp=` and not listed here returns its result as JSON, whole.
# Recall gives the memories' text only inside the fenced block (`context`): beside it, each memory's id, type,
# date and provenance (its document, speaker, and for a chunk of a long message: the message and the chunk's place),
# never its text, so nothing a memory says reaches the agent's model outside the fence. The document id and the
# speaker are the caller's names, neutralised like the block's text (they cannot read as a fence tag).
def _recalled(m: RecalledMemory) -> dict[str, Any]:
    return {
        "id": str(m.id),
        "type": m.type,
        "mentioned_at": m.mentioned_at.isoformat() if m.mentioned_at else None,
        "document_id": neutralise(m.document_id) if m.document_id else None,
        "speaker": neutralise(m.speaker) if m.speaker else None,
        "message_id": m.message_id,
        "part": m.part,
        "parts": m.parts,
    }


VIEWS: dict[str, Callable[[Any], Any]] = {
    "recall": lambda r: {"context": r.context, "tokens": r.tokens, "memories": [_recalled(m) for m in r.memories]},
    "retain": lambda ids: {"ids": [str(i) for i in ids]},
    "invalidate": lambda _: {"invalidated": True, "note": "hidden from recall; restore_memory brings it back"},
    "restore": lambda _: {"restored": True},
    "delete": lambda _: {"deleted": True},
    "list": lambda records: {"memories": [_record_view(r) for r in records]},
    "get": lambda record: _record_view(record),
    "mental_models": lambda found: {
        "mental_models": [
            {"name": m.name, "question": m.question, "content": m.content, "status": m.status} for m in found
        ]
    },
    "get_mental_model": lambda model: model.model_dump(mode="json", exclude={"bank_id"}),
    "reflect": lambda result: result.model_dump(
        mode="json",
        include={
            "answer",
            "structured",
            "memory_ids",
            "mental_model_ids",
            "unknown_ids",
            "iterations",
            "forced",
            "forced_reason",
        },
    ),
}


def _record_view(record: Any) -> dict[str, Any]:
    """A stored memory for the agent: its fields, and `invalidated` said in words when it is (so a model reading a
    record does not take an invalidated memory for a live one)."""
    view: dict[str, Any] = record.model_dump(mode="json", exclude={"bank_id"})
    view["invalidated"] = record.invalidated_at is not None
    if record.invalidated_at is None:
        view.pop("invalidated_at", None)
    return view


# The MCP spec's tool hints, per verb (clients show them; some ask before a destructive call or run read-only
# tools without asking). Every tool works on this bank only: no open world. A verb with `mcp=` and no entry here
# fails tests/test_mcp.py.
def _hints(title: str, *, read_only: bool, destructive: bool = False, idempotent: bool = False) -> ToolAnnotations:
    return ToolAnnotations(
        title=title,
        read_only_hint=read_only,
        destructive_hint=None if read_only else destructive,  # the spec reads it only for tools that write
        idempotent_hint=None if read_only else idempotent,
        open_world_hint=False,
    )


ANNOTATIONS: dict[str, ToolAnnotations] = {
    # A retain of what the bank holds already stores nothing and answers the same ids.
    "retain": _hints("Remember", read_only=False, idempotent=True),
    "recall": _hints("Recall memories", read_only=True),
    "reflect": _hints("Answer from memory", read_only=True),
    "list": _hints("List memories", read_only=True),
    "get": _hints("Get a memory", read_only=True),
    # The old version stays in the memory's history: not destructive.
    "update": _hints("Update a memory", read_only=False, idempotent=True),
    "delete": _hints("Delete a memory", read_only=False, destructive=True, idempotent=True),
    # A dry run (the default) only counts; a second real run finds nothing left to delete.
    "delete_memories": _hints("Delete memories by filter", read_only=False, destructive=True, idempotent=True),
    "get_mental_model": _hints("Get a mental model", read_only=True),
    "mental_models": _hints("List mental models", read_only=True),
    "invalidate": _hints("Invalidate a memory", read_only=False, destructive=True, idempotent=True),
    "restore": _hints("Restore an invalidated memory", read_only=False, idempotent=True),
}


def tool_names() -> list[str]:
    """The MCP tools, in declaration order: one per verb declared with `mcp=` (memwrap/verbs.py). The server's
    description and the docs list them from here (memwrap_server/_generate_reference.py). `reflect` is listed to a
    client only when an LLM is configured (`available`)."""
    return [declared.mcp for declared in VERBS.values() if declared.mcp]


def can_reflect(memory: AsyncMemory) -> bool:
    """Whether `reflect` can answer: an embedded engine with an LLM for it (MEMWRAP_LLM_* / MEMWRAP_REFLECT_*, or
    `use_llm`). A sidecar's LLM is its own to know: its tool is listed, and answers llm_not_configured without."""
    configured = memory.llm_configured("reflect")
    return configured is None or configured


class MemwrapMCPServer(MCPServer):
    """The SDK's server, listing only the tools that can work now (`reflect` with an LLM): a client that sees a
    tool expects to call it. A hidden tool called anyway answers with its own error."""

    def __init__(self, available: Callable[[str], bool], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._available = available

    async def list_tools(self) -> list[MCPTool]:
        return [tool for tool in await super().list_tools() if self._available(tool.name)]


def build_server(memory_of: Callable[[], AsyncMemory], bank_of: BankOf = bank_from_header) -> MCPServer:
    """One tool per verb declared with `mcp=` (memwrap/verbs.py): its parameters but the bank, which `bank_of`
    gives (by default the endpoint's, from the header McpEndpoint sets)."""
    reflect_tool = VERBS["reflect"].mcp

    def available(name: str) -> bool:
        return name != reflect_tool or can_reflect(memory_of())

    server = MemwrapMCPServer(available, name="memwrap", version=memwrap.__version__, instructions=INSTRUCTIONS)
    for declared in VERBS.values():
        if declared.mcp:
            server.add_tool(
                _tool(declared, memory_of, bank_of),
                name=declared.mcp,
                description=declared.doc,
                annotations=ANNOTATIONS[declared.name],
            )
    return server


def _tool(declared: Verb, memory_of: Callable[[], AsyncMemory], bank_of: BankOf) -> Callable[..., Awaitable[Any]]:
    view = VIEWS.get(declared.name, _as_json)

    async def tool(ctx: Context, **arguments: Any) -> Any:
        try:
            result = await getattr(memory_of(), declared.name)(bank_of(ctx), **arguments)
        except MemwrapError as exc:  # the SDK hides other exceptions' text; ours reach the client with theirs
            raise ToolError(f"{exc.code}: {exc}") from None
        if declared.name == "recall":
            return view(result)
        # Other tools show memory text unfenced (a record, a mental model, an answer): no string in them may read
        # as the fence's tags, nor hide invisible characters from the person watching the agent.
        return map_strings(view(result), neutralise)

    signature = declared.signature()
    parameters = [
        p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in signature.parameters.values() if p.name != "bank_id"
    ]
    hints = get_type_hints(declared.function, include_extras=True)
    tool.__signature__ = inspect.Signature(  # type: ignore[attr-defined]  # read by MCP as the tool's schema
        [inspect.Parameter("ctx", inspect.Parameter.KEYWORD_ONLY, annotation=Context)]
        + [p.replace(annotation=hints.get(p.name, Any)) for p in parameters],
        return_annotation=dict[str, Any],
    )
    tool.__name__ = declared.mcp or declared.name
    tool.__doc__ = declared.doc
    return tool


def _as_json(result: Any) -> Any:
    return TypeAdapter(Any).dump_python(result, mode="json")


def session_manager(server: MCPServer) -> StreamableHTTPSessionManager:
    # The SDK's own DNS-rebinding check is off: the Gate checks Host and Origin for every route, MCP included
    # (memwrap_server/hosts.py), with the same rules and MEMWRAP_ALLOWED_HOSTS.
    return StreamableHTTPSessionManager(
        app=server._lowlevel_server,  # what MCPServer.streamable_http_app passes too
        json_response=True,
        stateless=True,
        security_settings=TransportSecuritySettings(enable_dns_rebinding_protection=False),
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
            await error_response(403, "bank_forbidden", f"This API key may not use bank {bank!r}.")(
                scope, receive, send
            )
            return
        headers = [(k, v) for k, v in scope["headers"] if k.lower() != BANK_HEADER.encode()]
        headers.append((BANK_HEADER.encode(), quote(bank, safe="").encode("ascii")))
        await self.manager.handle_request({**scope, "headers": headers, "path": "/", "raw_path": b"/"}, receive, send)
