"""The verb commands that can take minutes — import-memories, import-bank, export-bank, consolidate — run with a
progress bar (memwrap/cli/progress.py) when one is wanted, and return what the verb returns.

Each bar follows public steps only: import-memories feeds the verb its rows one by one (a row read means the rows
before it are stored); consolidate asks `bank_stats` how many facts consolidation has still to read
(`facts_to_consolidate`, counted by consolidation's own conditions); import-bank and export-bank run on an engine
opened for the command, with the transfer's `progress=` callback and its stream of lines, as `memwrap reembed`
passes `progress=` to the re-embedding. Without a bar each is the plain verb.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memwrap.api import Memory
from memwrap.cli.progress import Progressing, count_lines, progress, progress_wanted
from memwrap.cli.verb_call import VerbCall, run_on_engine, run_on_memory

if TYPE_CHECKING:
    import argparse

    from memwrap.engine.engine import Engine

# import-memories with a progress bar and no --batch-size: batches this size, so the bar moves every few seconds
# (the verb's default, 5,000, moves it four times in a 20,000-line file). The rows stored are the same.
PROGRESS_IMPORT_BATCH = 1000


# --- import-memories ------------------------------------------------------------------------------------------


def import_memories(call: VerbCall) -> int:
    if not progress_wanted(call.args):
        return int(run_on_memory(call, call.on))
    bank_id, source = call.positional
    path = Path(str(source))
    arguments = call.arguments
    size = arguments.setdefault("batch_size", PROGRESS_IMPORT_BATCH)
    total = count_lines(path)

    def load(memory: Memory) -> int:
        with progress(call.args, f"import {path.name}", total, "memories") as bar:
            imported = memory.import_memories(bank_id, _rows_read(path, size, bar), **arguments)
            bar.set(completed=total)
            return imported

    return run_on_memory(call, load)


def _rows_read(path: Path, size: int, bar: Progressing) -> Iterator[Any]:
    """The file's rows, the bar moved a batch on as the verb reads the row after it (the engine stores a batch
    before it reads the next row)."""
    from memwrap.engine.transfer.memories_jsonl import read_jsonl

    read = 0
    with path.open(encoding="utf-8") as handle:
        for row in read_jsonl(handle, source=str(path)):
            if read and read % size == 0:
                bar.advance(size)
            read += 1
            yield row


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


def export_bank(call: VerbCall) -> int:
    if not progress_wanted(call.args):
        return int(run_on_memory(call, call.on))
    from memwrap.engine.transfer.bank_stream import write_lines

    bank_id, path = call.positional
    include = call.arguments.get("include_embeddings", True)

    async def export(engine: Engine) -> int:
        with progress(call.args, f"export {bank_id}", None, "lines") as bar:
            lines = engine.export_stream(bank_id, include_embeddings=include)
            return await write_lines(Path(path), _counted(lines, bar))

    return asyncio.run(run_on_engine(call, export))


async def _counted(lines: AsyncIterator[str], bar: Progressing) -> AsyncIterator[str]:
    """The export's lines, each counted; the header (the first) counts every record that follows: the bar's total."""
    first = True
    async for line in lines:
        if first:
            counts = json.loads(line).get("counts") or {}
            bar.set(total=1 + sum(int(n or 0) for n in counts.values()))
            first = False
        bar.advance(1)
        yield line


# --- import-bank ----------------------------------------------------------------------------------------------


def import_bank(call: VerbCall) -> Any:
    """The file read (lines), then written (rows), on one bar whose description says which."""
    if not progress_wanted(call.args):
        return run_on_memory(call, call.on)
    from memwrap.engine.transfer import bank_stream as transfer

    bank_id, source = call.positional
    path = Path(str(source))
    lines = count_lines(path)

    async def load(engine: Engine) -> Any:
        with progress(call.args, f"read {path.name}", lines, "lines") as bar:

            def moved(phase: str, done: int, total: int) -> None:
                if phase == "write":
                    bar.set(completed=done, total=total, description=f"write {bank_id}")
                else:
                    bar.set(completed=done)

            return await transfer.import_lines(engine.parts, bank_id, transfer.read_lines(path), progress=moved)

    return asyncio.run(run_on_engine(call, load))


# --- consolidate ----------------------------------------------------------------------------------------------


def to_consolidate(memory: Memory, bank_id: str) -> int:
    """What consolidation has still to read in the bank: BankStats counts it with consolidation's own conditions
    (memwrap/engine/learn/pending.py), read through the public `bank_stats` verb."""
    return memory.bank_stats(bank_id).facts_to_consolidate


def consolidate(call: VerbCall) -> Any:
    if not progress_wanted(call.args):
        return run_on_memory(call, call.on)
    (bank_id,) = call.positional

    def run(memory: Memory) -> Any:
        first = to_consolidate(memory, bank_id)
        done = threading.Event()
        with progress(call.args, f"consolidate {bank_id}", first, "facts") as bar:
            running = memory.submit(memory.aio.consolidate(bank_id))
            running.add_done_callback(lambda _: done.set())
            while not done.wait(1.0):
                bar.set(completed=max(0, first - to_consolidate(memory, bank_id)))
            if running.exception() is None:
                bar.set(completed=first)
            return running.result()

    return run_on_memory(call, run)


# The verbs whose command shows progress, by verb name (the other verb commands run the verb as it is).
LONG_RUNS: dict[str, Callable[[VerbCall], Any]] = {
    "import_bank": import_bank,
    "import_memories": import_memories,
    "export_bank": export_bank,
    "consolidate": consolidate,
}
