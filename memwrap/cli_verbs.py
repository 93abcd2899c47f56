"""`memwrap <verb>`: one command per verb declared with `cli=True` (memwrap/verbs.py), derived from it.

Positional parameters are positional arguments (`memwrap recall BANK_ID QUERY`); the rest are options named
after the parameter (`--token-budget 512`, `--tags a --tags b`, `--neighbours/--no-neighbours`, `--now
2026-05-01T09:00`; mappings such as `--metadata` take JSON). A renamed parameter keeps its old option as a
hidden alias (`--max-tokens`), a list its singular (`--tag`). `--help` on any command shows the verb's own
documentation. What a command prints is the verb's result: a table where one is written below (RENDERERS),
otherwise the result as JSON; `--json` always prints JSON.
"""

from __future__ import annotations

import argparse
import difflib
import json
import sys
import types
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints

from pydantic import BaseModel, TypeAdapter
from rich.console import Console
from rich.table import Table

from memwrap.api import Memory
from memwrap.declare import Verb
from memwrap.models import KEEP
from memwrap.verbs import VERBS

console = Console()


def add_verb_commands(sub: Any, common: argparse.ArgumentParser) -> None:
    for declared in VERBS.values():
        if declared.cli:
            _add_command(sub, common, declared)


def _add_command(sub: Any, common: argparse.ArgumentParser, declared: Verb) -> None:
    assert declared.cli is not None
    parser = sub.add_parser(
        declared.cli,
        parents=[common],
        help=declared.summary,
        description=declared.doc,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    hints = get_type_hints(declared.function, include_extras=True)
    aliases = {new: old for old, new in declared.renamed.items()}
    for name, param in declared.signature().parameters.items():
        annotation = hints.get(name, Any)
        if name in declared.positional and param.default is param.empty:
            parser.add_argument(
                name,
                metavar=name.upper(),
                type=_reader(annotation),
                help="'-' reads standard input" if name == "content" else None,
            )
            continue
        flags = [f"--{name.replace('_', '-')}"]
        extra = [f"--{aliases[name].replace('_', '-')}"] if name in aliases else []
        if _is_list(annotation) and name.endswith("s"):
            extra.append(f"--{name[:-1].replace('_', '-')}")
        options: dict[str, Any] = {"dest": name, "default": None, "help": f"default: {param.default!r}"}
        if _is_bool(annotation):
            parser.add_argument(*flags, action=argparse.BooleanOptionalAction, **options)
        elif _is_list(annotation):
            parser.add_argument(*flags, action="append", **options)
        else:
            choices = _choices(annotation)
            reader = _reader(annotation)
            if param.default is KEEP and choices is None:  # not given keeps the setting; "none" clears it
                reader = _clearable(reader)
                options["help"] = "default: KEEP (unchanged); none clears it"
            parser.add_argument(*flags, type=reader, choices=choices, **options)
        for alias in extra:  # old spellings: accepted, not advertised
            if _is_list(annotation):
                parser.add_argument(alias, dest=name, action="append", help=argparse.SUPPRESS)
            else:
                parser.add_argument(alias, dest=name, type=_reader(annotation), help=argparse.SUPPRESS)
    parser.set_defaults(run=lambda args: _run(declared, args))


def _run(declared: Verb, args: argparse.Namespace) -> int:
    arguments: dict[str, Any] = {}
    for name in declared.signature().parameters:
        value = getattr(args, name, None)
        if value is None:
            continue
        if name == "content" and value == "-":
            value = sys.stdin.read()
        if value is _CLEAR:
            value = None
        arguments[name] = value
    positional = [arguments.pop(name) for name in declared.positional if name in arguments]
    with Memory(home=args.home, database_url=args.database_url) as memory:
        if not memory.started and not args.json:  # the first run prepares the database and the model: say so
            with console.status("Starting the memory engine (database, embedding model)…", spinner="dots"):
                memory.warmup()
        if declared.name in READS_A_BANK and not _bank_exists(memory, str(getattr(args, "bank_id", ""))):
            return 1
        result = getattr(memory, declared.name)(*positional, **arguments)
    if args.json or declared.name not in RENDERERS:
        print_json(TypeAdapter(Any).dump_python(result, mode="json"))
    else:
        RENDERERS[declared.name](result, args)
    return 0


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


def _bank_exists(memory: Memory, bank_id: str) -> bool:
    banks = [b.bank_id for b in memory.banks()]
    if "," in bank_id or bank_id in banks:
        return True
    close = difflib.get_close_matches(bank_id, banks, n=3)
    hint = f" Did you mean {', '.join(repr(b) for b in close)}?" if close else " `memwrap banks` lists them."
    console.print(f"[red]error[/]: there is no bank {bank_id!r}.{hint}")
    return False


def print_json(data: object) -> None:
    sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2, default=str) + "\n")


# --- reading options -------------------------------------------------------------------------------------------


def _reader(annotation: Any) -> Callable[[str], Any]:
    kinds = _members(annotation)
    if datetime in kinds:
        return read_time
    if int in kinds and float not in kinds:
        return int
    if float in kinds:
        return float
    if (
        any(get_origin(k) in (Mapping, dict) or k in (dict, Mapping) or _is_model(k) for k in kinds)
        or annotation is Any
    ):
        return _read_json
    return str


# What `--setting none` reads as, for a parameter whose default (KEEP) leaves it as it is: None, passed on.
_CLEAR = object()


def _clearable(reader: Callable[[str], Any]) -> Callable[[str], Any]:
    def read(text: str) -> Any:
        return _CLEAR if text.strip().lower() in ("none", "null") else reader(text)

    read.__name__ = getattr(reader, "__name__", "value")  # argparse names the type in its messages
    return read


def read_time(text: str) -> datetime:
    try:
        value = datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an ISO time (e.g. 2026-05-01 or 2026-05-01T09:30)") from None
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def _read_json(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not JSON: {exc}") from None


def _members(annotation: Any) -> list[Any]:
    if get_origin(annotation) is not None and get_origin(annotation).__name__ == "Annotated":
        annotation = get_args(annotation)[0]
    if get_origin(annotation) in (Union, types.UnionType):
        return [m for arg in get_args(annotation) for m in _members(arg)]
    return [annotation]


def _is_model(kind: Any) -> bool:
    return isinstance(kind, type) and issubclass(kind, BaseModel)


def _is_bool(annotation: Any) -> bool:
    return bool in _members(annotation)


def _is_list(annotation: Any) -> bool:
    return any(get_origin(k) in (list, Sequence) for k in _members(annotation))


def _choices(annotation: Any) -> list[str] | None:
    for kind in _members(annotation):
        if get_origin(kind) is Literal:
            return [str(v) for v in get_args(kind)]
    return None


# --- printing results ------------------------------------------------------------------------------------------


def _recall(recall: Any, args: argparse.Namespace) -> None:
    table = Table(
        title=f"Recall for {recall.query!r} in {recall.bank_id} ({recall.tokens}/{recall.token_budget} tokens)"
    )
    for column in ("#", "memory", "when", "arms", "score"):
        table.add_column(column)
    for rank, m in enumerate(recall.memories, start=1):
        arms = ", ".join(f"{a}#{r}" for a, r in m.arms.items()) or ("neighbour" if m.neighbour_of else "")
        when = f"{m.mentioned_at:%Y-%m-%d}" if m.mentioned_at else ""
        table.add_row(str(rank), m.text, when, arms, f"{m.score:.4f}")
    console.print(table)


def _retain(ids: list[Any], args: argparse.Namespace) -> None:
    console.print(f"Retained {len(ids)} memor{'y' if len(ids) == 1 else 'ies'} in [cyan]{args.bank_id}[/].")


def _banks(banks: list[Any], args: argparse.Namespace) -> None:
    table = Table(title="Banks")
    for column in ("bank", "memories", "created", "last retain"):
        table.add_column(column)
    for b in banks:
        table.add_row(
            b.bank_id,
            str(b.memories),
            f"{b.created_at:%Y-%m-%d %H:%M}" if b.created_at else "",
            f"{b.last_retain_at:%Y-%m-%d %H:%M}" if b.last_retain_at else "",
        )
    console.print(table)


def _memories(records: list[Any], args: argparse.Namespace) -> None:
    table = Table(title=f"Memories in {args.bank_id}")
    for column in ("id", "type", "text", "said"):
        table.add_column(column)
    for r in records:
        table.add_row(str(r.id), r.type, r.text, f"{r.mentioned_at:%Y-%m-%d}" if r.mentioned_at else "")
    console.print(table)


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

    table = Table(title=f"Bank {stats.bank_id}", show_header=False)
    table.add_column(style="bold")
    table.add_column()
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
        table.add_row(label, value)
    console.print(table)


def _entities(entities: list[Any], args: argparse.Namespace) -> None:
    table = Table(title=f"Entities in {args.bank_id}")
    for column in ("id", "name", "mentions", "aliases", "last seen"):
        table.add_column(column)
    for e in entities:
        table.add_row(
            str(e.id), e.name, f"{e.mentions:,}", ", ".join(e.aliases), f"{e.last_seen:%Y-%m-%d}" if e.last_seen else ""
        )
    console.print(table)


RENDERERS: dict[str, Callable[[Any, argparse.Namespace], None]] = {
    "bank_stats": _stats,
    "entities": _entities,
    "recall": _recall,
    "retain": _retain,
    "banks": _banks,
    "list": _memories,
    "reflect": _reflect,
}
