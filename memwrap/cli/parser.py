"""The argument parser every `memwrap` command uses: a readable command list, "did you mean" for a misspelt
command or option, and one line (never a traceback) for an option that cannot be read.

Nothing here knows a command by name except `COMMAND_GROUPS`, which only orders `memwrap --help`: a command
registered elsewhere (memwrap/cli/registry.py) is listed under "More commands" and gets the
suggestions like any other.
"""

from __future__ import annotations

import argparse
import difflib
import re
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

# How `memwrap --help` groups the commands (in this order); a command not named here goes under "More commands".
COMMAND_GROUPS: dict[str, tuple[str, ...]] = {
    "Remember and ask": ("retain", "recall", "reflect", "demo"),
    "Look at memories": (
        "list",
        "get",
        "history",
        "memory-context",
        "update",
        "invalidate",
        "restore",
        "delete",
    ),
    "Banks": (
        "banks",
        "stats",
        "create-bank",
        "configure-bank",
        "bank-config",
        "delete-bank",
        "entities",
        "entity-graph",
    ),
    "Learning": (
        "consolidate",
        "observations",
        "get-observation",
        "observation-history",
        "create-mental-model",
        "mental-models",
        "get-mental-model",
        "mental-model-history",
        "refresh-mental-model",
        "delete-mental-model",
        "jobs",
        "worker",
    ),
    "Move data": ("import-memories", "import-mem0", "export-bank", "import-bank", "export", "reembed"),
    "Run": ("serve", "ui", "spool"),
}
OTHER_GROUP = "More commands"

# Commands the server package adds through the `memwrap.commands` entry point (memwrap/cli/registry.py): missing,
# the installed metadata does not declare it (an install made before it was declared), and the error says so.
ENTRY_POINT_COMMANDS = ("serve", "ui", "mcp")


# Words that name what several commands do: the one most people mean first (a JSONL file of memories).
INTENDED = {"import": ("import-memories", "import-bank", "import-mem0")}


def suggestions(word: str, known: Sequence[str]) -> list[str]:
    """The known words `word` is probably a slip for: close spellings first, then those it begins."""
    intended = [k for k in INTENDED.get(word, ()) if k in known]
    if intended:
        return intended[:3]
    close = difflib.get_close_matches(word, known, n=3, cutoff=0.6)
    begun = [k for k in known if word and k.startswith(word) and k not in close]
    return (close + begun)[:3]


def did_you_mean(word: str, known: Sequence[str]) -> str:
    found = suggestions(word, known)
    return f" Did you mean {' or '.join(found)}?" if found else ""


class MemwrapParser(argparse.ArgumentParser):
    """argparse, with the messages a person needs when they mistype."""

    def _check_value(self, action: argparse.Action, value: Any) -> None:
        if isinstance(action, argparse._SubParsersAction) and value not in (action.choices or {}):
            hint = did_you_mean(str(value), list(action.choices or {}))
            if value in ENTRY_POINT_COMMANDS:
                hint = (
                    " It comes with memwrap's server package, through the `memwrap.commands` entry point, which this"
                    " installation does not declare: reinstall memwrap (a checkout: pip install -e . again)."
                )
            raise argparse.ArgumentError(
                action, f"unknown command {value!r}.{hint or ''} `{self.prog} --help` lists the commands."
            )
        super()._check_value(action, value)

    def parse_args(self, args: Sequence[str] | None = None, namespace: Any = None) -> Any:  # type: ignore[override]
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            command = self._command_parser(parsed)
            (command or self).error(_unrecognized(extras, command or self))
        return parsed

    def _command_parser(self, parsed: argparse.Namespace) -> argparse.ArgumentParser | None:
        for action in self._actions:
            if isinstance(action, argparse._SubParsersAction):
                chosen = (action.choices or {}).get(str(getattr(parsed, action.dest or "", "")))
                return chosen if isinstance(chosen, argparse.ArgumentParser) else None
        return None

    def error(self, message: str) -> NoReturn:
        """Usage, then one line saying what was wrong; exit code 2 (argparse's own)."""
        self.print_usage(sys.stderr)
        self.exit(2, f"{self.prog}: error: {message}\n")

    def format_help(self) -> str:
        commands = next((a for a in self._actions if isinstance(a, argparse._SubParsersAction)), None)
        if commands is None:
            return super().format_help()
        return _command_list(self, commands)


def _unrecognized(extras: Sequence[str], parser: argparse.ArgumentParser) -> str:
    options = [o for a in parser._actions if a.help != argparse.SUPPRESS for o in a.option_strings]
    lines = []
    after_option = False
    for extra in extras:
        if extra.startswith("-"):
            name = extra.split("=", 1)[0]
            hint = did_you_mean(name, options)
            lines.append(f"unknown option {name!r}.{hint}")
            after_option = "=" not in extra
        elif not after_option:  # (a word after an unknown option is taken for its value)
            lines.append(f"unexpected argument {extra!r} (quote a value that has spaces).")
        else:
            after_option = False
    return " ".join(lines) + f" `{parser.prog} --help` lists what it takes."


def _command_list(parser: argparse.ArgumentParser, commands: argparse._SubParsersAction[Any]) -> str:
    """`memwrap --help`: the commands grouped, one a line with its summary."""
    summaries = {a.dest: a.help or "" for a in commands._choices_actions}
    names = list(commands.choices or {})
    grouped: dict[str, list[str]] = {
        title: [n for n in members if n in summaries] for title, members in COMMAND_GROUPS.items()
    }
    placed = {n for members in grouped.values() for n in members}
    grouped[OTHER_GROUP] = [n for n in names if n not in placed and n in summaries]
    width = max((len(n) for n in summaries), default=10) + 2
    room = max(40, _help_width() - width - 2)
    out = [f"usage: {parser.prog} COMMAND [options]   ({parser.prog} COMMAND --help: what it takes)", ""]
    if parser.description:
        out += [parser.description, ""]
    for title, members in grouped.items():
        if not members:
            continue
        out.append(f"{title}:")
        out += [f"  {n.ljust(width)}{_summary(summaries[n], room)}" for n in members]
        out.append("")
    out += [
        "Options of every command: --home DIR (MEMWRAP_HOME), --database-url URL (MEMWRAP_DATABASE_URL),",
        "--json (machine-readable output on stdout).",
    ]
    return "\n".join(out) + "\n"


def _summary(text: str, room: int) -> str:
    """The first sentence, on one line of the terminal (cut at a word, marked …)."""
    text = re.split(r"(?<!e\.g)(?<!i\.e)\. |; ", " ".join(text.split()), maxsplit=1)[0].rstrip(".")
    if len(text) > room:
        text = text[: room - 1].rsplit(" ", 1)[0].rstrip(",;:(") + "…"
    return text


class CommaList(argparse.Action):
    """A list option: repeated, comma-separated, or both (`--tags work,move` = `--tags work --tags move`)."""

    def __call__(
        self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any, option: str | None = None
    ) -> None:
        from memwrap.filters import split_commas

        current = list(getattr(namespace, self.dest, None) or [])
        setattr(namespace, self.dest, current + (split_commas(str(values)) or []))


class OptionHelpFormatter(argparse.RawDescriptionHelpFormatter):
    """A command's help: its documentation as written, options one a line with their own help under them."""

    def __init__(self, prog: str) -> None:
        super().__init__(prog, max_help_position=32, width=_help_width())


def _help_width() -> int:
    import shutil

    return min(100, shutil.get_terminal_size((100, 24)).columns)
