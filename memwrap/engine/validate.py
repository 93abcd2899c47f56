"""Checks on everything a caller hands the engine, before anything is touched."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

from pydantic import ValidationError

from memwrap.errors import (
    InvalidBankIdError,
    InvalidBudgetError,
    InvalidContentError,
    InvalidInputError,
    MemoryNotFoundError,
)
from memwrap.models import MEMORY_TYPES, Disposition, RetainItem

_BANK_ID = re.compile(r"^[\w][\w.:@+\-]{0,127}$")
_LONE_SURROGATE = re.compile(r"[\ud800-\udfff]")
_BAD_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f]")

# The largest context window of any model we know of; a bigger budget is surely a mistake.
MAX_BUDGET_TOKENS = 2_000_000
MAX_CONTENT_CHARS = 500_000
MAX_QUERY_CHARS = 20_000


def bank_id(value: object) -> str:
    if not isinstance(value, str) or not _BANK_ID.match(value):
        raise InvalidBankIdError(
            f"Invalid bank id {value!r}: use 1-128 characters, letters, digits and . _ : @ + - "
            "(starting with a letter, digit or underscore), e.g. 'alice' or 'user:42'."
        )
    return value


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
    return _BAD_CONTROL.sub(" ", value)


def timestamp(value: datetime | None) -> datetime | None:
    if value is None:
        return None
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value


def now_or(value: datetime | None) -> datetime:
    return timestamp(value) or datetime.now(UTC)


def retain_items(items: Sequence[RetainItem | Mapping[str, Any] | str]) -> list[RetainItem]:
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
                item.context = text_field(item.context, what="context", max_chars=MAX_CONTENT_CHARS) if item.context.strip() else None
            if item.document_id is not None:
                item.document_id = text_field(item.document_id, what="document_id", max_chars=512)
            item.tags = [text_field(t, what="tag", max_chars=200) for t in item.tags]
        except InvalidInputError as exc:
            raise type(exc)(f"item {index}: {exc}") from None
        item.timestamp = timestamp(item.timestamp)
        checked.append(item)
    return checked


def query(value: object) -> str:
    return text_field(value, what="query", max_chars=MAX_QUERY_CHARS)


def budget(max_tokens: object) -> int:
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int):
        raise InvalidBudgetError(f"max_tokens must be an integer, not {max_tokens!r}.")
    if max_tokens <= 0:
        raise InvalidBudgetError(f"max_tokens must be at least 1 (got {max_tokens}).")
    if max_tokens > MAX_BUDGET_TOKENS:
        raise InvalidBudgetError(
            f"max_tokens={max_tokens:,} is larger than any model's context window ({MAX_BUDGET_TOKENS:,}); "
            "pass the number of tokens you want to spend on memories, e.g. 1024."
        )
    return max_tokens


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
    return [text_field(t, what="tag", max_chars=200) for t in values]


def memory_id(value: UUID | str) -> UUID:
    if isinstance(value, UUID):
        return value
    try:
        return UUID(str(value))
    except ValueError:
        raise MemoryNotFoundError(f"{value!r} is not a memory id (ids are UUIDs, as returned by retain).") from None


# What a bank's config may hold, and the values each key takes (None removes the key).
BANK_CONFIG_KEYS: dict[str, tuple[str, ...]] = {"defense_policy": ("redact", "block", "off")}


def bank_config(changes: Mapping[str, Any]) -> dict[str, Any]:
    if not isinstance(changes, Mapping):
        raise InvalidInputError("A bank's configuration is a mapping, e.g. {'defense_policy': 'block'}.")
    unknown = sorted(set(changes) - set(BANK_CONFIG_KEYS) - {"disposition"})
    if unknown:
        known = sorted([*BANK_CONFIG_KEYS, "disposition"])
        raise InvalidInputError(f"Unknown bank setting(s) {unknown}; known: {known}.")
    clean = dict(changes)
    for key, value in changes.items():
        if key == "disposition":  # reflect's (models.Disposition)
            clean[key] = None if value is None else _given_disposition(value)
        elif value is not None and value not in BANK_CONFIG_KEYS[key]:
            raise InvalidInputError(f"{key} must be one of {list(BANK_CONFIG_KEYS[key])} (or null), not {value!r}.")
    return clean


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
