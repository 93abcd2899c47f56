"""How LangGraph's items live in memwrap: the memory a put writes (document id, indexed text, TTL), the item a
record reads back as, and LangGraph's namespace and value filters as memwrap metadata conditions."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any
from urllib.parse import quote

from langgraph.store.base import Item, MatchCondition, SearchItem
from langgraph.store.base.embed import get_text_at_path

from memwrap.models import MemoryRecord
from memwrap.validate import MAX_DOCUMENT_ID_CHARS

META = "langgraph"  # the metadata key holding the item
DOCUMENT_PREFIX = "langgraph/"
_OPERATORS = {"$eq": "eq", "$ne": "ne", "$gt": "gt", "$gte": "gte", "$lt": "lt", "$lte": "lte"}
_SET_OPERATORS = {"$in": "in", "$nin": "not_in"}


def ttl_minutes(ttl: Any) -> float | None:
    if ttl is None:
        return None
    if isinstance(ttl, bool) or not isinstance(ttl, (int, float)) or not 0 < ttl < 10**8:
        raise ValueError(f"a put's ttl is a positive number of minutes (got {ttl!r}).")
    return float(ttl)


def document_id_of(namespace: tuple[str, ...], key: str) -> str:
    # Percent-encoded: no ":" (memwrap reads "session:part" in a document id) and no "/" inside a label.
    readable = DOCUMENT_PREFIX + "/".join(quote(label, safe="") for label in (*namespace, key))
    if len(readable) <= MAX_DOCUMENT_ID_CHARS:
        return readable
    digest = hashlib.sha256(json.dumps([list(namespace), key]).encode()).hexdigest()
    return f"{DOCUMENT_PREFIX}sha256-{digest}"


def as_item(record: MemoryRecord) -> Item:
    stored = record.metadata[META]
    return Item(
        value=stored["value"],
        key=stored["key"],
        namespace=tuple(stored["namespace"]),
        created_at=datetime.fromisoformat(stored["created_at"]),
        updated_at=datetime.fromisoformat(stored["updated_at"]),
    )


def as_search_item(stored: dict[str, Any], score: float | None) -> SearchItem:
    return SearchItem(
        namespace=tuple(stored["namespace"]),
        key=stored["key"],
        value=stored["value"],
        created_at=datetime.fromisoformat(stored["created_at"]),
        updated_at=datetime.fromisoformat(stored["updated_at"]),
        score=score,
    )


def indexed_text(value: dict[str, Any], fields: Sequence[str]) -> str:
    """The text of `value` at LangGraph index paths, one piece per line ("" if none of them is there)."""
    pieces: list[str] = []
    for field in fields:
        if field == "$":
            pieces.append(render_value(value))
        else:
            pieces.extend(t for t in get_text_at_path(value, field) if t.strip())
    return "\n".join(p for p in pieces if p.strip())


def render_value(value: dict[str, Any]) -> str:
    if len(value) == 1 and isinstance(next(iter(value.values())), str):
        return str(next(iter(value.values())))
    parts = []
    for field, inner in value.items():
        shown = inner if isinstance(inner, str) else json.dumps(inner, ensure_ascii=False, default=str)
        parts.append(f"{field}: {shown}")
    return "; ".join(parts)


def prefix_conditions(prefix: Sequence[str]) -> list[dict[str, Any]]:
    return [{"key": [META, "ns", str(i)], "eq": label} for i, label in enumerate(prefix) if label != "*"]


def value_conditions(filter: Mapping[str, Any], path: Sequence[str] = (META, "value")) -> list[dict[str, Any]]:
    """LangGraph's filter on the value as memwrap metadata conditions (on `langgraph.value.<field>`): a dotted key
    or a nested dict reaches into nested fields; a dict of `$` operators compares."""
    conditions: list[dict[str, Any]] = []
    for field, wanted in filter.items():
        at = [*path, *str(field).split(".")]
        if isinstance(wanted, Mapping) and any(str(k).startswith("$") for k in wanted):
            for operator, operand in wanted.items():
                if operator in _OPERATORS:
                    conditions.append({"key": at, _OPERATORS[operator]: operand})
                elif operator in _SET_OPERATORS:
                    conditions.append({"key": at, _SET_OPERATORS[operator]: list(operand)})
                else:
                    known = ", ".join([*_OPERATORS, *_SET_OPERATORS])
                    raise ValueError(f"filter operator {operator!r} on {field!r} is not one of {known}.")
        elif isinstance(wanted, Mapping) and wanted:
            conditions.extend(value_conditions(wanted, at))  # {"meta": {"shop": "north"}}: each field of it
        else:
            conditions.append({"key": at, "eq": wanted})
    return conditions


def until_wildcard(path: Sequence[str]) -> list[str]:
    out: list[str] = []
    for label in path:
        if label == "*":
            break
        out.append(label)
    return out


def matches(namespace: tuple[str, ...], condition: MatchCondition) -> bool:
    path = tuple(condition.path)
    if len(path) > len(namespace):
        return False
    part = namespace[: len(path)] if condition.match_type == "prefix" else namespace[len(namespace) - len(path) :]
    return all(p == "*" or p == label for p, label in zip(path, part, strict=True))
