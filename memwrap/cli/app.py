"""The `memwrap` command: one subcommand per declared verb (memwrap/cli/verb_commands.py: retain, recall, reflect,
list, banks, ...), the core's other commands (CORE_GROUPS: demo, reembed, import-mem0, spool; worker, jobs,
export; hook), and the commands installed packages add through the `memwrap.commands` entry point
(memwrap/cli/registry.py: memwrap_server's serve, ui and mcp).

Every command gets the same parser (memwrap/cli/parser.py: grouped `memwrap --help`, "did you mean" for commands
and options) and the same `main`: an error is one line on stderr (or `{"error", "message"}` with --json) and a
non-zero exit, never a traceback (MEMWRAP_DEBUG=1 shows the traceback of an unexpected one).
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence

from rich.console import Console
from rich.markup import escape

from memwrap.cli import core_commands, hook, learning
from memwrap.cli.parser import MemwrapParser, OptionHelpFormatter
from memwrap.cli.registry import Group, commands, installed_groups
from memwrap.cli.render import print_json
from memwrap.cli.verb_commands import add_verb_commands
from memwrap.errors import MemwrapError

errors = Console(stderr=True, highlight=False)

# The core's command groups besides the verbs, each `register(add)` (memwrap/cli/registry.py).
CORE_GROUPS: tuple[Group, ...] = (core_commands.register, learning.register, hook.register)


def common_options() -> MemwrapParser:
    """The options every command takes."""
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
    return common


def build_parser(groups: Sequence[Group] | None = None) -> argparse.ArgumentParser:
    """The parser of every command: the verbs', then those of `groups` (default: the core's and the installed
    packages')."""
    common = common_options()
    parser: argparse.ArgumentParser = MemwrapParser(
        prog="memwrap", description="Long-term memory for LLM applications."
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=MemwrapParser)
    add_verb_commands(sub, common)
    for command in commands(groups if groups is not None else [*CORE_GROUPS, *installed_groups()]):
        made: argparse.ArgumentParser = sub.add_parser(
            command.name,
            parents=[common],
            help=command.help,
            description=command.help,
            formatter_class=OptionHelpFormatter,
        )
        command.configure(made)
        made.set_defaults(run=command.run)
    return parser


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
        print_json({"error": code, "message": message})
    else:
        errors.print(f"[red]error[/] ({code}): {escape(message)}", soft_wrap=True)
    return status
