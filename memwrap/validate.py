"""Checks on everything a caller hands the engine, before anything is touched."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

from pydantic import ValidationError

from memwrap.errors import (
    EntityNotFoundError,
    InvalidBankIdError,
    InvalidBudgetError,
    InvalidContentError,
    InvalidInputError,
    MemoryNotFoundError,
)
from memwrap.models import (
    ENTITY_TYPE_NAME_PATTERN,
    MAX_BUDGET_TOKENS,
    MAX_ENTITY_TYPES,
    MAX_EXTRACTION_INSTRUCTIONS_CHARS,
    MAX_TTL_DAYS,
    MEMORY_TYPES,
    Disposition,
    EntityType,
    RetainItem,
)

# One rule for every surface (REST path, MCP path, proxy header, Python API), always applied with fullmatch:
# `$` would let a trailing newline through ("team-a\n"), creating banks no URL can name.
BANK_ID_RE = re.compile(r"[\w][\w.:@+\-]{0,127}")
# The same rule as a JSON-schema pattern, for the OpenAPI document (validation itself goes through bank_id()).
BANK_ID_PATTERN = r"^[\w][\w.:@+\-]{0,127}$"
_LONE_SURROGATE = re.compile(r"[\ud800-\udfff]")
_BAD_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f]")

# The largest context window of any model we know of; a bigger budget is surely a mistake.
MAX_CONTENT_CHARS = 500_000
MAX_QUERY_CHARS = 20_000
MAX_DOCUMENT_ID_CHARS = 512
MAX_TAG_CHARS = 200
# Metadata is a JSON document stored as jsonb: nested this deep it is a mistake (or an attack on a recursive
# encoder somewhere down the line), not data.
MAX_METADATA_DEPTH = 32
# Its size as compact JSON (MEMWRAP_MAX_METADATA_BYTES): every list, recall and export carries it back, so a
# key that stored 20 MB of it ten times made each of those answers 200 MB.
MAX_METADATA_BYTES = 64 * 1024
# Dates at the very ends of the calendar overflow once shifted to UTC or widened into periods.
MIN_YEAR, MAX_YEAR = 2, 9997


def nesting_depth(value: Any, limit: int) -> int:
    """How deeply `value` nests (dicts and lists), counted without recursion (a body deeper than the interpreter's
    recursion limit is measured, not crashed on) and not past `limit` + 1."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            node = list(node.values())
        if isinstance(node, list):
            deepest = max(deepest, depth)
            # A list of plain values (an export's 384-number vector) adds its own level and no more: told by its
            # element types in one C-level pass, not pushed element by element (3.8M entries for a 10k export).
            if depth <= limit and not set(map(type, node)) <= _SCALARS:
                stack.extend((inner, depth + 1) for inner in node)
    return deepest


_SCALARS = {int, float, str, bool, type(None)}


# An import line (a record of an export, a memory, a mem0 file): metadata's own bound plus the record around it.
MAX_IMPORT_DEPTH = MAX_METADATA_DEPTH + 8


def json_document(text: str | bytes, *, what: str, max_depth: int = MAX_IMPORT_DEPTH) -> Any:
    """`text` parsed as JSON, nested at most `max_depth` deep. InvalidInputError names `what` and says what is
    wrong: not JSON, or nested too deeply (json raises RecursionError past the interpreter's limit, and a value
    just under it would overflow the encoders and checkers further down)."""
    try:
        value = json.loads(text)
    except RecursionError:
        raise InvalidInputError(f"{what} nests deeper than {max_depth} levels.") from None
    except json.JSONDecodeError as exc:
        raise InvalidInputError(f"{what} is not JSON: {exc.msg} (line {exc.lineno}, column {exc.colno}).") from None
    except ValueError as exc:  # bytes that are not UTF-8 (or UTF-16/32)
        raise InvalidInputError(f"{what} is not JSON: {exc}.") from None
    if nesting_depth(value, max_depth) > max_depth:
        raise InvalidInputError(f"{what} nests deeper than {max_depth} levels.")
    return value


def bank_id(value: object) -> str:
    if not isinstance(value, str) or not BANK_ID_RE.fullmatch(value):
        raise InvalidBankIdError(
            f"Invalid bank id {value!r}: use 1-128 characters, letters, digits and . _ : @ + - "
            "(starting with a letter, digit or underscore), e.g. 'alice' or 'user:42'."
        )
    return value


def blank(value: str) -> bool:
    """Nothing but white space and control characters: what text_field refuses, and an optional field drops."""
    return not _BAD_CONTROL.sub(" ", value).strip()


def text_field(value: object, *, what: str, max_chars: int) -> str:
    if not isinstance(value, str):
        raise InvalidContentError(f"{what} must be a string, not {type(value).__name__}.")
    if not value.strip():
        raise InvalidContentError(f"{what} is empty; there is nothing to remember or search for.")
    if len(value) > max_chars:
        raise InvalidContentError(
            f"{what} is {len(value):,} characters; the limit is {max_chars:,}. Split it into several items "
            "(retain_many) — each becomes its own memories."
        )
    if "\x00" in value:
        raise InvalidContentError(f"{what} contains a NUL byte (\\x00) at index {value.index(chr(0))}; remove it.")
    surrogate = _LONE_SURROGATE.search(value)
    if surrogate:
        raise InvalidContentError(
            f"{what} contains a lone UTF-16 surrogate at index {surrogate.start()}, which is not valid Unicode text; "
            "decode your input with errors='replace' first."
        )
    cleaned = _BAD_CONTROL.sub(" ", value)
    if not cleaned.strip():  # control characters only: stored as blanks, which is nothing either
        raise InvalidContentError(f"{what} holds only control characters; there is nothing to remember or search for.")
    return cleaned


def timestamp(value: datetime | None, *, what: str = "timestamp") -> datetime | None:
    """A timezone-aware datetime (naive ones are UTC) within the years 2..9997."""
    if value is None:
        return None
    if not isinstance(value, datetime):
        raise InvalidInputError(f"{what} must be a datetime, not {type(value).__name__}.")
    if not MIN_YEAR <= value.year <= MAX_YEAR:
        raise InvalidInputError(f"{what} must be between the years {MIN_YEAR} and {MAX_YEAR} (got {value.year}).")
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value


def metadata(value: object, *, what: str = "metadata", max_bytes: int | None = MAX_METADATA_BYTES) -> dict[str, Any]:
    """A JSON object PostgreSQL's jsonb can store and any JSON encoder can write back: string keys, finite
    numbers (no NaN or Infinity), no NUL or lone surrogate in any string, at most MAX_METADATA_DEPTH levels,
    and at most `max_bytes` as compact JSON (None: any size)."""
    if not isinstance(value, Mapping):
        raise InvalidInputError(f"{what} must be a mapping of string keys to JSON values.")
    # Iterative, so that a document nested deeper than Python's recursion limit is refused, not crashed on.
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, Mapping):
            if depth > MAX_METADATA_DEPTH:
                raise InvalidInputError(f"{what} is nested more than {MAX_METADATA_DEPTH} levels deep.")
            for key, inner in node.items():
                if not isinstance(key, str):
                    raise InvalidInputError(f"{what} keys must be strings, not {type(key).__name__}.")
                _json_string(key, what)
                stack.append((inner, depth + 1))
        elif isinstance(node, (list, tuple)):
            if depth > MAX_METADATA_DEPTH:
                raise InvalidInputError(f"{what} is nested more than {MAX_METADATA_DEPTH} levels deep.")
            stack.extend((inner, depth + 1) for inner in node)
        elif isinstance(node, str):
            _json_string(node, what)
        elif isinstance(node, float):
            if not math.isfinite(node):
                raise InvalidInputError(f"{what} holds {node!r}, which JSON cannot represent; use null or a string.")
        elif node is not None and not isinstance(node, (bool, int)):
            raise InvalidInputError(
                f"{what} holds a {type(node).__name__}; use JSON values (string, number, bool, null, list, object)."
            )
    if max_bytes is not None:
        size = len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass"))
        if size > max_bytes:
            raise InvalidInputError(
                f"{what} is {size:,} bytes as JSON; the limit is {max_bytes:,} (MEMWRAP_MAX_METADATA_BYTES). "
                "Metadata comes back with every list, recall and export: keep large data elsewhere and store a "
                "reference to it."
            )
    return dict(value)


def _json_string(value: str, what: str) -> None:
    if "\x00" in value or _LONE_SURROGATE.search(value):
        raise InvalidInputError(f"{what} holds a NUL character or a lone surrogate, which cannot be stored.")


def now_or(value: datetime | None) -> datetime:
    return timestamp(value, what="now") or datetime.now(UTC)


def retain_items(
    items: Sequence[RetainItem | Mapping[str, Any] | str], *, max_metadata_bytes: int | None = MAX_METADATA_BYTES
) -> list[RetainItem]:
    if isinstance(items, (str, bytes, Mapping)) or not isinstance(items, Sequence):
        raise InvalidInputError("retain_many takes a list of items (RetainItem, dict or str).")
    checked: list[RetainItem] = []
    for index, raw in enumerate(items):
        try:
            if isinstance(raw, RetainItem):
                item = raw.model_copy()
            elif isinstance(raw, str):
                item = RetainItem(content=raw)
            elif isinstance(raw, Mapping):
                item = RetainItem.model_validate(dict(raw))
            else:
                raise InvalidContentError(
                    f"item {index} is a {type(raw).__name__}, not a string, a dict or a RetainItem."
                )
        except ValidationError as exc:
            error = exc.errors()[0]
            field = ".".join(str(p) for p in error["loc"]) or "item"
            kind = InvalidContentError if field == "content" else InvalidInputError
            raise kind(f"item {index}: {field} is not valid: {error['msg']} (content must be a string).") from None
        try:
            item.content = text_field(item.content, what="content", max_chars=MAX_CONTENT_CHARS)
            if item.context is not None:
                item.context = (
                    text_field(item.context, what="context", max_chars=MAX_CONTENT_CHARS)
                    if not blank(item.context)
                    else None
                )
            if item.document_id is not None:
                item.document_id = text_field(item.document_id, what="document_id", max_chars=MAX_DOCUMENT_ID_CHARS)
            item.tags = [text_field(t, what="tag", max_chars=MAX_TAG_CHARS) for t in item.tags]
            item.metadata = metadata(item.metadata, max_bytes=max_metadata_bytes)
            item.timestamp = timestamp(item.timestamp)
            item.expires_at = timestamp(item.expires_at, what="expires_at")
        except InvalidInputError as exc:
            raise type(exc)(f"item {index}: {exc}") from None
        checked.append(item)
    return checked


def query(value: object) -> str:
    return text_field(value, what="query", max_chars=MAX_QUERY_CHARS)


def budget(value: object, *, what: str = "token_budget") -> int:
    """A token budget (`what` names it in the message: token_budget, context_budget, max_answer_tokens)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidBudgetError(f"{what} must be an integer, not {value!r}.")
    if value <= 0:
        raise InvalidBudgetError(f"{what} must be at least 1 (got {value}).")
    if value > MAX_BUDGET_TOKENS:
        raise InvalidBudgetError(
            f"{what}={value:,} is larger than any model's context window ({MAX_BUDGET_TOKENS:,}); "
            "pass the number of tokens you want to spend, e.g. 1024."
        )
    return value


def memory_types(types: Sequence[str] | None) -> list[str] | None:
    if types is None:
        return None
    if isinstance(types, str):
        types = [types]
    unknown = [t for t in types if t not in MEMORY_TYPES]
    if unknown:
        raise InvalidInputError(f"Unknown memory type(s) {unknown}; choose from {list(MEMORY_TYPES)}.")
    return list(types)


def tags(values: Sequence[str] | None) -> list[str] | None:
    if values is None:
        return None
    if isinstance(values, str):
        values = [values]
    return [text_field(t, what="tag", max_chars=MAX_TAG_CHARS) for t in values]


def memory_id(value: UUID | str) -> UUID:
    return _uuid(
        value, lambda: MemoryNotFoundError(f"{value!r} is not a memory id (ids are UUIDs, as returned by retain).")
    )


def entity_id(value: UUID | str) -> UUID:
    return _uuid(
        value, lambda: EntityNotFoundError(f"{value!r} is not an entity id (ids are UUIDs, as entities() lists them).")
    )


def _uuid(value: UUID | str, not_found: Callable[[], Exception]) -> UUID:
    """An id; anything that is not a UUID names nothing (not found, rather than invalid: the caller asked for a
    thing by its name, and there is no such thing)."""
    if isinstance(value, UUID):
        return value
    try:
        return UUID(str(value))
    except ValueError:
        raise not_found() from None


def bounded(value: object, *, what: str, low: int, high: int) -> int:
    """An integer argument (a limit, an offset, a count) within [low, high], named in the message."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInputError(f"{what} must be an integer, not {value!r}.")
    if not low <= value <= high:
        raise InvalidInputError(f"{what} must be from {low:,} to {high:,} (got {value:,}).")
    return value


# What a bank's config may hold, and the values each key takes (None removes the key).
BANK_CONFIG_KEYS: dict[str, tuple[str, ...]] = {"defense_policy": ("redact", "block", "off")}


# Settings whose values are checked by a function of their own below (the others: one of BANK_CONFIG_KEYS' values).
_FREE_SETTINGS = ("disposition", "raw_ttl_days", "extraction_instructions", "entity_types")


def bank_config(changes: Mapping[str, Any]) -> dict[str, Any]:
    if not isinstance(changes, Mapping):
        raise InvalidInputError("A bank's configuration is a mapping, e.g. {'defense_policy': 'block'}.")
    unknown = sorted(set(changes) - set(BANK_CONFIG_KEYS) - set(_FREE_SETTINGS))
    if unknown:
        known = sorted([*BANK_CONFIG_KEYS, *_FREE_SETTINGS])
        raise InvalidInputError(f"Unknown bank setting(s) {unknown}; known: {known}.")
    clean = dict(changes)
    for key, value in changes.items():
        if key == "disposition":  # reflect's (models.Disposition)
            clean[key] = None if value is None else _given_disposition(value)
        elif key == "raw_ttl_days":  # the worker deletes raw facts older than this (learn/forgetting.py)
            clean[key] = raw_ttl_days(value)
        elif key == "extraction_instructions":  # the operator's words to the extraction LLM (banks/instructions.py)
            clean[key] = extraction_instructions(value)
        elif key == "entity_types":  # the kinds of entity extraction recognises (engine/banks/entity_types.py)
            clean[key] = entity_types(value)
        elif value is not None and value not in BANK_CONFIG_KEYS[key]:
            raise InvalidInputError(f"{key} must be one of {list(BANK_CONFIG_KEYS[key])} (or null), not {value!r}.")
    return clean


def extraction_instructions(value: object) -> str | None:
    """What to keep and what to ignore, as stored: stripped text of at most MAX_EXTRACTION_INSTRUCTIONS_CHARS
    characters; None or blank text clears the setting."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidInputError(
            f"extraction_instructions is text (what to keep, what to ignore) or None, not {type(value).__name__}."
        )
    text = value.strip()
    if len(text) > MAX_EXTRACTION_INSTRUCTIONS_CHARS:
        raise InvalidInputError(
            f"extraction_instructions is {len(text)} characters long; at most {MAX_EXTRACTION_INSTRUCTIONS_CHARS} "
            "are allowed: say briefly what to keep and what to ignore (every extraction call carries them)."
        )
    return text or None


def entity_types(value: object) -> list[dict[str, str]] | None:
    """A bank's entity types as stored: [{"name", "description"}], names unique (whatever their case), at most
    MAX_ENTITY_TYPES; each an EntityType or its mapping. None or an empty list clears the setting."""
    if value is None:
        return None
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Sequence):
        raise InvalidInputError(
            'entity_types is a list of {"name": ..., "description": ...} (or None to clear it), '
            f"not {type(value).__name__}."
        )
    if len(value) > MAX_ENTITY_TYPES:
        raise InvalidInputError(
            f"A bank declares at most {MAX_ENTITY_TYPES} entity types (got {len(value)}): every extraction call "
            "carries them; merge the rare ones."
        )
    out: list[dict[str, str]] = []
    seen: set[str] = set()
    for position, given in enumerate(value):
        try:
            declared = given if isinstance(given, EntityType) else EntityType.model_validate(given)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or 'type'}: {e['msg']}" for e in exc.errors(include_url=False)
            )
            raise InvalidInputError(f"entity_types[{position}] is not an entity type ({problems}).") from None
        if declared.name.casefold() in seen:
            raise InvalidInputError(f"entity_types names {declared.name!r} twice; each name once (case ignored).")
        seen.add(declared.name.casefold())
        out.append({"name": declared.name, "description": storable_text(declared.description.strip())})
    return out or None


_ENTITY_TYPE_NAME = re.compile(ENTITY_TYPE_NAME_PATTERN.removeprefix("^").removesuffix("$"))


def entity_type_name(value: object) -> str | None:
    """An entity type's name to look for (None: any type)."""
    if value is None:
        return None
    if not isinstance(value, str) or not _ENTITY_TYPE_NAME.fullmatch(value):
        raise InvalidInputError(
            f"entity_type is a type's name: a letter, then up to 63 letters, digits, _ or - (got {value!r:.80})."
        )
    return value


# MAX_TTL_DAYS: declared with the verbs' bounds (memwrap/models/limits.py, memwrap/verbs.py)


def raw_ttl_days(value: object) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= MAX_TTL_DAYS:
        raise InvalidInputError(
            f"raw_ttl_days is a number of days > 0 (at most {MAX_TTL_DAYS}), or None to keep raw facts forever "
            f"(got {value!r})."
        )
    return float(value)


def _given_disposition(value: object) -> dict[str, Any]:
    """The parts of a disposition the caller gave, checked (MEMWRAP_REFLECT_* fill in the rest at reflect time)."""
    given: set[str] | None = None  # None: all of it
    if isinstance(value, Disposition):
        given = set(value.model_fields_set)
    elif isinstance(value, Mapping):
        given = set(value)
    return disposition(value).model_dump(include=given)


def disposition(value: object) -> Disposition:
    """A Disposition from a model or a mapping (skepticism, literalism, empathy: 1-5; directives: strings)."""
    try:
        checked = Disposition.model_validate(value.model_dump() if isinstance(value, Disposition) else value)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'disposition'}: {e['msg']}" for e in exc.errors()[:5]
        )
        raise InvalidInputError(
            f"Invalid disposition ({problems}). It takes skepticism, literalism and empathy from 1 to 5 and "
            "directives, a list of strings."
        ) from None
    checked.directives = [text_field(d, what="a directive", max_chars=2000) for d in checked.directives]
    return checked


# -- traffic: make it storable instead of refusing it ---------------------------------------------------------

_NOT_STORABLE = re.compile(r"[\x00\ud800-\udfff]")


def storable_text(value: str) -> str:
    """`value` with what PostgreSQL text cannot hold (NUL, lone surrogates) replaced by U+FFFD."""
    return _NOT_STORABLE.sub("\ufffd", value) if _NOT_STORABLE.search(value) else value


def storable_items(item: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A retain item built from traffic (a proxied turn), made storable rather than refused: the caller's
    conversation already happened, and a turn the engine would reject must not be dropped on the way.

    NUL characters and lone surrogates become U+FFFD in every string; a content over MAX_CONTENT_CHARS is
    split (at a line break or a space where one is near) into several items of the same document, marked
    `part`/`parts` in their metadata. An over-long tag or document id is cut to its limit.
    """
    out = dict(item)
    for key in ("content", "context", "document_id"):
        if isinstance(out.get(key), str):
            out[key] = storable_text(out[key])
    if isinstance(out.get("document_id"), str):
        out["document_id"] = out["document_id"][:MAX_DOCUMENT_ID_CHARS]
    out["tags"] = [storable_text(t)[:MAX_TAG_CHARS] for t in out.get("tags") or [] if isinstance(t, str) and t.strip()]
    out["metadata"] = {
        storable_text(k): storable_text(v) if isinstance(v, str) else v
        for k, v in dict(out.get("metadata") or {}).items()
    }
    content = out.get("content")
    if not isinstance(content, str) or len(content) <= MAX_CONTENT_CHARS:
        return [out]
    parts = _split_text(content, MAX_CONTENT_CHARS)
    return [
        {**out, "content": part, "metadata": {**out["metadata"], "part": index, "parts": len(parts)}}
        for index, part in enumerate(parts, 1)
    ]


def _split_text(text: str, limit: int) -> list[str]:
    parts: list[str] = []
    while len(text) > limit:
        window = text[:limit]
        cut = max(window.rfind("\n"), window.rfind(" "))
        if cut < limit // 2:  # no break near the end of the window: cut hard
            cut = limit
        parts.append(text[:cut])
        text = text[cut:].lstrip("\n ")
    if text.strip():
        parts.append(text)
    return parts
