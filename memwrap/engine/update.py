"""Update a memory in place: new text (re-embedded, re-dated, entities re-linked), metadata or tags, the old
version kept in its history; observations citing it are queued for the worker to revise, mental models that drew
on it go stale.

The bank's memory-defense policy applies to the new text, metadata and tags as it does on retain.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any
from uuid import UUID

import asyncpg

from memwrap import validate
from memwrap.engine import webhooks
from memwrap.engine.embed.unit_text import embedding_text
from memwrap.engine.jobs import queue as jobs
from memwrap.engine.language.change_cue import change_cue
from memwrap.engine.language.entities import entity_key, extract_entities
from memwrap.engine.language.text import search_text
from memwrap.engine.language.timeparse import extract_occurred
from memwrap.engine.learn import mental_models
from memwrap.engine.learn.forgetting import REVISE
from memwrap.engine.learn.observations import QUOTE_CHARS, observations_citing
from memwrap.engine.retain.name_links import link_names
from memwrap.engine.retain.prepare import defend_item
from memwrap.engine.retain.write import write_unit_entities
from memwrap.errors import InvalidInputError, MemoryNotFoundError
from memwrap.models import KEEP, Keep, MemoryField, MemoryRecord, MemoryVersion, RetainItem
from memwrap.store import memory_history as history_sql
from memwrap.store.bank_lock import lock_bank
from memwrap.store.pg_types import Connection

if TYPE_CHECKING:
    from memwrap.engine.parts import EngineParts

SET_EXPIRY = "UPDATE memory_units SET expires_at = $3 WHERE bank_id = $1 AND id = $2"


async def update(
    parts: EngineParts,
    bank_id: str,
    memory_id: UUID | str,
    *,
    text: str | None = None,
    metadata: Mapping[str, Any] | None = None,
    tags: Sequence[str] | None = None,
    occurred_start: datetime | None = None,
    occurred_end: datetime | None = None,
    expires_at: datetime | None | Keep = KEEP,
) -> MemoryRecord:
    """Replace what is given (metadata and tags as a whole); returns the memory as it is now. Nothing given, or
    nothing different: the memory is returned unchanged and no version is added. An occurred span given wins
    over the dates of a new text. `expires_at` (a time, or None to clear it) is set in place and adds no
    version: what the memory says did not change."""
    bank_id, memory_id = validate.bank_id(bank_id), validate.memory_id(memory_id)
    nothing = text is None and metadata is None and tags is None and occurred_start is None and occurred_end is None
    if nothing and expires_at is KEEP:
        raise InvalidInputError("update needs at least one of text, metadata, tags, occurred_start, expires_at.")
    span = _given_span(occurred_start, occurred_end)
    new_expiry = validate.timestamp(expires_at, what="expires_at") if not isinstance(expires_at, Keep) else None
    new_text = (
        validate.text_field(text, what="text", max_chars=validate.MAX_CONTENT_CHARS) if text is not None else None
    )
    new_metadata = (
        validate.metadata(metadata, max_bytes=parts.settings.max_metadata_bytes) if metadata is not None else None
    )
    new_tags = validate.tags(tags)
    # The same defense as retain, before anything is read or written (raises SecretBlockedError under 'block').
    policy = await parts.defense_policy(bank_id)
    defended = defend_item(
        RetainItem(content=new_text or "-", metadata=new_metadata or {}, tags=new_tags or []), policy
    )
    pool = parts.pool
    async with pool.acquire() as conn, conn.transaction():
        await lock_bank(conn, bank_id)  # before the memory and its entities (store/bank_lock.py)
        old = await history_sql.lock_unit(conn, bank_id, memory_id)
        if old is None:
            raise MemoryNotFoundError(f"No memory with id {memory_id} in bank {bank_id!r}.")
        if old["fact_type"] == "observation":
            raise InvalidInputError(
                f"{memory_id} is an observation: consolidation writes those from their evidence. Update the "
                "memories it rests on, or invalidate/delete it."
            )
        expiry_changed = not isinstance(expires_at, Keep) and new_expiry != old["expires_at"]
        if expiry_changed:
            await conn.execute(SET_EXPIRY, bank_id, memory_id, new_expiry)
        final_text = defended.content if new_text is not None else old["text"]
        final_metadata = defended.metadata if new_metadata is not None else dict(old["metadata"] or {})
        final_tags = defended.tags if new_tags is not None else list(old["tags"] or [])
        changed = [
            name
            for name, new, before in (
                ("text", final_text, old["text"]),
                ("metadata", final_metadata, dict(old["metadata"] or {})),
                ("tags", final_tags, list(old["tags"] or [])),
            )
            if new != before
        ]
        if span is not None and span != _stored_span(old):
            changed.append("occurred")
        if changed:
            await _apply(parts, conn, bank_id, memory_id, old, changed, (final_text, final_metadata, final_tags), span)
        if changed or expiry_changed:  # an expiry alone adds no version, but subscribers are told
            told = [*changed, "expires_at"] if expiry_changed else changed
            await webhooks.emit(conn, bank_id, "updated", [memory_id], data={"changed": told})
    return await parts.get(bank_id, memory_id)


async def _apply(
    parts: EngineParts,
    conn: Connection,
    bank_id: str,
    memory_id: UUID,
    old: asyncpg.Record,
    changed: list[str],
    final: tuple[str, dict[str, Any], list[str]],
    span: tuple[datetime, datetime] | None,
) -> None:
    """The new version written: the old one to the history, text, vectors, entities, what cites it revisited.
    `final`: the text, metadata and tags as they are now; `span`: an occurred span set by hand."""
    final_text, final_metadata, final_tags = final
    await history_sql.record_version(conn, bank_id, old, changed)
    occurred: tuple[Any, Any] | None = span
    if occurred is None:
        occurred = _occurred(old, final_text) if "text" in changed else _stored_span(old)
    vector = None
    if "text" in changed:
        vector = (await parts.embedder.embed([await _embedding_text(conn, bank_id, old, final_text)]))[0]
    await history_sql.update_unit(
        conn,
        bank_id,
        memory_id,
        text=final_text,
        metadata=final_metadata,
        tags=final_tags,
        occurred=occurred,
        embedding=vector,
        search_text=search_text(final_text),
    )
    cited: list[UUID] = []
    if "text" in changed:
        await history_sql.set_change_cue(conn, bank_id, memory_id, change_cue(final_text, old["speaker"]))
        await _relink_entities(conn, bank_id, memory_id, final_text)
        await _reembed_next_turn(parts, conn, bank_id, old, final_text)
        await history_sql.set_evidence_quote(conn, bank_id, memory_id, final_text[:QUOTE_CHARS])
        cited = await observations_citing(conn, bank_id, [memory_id])
    if "text" in changed or "tags" in changed:
        await _revisit(parts, conn, bank_id, memory_id, cited)


async def history(parts: EngineParts, bank_id: str, memory_id: UUID | str) -> list[MemoryVersion]:
    """Every version of the memory, oldest first; the last is the memory as it is now (`current`)."""
    bank_id, memory_id = validate.bank_id(bank_id), validate.memory_id(memory_id)
    rows, current = await history_sql.versions(parts.pool, bank_id, memory_id)
    if current is None:
        raise MemoryNotFoundError(f"No memory with id {memory_id} in bank {bank_id!r}.")
    versions: list[MemoryVersion] = []
    previous_changes: list[MemoryField] = []
    for row in rows:
        versions.append(
            MemoryVersion(
                version=row["version"],
                text=row["text"],
                metadata=row["metadata"] or {},
                tags=list(row["tags"] or []),
                occurred_start=row["occurred_start"],
                occurred_end=row["occurred_end"],
                valid_from=row["valid_from"],
                valid_until=row["replaced_at"],
                changed=previous_changes,
            )
        )
        previous_changes = list(row["changed"])
    versions.append(
        MemoryVersion(
            version=len(rows) + 1,
            text=current["text"],
            metadata=current["metadata"] or {},
            tags=list(current["tags"] or []),
            occurred_start=current["occurred_start"],
            occurred_end=current["occurred_end"],
            valid_from=rows[-1]["replaced_at"] if rows else current["created_at"],
            changed=previous_changes,
            current=True,
        )
    )
    return versions


def _given_span(start: datetime | None, end: datetime | None) -> tuple[datetime, datetime] | None:
    """An occurred span set by hand (a naive time is UTC, as everywhere): the end (default: the start) not
    before the start."""
    if start is None:
        if end is not None:
            raise InvalidInputError("occurred_end needs occurred_start (when what the memory says began).")
        return None
    first = validate.timestamp(start, what="occurred_start")
    last = validate.timestamp(end, what="occurred_end") if end is not None else first
    assert first is not None and last is not None  # not None in, not None out
    if last < first:
        raise InvalidInputError(f"occurred_end ({last.isoformat()}) is before occurred_start ({first.isoformat()}).")
    return first, last


def _stored_span(old: Any) -> tuple[Any, Any] | None:
    return (old["occurred_start"], old["occurred_end"]) if old["occurred_start"] is not None else None


def _occurred(old: Any, text: str) -> tuple[Any, Any] | None:
    """The new text's own dates, read as of when it was said. Without any, the stored span stays when it did
    not come from the old text either (an extracted fact dated from its conversation); a date the edit removed
    goes with it."""
    said = old["mentioned_at"]
    written = extract_occurred(text, said)
    if written is not None:
        return written
    if extract_occurred(old["text"], said) is not None:
        return None
    return _stored_span(old)


async def _embedding_text(conn: Any, bank_id: str, unit: Any, text: str) -> str:

    previous = None
    if unit["fact_type"] == "raw" and unit["session_key"] is not None:
        previous = await history_sql.previous_text(conn, bank_id, unit["session_key"], unit["seq"])
    return embedding_text(text, previous, chunk=unit["turn_parts"] is not None)


async def _reembed_next_turn(parts: EngineParts, conn: Any, bank_id: str, unit: Any, text: str) -> None:
    """The next raw turn of the session was embedded with this one's text before it: it gets the new text."""

    if unit["fact_type"] != "raw" or unit["session_key"] is None or unit["turn_parts"] is not None:
        return  # (a chunk of a long message lends no context: unit_text.context_of)
    following = await history_sql.next_raw(conn, bank_id, unit["session_key"], unit["seq"])
    if following is not None and following["turn_parts"] is None:
        vector = (await parts.embedder.embed([embedding_text(following["text"], text)]))[0]
        await history_sql.set_embedding(conn, bank_id, following["id"], vector)


async def _relink_entities(conn: Any, bank_id: str, memory_id: UUID, text: str) -> None:
    await history_sql.unlink_entities(conn, bank_id, memory_id)
    entities: dict[str, str] = {}
    for name in extract_entities(text):
        entities.setdefault(entity_key(name), name)
    await write_unit_entities(conn, bank_id, [(memory_id, entities)])
    await link_names(conn, bank_id, entities)


async def _revisit(parts: EngineParts, conn: Any, bank_id: str, memory_id: UUID, cited: list[UUID]) -> None:
    """Observations citing the memory are revised by the worker from their evidence as it is now (the job kind
    forgetting uses after a delete); mental models that drew on it or on them go stale."""
    if cited:
        await jobs.enqueue(
            conn,
            REVISE,
            bank_id=bank_id,
            payload={"ids": [str(i) for i in cited], "reason": "evidence updated", "changed": str(memory_id)},
            serial_key=f"consolidate:{bank_id}",
            max_attempts=parts.settings.job_max_attempts,
            priority=60,
        )
    await mental_models.mark_stale_for_sources(
        conn, parts.settings, bank_id, [memory_id, *cited], reason="a memory it drew on was updated"
    )
