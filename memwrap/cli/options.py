"""How a verb parameter becomes a command-line option: its metavar and help (what it is, its format, an example,
its default) and the function that reads its text (times, ids, JSON, numbers), from the parameter's type."""

from __future__ import annotations

import argparse
import inspect
import json
import re
import types
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin
from uuid import UUID

from pydantic import BaseModel

from memwrap.models import KEEP

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
    choices = choices_of(annotation)
    if is_bool(annotation):
        metavar, what = "", "on or off"
    elif choices:
        metavar, what = "{" + ",".join(choices) + "}", "one of " + ", ".join(choices)
    elif datetime in kinds:
        metavar, what = "TIME", "an ISO 8601 time (UTC unless it has an offset)"
        example = example or "2026-05-01T09:30"
    elif is_list(annotation):
        metavar = name[:-1].upper() if name.endswith("s") else name.upper()
        what = f"repeat it or separate with commas (--{name.replace('_', '-')} a,b = two)"
    elif int in kinds and float not in kinds:
        metavar, what = "N", "a whole number"
        example = example or "512"
    elif float in kinds:
        metavar, what = "NUMBER", "a number"
        example = example or "0.5"
    elif reader_for(annotation) is read_json:
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
    if example and not is_bool(annotation):
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


# --- reading options -------------------------------------------------------------------------------------------


def reader_for(annotation: Any, name: str = "") -> Callable[[str], Any]:
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
        return read_json
    if UUID in kinds:
        return read_id
    return str


# What `--setting none` reads as, for a parameter whose default (KEEP) leaves it as it is: None, passed on.
CLEAR = object()


def clearable(reader: Callable[[str], Any]) -> Callable[[str], Any]:
    def read(text: str) -> Any:
        return CLEAR if text.strip().lower() in ("none", "null") else reader(text)

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


def read_json(text: str) -> Any:
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


def is_bool(annotation: Any) -> bool:
    return bool in _members(annotation)


def is_list(annotation: Any) -> bool:
    """A list of words (`--tags a,b`); a list of objects (`--entity-types '[{...}]'`) is JSON instead."""
    return any(get_origin(k) in (list, Sequence) and not _of_objects(k) for k in _members(annotation))


def _of_objects(kind: Any) -> bool:
    """A list whose items are models or mappings (a bank's entity types): read as JSON, not split at commas."""
    return get_origin(kind) in (list, Sequence) and any(
        _is_model(m) or get_origin(m) in (Mapping, dict) for arg in get_args(kind) for m in _members(arg)
    )


def choices_of(annotation: Any) -> list[str] | None:
    for kind in _members(annotation):
        if get_origin(kind) is Literal:
            return [str(v) for v in get_args(kind)]
    return None
