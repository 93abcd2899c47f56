"""`memwrap mcp --bank BANK`: memwrap's MCP tools over stdio, for clients that start their servers as a command
(Claude Desktop, and Claude Code, Cursor or Codex when no sidecar runs).

The tools are those of `/mcp/{bank}/` (memwrap_server/mcp.py, one per verb declared with `mcp=`); the bank is the
process's, fixed by `--bank` as the URL fixes it over HTTP. The engine is the embedded one under MEMWRAP_HOME
(`--home`), several processes sharing its database, or a `memwrap serve` sidecar with `--url` or MEMWRAP_URL (key:
MEMWRAP_API_KEY). It starts in the background as the session opens, so `initialize` is answered at once.

Standard output carries JSON-RPC and nothing else: the SDK's stdio transport points file descriptor 1 at stderr
while it serves (for our logs, warnings and the embedded PostgreSQL server it may start), and writes the protocol
through a duplicate of the original.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
from collections.abc import Callable

Register = Callable[[str, Callable[[argparse.ArgumentParser], None], Callable[[argparse.Namespace], int], str], None]

log = logging.getLogger("memwrap.mcp")


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--bank", required=True, help="the bank every tool of this process reads and writes")
    parser.add_argument("--url", help="a `memwrap serve` sidecar (MEMWRAP_URL; default: the embedded engine)")
    parser.add_argument(
        "--log-level",
        default="warning",
        choices=["debug", "info", "warning", "error"],
        metavar="LEVEL",
        help="log level of what goes to stderr: debug, info, warning (default) or error",
    )


async def serve_stdio(bank: str, *, url: str | None, home: str | None, database_url: str | None) -> None:
    """Serve the MCP tools for `bank` on this process's stdin and stdout until the client closes stdin."""
    from mcp.server.stdio import stdio_server

    from memwrap.api import AsyncMemory
    from memwrap_server.mcp import build_server

    memory = AsyncMemory(home=home, database_url=database_url, url=url)
    server = build_server(lambda: memory, bank_of=lambda ctx: bank)
    lowlevel = server._lowlevel_server  # what MCPServer.run_stdio_async runs, with the engine started beside it
    try:
        async with stdio_server() as (read_stream, write_stream):
            memory.start()  # inside the transport: PostgreSQL, if this process starts it, inherits fd 1 → stderr
            await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())
    finally:
        await memory.close()


def cmd_mcp(args: argparse.Namespace) -> int:
    from memwrap import validate
    from memwrap.errors import InvalidBankIdError

    logging.basicConfig(stream=sys.stderr, level=args.log_level.upper(), format="%(levelname)s %(name)s: %(message)s")
    try:
        bank = validate.bank_id(args.bank)
    except InvalidBankIdError as exc:
        sys.stderr.write(f"memwrap mcp: {exc}\n")
        return 2
    try:
        import mcp  # noqa: F401 - the server extra
    except ImportError:
        sys.stderr.write("memwrap mcp needs the server extra: pip install 'memwrap[server]'\n")
        return 2
    url = args.url or os.environ.get("MEMWRAP_URL") or None
    log.info("MCP over stdio for bank %r (%s)", bank, url or "embedded engine")
    try:
        asyncio.run(serve_stdio(bank, url=url, home=args.home, database_url=args.database_url))
    except KeyboardInterrupt:
        pass
    return 0


def register(register_command: Register) -> None:
    register_command("mcp", configure, cmd_mcp, "MCP over stdio for one bank (for Claude Desktop and other clients)")
