"""What a verb command prints: a table for the verbs written here (RENDERERS), and the ids of what a listing
command's result lists (`--ids`, ID_OF); any other result is printed as JSON.

Tables never cut an id: an id column neither wraps nor shrinks below its longest id (a UUID is 36 characters),
so an id read off the screen pastes into `memwrap get`; the other cells wrap (fold) rather than lose their end.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from rich.console import Console
from rich.table import Table

console = Console()
errors = Console(stderr=True)


def print_json(data: object) -> None:
    """--json (and a result with no table): indented JSON on stdout."""
    sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2, default=str) + "\n")


def table(title: str, columns: Sequence[str], ids: Sequence[str] = ("id",), **options: Any) -> Table:
    """A table whose `ids` columns are kept whole and whose other columns wrap."""
    made = Table(title=title, **options)
    for column in columns:
        if column in ids:
            made.add_column(column, no_wrap=True, overflow="fold", min_width=_ID_WIDTH.get(column, 36))
        else:
            made.add_column(column, overflow="fold")
    return made


_ID_WIDTH = {"bank": 12}


def _recall(recall: Any, args: argparse.Namespace) -> None:
    shown = table(
        f"Recall for {recall.query!r} in {recall.bank_id} ({recall.tokens}/{recall.token_budget} tokens)",
        ("#", "memory", "when", "arms", "score"),
        ids=(),
    )
    for rank, m in enumerate(recall.memories, start=1):
        arms = ", ".join(f"{a}#{r}" for a, r in m.arms.items()) or ("neighbour" if m.neighbour_of else "")
        when = f"{m.mentioned_at:%Y-%m-%d}" if m.mentioned_at else ""
        shown.add_row(str(rank), m.text, when, arms, f"{m.score:.4f}")
    console.print(shown)


def _retain(ids: list[Any], args: argparse.Namespace) -> None:
    count = f"{len(ids)} memor{'y' if len(ids) == 1 else 'ies'}"
    errors.print(f"Retained {count} in [cyan]{args.bank_id}[/]:", highlight=False)
    for unit_id in ids:  # on stdout, one a line: `memwrap get BANK_ID ID` takes them as they are
        sys.stdout.write(f"{unit_id}\n")


def _banks(banks: list[Any], args: argparse.Namespace) -> None:
    shown = table("Banks", ("bank", "memories", "created", "last retain"), ids=("bank",))
    for b in banks:
        shown.add_row(
            b.bank_id,
            str(b.memories),
            f"{b.created_at:%Y-%m-%d %H:%M}" if b.created_at else "",
            f"{b.last_retain_at:%Y-%m-%d %H:%M}" if b.last_retain_at else "",
        )
    console.print(shown)


def _memories(records: list[Any], args: argparse.Namespace) -> None:
    shown = table(f"Memories in {args.bank_id}", ("id", "type", "text", "said"))
    for r in records:
        shown.add_row(str(r.id), r.type, r.text, f"{r.mentioned_at:%Y-%m-%d}" if r.mentioned_at else "")
    console.print(shown)


def _reflect(result: Any, args: argparse.Namespace) -> None:
    console.print(result.answer)
    console.print(
        f"[dim]{len(result.memory_ids)} memories cited, {result.iterations} iteration(s)"
        + (f", cut short: {result.forced_reason}" if result.forced else "")
        + "[/]"
    )


def _stats(stats: Any, args: argparse.Namespace) -> None:
    def counts(by: dict[str, int]) -> str:
        return ", ".join(f"{k} {v:,}" for k, v in sorted(by.items())) or "none"

    def time(value: datetime | None) -> str:
        return f"{value:%Y-%m-%d %H:%M}" if value else ""

    shown = Table(title=f"Bank {stats.bank_id}", show_header=False)
    shown.add_column(style="bold")
    shown.add_column(overflow="fold")
    for label, value in (
        ("memories", f"{stats.memories:,} ({counts(stats.memories_by_type)})"),
        ("invalidated", f"{stats.invalidated:,}"),
        ("observations", f"{stats.observations:,}"),
        ("mental models", f"{stats.mental_models:,} ({counts(stats.mental_models_by_status)})"),
        ("entities", f"{stats.entities:,}"),
        ("jobs pending", f"{stats.jobs_pending:,} ({counts(stats.jobs_by_status)})"),
        ("created", time(stats.created_at)),
        ("last retain", time(stats.last_retain_at)),
        ("last activity", time(stats.last_activity_at)),
    ):
        shown.add_row(label, value)
    console.print(shown)


def _entities(entities: list[Any], args: argparse.Namespace) -> None:
    shown = table(f"Entities in {args.bank_id}", ("id", "name", "mentions", "aliases", "last seen"))
    for e in entities:
        shown.add_row(
            str(e.id), e.name, f"{e.mentions:,}", ", ".join(e.aliases), f"{e.last_seen:%Y-%m-%d}" if e.last_seen else ""
        )
    console.print(shown)


RENDERERS: dict[str, Callable[[Any, argparse.Namespace], None]] = {
    "bank_stats": _stats,
    "entities": _entities,
    "recall": _recall,
    "retain": _retain,
    "banks": _banks,
    "list": _memories,
    "reflect": _reflect,
}

# Commands that list things take `--ids`: the ids (or names) of what their result lists.
ID_OF: dict[str, Callable[[Any], list[str]]] = {
    "list": lambda found: [str(r.id) for r in found],
    "banks": lambda found: [b.bank_id for b in found],
    "entities": lambda found: [str(e.id) for e in found],
    "observations": lambda found: [str(o.id) for o in found],
    "recall": lambda found: [str(m.id) for m in found.memories],
    "mental_models": lambda found: [m.name for m in found],
}
