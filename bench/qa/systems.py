"""What each compared system puts in front of the answerer: the memory block for one question.

    none     no memory at all (the answer prompt says "(none)"): what the answerer knows or guesses alone
    recent   the conversation's last turns before the question, newest kept until the budget is full, shown in
             chronological order: a long-context window of the budget's size
    rrf      the bench's baseline (bench.baselines.HybridRetriever: dense + BM25 fused by reciprocal rank) ranks
             the bank's memories for the question; packed into the budget in rank order
    memwrap  memwrap's own recall, as an application gets it

Everything but the choice of memories is the same: `recent` and `rrf` read the memories memwrap stored for the
conversation (with `--ingest raw`, one per turn: the same text and dates), render them with memwrap's own line
format (`[said, about when] text`) inside the same header and footer, and count the same budget with the same
tokenizer (memwrap.tokens), so the block's size and look do not tell the systems apart.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from memwrap.block.format import footer, header
from memwrap.engine.recall.pack import plan, render_line
from memwrap.models import RecalledMemory
from memwrap.tokens import encoding_for_model

SYSTEMS: tuple[str, ...] = ("none", "recent", "rrf", "memwrap")
LIST_PAGE = 1000
_EARLIEST = datetime.min.replace(tzinfo=UTC)


@dataclass
class Block:
    """The memory block one system gave the answerer for one question."""

    context: str
    tokens: int
    documents: list[str] = field(default_factory=list)  # document ids of the memories in it, in block order


@dataclass
class Conversation:
    """A bank's stored memories in chronological order, and (built on first use) the baseline's index of them."""

    memories: list[RecalledMemory]
    retriever: Any = None


class Systems:
    """Builds each system's block. One instance per run: it keeps each bank's memories and baseline index."""

    def __init__(self, memory: Any, *, budget: int, embedder: Any = None) -> None:
        self.memory = memory
        self.budget = budget
        self.encoding = encoding_for_model(None)  # what memwrap's recall counts with when no model is named
        self._embedder = embedder
        self._conversations: dict[str, Conversation] = {}
        self._loading: dict[str, asyncio.Lock] = defaultdict(asyncio.Lock)  # one listing per bank, however many ask

    async def block(self, system: str, bank: str, question: str, now: datetime, order: Sequence[str] = ()) -> Block:
        """`order`: the conversation's document ids in the order they were said (ties within a session)."""
        if system == "none":
            return Block("", 0)
        if system == "memwrap":
            recall = await self.memory.recall(bank, question, token_budget=self.budget, now=now)
            return Block(recall.context, recall.tokens, [m.document_id for m in recall.memories if m.document_id])
        conversation = await self._conversation(bank, order)
        if system == "recent":
            return self._recent(conversation, now)
        if system == "rrf":
            return self._rrf(conversation, question, now)
        raise ValueError(f"unknown system {system!r}; choose from {', '.join(SYSTEMS)}")

    def _recent(self, conversation: Conversation, now: datetime) -> Block:
        """The newest memories said before `now`, walking back until the next one would overflow the budget."""
        said_before = [m for m in conversation.memories if m.mentioned_at is None or m.mentioned_at <= now]
        room = self.budget - self._count(header(now) + footer())
        kept: list[RecalledMemory] = []
        for memory in reversed(said_before):
            cost = self._count(render_line(memory))
            if cost > room:
                break  # the last N tokens: a contiguous stretch, no older turn squeezed in past a long one
            kept.append(memory)
            room -= cost
        return self._pack(list(reversed(kept)), now)

    def _rrf(self, conversation: Conversation, question: str, now: datetime) -> Block:
        if conversation.retriever is None:
            from bench.baselines import HybridRetriever, baseline_embedder

            if self._embedder is None:
                self._embedder = baseline_embedder()
            conversation.retriever = HybridRetriever(self._embedder)
            conversation.retriever.index([m.text for m in conversation.memories])
        ranked = conversation.retriever.search(question, len(conversation.memories))
        return self._pack([conversation.memories[i] for i in ranked], now)

    def _pack(self, memories: list[RecalledMemory], now: datetime) -> Block:
        """memwrap's packer: in the given order, each line that still fits goes in (one that does not is skipped)."""
        packing = plan(memories, max_tokens=self.budget, now=now, encoding=self.encoding)
        chosen = packing.picked(memories)
        return Block(packing.context, packing.tokens, [m.document_id for m in chosen if m.document_id])

    def _count(self, text: str) -> int:
        return len(self.encoding.encode_ordinary(text))

    async def _conversation(self, bank: str, order: Sequence[str]) -> Conversation:
        async with self._loading[bank]:
            if bank not in self._conversations:
                self._conversations[bank] = await self._load(bank, order)
        return self._conversations[bank]

    async def _load(self, bank: str, order: Sequence[str]) -> Conversation:
        records = []
        while True:
            page = await self.memory.list(bank, limit=LIST_PAGE, offset=len(records))
            records.extend(page)
            if len(page) < LIST_PAGE:
                break
        position = {document_id: i for i, document_id in enumerate(order)}
        records = [r for r in records if r.type != "observation"]  # what was said, not what was inferred
        indexed = sorted(
            enumerate(records),
            key=lambda pair: (
                pair[1].mentioned_at or _EARLIEST,
                position.get(pair[1].document_id, len(position)),
                pair[0],
            ),
        )
        return Conversation(
            [RecalledMemory(**record.model_dump(include=set(RecalledMemory.model_fields))) for _, record in indexed]
        )


__all__ = ["SYSTEMS", "Block", "Systems"]
