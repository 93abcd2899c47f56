"""Which commands `memwrap` has besides the verb commands, found without importing anything for its side
effects: the core's command groups, listed in memwrap/cli/app.py (`CORE_GROUPS`), and the groups other installed
packages declare under the `memwrap.commands` entry point (memwrap_server's serve, ui and mcp: pyproject.toml),
loaded when the parser is built. So `import memwrap.cli` never imports memwrap_server, and a package that adds
commands needs no change here.

A group is a function given `add(name, configure, run, help)`: `configure(parser)` adds the command's options,
`run(args)` runs it and returns the exit status.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from importlib.metadata import entry_points

Configure = Callable[[argparse.ArgumentParser], None]
Run = Callable[[argparse.Namespace], int]
Register = Callable[[str, Configure, Run, str], None]
Group = Callable[[Register], None]

ENTRY_POINT_GROUP = "memwrap.commands"


@dataclass(frozen=True)
class Command:
    name: str
    configure: Configure
    run: Run
    help: str


def installed_groups() -> list[Group]:
    """The groups installed packages declare under the `memwrap.commands` entry point. One that cannot be imported
    (a package half removed) is left out: the other commands still work."""
    found: list[Group] = []
    for point in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda p: p.name):
        try:
            found.append(point.load())
        except ImportError:
            continue
    return found


def commands(groups: Iterable[Group]) -> list[Command]:
    """The commands the groups add, in their order; a later one of the same name replaces an earlier."""
    collected: dict[str, Command] = {}

    def add(name: str, configure: Configure, run: Run, help: str) -> None:
        collected[name] = Command(name, configure, run, help)

    for group in groups:
        group(add)
    return list(collected.values())
