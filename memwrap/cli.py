"""The `memwrap` command: one subcommand per declared verb (memwrap/cli_verbs.py: retain, recall, reflect, list,
banks, ...), and the commands that are not verbs: demo, reembed, spool, serve (and worker, jobs, export from
memwrap/engine/learn/cli.py; hook from memwrap/integrations/claude_code.py; mcp from memwrap_server/mcp_stdio.py;
ui and bench where installed).

Every command, registered here or by another package (`register_command`), gets the same parser
(memwrap/cli_parser.py: grouped `memwrap --help`, "did you mean" for commands and options) and the same
`main`: an error is one line on stderr (or `{"error", "message"}` with --json) and a non-zero exit, never a
traceback (MEMWRAP_DEBUG=1 shows the traceback of an unexpected one).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.panel import Panel

from memwrap.api import Memory
from memwrap.cli_parser import MemwrapParser, OptionHelpFormatter
from memwrap.cli_verbs import add_verb_commands, print_json, table
from memwrap.demo import DEMO_BANK, DEMO_BUDGET, DEMO_NOW, DEMO_SESSIONS, demo_items, run_demo
from memwrap.errors import InvalidInputError, MemwrapError

console = Console()
errors = Console(stderr=True, highlight=False)

Command = Callable[[argparse.Namespace], int]
_EXTRA_COMMANDS: dict[str, tuple[Callable[[argparse.ArgumentParser], None], Command, str]] = {}


def register_command(name: str, configure: Callable[[argparse.ArgumentParser], None], run: Command, help: str) -> None:
    """Let other packages (server, worker, bench) add subcommands without the CLI importing them up front."""
    _EXTRA_COMMANDS[name] = (configure, run, help)


def _memory(args: argparse.Namespace, bank: str | None = None) -> Memory:
    from memwrap.cli_verbs import one_shot_settings

    return Memory(settings=one_shot_settings(args, bank or getattr(args, "bank_id", None)))


_print_json = print_json


def cmd_demo(args: argparse.Namespace) -> int:
    with _memory(args, DEMO_BANK) as mem:
        stored, recalls = run_demo(mem, token_budget=args.token_budget)
        if args.json:
            _print_json(
                [r.model_dump(mode="json", include={"query", "context", "tokens", "token_budget"}) for r in recalls]
            )
            return 0
        console.print(
            f"[bold]Retained[/] {len(demo_items())} exchanges of {len(DEMO_SESSIONS)} sessions (a year) into "
            f"bank [cyan]{DEMO_BANK}[/]: {stored} memories, embedded home: {mem.settings.home}.\n"
            f"Each question gets what fits in {args.token_budget} tokens, asked on {DEMO_NOW:%Y-%m-%d}.\n"
        )
        for recall in recalls:
            console.print(
                Panel(
                    recall.context.rstrip() or "(nothing recalled)",
                    title=f"[bold]{recall.query}[/]  →  injected ({recall.tokens}/{recall.token_budget} tokens)",
                    expand=False,
                )
            )
    return 0


def cmd_import_mem0(args: argparse.Namespace) -> int:
    from memwrap.cli_long import import_rows
    from memwrap.engine.transfer.mem0_export import read_mem0_file  # only this command reads mem0's format
    from memwrap.validate import bank_id

    bank_id(args.bank_id)
    source = Path(args.file)
    if not source.is_file():
        what = "not a file" if source.exists() else "no such file"
        raise InvalidInputError(f"{source}: {what}. Give the JSON file mem0's get_all returned.")
    memories = read_mem0_file(source)  # checked whole before the database is touched
    with _memory(args) as mem:
        count = import_rows(args, mem, args.bank_id, memories, f"import {source.name}")
    if args.json:
        _print_json({"bank_id": args.bank_id, "read": len(memories), "imported": count})
    else:
        console.print(
            f"Imported {count} of {len(memories)} mem0 memories into {args.bank_id} "
            f"({len(memories) - count} already there)."
        )
    return 0


def cmd_spool(args: argparse.Namespace) -> int:
    from memwrap.config import load_settings
    from memwrap.wrappers import spool_admin

    path = spool_admin.spool_path(load_settings(home=args.home))
    if args.action == "list":
        found = spool_admin.rows(path, dead=args.dead, bank_id=args.bank, limit=args.limit)
        if args.json:
            _print_json([r.model_dump(mode="json") for r in found])
            return 0
        if args.ids:
            sys.stdout.writelines(f"{r.id}\n" for r in found)
            return 0
        shown = table(
            f"{'Dead' if args.dead else 'Waiting'} retains in {path}",
            ("id", "bank", "spooled", "document", "error" if args.dead else "attempts", "text"),
            ids=("bank",),
        )
        for r in found:
            shown.add_row(
                str(r.id),
                r.bank_id,
                f"{r.created:%Y-%m-%d %H:%M:%S}",
                r.document_id or "",
                (r.error or "") if args.dead else str(r.attempts),
                r.text,
            )
        console.print(shown)
        return 0
    if args.action == "purge":
        if not args.dead:
            errors.print("[red]error[/]: `memwrap spool purge` only removes dead rows: add --dead.")
            return 2
        removed = spool_admin.purge_dead(path, args.id or None)
        _report(args, {"purged": removed}, f"Removed {removed} dead row(s) from {path}.")
        return 0
    if args.action == "replay":
        revived = spool_admin.revive_dead(path, args.id or None) if args.dead else 0
        with _memory(args) as mem:
            result = spool_admin.replay(mem, path, timeout=args.timeout)
        summary = (
            f"Delivered {result.delivered} retain(s)"
            + (f" ({revived} back from dead)" if revived else "")
            + f"; {result.still_waiting} still waiting ({result.held_by_running} held by running processes)"
            + (f", {result.buried} moved to dead" if result.buried else "")
            + (f", {result.rejected} refused" if result.rejected else "")
            + "."
        )
        if not result.complete and result.last_error:
            summary += f" Last error: {result.last_error}"
        _report(args, {"revived": revived, **result.model_dump(mode="json")}, summary)
        return 0 if result.complete else 1
    found_counts = spool_admin.counts(path)
    if args.json:
        _print_json(found_counts.model_dump(mode="json"))
        return 0
    console.print(
        f"[bold]{path}[/]: {found_counts.waiting} waiting ({found_counts.held_by_running} held by running "
        f"processes), {found_counts.dead} dead."
    )
    for title, banks in (("waiting", found_counts.waiting_by_bank), ("dead", found_counts.dead_by_bank)):
        if banks:
            console.print(f"  {title}: " + ", ".join(f"{bank} {n}" for bank, n in sorted(banks.items())))
    if found_counts.dead:
        console.print("  `memwrap spool list --dead` shows them; `replay --dead` retries, `purge --dead` deletes.")
    return 0


def _report(args: argparse.Namespace, data: dict[str, object], text: str) -> None:
    if args.json:
        _print_json(data)
    else:
        console.print(text)


# The top-level modules of the optional `server` extra (pyproject.toml): `memwrap serve` and `ui` need them all.
SERVER_MODULES = ("fastapi", "uvicorn", "mcp", "prometheus_client", "fastapi_offline")


def missing_server_extra(command: str) -> int:
    """0 when the server extra is installed; else one line on stderr saying what to install, and exit code 2."""
    missing = [name for name in SERVER_MODULES if not _installed(name)]
    if not missing:
        return 0
    sys.stderr.write(
        f"memwrap {command} needs the server extra ({', '.join(missing)} not installed): "
        "pip install 'memwrap[server]'\n"
    )
    return 2


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a module blocked (None in sys.modules) or broken: not usable
        return False


def cmd_serve(args: argparse.Namespace) -> int:
    # Imported here: the server's dependencies (FastAPI, uvicorn, mcp) are the optional `server` extra.
    if missing := missing_server_extra("serve"):
        return missing
    from memwrap_server.__main__ import serve

    return serve(
        host=args.host, port=args.port, log_level=args.log_level, home=args.home, database_url=args.database_url
    )


def port_number(text: str) -> int:
    """A TCP port, 1-65535 (argparse names the value and the range when it is not)."""
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number: write e.g. 8765") from None
    if not 1 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{port} is not a port number (1-65535): write e.g. 8765")
    return port


def cmd_ui(args: argparse.Namespace) -> int:
    """The memory browser of this home: a memwrap server already serving it, or the sidecar on 127.0.0.1."""
    if missing := missing_server_extra("ui"):
        return missing
    from memwrap_server.ui import launch

    return launch(
        port=args.port,
        home=args.home,
        database_url=args.database_url,
        log_level=args.log_level,
        open_browser=not args.no_browser,
    )


def build_parser() -> argparse.ArgumentParser:
    common = MemwrapParser(add_help=False)
    common.add_argument(
        "--home", metavar="DIR", help="data directory of the embedded database (MEMWRAP_HOME, default ~/.memwrap)"
    )
    common.add_argument(
        "--database-url",
        metavar="URL",
        help="external PostgreSQL with pgvector, e.g. postgresql://user@host/db (MEMWRAP_DATABASE_URL)",
    )
    common.add_argument("--json", action="store_true", help="machine-readable output on stdout")
    parser: argparse.ArgumentParser = MemwrapParser(
        prog="memwrap", description="Long-term memory for LLM applications."
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=MemwrapParser)

    def command(name: str, help: str) -> argparse.ArgumentParser:
        made: argparse.ArgumentParser = sub.add_parser(
            name, parents=[common], help=help, description=help, formatter_class=OptionHelpFormatter
        )
        return made

    demo = command("demo", "retain a scripted year of chats and show what gets injected")
    demo.add_argument(
        "--token-budget", type=int, default=DEMO_BUDGET, metavar="N", help=f"tokens per block (default {DEMO_BUDGET})"
    )
    demo.add_argument("--max-tokens", dest="token_budget", type=int, help=argparse.SUPPRESS)
    demo.set_defaults(run=cmd_demo)

    add_verb_commands(sub, common)

    from memwrap import cli_long  # progress for the long verb commands too (LONG_RUNS)

    reembed = command(
        "reembed",
        "re-embed the memories with the configured MEMWRAP_EMBEDDING_MODEL (those not embedded with it already)",
    )
    cli_long.configure_reembed(reembed)
    reembed.set_defaults(run=cli_long.cmd_reembed)

    mem0 = command("import-mem0", "import a mem0 export (get_all JSON) into a bank")
    mem0.add_argument("bank_id", metavar="BANK_ID", help="the bank to import into (one mem0 user: one bank)")
    mem0.add_argument(
        "file", metavar="FILE", help='the JSON file: {"results": [...]} as mem0\'s get_all returns it, or a list'
    )
    mem0.set_defaults(run=cmd_import_mem0)

    spool = command("spool", "retains waiting in the spool: counts, list, replay, purge dead")
    spool.add_argument("action", nargs="?", choices=["counts", "list", "replay", "purge"], default="counts")
    spool.add_argument("--dead", action="store_true", help="the dead rows (failed alone too often) instead")
    spool.add_argument("--bank", metavar="BANK_ID", help="list: only this bank")
    spool.add_argument("--limit", type=int, default=50, metavar="N", help="list: at most this many rows (default 50)")
    spool.add_argument(
        "--id", type=int, action="append", metavar="N", help="replay/purge --dead: only these rows (repeat it)"
    )
    spool.add_argument(
        "--timeout", type=float, default=60.0, metavar="SECONDS", help="replay: seconds to deliver for (default 60)"
    )
    spool.add_argument("--ids", action="store_true", help="list: print only the row ids, one a line")
    spool.set_defaults(run=cmd_spool)

    serve = command("serve", "run the sidecar: REST API, memory proxy, MCP (memwrap[server])")
    serve.add_argument("--host", help="interface to listen on (MEMWRAP_HOST, default 127.0.0.1)")
    serve.add_argument("--port", type=port_number, metavar="N", help="port (MEMWRAP_PORT, default 8765)")
    serve.add_argument("--log-level", metavar="LEVEL", help="uvicorn log level (MEMWRAP_LOG_LEVEL, default info)")
    serve.set_defaults(run=cmd_serve)

    ui = command("ui", "browse the memory in a browser: the sidecar on 127.0.0.1, at /ui")
    ui.add_argument(
        "--port", type=port_number, metavar="N", help="port (default 8765; taken by another program: a free one)"
    )
    ui.add_argument("--log-level", metavar="LEVEL", help="uvicorn log level (default info)")
    ui.add_argument("--no-browser", action="store_true", help="only print the address")
    ui.set_defaults(run=cmd_ui)

    for name, (configure, run, help_text) in _EXTRA_COMMANDS.items():
        extra = command(name, help_text)
        configure(extra)
        extra.set_defaults(run=run)
    return parser


def _register_learning_commands() -> None:
    # worker, jobs, export: light to import (the engine loads inside each command).
    from memwrap.engine.learn import cli as learn_cli

    learn_cli.register(register_command)


_register_learning_commands()


def _register_agent_commands() -> None:
    # hook (Claude Code's lifecycle hooks) and mcp (MCP over stdio): light to import, like the learning commands;
    # `memwrap mcp` loads the server extra only when it runs.
    from memwrap.integrations import claude_code
    from memwrap_server import mcp_stdio

    claude_code.register(register_command)
    mcp_stdio.register(register_command)


_register_agent_commands()


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.run(args))
    except MemwrapError as exc:
        return _fail(args, exc.code, str(exc), 2)
    except OSError as exc:  # a file or directory the command was given
        where = f"{exc.filename}: " if exc.filename else ""
        return _fail(args, "os_error", f"{where}{exc.strerror or exc}. Check the path and its permissions.", 2)
    except KeyboardInterrupt:
        return _fail(args, "interrupted", "interrupted.", 130)
    except Exception as exc:
        if os.environ.get("MEMWRAP_DEBUG"):
            raise
        return _fail(
            args,
            "unexpected",
            f"{type(exc).__name__}: {exc} (MEMWRAP_DEBUG=1 shows where; please report it if the input was right)",
            1,
        )


def _fail(args: argparse.Namespace, code: str, message: str, status: int) -> int:
    """One line: on stdout as JSON with --json (what scripts read), else on stderr."""
    message = " ".join(message.split())
    if getattr(args, "json", False):
        _print_json({"error": code, "message": message})
    else:
        errors.print(f"[red]error[/] ({code}): {escape(message)}", soft_wrap=True)
    return status


if __name__ == "__main__":
    raise SystemExit(main())
