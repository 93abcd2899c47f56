"""`memwrap <verb>`: one command per verb declared with `cli=True` (memwrap/verbs.py), derived from it.

Positional parameters are positional arguments (`memwrap recall BANK_ID QUERY`); the rest are options named
after the parameter (`--token-budget 512`, `--tags a,b` or `--tags a --tags b`, `--neighbours/--no-neighbours`,
`--now 2026-05-01T09:00`; mappings such as `--metadata` take JSON). Each option's help says its type, its format
and an example (`option_help`). A renamed parameter keeps its old option as a hidden alias (`--max-tokens`), a
list its singular (`--tag`). `--help` on any command shows the verb's own documentation. What a command prints is
the verb's result: a table where one is written below (RENDERERS), otherwise the result as JSON; `--json` always
prints JSON; `--ids` (commands that list things) prints only their ids, one a line.
"""

from __future__ import annotations

import argparse
import difflib
import inspect
import json
import re
import sys
import types
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints
from uuid import UUID

from pydantic import BaseModel, TypeAdapter
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from memwrap.api import Memory
from memwrap.cli_parser import CommaList, OptionHelpFormatter
from memwrap.declare import Verb
from memwrap.errors import InvalidInputError
from memwrap.models import KEEP
from memwrap.verbs import VERBS

console = Console()
errors = Console(stderr=True)


def add_verb_commands(sub: Any, common: argparse.ArgumentParser) -> None:
    for declared in VERBS.values():
        if declared.cli:
            _add_command(sub, common, declared)


# Examples shown in option help, by parameter name (the kind of the parameter gives the rest, see option_help).
EXAMPLES: dict[str, str] = {
    "bank_id": "alice",
    "content": "'Alice moved to Lisbon in March.'",
    "query": "'Where does Alice live?'",
    "question": "'What does Alice eat?'",
    "name": "diet",
    "memory_id": "0b9a2f4e-8c1d-4e5f-9a7b-3c2d1e0f4a5b",
    "observation_id": "0b9a2f4e-8c1d-4e5f-9a7b-3c2d1e0f4a5b",
    "entity_id": "0b9a2f4e-8c1d-4e5f-9a7b-3c2d1e0f4a5b",
    "path": "alice.jsonl",
    "memories": "memories.jsonl",
    "metadata": """'{"project": "apollo", "priority": 2}'""",
    "filters": """'{"metadata": {"project": "apollo"}, "mentioned_after": "2026-01-01T00:00:00Z"}'""",
    "disposition": """'{"skepticism": 4, "directives": ["cite dates"]}'""",
    "entity_types": """'[{"name": "Service", "description": "a deployed backend service"}]'""",
    "response_schema": """'{"type": "object", "properties": {"city": {"type": "string"}}}'""",
    "tags": "work,move",
    "types": "world,experience",
    "document_id": "conv-1:turn-3",
    "context": "'a call with the landlord'",
    "text": "'Alice moved to Porto.'",
    "reason": "'she moved again'",
    "search": "may",
    "model": "gpt-4o-mini",
    "top_k": "10",
    "min_score": "0.3",
    "limit": "20",
    "offset": "100",
    "max_iterations": "3",
    "timeout": "30",
    "refresh_every": "3600",
    "raw_ttl_days": "30",
    "batch_size": "5000",
    "context_budget": "4096",
    "max_answer_tokens": "512",
    "token_budget": "512",
    "neighbours": "5",
}
# What a positional argument is, in a few words.
POSITIONAL_HELP: dict[str, str] = {
    "bank_id": "the bank (letters, digits, . _ - :)",
    "content": "the text to remember; '-' reads standard input",
    "query": "the question",
    "question": "the standing question",
    "name": "the mental model's name",
    "memory_id": "a memory's id, as `memwrap list` or `memwrap retain` prints it",
    "observation_id": "an observation's id, as `memwrap observations` prints it",
    "entity_id": "an entity's id, as `memwrap entities` prints it",
    "path": "the JSONL file",
    "memories": "a JSONL file: one memory a line",
}


def parameter_doc(doc: str, name: str) -> str | None:
    """What the verb's documentation says of `name`: the words after "`name`:" (or "`a` and `name`:"), to the
    end of that clause."""
    text = " ".join(doc.split())
    found = re.search(
        rf"(?:`[a-z_]+`,? (?:and |or )?)*`{name}`(?:,? (?:and|or) `[a-z_]+`)*: (.+?)(?=; |\. |\.$|$)", text
    )
    return found.group(1).strip() if found else None


def option_help(
    name: str, annotation: Any, default: Any, *, positional: bool = False, doc: str = ""
) -> tuple[str, str]:
    """(metavar, help) for a verb parameter: what it is, its format, an example, its default when it has one."""
    kinds = _members(annotation)
    example = EXAMPLES.get(name)
    choices = _choices(annotation)
    if _is_bool(annotation):
        metavar, what = "", "on or off"
    elif choices:
        metavar, what = "{" + ",".join(choices) + "}", "one of " + ", ".join(choices)
    elif datetime in kinds:
        metavar, what = "TIME", "an ISO 8601 time (UTC unless it has an offset)"
        example = example or "2026-05-01T09:30"
    elif _is_list(annotation):
        metavar = name[:-1].upper() if name.endswith("s") else name.upper()
        what = f"repeat it or separate with commas (--{name.replace('_', '-')} a,b = two)"
    elif int in kinds and float not in kinds:
        metavar, what = "N", "a whole number"
        example = example or "512"
    elif float in kinds:
        metavar, what = "NUMBER", "a number"
        example = example or "0.5"
    elif _reader(annotation) is _read_json:
        metavar, what = "JSON", "a JSON object"
        example = example or "'{}'"
    elif UUID in kinds:
        metavar, what = "ID", "a UUID"
    elif Path in kinds:
        metavar, what = "FILE", "a file path"
    else:
        metavar, what = name.upper() if positional else "TEXT", "text"
    said = parameter_doc(doc, name)
    if positional:
        parts = [POSITIONAL_HELP.get(name, said or what)]
    else:
        parts = [f"{said}: {what}" if said and what != "text" else said or what]
    if example and not _is_bool(annotation):
        parts.append(f"e.g. {example}")
    shown = _default_text(default)
    if shown is not None:
        parts.append(f"default: {shown}")
    return metavar, "; ".join(parts)


def _default_text(default: Any) -> str | None:
    """A default worth saying: not None (the configured default applies) and not KEEP (unchanged)."""
    if default is None or default is inspect.Parameter.empty or default is KEEP:
        return None
    if isinstance(default, bool):
        return "on" if default else "off"
    if default == "":
        return None
    return str(default)


def _add_command(sub: Any, common: argparse.ArgumentParser, declared: Verb) -> None:
    assert declared.cli is not None
    parser = sub.add_parser(
        declared.cli,
        parents=[common],
        help=declared.summary,
        description=declared.doc,
        formatter_class=OptionHelpFormatter,
    )
    hints = get_type_hints(declared.function, include_extras=True)
    aliases = {new: old for old, new in declared.renamed.items()}
    for name, param in declared.signature().parameters.items():
        annotation = hints.get(name, Any)
        if name in declared.positional and param.default is param.empty:
            metavar, text = option_help(name, annotation, param.default, positional=True, doc=declared.doc)
            parser.add_argument(name, metavar=name.upper(), type=_reader(annotation, name), help=text)
            continue
        flags = [f"--{name.replace('_', '-')}"]
        extra = [f"--{aliases[name].replace('_', '-')}"] if name in aliases else []
        if _is_list(annotation) and name.endswith("s"):
            extra.append(f"--{name[:-1].replace('_', '-')}")
        metavar, text = option_help(name, annotation, param.default, doc=declared.doc)
        options: dict[str, Any] = {"dest": name, "default": None, "help": text}
        if _is_bool(annotation):
            parser.add_argument(*flags, action=argparse.BooleanOptionalAction, **options)
        elif _is_list(annotation):
            parser.add_argument(*flags, action=CommaList, metavar=metavar, **options)
        else:
            choices = _choices(annotation)
            reader = _reader(annotation, name)
            if param.default is KEEP and choices is None:  # not given keeps the setting; "none" clears it
                reader = _clearable(reader)
                options["help"] = f"{text + '; ' if text else ''}not given: unchanged; none clears it"
            parser.add_argument(
                *flags,
                type=reader,
                choices=choices,
                metavar=None if choices else metavar,
                **options,
            )
        for alias in extra:  # old spellings: accepted, not advertised
            if _is_list(annotation):
                parser.add_argument(alias, dest=name, action=CommaList, help=argparse.SUPPRESS)
            else:
                parser.add_argument(alias, dest=name, type=_reader(annotation, name), help=argparse.SUPPRESS)
    if declared.name in ID_OF:
        parser.add_argument("--ids", action="store_true", help="print only the ids, one a line (for scripts)")
    parser.set_defaults(run=lambda args: _run(declared, args))


def one_shot_settings(args: argparse.Namespace, bank: Any) -> Any:
    """A command's engine settings: its inline worker runs the command's own bank's jobs only (a command without
    a bank runs none), never other banks' queued work."""
    from memwrap.config import load_settings

    held = {"worker_bank": bank} if bank else {"worker": "off"}
    return load_settings(home=args.home, database_url=args.database_url, **held)


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
    check_paths(declared.name, arguments)
    bank = arguments.get("bank_id") if isinstance(arguments.get("bank_id"), str) else None
    positional = [arguments.pop(name) for name in declared.positional if name in arguments]
    with Memory(settings=one_shot_settings(args, bank)) as memory:
        if not memory.started and not args.json:  # the first run prepares the database and the model: say so
            with errors.status("Starting the memory engine (database, embedding model)…", spinner="dots"):
                memory.warmup()
        if declared.name in READS_A_BANK and not _bank_exists(memory, str(getattr(args, "bank_id", ""))):
            return 1
        long_run = LONG_RUNS.get(declared.name)
        if long_run is not None:
            result = long_run(memory, args, positional, arguments)
        else:
            result = getattr(memory, declared.name)(*positional, **arguments)
    if getattr(args, "ids", False):
        sys.stdout.writelines(f"{found}\n" for found in ID_OF[declared.name](result))
    elif args.json or declared.name not in RENDERERS:
        print_json(TypeAdapter(Any).dump_python(result, mode="json"))
    else:
        RENDERERS[declared.name](result, args)
    return 0


def check_paths(verb: str, arguments: dict[str, Any]) -> None:
    """The files a command reads or writes, checked before the engine starts: one line naming the path."""
    if verb in ("import_memories", "import_bank"):
        name = "memories" if verb == "import_memories" else "path"
        source = Path(str(arguments.get(name, "")))
        if not source.exists():
            raise InvalidInputError(f"{source}: no such file. Give the path of the JSONL file to import.")
        if not source.is_file():
            raise InvalidInputError(f"{source}: not a file. Give the path of the JSONL file to import.")
    if verb == "export_bank":
        target = Path(str(arguments.get("path", "")))
        if target.is_dir():
            raise InvalidInputError(f"{target} is a directory: give a file name, e.g. {target / 'bank.jsonl'}.")
        if not target.parent.is_dir():
            raise InvalidInputError(
                f"{target.parent}: no such directory. Create it first (mkdir -p {target.parent}) or write elsewhere."
            )


# Verbs whose command shows progress while it runs (memwrap/cli_long.py); set there, to keep this module light.
LONG_RUNS: dict[str, Callable[[Memory, argparse.Namespace, list[Any], dict[str, Any]], Any]] = {}


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
    errors.print(f"[red]error[/]: there is no bank {escape(repr(bank_id))}.{escape(hint)}", highlight=False)
    return False


def print_json(data: object) -> None:
    sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2, default=str) + "\n")


# --- reading options -------------------------------------------------------------------------------------------


def _reader(annotation: Any, name: str = "") -> Callable[[str], Any]:
    kinds = _members(annotation)
    if datetime in kinds:
        return read_time
    if int in kinds and float not in kinds:
        return int
    if float in kinds:
        return float
    if (
        any(get_origin(k) in (Mapping, dict) or k in (dict, Mapping) or _is_model(k) or _of_objects(k) for k in kinds)
        or annotation is Any
    ):
        return _read_json
    if UUID in kinds:
        return read_id
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
        raise argparse.ArgumentTypeError(
            f"{text!r} is not an ISO time: write e.g. 2026-05-01, 2026-05-01T09:30 or 2026-05-01T09:30+02:00"
        ) from None
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def read_id(text: str) -> str:
    try:
        UUID(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not an id: ids are UUIDs such as 0b9a2f4e-8c1d-4e5f-9a7b-3c2d1e0f4a5b "
            "(`memwrap list BANK_ID --ids` prints them)"
        ) from None
    return text


def _read_json(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(
            f'{text!r} is not JSON ({exc}); write it in single quotes, e.g. \'{{"project": "apollo"}}\''
        ) from None


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
    """A list of words (`--tags a,b`); a list of objects (`--entity-types '[{...}]'`) is JSON instead."""
    return any(get_origin(k) in (list, Sequence) and not _of_objects(k) for k in _members(annotation))


def _of_objects(kind: Any) -> bool:
    """A list whose items are models or mappings (a bank's entity types): read as JSON, not split at commas."""
    return get_origin(kind) in (list, Sequence) and any(
        _is_model(m) or get_origin(m) in (Mapping, dict) for arg in get_args(kind) for m in _members(arg)
    )


def _choices(annotation: Any) -> list[str] | None:
    for kind in _members(annotation):
        if get_origin(kind) is Literal:
            return [str(v) for v in get_args(kind)]
    return None


# --- printing results ------------------------------------------------------------------------------------------
# Tables never cut an id: an id column neither wraps nor shrinks below its longest id (a UUID is 36 characters),
# so an id read off the screen pastes into `memwrap get`; the other cells wrap (fold) rather than lose their end.


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
