"""What an answer cites, checked: references the model used are mapped back to ids, and every id must still be
in the bank (a memory may have been deleted or invalidated while the loop ran). Unknown ones are dropped from
the ids and listed in `unknown_ids`, so a caller can see that the model cited something it was never shown."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from uuid import UUID

import asyncpg

from memwrap.engine.reflect import queries
from memwrap.engine.reflect.refs import REF, Refs, parse_uuid


@dataclass
class Cited:
    memory_ids: list[UUID] = field(default_factory=list)
    mental_model_ids: list[UUID] = field(default_factory=list)
    citations: dict[str, UUID] = field(default_factory=dict)
    unknown: list[str] = field(default_factory=list)


async def resolve_citations(pool: asyncpg.Pool, bank_id: str, refs: Refs, cited: Iterable[str], answer: str) -> Cited:
    """The cited references (and those written inline in the answer, like "[F3]"), resolved and checked."""
    wanted: list[tuple[str, str, UUID]] = []  # (as cited, kind, id)
    unknown: list[str] = []
    for raw in cited:
        text = str(raw).strip()
        if not text:
            continue
        found = refs.resolve(text)
        if found is not None:
            wanted.append((text.strip("[]() ").upper(), *found))
            continue
        some_id = parse_uuid(text)
        if some_id is not None and some_id in refs.by_id:
            wanted.append((refs.by_id[some_id], *refs.by_ref[refs.by_id[some_id]]))
        elif some_id is not None:
            wanted.append((str(some_id), "unknown", some_id))  # never shown: kept only if it is in the bank
        else:
            unknown.append(text)
    # References written in the answer count as cited too, when they name something that was shown.
    for prefix, number in REF.findall(answer):
        found = refs.resolve(f"{prefix}{number}")
        if found is not None:
            wanted.append((f"{prefix}{number}", *found))

    unit_ids = [i for _, kind, i in wanted if kind != "mental_model"]
    model_ids = [i for _, kind, i in wanted if kind in ("mental_model", "unknown")]
    live_units, live_models = await queries.existing(pool, bank_id, unit_ids, model_ids)

    result = Cited(unknown=unknown)
    for label, kind, item_id in wanted:
        if kind != "mental_model" and item_id in live_units:
            if item_id not in result.memory_ids:
                result.memory_ids.append(item_id)
        elif kind in ("mental_model", "unknown") and item_id in live_models:
            if item_id not in result.mental_model_ids:
                result.mental_model_ids.append(item_id)
        else:
            if label not in result.unknown:
                result.unknown.append(label)
            continue
        result.citations.setdefault(label, item_id)
    return result
