"""The progress bar of the commands that can take minutes: count, rate and time left, on stderr (stdout keeps the
result), only when stderr is a terminal and --json is not given."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    SpinnerColumn,
    Task,
    TaskProgressColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.text import Text


class RateColumn(ProgressColumn):
    """Items a second, from rich's moving estimate."""

    def __init__(self, unit: str) -> None:
        super().__init__()
        self.unit = unit

    def render(self, task: Task) -> Text:
        speed = task.finished_speed or task.speed
        return Text(f"{speed:,.0f} {self.unit}/s" if speed else f"- {self.unit}/s", style="progress.data.speed")


def progress_wanted(args: argparse.Namespace) -> bool:
    return not getattr(args, "json", False) and sys.stderr.isatty()


@contextmanager
def progress(args: argparse.Namespace, description: str, total: int | None, unit: str) -> Iterator[Progressing]:
    """A bar on stderr while the block runs (nothing when not wanted); `advance(n)` and `total` may be set from
    any thread (the engine runs on the memory's own loop thread)."""
    if not progress_wanted(args):
        yield Progressing(None, None)
        return
    bar = Progress(
        SpinnerColumn(),
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TaskProgressColumn(),
        RateColumn(unit),
        TimeElapsedColumn(),
        TextColumn("elapsed,"),  # "0:00:49 elapsed, 0:00:06 left": each time says what it is
        TimeRemainingColumn(),
        TextColumn("left"),
        console=Console(stderr=True),
    )
    with bar:
        yield Progressing(bar, bar.add_task(description, total=total))


class Progressing:
    def __init__(self, bar: Progress | None, task: Any) -> None:
        self.bar, self.task = bar, task

    def advance(self, n: int) -> None:
        if self.bar is not None:
            self.bar.advance(self.task, n)

    def set(self, *, completed: int | None = None, total: int | None = None, description: str | None = None) -> None:
        if self.bar is not None:
            self.bar.update(self.task, completed=completed, total=total, description=description)


def count_lines(path: Path) -> int:
    with path.open("rb") as handle:
        return sum(1 for line in handle if line.strip())
