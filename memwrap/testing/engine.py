"""`TestEngine`: the engine's face (`EngineVerbs`) in memory, for testing an app's use of memory offline.

No database, no embedding model, no LLM. Every call is recorded (`calls`, memwrap/testing/recorded_verbs.py,
generated); these verbs answer from a dict of banks:

- `retain`, `retain_many`: stored as raw memories (`type="raw"`), tags and metadata as given; the same content
  with the same `document_id` again returns the same id (as the engine does);
- `recall`: the stored memories that share a word with the query (words of 3 letters or more, any case), the most
  shared words first, then the newest; `tags` (any of them), `types` and `top_k` apply; `token_budget` bounds the
  block, counted with the engine's tokenizer; `ids_in_block` starts each line with its memory's id. The block
  (`Recall.context`) is packed and rendered by the engine's own packer (engine/recall/pack.py): a wrapper
  injects it and finds it again as it does the engine's. NOT the engine's ranking (no embeddings, no keyword
  index, no time or graph arms): a test that checks what is found for a question belongs on the real engine;
- `list`, `get`, `update` (text, metadata, tags), `invalidate` and `restore` (an invalidated memory is not
  recalled, nor listed unless `include_invalidated`; `memory_context` says when and why), `delete`,
  `delete_bank`, `banks`, `bank_stats`, `bank_config`;
- `jobs`, `observations`, `mental_models`, `webhooks`: nothing (no background work happens); `wait_for_jobs`: True.

The other verbs (reflect, learning, webhooks, export, ...) raise NotImplementedError naming the verb.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

from memwrap import validate
from memwrap.engine.recall.pack import pack
from memwrap.errors import BankNotFoundError, MemoryNotFoundError
from memwrap.models import (
    DEFAULT_TOKEN_BUDGET,
    KEEP,
    BankInfo,
    BankStats,
    MemoryContext,
    MemoryRecord,
    Recall,
    RecalledMemory,
    RetainItem,
)
from memwrap.testing.recorded_verbs import RecordedVerbs
from memwrap.tokens import encoding_for_model, encoding_name

__all__ = ["TestEngine"]

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_WORD = re.compile(r"\w{3,}")
# Verbs whose answer is "nothing": no background work, no learning, no subscriptions happen in memory.
_NOTHING: dict[str, Any] = {"jobs": [], "observations": [], "mental_models": [], "webhooks": [], "wait_for_jobs": True}


def _words(text: str) -> set[str]:
    return {word.casefold() for word in _WORD.findall(text)}


@dataclass
class _Bank:
    created_at: datetime
    memories: dict[UUID, MemoryRecord] = field(default_factory=dict)
    last_retain_at: datetime | None = None
    config: dict[str, Any] = field(default_factory=dict)


class TestEngine(RecordedVerbs):
    """An in-memory engine: `Memory(engine=TestEngine())`, or `memwrap.testing.memory()`. `calls` holds every verb
    called, as (name, arguments by name), in order; `banks_held` the stored memories per bank."""

    __test__ = False  # a class named Test*, imported into a test module: not a test class for pytest

    def __init__(self) -> None:
        super().__init__()
        self.banks_held: dict[str, _Bank] = {}
        self.reasons: dict[UUID, str] = {}  # why each invalidated memory was
        self.used_llm: Any = None  # what `use_llm` was given (the double never calls it)
        encoding_for_model()  # the token counter's tables load now, not inside the first recall a wrapper times

    def use_llm(self, llm: Any) -> None:
        self.used_llm = llm

    def called(self, verb: str) -> list[dict[str, Any]]:
        """The arguments of every call of `verb`, in order."""
        return [arguments for name, arguments in self.calls if name == verb]

    async def answer(self, verb: str, arguments: dict[str, Any]) -> Any:
        if verb in _NOTHING:
            nothing = _NOTHING[verb]
            return list(nothing) if isinstance(nothing, list) else nothing
        handler = getattr(self, f"_{verb}", None)
        if handler is None:
            raise NotImplementedError(
                f"memwrap.testing.TestEngine does not do {verb}: test it on the real engine (memwrap.Memory())."
            )
        return await handler(**arguments)

    # --- storing ---------------------------------------------------------------------------------------------

    def _bank(self, bank_id: str, *, create: bool = False) -> _Bank:
        bank_id = validate.bank_id(bank_id)
        if bank_id not in self.banks_held:
            if not create:
                raise BankNotFoundError(f"No bank {bank_id!r}.")
            self.banks_held[bank_id] = _Bank(created_at=datetime.now(UTC))
        return self.banks_held[bank_id]

    async def _retain(self, bank_id: str, content: str, **fields: Any) -> list[UUID]:
        item = {"content": content, **{k: v for k, v in fields.items() if v is not None}}
        return await self._retain_many(bank_id, [item])

    async def _retain_many(self, bank_id: str, items: Sequence[RetainItem | Mapping[str, Any] | str]) -> list[UUID]:
        bank = self._bank(bank_id, create=True)
        checked = validate.retain_items(items)
        ids = [self._store(validate.bank_id(bank_id), bank, item) for item in checked]
        if checked:
            bank.last_retain_at = datetime.now(UTC)
        return ids

    def _store(self, bank_id: str, bank: _Bank, item: RetainItem) -> UUID:
        for record in bank.memories.values():
            if record.text == item.content and record.document_id == item.document_id:
                return record.id
        now = datetime.now(UTC)
        record = MemoryRecord(
            id=uuid.uuid4(),
            bank_id=bank_id,
            text=item.content,
            type="raw",
            document_id=item.document_id,
            context=item.context,
            metadata=dict(item.metadata),
            tags=list(item.tags),
            mentioned_at=item.timestamp or now,
            created_at=now,
            expires_at=item.expires_at,
        )
        bank.memories[record.id] = record
        return record.id

    # --- recall ----------------------------------------------------------------------------------------------

    async def _recall(
        self,
        bank_id: str | Sequence[str],
        query: str,
        *,
        token_budget: int | None = None,
        now: datetime | None = None,
        types: Sequence[str] | str | None = None,
        tags: Sequence[str] | str | None = None,
        top_k: int | None = None,
        model: str | None = None,
        ids_in_block: bool = False,
        **_ignored: Any,
    ) -> Recall:
        banks = [bank_id] if isinstance(bank_id, str) else list(dict.fromkeys(bank_id))
        when = now or datetime.now(UTC)
        wanted = _words(query)
        kinds = validate.memory_types(types)
        tagged = set(validate.tags(tags) or [])
        found: list[tuple[int, datetime, MemoryRecord]] = []
        for bank in banks:
            held = self.banks_held.get(validate.bank_id(bank))
            for record in held.memories.values() if held else []:
                if record.invalidated_at is not None or (record.expires_at is not None and record.expires_at <= when):
                    continue
                if (kinds and record.type not in kinds) or (tagged and not tagged & set(record.tags)):
                    continue
                shared = len(wanted & _words(record.text))
                if shared:
                    found.append((shared, record.mentioned_at or when, record))
        found.sort(key=lambda hit: (hit[0], hit[1]), reverse=True)
        hits = [_recalled(record, shared / max(len(wanted), 1)) for shared, _, record in found][: top_k or None]
        budget = token_budget or DEFAULT_TOKEN_BUDGET
        encoding = encoding_for_model(model)
        # The engine's own packer renders the block: the lines an app sees here are the ones it sees in production.
        context, tokens, chosen = pack(hits, max_tokens=budget, now=when, encoding=encoding, ids_in_block=ids_in_block)
        return Recall(
            bank_id=banks[0],
            query=query,
            context=context,
            tokens=tokens,
            token_budget=budget,
            bank_ids=banks,
            encoding=encoding_name(encoding),
            memories=chosen,
            candidates=len(found),
        )

    # --- the catalog -----------------------------------------------------------------------------------------

    async def _list(
        self, bank_id: str, *, limit: int = 100, offset: int = 0, include_invalidated: bool = False, **_ignored: Any
    ) -> list[MemoryRecord]:
        held = self.banks_held.get(validate.bank_id(bank_id))
        records = sorted(held.memories.values(), key=lambda r: r.created_at or _EPOCH) if held else []
        shown = [r for r in records if include_invalidated or r.invalidated_at is None]
        return shown[offset : offset + limit]

    async def _get(self, bank_id: str, memory_id: UUID | str) -> MemoryRecord:
        held = self.banks_held.get(validate.bank_id(bank_id))
        record = held.memories.get(validate.memory_id(memory_id)) if held else None
        if record is None:
            raise MemoryNotFoundError(f"No memory {memory_id} in bank {bank_id!r}.")
        return record

    async def _update(
        self,
        bank_id: str,
        memory_id: UUID | str,
        *,
        text: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        tags: Sequence[str] | str | None = None,
        expires_at: Any = KEEP,
        **_ignored: Any,
    ) -> MemoryRecord:
        record = await self._get(bank_id, memory_id)
        changes: dict[str, Any] = {"text": text, "metadata": metadata, "tags": validate.tags(tags)}
        changes = {key: value for key, value in changes.items() if value is not None}
        if expires_at is not KEEP:
            changes["expires_at"] = expires_at
        updated = record.model_copy(update=changes)
        self.banks_held[record.bank_id].memories[record.id] = updated
        return updated

    async def _invalidate(self, bank_id: str, memory_id: UUID | str, reason: str = "") -> None:
        record = await self._get(bank_id, memory_id)
        self.reasons[record.id] = reason
        self.banks_held[record.bank_id].memories[record.id] = record.model_copy(
            update={"invalidated_at": datetime.now(UTC)}
        )

    async def _restore(self, bank_id: str, memory_id: UUID | str) -> None:
        record = await self._get(bank_id, memory_id)
        self.reasons.pop(record.id, None)
        self.banks_held[record.bank_id].memories[record.id] = record.model_copy(update={"invalidated_at": None})

    async def _memory_context(self, bank_id: str, memory_id: UUID | str) -> MemoryContext:
        """Its invalidation only: the double knows no entities, links or observations."""
        record = await self._get(bank_id, memory_id)
        return MemoryContext(
            id=record.id, invalidated_at=record.invalidated_at, invalidation_reason=self.reasons.get(record.id)
        )

    async def _delete(self, bank_id: str, memory_id: UUID | str) -> None:
        record = await self._get(bank_id, memory_id)
        del self.banks_held[record.bank_id].memories[record.id]

    async def _delete_bank(self, bank_id: str) -> int:
        held = self.banks_held.pop(validate.bank_id(bank_id), None)
        return len(held.memories) if held else 0

    async def _banks(self) -> list[BankInfo]:
        return [
            BankInfo(
                bank_id=name,
                memories=len(bank.memories),
                created_at=bank.created_at,
                last_retain_at=bank.last_retain_at,
                config=dict(bank.config),
            )
            for name, bank in sorted(self.banks_held.items())
        ]

    async def _bank_config(self, bank_id: str) -> dict[str, Any]:
        return dict(self._bank(bank_id).config)

    async def _bank_stats(self, bank_id: str) -> BankStats:
        bank = self._bank(bank_id)
        by_type: dict[str, int] = {}
        for record in bank.memories.values():
            by_type[record.type] = by_type.get(record.type, 0) + 1
        return BankStats(
            bank_id=bank_id,
            memories=len(bank.memories),
            memories_by_type=by_type,
            jobs_pending=0,
            facts_to_consolidate=0,  # no consolidation here: nothing waits for it
            created_at=bank.created_at,
            last_retain_at=bank.last_retain_at,
            last_activity_at=bank.last_retain_at,
        )


def _recalled(record: MemoryRecord, score: float) -> RecalledMemory:
    fields = record.model_dump(include=set(RecalledMemory.model_fields) & set(MemoryRecord.model_fields))
    return RecalledMemory(**fields, score=score)
