"""`memwrap mcp --bank BANK`: memwrap's MCP tools over stdio, for clients that start their servers as a command
(Claude Desktop, and Claude Code, Cursor or Codex when no sidecar runs).

The tools are those of `/mcp/{bank}/` (memwrap_server/mcp.py, one per verb declared with `mcp=`); the bank is the
process's, fixed by `--bank` as the URL fixes it over HTTP. The engine is the embedded one under MEMWRAP_HOME
(`--home`), several processes sharing its database, or a `memwrap serve` sidecar with `--url` or MEMWRAP_URL (key:
MEMWRAP_API_KEY). It starts in the background as the session opens, so `initialize` is answered at once. The
command's options are memwrap_server/commands.py's; this module is the transport.

Standard output carries JSON-RPC and nothing else: the SDK's stdio transport points file descriptor 1 at stderr
while it serves (for our logs, warnings and the embedded PostgreSQL server it may start), and writes the protocol
through a duplicate of the original.

Every line that carries an id is answered: the SDK drops a line it cannot read (not JSON, or JSON its models refuse,
such as a string with a lone surrogate escape `\ud800`), leaving the client waiting for ever. Each line is read here
first; one the SDK would drop is answered with a JSON-RPC error instead (-32700 for what is not JSON, -32600 for
what is not a valid message, with the line's id when it has one), and never reaches the SDK.
"""

from __future__ import annotations

import contextlib
import fcntl
import io
import json
import logging
import os
from collections.abc import AsyncIterator, Iterator
from typing import Any, BinaryIO

log = logging.getLogger("memwrap.mcp")


async def serve_stdio(bank: str, *, url: str | None, home: str | None, database_url: str | None) -> None:
    """Serve the MCP tools for `bank` on this process's stdin and stdout until the client closes stdin."""
    from mcp.server.stdio import stdio_server

    from memwrap.api import AsyncMemory
    from memwrap_server.mcp import build_server

    memory = AsyncMemory(home=home, database_url=database_url, url=url)
    server = build_server(lambda: memory, bank_of=lambda ctx: bank)
    lowlevel = server._lowlevel_server  # what MCPServer.run_stdio_async runs, with the engine started beside it
    try:
        with _claimed_stdin() as wire:
            lines = _CheckedLines(wire)
            async with stdio_server(stdin=lines) as (read_stream, write_stream):  # type: ignore[arg-type]
                lines.answer_to(write_stream)
                memory.start()  # inside the transport: PostgreSQL, if this process starts it, inherits fd 1 → stderr
                await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())
    finally:
        await memory.close()


@contextlib.contextmanager
def _claimed_stdin() -> Iterator[BinaryIO]:
    """The wire (fd 0) for the transport alone, as the SDK claims it when it reads stdin itself: fd 0 points at the
    null device meanwhile, so the engine and the PostgreSQL server it may start read EOF, not the protocol."""
    private = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    wire = os.fdopen(private, "rb")
    try:
        yield wire
    finally:
        os.dup2(private, 0)
        wire.close()


class _CheckedLines:
    """stdin for the SDK's transport, as the lines it reads: each line is parsed here first, and one its models
    would refuse is answered here (through the transport's own writer, so answers never interleave)."""

    def __init__(self, wire: BinaryIO) -> None:
        import anyio

        # errors="replace" as the SDK reads it: bytes that are not UTF-8 become U+FFFD, the line stays readable.
        self._text = anyio.wrap_file(io.TextIOWrapper(wire, encoding="utf-8", errors="replace"))
        self._ready = anyio.Event()
        self._out: Any = None

    def answer_to(self, write_stream: Any) -> None:
        self._out = write_stream
        self._ready.set()

    def __aiter__(self) -> AsyncIterator[str]:
        return self._lines()

    async def _lines(self) -> AsyncIterator[str]:
        import mcp_types as types

        async for line in self._text:
            if not line.strip():
                continue
            try:
                types.jsonrpc_message_adapter.validate_json(line, by_name=False)
            except Exception as exc:  # noqa: BLE001 - whatever the SDK's models refuse is answered below
                await self._refuse(line, exc)
                continue
            yield line

    async def _refuse(self, line: str, exc: Exception) -> None:
        import mcp_types as types
        from mcp.shared.message import SessionMessage

        try:
            message = json.loads(line)
        except ValueError as not_json:
            code, text, message = types.PARSE_ERROR, f"Parse error: the line is not JSON ({not_json}).", None
        except RecursionError:
            code, text, message = types.PARSE_ERROR, "Parse error: the line nests too deeply.", None
        else:
            code, text = types.INVALID_REQUEST, f"Invalid request: {_first_line(exc)}"
            try:
                json.dumps(message, ensure_ascii=False).encode("utf-8")
            except UnicodeEncodeError:
                text = "Invalid request: the message carries a lone surrogate (a \\ud800-\\udfff escape), not text."
        request_id = message.get("id") if isinstance(message, dict) else None
        if isinstance(message, dict) and "method" not in message and ("result" in message or "error" in message):
            # A response or an error from the client that the SDK could not read: nothing to answer.
            log.warning("an unreadable response from the client was dropped: %s", _first_line(exc))
            return
        if not _is_answerable_id(request_id):
            request_id = None  # JSON-RPC: an id that cannot be read back is answered as null
        log.warning("answered %s to a line the SDK cannot read: %s", code, text)
        answer = types.JSONRPCError(jsonrpc="2.0", id=request_id, error=types.ErrorData(code=code, message=text))
        await self._ready.wait()
        await self._out.send(SessionMessage(answer))


def _is_answerable_id(value: object) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return True
    if not isinstance(value, str):
        return False
    try:
        value.encode("utf-8")  # a lone surrogate in the id itself could not be written back
    except UnicodeEncodeError:
        return False
    return True


def _first_line(exc: Exception) -> str:
    """The reason, without the line itself (it may be long, or hold what cannot be written back as UTF-8)."""
    lines = [part.strip() for part in str(exc).splitlines() if part.strip()]
    reason = lines[1] if len(lines) > 1 else (lines[0] if lines else type(exc).__name__)
    reason = reason.split(" [type=", 1)[0]
    return reason.encode("utf-8", "replace").decode("utf-8")[:300]
