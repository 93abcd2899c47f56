"""One verb command's call: what it was given, the engine settings it runs with, and the two ways to run it —
on a `Memory` (every verb command) or, for a progress bar that follows the engine's own steps, on an engine
opened for the command (as `memwrap reembed` does). Both say "Starting the memory engine" while it starts and
check first that a bank the verb reads exists."""

from __future__ import annotations

import argparse
import difflib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from rich.console import Console
from rich.markup import escape

from memwrap.api import Memory
from memwrap.config import Settings

if TYPE_CHECKING:
    from memwrap.engine.engine import Engine

T = TypeVar("T")
errors = Console(stderr=True)
STARTING = "Starting the memory engine (database, embedding model)…"

# Verbs that read a bank: on a bank that does not exist they would answer "nothing", which reads like an empty
# bank; the CLI says there is no such bank instead (and exits 1).
READS_A_BANK = {
    "recall",
    "list",
    "get",
    "observations",
    "mental_models",
    "bank_config",
    "history",
    "export_bank",
    "entities",
    "entity_graph",
    "memory_context",
}


class NoSuchBank(Exception):
    """The bank the verb reads does not exist (already said on stderr): the command exits 1."""


def one_shot_settings(args: argparse.Namespace, bank: Any) -> Settings:
    """A command's engine settings: its inline worker runs the command's own bank's jobs only (a command without
    a bank runs none), never other banks' queued work."""
    from memwrap.config import load_settings

    held = {"worker_bank": bank} if bank else {"worker": "off"}
    return load_settings(home=args.home, database_url=args.database_url, **held)


@dataclass(frozen=True)
class VerbCall:
    verb: str
    args: argparse.Namespace
    settings: Settings
    positional: list[Any]
    arguments: dict[str, Any]

    def on(self, memory: Memory) -> Any:
        """The verb itself, on `memory`."""
        return getattr(memory, self.verb)(*self.positional, **self.arguments)

    @property
    def bank_read(self) -> str | None:
        return str(getattr(self.args, "bank_id", "")) if self.verb in READS_A_BANK else None


def run_on_memory(call: VerbCall, body: Callable[[Memory], T]) -> T:
    with Memory(settings=call.settings) as memory:
        if not memory.started and not call.args.json:  # the first run prepares the database and the model: say so
            with errors.status(STARTING, spinner="dots"):
                memory.warmup()
        if call.bank_read is not None:
            check_bank(call.bank_read, [b.bank_id for b in memory.banks()])
        return body(memory)


async def run_on_engine(call: VerbCall, body: Callable[[Engine], Awaitable[T]]) -> T:
    """`body` on an engine opened for this command (closed after it): for the steps a progress bar follows."""
    from memwrap.engine.startup import open_engine

    with errors.status(STARTING, spinner="dots"):
        engine = await open_engine(call.settings)
    try:
        if call.bank_read is not None:
            check_bank(call.bank_read, [b.bank_id for b in await engine.banks()])
        return await body(engine)
    finally:
        await engine.close()


def check_bank(bank_id: str, banks: list[str]) -> None:
    if "," in bank_id or bank_id in banks:
        return
    close = difflib.get_close_matches(bank_id, banks, n=3)
    hint = f" Did you mean {', '.join(repr(b) for b in close)}?" if close else " `memwrap banks` lists them."
    errors.print(f"[red]error[/]: there is no bank {escape(repr(bank_id))}.{escape(hint)}", highlight=False)
    raise NoSuchBank(bank_id)
