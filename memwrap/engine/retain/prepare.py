"""Retain without an LLM: items → memory units (text, times, entities, search text), ready to embed and write."""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from uuid import UUID, uuid4

from memwrap.defense.policy import defend
from memwrap.engine.language.change_cue import change_cue
from memwrap.engine.language.entities import entity_key, extract_entities
from memwrap.engine.language.instructions import standing_domain
from memwrap.engine.language.speakers import keep_turn_breaks, said_by, split_turns
from memwrap.engine.language.text import search_text
from memwrap.engine.language.timeparse import extract_occurred
from memwrap.engine.retain.split import split_units
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
    expires_at: datetime | None = None  # when recall stops finding it (None: never)
    turn_part: int | None = None  # its place among the chunks of a long turn (None: the turn is one unit)
    turn_parts: int | None = None  # how many chunks that turn has
    standing: str | None = None  # the domain of a standing instruction it states (language/instructions.py)
    entity_types: dict[str, str] = field(default_factory=dict)  # entity_key → the bank's type (banks/entity_types.py)
    # Whether its words state a change (memory_units.change_cue, language/change_cue.py): worked out here, before
    # the write's transaction locks the bank, and again by dataclasses.replace when the text changes.
    change_cue: bool = field(init=False)

    def __post_init__(self) -> None:
        self.change_cue = change_cue(self.text, self.speaker)


@dataclass
class PreparedItem:
    item_hash: str
    units: list[PreparedUnit] = field(default_factory=list)
    source: RetainItem | None = None  # the item after memory defense (what extraction reads)


def item_hash(defended: RetainItem) -> str:
    """Identity of a retained item: same bank, document and content is the same item. Computed over the item
    AFTER the memory defense (defend_item), so the hash says nothing the stored text does not: it cannot be used
    to find a redacted secret again by hashing guesses (card numbers, ID numbers, phones, short passwords), and
    it needs no key, so a copy of the database or an export undoes nothing either. Two items that differ only
    in a redacted secret are one item (what is stored of them is the same).

    Without a document id the timestamp joins the key, so the same sentence said on two days is two memories.
    """
    return _digest(defended)


def legacy_item_hash(original: RetainItem, key: bytes) -> str:
    """The identity an item stored before memwrap hashed defended items has now: migration 0011 rewrote each
    stored unkeyed hash of the original item as HMAC-SHA256 under the store's key (store_meta
    'legacy_item_hash_key'), so retaining such an item again still finds it."""
    return hmac.new(key, _digest(original).encode("ascii"), hashlib.sha256).hexdigest()


def _digest(item: RetainItem) -> str:
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
    fields = {
        "content": item.content,
        "context": item.context,
        "document_id": item.document_id,
        "tags": list(item.tags),
        "metadata": item.metadata or {},
    }
    return item.model_copy(update=defend(fields, defense_policy))


def prepare_item(item: RetainItem, *, now: datetime, defense_policy: str) -> PreparedItem:
    """Defend, split, date and tag one item. Raises SecretBlockedError under the 'block' policy."""
    return prepare_defended(defend_item(item, defense_policy), now=now)


def prepare_defended(item: RetainItem, *, now: datetime) -> PreparedItem:
    """Split, date and tag one item that went through defend_item.

    `source` of the result is the defended item: extraction reads it, so no raw secret reaches an LLM.
    """
    hashed = item_hash(item)
    context = item.context
    mentioned = item.timestamp or now
    prepared = PreparedItem(item_hash=hashed, source=item)
    index = 0
    for turn in split_turns(item.content):
        speaker: str | None = None
        parts = split_units(turn)
        chunked = len(parts) > 1  # a long turn: each chunk records its place, so recall can join them again
        for part_number, part in enumerate(parts):
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
                    expires_at=item.expires_at,
                    turn_part=part_number if chunked else None,
                    turn_parts=len(parts) if chunked else None,
                    standing=standing_domain(said, speaker),
                )
            )
            index += 1
    return prepared
