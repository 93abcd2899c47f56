"""The commands that can take minutes — import-memories, import-mem0, export-bank, consolidate, reembed — with a
progress bar: count, rate and time left, on stderr (stdout keeps the result), only when stderr is a terminal and
--json is not given.

import-memories, export-bank and consolidate are verb commands (memwrap/cli_verbs.py); here they run on the
engine of the command's `Memory` with a counter on the way (`LONG_RUNS`), and return what the verb returns.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

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

from memwrap.api import Memory
from memwrap.cli_verbs import LONG_RUNS

T = TypeVar("T")
Advance = Callable[[int], None]
# import-memories with a progress bar and no --batch-size: batches this size, so the bar moves every few seconds
# (the verb's default, 5,000, moves it four times in a 20,000-line file). The rows stored are the same.
PROGRESS_IMPORT_BATCH = 1000


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


def on_engine(memory: Memory, call: Callable[[Any], Awaitable[T]]) -> T:
    """Run `call(engine)` on the memory's loop, where its engine lives (the command's Memory is embedded)."""

    async def run() -> T:
        engine = await memory.aio._get_engine()  # the embedded engine the verbs call; the CLI is its caller
        return await call(engine)

    return memory.submit(run()).result()


# --- import-memories ------------------------------------------------------------------------------------------


def count_lines(path: Path) -> int:
    with path.open("rb") as handle:
        return sum(1 for line in handle if line.strip())


def import_memories(memory: Memory, args: argparse.Namespace, positional: list[Any], arguments: dict[str, Any]) -> int:
    from memwrap.engine.transfer.memories_jsonl import read_jsonl

    bank_id, source = positional
    path = Path(str(source))
    if not progress_wanted(args):
        return memory.import_memories(bank_id, str(path), **arguments)
    size = arguments.setdefault("batch_size", PROGRESS_IMPORT_BATCH)
    total = count_lines(path)
    with progress(args, f"import {path.name}", total, "memories") as bar:

        def rows() -> Iterator[Any]:
            # The engine stores a batch before it reads the next row: a row read means the rows before it are in.
            read = 0
            with path.open(encoding="utf-8") as handle:
                for row in read_jsonl(handle, source=str(path)):
                    if read and read % size == 0:
                        bar.advance(size)
                    read += 1
                    yield row

        imported = memory.import_memories(bank_id, rows(), **arguments)
        bar.set(completed=total)
        return imported


def import_rows(args: argparse.Namespace, memory: Memory, bank_id: str, rows: list[Any], what: str) -> int:
    """import-mem0: rows already read and checked, imported a batch at a time under a bar."""
    if not progress_wanted(args) or not rows:
        return memory.import_memories(bank_id, rows)
    imported = 0
    with progress(args, what, len(rows), "memories") as bar:
        for start in range(0, len(rows), PROGRESS_IMPORT_BATCH):
            batch = rows[start : start + PROGRESS_IMPORT_BATCH]
            imported += memory.import_memories(bank_id, batch)
            bar.advance(len(batch))
    return imported


# --- export-bank ----------------------------------------------------------------------------------------------


def export_bank(memory: Memory, args: argparse.Namespace, positional: list[Any], arguments: dict[str, Any]) -> int:
    bank_id, path = positional
    if not progress_wanted(args):
        return memory.export_bank(bank_id, path, **arguments)
    import json

    from memwrap.engine.transfer.bank_stream import write_lines

    with progress(args, f"export {bank_id}", None, "lines") as bar:

        async def counted(lines: AsyncIterator[str]) -> AsyncIterator[str]:
            first = True
            async for line in lines:
                if first:  # the header counts every record that follows
                    counts = json.loads(line).get("counts") or {}
                    bar.set(total=1 + sum(int(n or 0) for n in counts.values()))
                    first = False
                bar.advance(1)
                yield line

        include = arguments.get("include_embeddings", True)
        return on_engine(
            memory,
            lambda engine: write_lines(Path(path), counted(engine.export_stream(bank_id, include_embeddings=include))),
        )


# --- consolidate ----------------------------------------------------------------------------------------------

# How many facts consolidation has still to read (the conditions of memwrap/engine/learn/consolidate.py PENDING).
PENDING_COUNT = """
SELECT count(*) FROM memory_units m
WHERE m.bank_id = $1 AND m.seq > $2 AND m.fact_type <> 'observation' AND m.invalidated_at IS NULL
  AND NOT EXISTS (SELECT 1 FROM unit_learning l WHERE l.bank_id = m.bank_id AND l.unit_id = m.id)
"""


def consolidate(memory: Memory, args: argparse.Namespace, positional: list[Any], arguments: dict[str, Any]) -> Any:
    (bank_id,) = positional
    if not progress_wanted(args):
        return memory.consolidate(bank_id)

    async def pending(engine: Any) -> int:
        pool = engine.store.pool
        cursor = await pool.fetchval("SELECT watermark FROM learn_progress WHERE bank_id = $1", bank_id) or 0
        return int(await pool.fetchval(PENDING_COUNT, bank_id, cursor))

    first = on_engine(memory, pending)
    done = threading.Event()
    with progress(args, f"consolidate {bank_id}", first, "facts") as bar:
        running = memory.submit(memory.aio.consolidate(bank_id))
        running.add_done_callback(lambda _: done.set())
        while not done.wait(1.0):
            bar.set(completed=max(0, first - on_engine(memory, pending)))
        if running.exception() is None:
            bar.set(completed=first)
        return running.result()


# --- reembed --------------------------------------------------------------------------------------------------


def cmd_reembed(args: argparse.Namespace) -> int:
    from memwrap.cli_verbs import print_json

    outcome = asyncio.run(_reembed(args, Console(stderr=True, highlight=False)))
    if args.json:
        print_json(outcome)
    elif outcome["reembedded"] == 0 and outcome["stored_model"] != outcome["model"]:
        sys.stdout.write(f"The store now holds {outcome['model']} vectors (it had no memories to re-embed).\n")
    elif outcome["reembedded"] == 0:
        sys.stdout.write(
            f"Nothing to re-embed: the {outcome['memories']} memories are embedded with {outcome['model']} "
            "(--force re-embeds them anyway).\n"
        )
    elif outcome["reembedded"] is not None:
        sys.stdout.write(f"Re-embedded {outcome['reembedded']} memories with {outcome['model']}.\n")
    return 0 if outcome["reembedded"] is not None else 1


def reembed_settings(args: argparse.Namespace) -> Any:
    """A one-shot command's settings with no bank of its own: no worker (other banks' queued jobs stay queued)."""
    from memwrap.cli_verbs import one_shot_settings

    return one_shot_settings(args, None)


async def _reembed(args: argparse.Namespace, console: Console) -> dict[str, Any]:
    """What was done: {"reembedded": n (None: refused), "model", "stored_model", "memories"}."""
    from memwrap.engine.embed.reembed import reembed_plan, reembed_store
    from memwrap.engine.startup import open_engine

    settings = reembed_settings(args)
    engine = await open_engine(settings, allow_model_change=True)
    try:
        model = settings.embedding_space
        plan = await reembed_plan(engine.store, engine.embedder, model)
        outcome: dict[str, Any] = {
            "reembedded": 0,
            "model": model,
            "stored_model": plan.stored_model,
            "memories": plan.memories,
        }
        todo = plan.to_embed(force=args.force)
        if todo == 0 and not plan.model_changed:
            return outcome
        full = args.force or plan.model_changed
        # An empty store on a new model has nothing to ask about: the run below only records the model.
        if full and todo and not args.yes:
            why = (
                f"--force: they are already {model}"
                if not plan.model_changed
                else f"the store's vectors are {plan.stored_model} ({plan.stored_dim} dims), "
                f"{model} ({plan.dim} dims) is configured"
            )
            question = (
                f"Re-embed all {todo} memories ({why})? The vector index is rebuilt at the end; until then "
                "semantic recall is slower."
            )
            if not sys.stdin.isatty():
                console.print(f"[red]error[/]: {question} Run `memwrap reembed --yes` to confirm.")
                return outcome | {"reembedded": None}
            answer = await asyncio.to_thread(console.input, f"{question} [y/N] ")
            if answer.strip().lower() not in ("y", "yes"):
                console.print("Nothing changed.")
                return outcome | {"reembedded": None}
        with progress(args, "reembed", todo, "memories") as bar:
            outcome["reembedded"] = await reembed_store(
                engine.store, engine.embedder, model, only_missing=not full, progress=bar.advance
            )
        return outcome
    finally:
        await engine.close()


def configure_reembed(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--yes", "-y", action="store_true", help="re-embed everything without asking first")
    parser.add_argument(
        "--force", action="store_true", help="re-embed every memory even when the model has not changed"
    )


# --- import-bank ----------------------------------------------------------------------------------------------


def import_bank(memory: Memory, args: argparse.Namespace, positional: list[Any], arguments: dict[str, Any]) -> Any:
    """The file read (lines), then written (rows), on one bar whose description says which."""
    from memwrap.engine.transfer import bank_stream as transfer

    bank_id, source = positional
    path = Path(str(source))
    if not progress_wanted(args):
        return memory.import_bank(bank_id, str(path))
    lines = count_lines(path)
    with progress(args, f"read {path.name}", lines, "lines") as bar:

        def moved(phase: str, done: int, total: int) -> None:
            if phase == "write":
                bar.set(completed=done, total=total, description=f"write {bank_id}")
            else:
                bar.set(completed=done)

        return on_engine(
            memory,
            lambda engine: transfer.import_lines(engine.parts, bank_id, transfer.read_lines(path), progress=moved),
        )


LONG_RUNS.update(
    {
        "import_bank": import_bank,
        "import_memories": import_memories,
        "export_bank": export_bank,
        "consolidate": consolidate,
    }
)
