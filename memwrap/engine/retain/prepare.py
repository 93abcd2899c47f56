"""Retain without an LLM: items → memory units (text, times, entities, search text), ready to embed and write."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from uuid import UUID, uuid4

from memwrap.engine.recall.timeparse import extract_occurred
from memwrap.engine.retain.defense import apply_policy, map_strings
from memwrap.engine.retain.entities import entity_key, extract_entities
from memwrap.engine.retain.speakers import keep_turn_breaks, said_by, split_turns
from memwrap.engine.retain.split import split_units
from memwrap.engine.text import search_text
from memwrap.errors import SecretBlockedError
from memwrap.models import RetainItem


@dataclass
class PreparedUnit:
    id: UUID
    text: str
    fact_type: str
    item_hash: str
    document_id: str | None
    session_key: str | None
    part_index: int
    context: str | None
    metadata: dict[str, Any]
    tags: list[str]
    mentioned_at: datetime
    occurred: tuple[datetime, datetime] | None
    entities: dict[str, str]  # entity_key → display name
    search_text: str
    embed_text: str
    speaker: str | None = None  # who said it ("user", "assistant", "Alice"): speakers.turn_speaker


@dataclass
class PreparedItem:
    item_hash: str
    units: list[PreparedUnit] = field(default_factory=list)
    source: RetainItem | None = None  # the item after memory defense (what extraction reads)


def item_hash(item: RetainItem) -> str:
    """Identity of a retained item: same bank, document and content is the same item.

    Without a document id the timestamp joins the key, so the same sentence said on two days is two memories.
    """
    when = "" if item.document_id else (item.timestamp.isoformat() if item.timestamp else "")
    key = "\x1f".join([item.document_id or "", when, item.content])
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()


def session_key(item: RetainItem) -> str | None:
    """Which conversation an item belongs to: metadata['session_id'], or the "session" of "session:part"."""
    explicit = item.metadata.get("session_id") if item.metadata else None
    if explicit:
        return str(explicit)
    if item.document_id and ":" in item.document_id:
        return item.document_id.rsplit(":", 1)[0]
    return item.document_id


def defend_item(item: RetainItem, defense_policy: str) -> RetainItem:
    """The item with the bank's memory-defense policy applied to everything that gets stored or sent to an
    LLM: content, context, document_id, tags, and metadata (string values and keys, at any depth).

    Raises SecretBlockedError under the 'block' policy, naming the kinds and the fields (never the secret).
    """
    kinds: dict[str, set[str]] = {}

    def defend(text: str, where: str) -> str:
        result = apply_policy(text, defense_policy)  # type: ignore[arg-type]
        if result.findings:
            kinds.setdefault(where, set()).update(f.kind for f in result.findings)
        return result.text

    content = defend(item.content, "content")
    context = defend(item.context, "context") if item.context else item.context
    document_id = defend(item.document_id, "document_id") if item.document_id else item.document_id
    tags = [defend(tag, "tags") for tag in item.tags]
    metadata = map_strings(item.metadata, lambda text: defend(text, "metadata")) if item.metadata else {}
    if defense_policy == "block" and kinds:
        found = "; ".join(f"{where}: {', '.join(sorted(k))}" for where, k in sorted(kinds.items()))
        raise SecretBlockedError(
            f"Not stored: the item holds what looks like a secret ({found}) and this bank's memory-defense "
            "policy is 'block'. Remove it, or set the policy to 'redact'."
        )
    return item.model_copy(
        update={"content": content, "context": context, "document_id": document_id, "tags": tags, "metadata": metadata}
    )


def prepare_item(item: RetainItem, *, now: datetime, defense_policy: str) -> PreparedItem:
    """Defend, split, date and tag one item. Raises SecretBlockedError under the 'block' policy.

    `source` of the result is the defended item: extraction reads it, so no raw secret reaches an LLM.
    """
    hashed = item_hash(item)  # of the original: retaining the same item again must find it
    item = defend_item(item, defense_policy)
    context = item.context
    mentioned = item.timestamp or now
    prepared = PreparedItem(item_hash=hashed, source=item)
    index = 0
    for turn in split_turns(item.content):
        speaker: str | None = None
        for part_number, part in enumerate(split_units(turn)):
            # Role labels keep their line: re-extraction reads the speakers back from this text.
            text = keep_turn_breaks(part)
            if not text:
                continue
            said = text
            if part_number == 0:  # the turn's first unit carries its label; the others are the same speaker's
                # Who speaks is a field of the memory, not an entity of it: "Alice: …" on every turn of a chat
                # would otherwise link each of them to all the others in the graph arm.
                speaker, said = said_by(text, item.metadata)
            entities: dict[str, str] = {}
            for name in extract_entities(said):
                entities.setdefault(entity_key(name), name)
            prepared.units.append(
                PreparedUnit(
                    id=uuid4(),
                    text=text,
                    fact_type="raw",
                    item_hash=hashed,
                    document_id=item.document_id,
                    session_key=session_key(item),
                    part_index=index,
                    context=context,
                    metadata=dict(item.metadata),
                    tags=list(item.tags),
                    mentioned_at=mentioned,
                    occurred=extract_occurred(text, mentioned),
                    entities=entities,
                    search_text=search_text(text),
                    embed_text=text,
                    speaker=speaker,
                )
            )
            index += 1
    return prepared
