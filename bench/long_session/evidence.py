"""Evidence recall on long sessions: memwrap's packed block against a dense+BM25 hybrid over the same chunks.

Evidence recall at budget B = the share of a question's labelled evidence messages of which at least one chunk
is in what the system hands over within B tokens:

* memwrap: `recall(bank, question, token_budget=B, now=<question time>)`, one call per budget; the memories of
  the block (`Recall.memories`, what `context` holds) name their message by `document_id`. memwrap pays for its
  own block (header, dates, markers) out of B, as a wrapper would.
* dense+BM25 (bench/baselines.py's HybridRetriever: cosine over the same embedding model, bm25s, reciprocal rank
  fusion k=60): indexes exactly the chunks memwrap stored for the bank (read back with `list`, so it is chunked
  the way memwrap chunks, whatever the engine does), ranks them, and keeps chunks in rank order while their text
  fits in B cl100k tokens (one that does not fit is skipped, the walk goes on): no header or date is charged.

Each message is retained as one item ("role: text", document_id = the message id, timestamp = its time).
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from bench.long_session.generator import LongBank

MEMWRAP, HYBRID = "memwrap", "dense+bm25"
OVERALL = "overall"
Progress = Callable[[str, int], Callable[[int], None] | None]


@dataclass
class EvidenceResult:
    system: str
    dataset: str
    bank: str
    question_id: str
    type: str
    evidence: int
    found: dict[int, int]  # budget -> evidence messages with a chunk in the block
    latency_ms: float
    timings_ms: dict[str, float] = field(default_factory=dict)  # memwrap: the engine's steps, largest budget
    # budget -> whether the newest evidence message (the labels are in time order) has a chunk in the block: for a
    # knowledge update, the statement that answers the question, whatever became of the older ones.
    latest: dict[int, bool] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "system": self.system,
            "dataset": self.dataset,
            "bank": self.bank,
            "question_id": self.question_id,
            "type": self.type,
            "evidence": self.evidence,
            "found": {str(b): n for b, n in self.found.items()},
            "latency_ms": round(self.latency_ms, 2),
            "timings_ms": {k: round(v, 2) for k, v in self.timings_ms.items()},
            "latest": {str(b): found for b, found in self.latest.items()},
        }


@dataclass
class Chunks:
    """What memwrap stored for a bank: (message id, chunk text), with the embedding pass of the baseline."""

    ids: list[str] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    tokens: list[int] = field(default_factory=list)


@dataclass
class Throughput:
    """Retain of long messages beside the embedding model alone on the same bank's chunks."""

    messages: int = 0
    message_tokens: int = 0
    retain_s: float = 0.0
    chunks: int = 0
    chunk_tokens: int = 0
    embed_s: float = 0.0

    def add(self, other: Throughput) -> None:
        for name in ("messages", "message_tokens", "retain_s", "chunks", "chunk_tokens", "embed_s"):
            setattr(self, name, getattr(self, name) + getattr(other, name))

    def to_json(self) -> dict[str, Any]:
        retain_tps = self.message_tokens / self.retain_s if self.retain_s else None
        embed_tps = self.chunk_tokens / self.embed_s if self.embed_s else None
        return {
            "messages": self.messages,
            "message_tokens": self.message_tokens,
            "retain_s": round(self.retain_s, 2),
            "retain_messages_per_s": round(self.messages / self.retain_s, 2) if self.retain_s else None,
            "retain_tokens_per_s": round(retain_tps, 1) if retain_tps else None,
            "memories": self.chunks,
            "chunk_tokens": self.chunk_tokens,
            "embed_s": round(self.embed_s, 2),
            "embed_chunks_per_s": round(self.chunks / self.embed_s, 2) if self.embed_s else None,
            "embed_tokens_per_s": round(embed_tps, 1) if embed_tps else None,
            "retain_over_embed": round(retain_tps / embed_tps, 3) if retain_tps and embed_tps else None,
        }


def _count(text: str) -> int:
    from memwrap.tokens import count_tokens

    return count_tokens(text)


def retain_bank(memory: Any, bank: LongBank, bank_id: str, batch: int, advance: Callable[[int], None] | None) -> float:
    """Retain every message as one item, `batch` per retain_many; the wall time in seconds."""
    from memwrap import RetainItem

    items = [RetainItem(content=m.content, timestamp=m.timestamp, document_id=m.id) for m in bank.messages]
    started = time.perf_counter()
    for i in range(0, len(items), batch):
        memory.retain_many(bank_id, items[i : i + batch])
        if advance:
            advance(len(items[i : i + batch]))
    return time.perf_counter() - started


def stored_chunks(memory: Any, bank_id: str) -> Chunks:
    from memwrap.models import MAX_PAGE

    chunks, offset = Chunks(), 0
    while True:
        page = memory.list(bank_id, limit=MAX_PAGE, offset=offset)
        for record in page:
            chunks.ids.append(record.document_id or "")
            chunks.texts.append(record.text)
            chunks.tokens.append(_count(record.text))
        if len(page) < MAX_PAGE:
            return chunks
        offset += len(page)


def memwrap_results(
    memory: Any, bank: LongBank, bank_id: str, dataset: str, budgets: Sequence[int]
) -> list[EvidenceResult]:
    memory.recall(bank_id, "warm-up query, not scored", token_budget=max(budgets))
    out = []
    for q in bank.questions:
        found, latest, spent, timings = {}, {}, 0.0, {}
        for budget in budgets:
            t0 = time.perf_counter()
            recall = memory.recall(bank_id, q.question, token_budget=budget, now=q.asked_at)
            spent += time.perf_counter() - t0
            shown = {m.document_id for m in recall.memories}
            found[budget] = sum(1 for e in q.evidence if e in shown)
            latest[budget] = q.evidence[-1] in shown
            timings = dict(recall.timings_ms)
        ms = spent * 1000 / len(budgets)
        out.append(
            EvidenceResult(MEMWRAP, dataset, bank.name, q.id, q.type, len(q.evidence), found, ms, timings, latest)
        )
    return out


def hybrid_results(
    embedder: Any, chunks: Chunks, bank: LongBank, dataset: str, budgets: Sequence[int], depth: int = 200
) -> tuple[list[EvidenceResult], float, Any]:
    """The baseline's results, the seconds its embedding pass took, and the chunk vectors (reused as a pool)."""
    from bench.baselines import HybridRetriever

    hybrid = HybridRetriever(embedder, depth=depth)
    t0 = time.perf_counter()
    hybrid.dense.index(chunks.texts)
    embed_s = time.perf_counter() - t0
    hybrid.bm25.index(chunks.texts)
    hybrid.search("warm-up query, not scored", depth)
    out = []
    for q in bank.questions:
        t0 = time.perf_counter()
        order = hybrid.search(q.question, depth)
        ms = (time.perf_counter() - t0) * 1000
        found, latest = {}, {}
        for budget in budgets:
            used, kept = 0, set()
            for i in order:
                if used + chunks.tokens[i] <= budget:
                    used += chunks.tokens[i]
                    kept.add(chunks.ids[i])
            found[budget] = sum(1 for e in q.evidence if e in kept)
            latest[budget] = q.evidence[-1] in kept
        out.append(EvidenceResult(HYBRID, dataset, bank.name, q.id, q.type, len(q.evidence), found, ms, {}, latest))
    return out, embed_s, hybrid.dense._matrix


def evaluate_bank(
    memory: Any,
    embedder: Any,
    bank: LongBank,
    bank_id: str,
    dataset: str,
    budgets: Sequence[int],
    batch: int,
    progress: Progress,
) -> tuple[list[EvidenceResult], Throughput, Chunks, Any]:
    retain_s = retain_bank(memory, bank, bank_id, batch, progress(f"retain {bank.name}", len(bank.messages)))
    results = memwrap_results(memory, bank, bank_id, dataset, budgets)
    chunks = stored_chunks(memory, bank_id)
    baseline, embed_s, vectors = hybrid_results(embedder, chunks, bank, dataset, budgets)
    throughput = Throughput(
        messages=len(bank.messages),
        message_tokens=bank.tokens,
        retain_s=retain_s,
        chunks=len(chunks.texts),
        chunk_tokens=sum(chunks.tokens),
        embed_s=embed_s,
    )
    return results + baseline, throughput, chunks, vectors


def summarise(results: Sequence[EvidenceResult], budgets: Sequence[int]) -> dict[str, Any]:
    """dataset -> system -> question type (and "overall") -> budget -> {recall, all_found, latest_found, n}:
    micro-averages (latest_found: the share of questions whose newest evidence message is in the block)."""
    groups: dict[tuple[str, str, str], list[EvidenceResult]] = defaultdict(list)
    for r in results:
        groups[(r.dataset, r.system, r.type)].append(r)
        groups[(r.dataset, r.system, OVERALL)].append(r)
    out: dict[str, Any] = {}
    for (dataset, system, qtype), rows in sorted(groups.items()):
        cells = out.setdefault(dataset, {}).setdefault(system, {})
        cells[qtype] = {
            str(b): {
                "recall": round(sum(r.found[b] / r.evidence for r in rows) / len(rows), 4),
                "all_found": round(sum(r.found[b] == r.evidence for r in rows) / len(rows), 4),
                "latest_found": round(sum(r.latest.get(b, False) for r in rows) / len(rows), 4),
                "n": len(rows),
            }
            for b in budgets
        }
    return out
