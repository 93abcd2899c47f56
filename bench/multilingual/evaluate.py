"""Embedding models side by side: the multilingual retrieval set, LoCoMo evidence recall and query-embedding latency
for each model, in one bench run (`python -m bench`; `--models`, `--skip-models`).

Multilingual set. One bank per model: the set's memories (each its own item, document_id = its id) and the
MemoryBank distractor users' dialogue turns (document_id `mb-<lang>-<user>-<day>:<n>`, so a day is a session, as
a chat would be retained), all with timestamps through 2026. Each question is recalled at `token_budget=2048` with
`now` = 2026-12-01. Scores, as for LoCoMo: *recall@k* = share of the question's evidence among the first k memories
of the ranked list (neighbours count at their place), and evidence recall within token budgets (the same budget
walk as LoCoMo, bench/locomo.py). Per category and overall.

Query embedding: p50 of one fresh question per call on the model alone (its own instance, English questions in the
style of the latency bank and the set's own questions), after a warm-up.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench.locomo import Ranked, walk_budget
from bench.multilingual.data import CATEGORIES, MultilingualSet, load_set
from bench.multilingual.memorybank import distractor_turns
from bench.synthetic import generate_queries

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
RECALL_AT: tuple[int, ...] = (1, 5, 10)
RECALL_MAX_TOKENS = 2048
OVERALL = "overall"


@dataclass
class QuestionScore:
    question_id: str
    category: str
    rank: int | None  # 1-based rank of the first evidence memory in the ranked list
    at_k: dict[int, float]
    in_budget: dict[int, float]
    latency_ms: float


@dataclass
class SetResult:
    model: str
    memories: int
    retain_s: float
    scores: list[QuestionScore] = field(default_factory=list)

    def summary(self, budgets: Sequence[int]) -> dict[str, Any]:
        groups: dict[str, list[QuestionScore]] = {c: [s for s in self.scores if s.category == c] for c in CATEGORIES}
        groups[OVERALL] = list(self.scores)
        out: dict[str, Any] = {}
        for name, scores in groups.items():
            if not scores:
                continue
            out[name] = {
                "n": len(scores),
                "recall_at": {str(k): round(statistics.fmean(s.at_k[k] for s in scores), 4) for k in RECALL_AT},
                "budget_recall": {str(b): round(statistics.fmean(s.in_budget[b] for s in scores), 4) for b in budgets},
            }
        return out

    def to_json(self, budgets: Sequence[int]) -> dict[str, Any]:
        ms = [s.latency_ms for s in self.scores]
        return {
            "model": self.model,
            "memories": self.memories,
            "retain_items_per_s": round(self.memories / self.retain_s, 1) if self.retain_s else None,
            "recall_p50_ms": round(statistics.median(ms), 2) if ms else None,
            "groups": self.summary(budgets),
            "questions": [{"id": s.question_id, "category": s.category, "rank": s.rank} for s in self.scores],
        }


def set_items(data: MultilingualSet, max_distractors: int | None = None) -> list[Any]:
    """The bank: the set's memories spread over 2026, then the distractor dialogues day by day (the first
    `max_distractors` of them: smoke tests)."""
    from memwrap import RetainItem

    start = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
    items = [
        RetainItem(content=m.text, document_id=m.id, timestamp=start + timedelta(days=3 * i, hours=i % 7))
        for i, m in enumerate(data.memories)
    ]
    counters: dict[str, int] = {}
    for turn in distractor_turns()[:max_distractors]:
        session = f"mb-{turn.language}-{turn.user_index}-{turn.day}"
        counters[session] = counters.get(session, 0) + 1
        when = datetime.fromisoformat(turn.day).replace(year=2026, tzinfo=UTC) + timedelta(minutes=counters[session])
        items.append(RetainItem(content=turn.text, document_id=f"{session}:{counters[session]}", timestamp=when))
    return items


def evaluate_set(
    memory: Any,
    bank: str,
    data: MultilingualSet,
    budgets: Sequence[int],
    count_tokens: Callable[[str], int],
    *,
    model: str,
    batch: int = 500,
    max_distractors: int | None = None,
) -> SetResult:
    items = set_items(data, max_distractors)
    start = time.perf_counter()
    for i in range(0, len(items), batch):
        memory.retain_many(bank, items[i : i + batch])
    result = SetResult(model=model, memories=len(items), retain_s=time.perf_counter() - start)
    memory.recall(bank, "warm-up query, not scored", token_budget=RECALL_MAX_TOKENS, now=NOW)
    for question in data.questions:
        t0 = time.perf_counter()
        recall = memory.recall(bank, question.text, token_budget=RECALL_MAX_TOKENS, now=NOW)
        ms = (time.perf_counter() - t0) * 1000
        ranked = [Ranked(document_id=m.document_id, tokens=count_tokens(m.text)) for m in recall.memories]
        result.scores.append(score(question.id, question.category, question.evidence, ranked, budgets, ms))
    return result


def score(
    question_id: str,
    category: str,
    evidence: Sequence[str],
    ranked: Sequence[Ranked],
    budgets: Sequence[int],
    latency_ms: float,
) -> QuestionScore:
    wanted = set(evidence)
    ids = [r.document_id for r in ranked]
    rank = next((i for i, doc in enumerate(ids, start=1) if doc in wanted), None)
    at_k = {k: len(wanted & set(ids[:k])) / len(wanted) for k in RECALL_AT}
    in_budget = {b: len(wanted & walk_budget(ranked, b)) / len(wanted) for b in budgets}
    return QuestionScore(question_id, category, rank, at_k, in_budget, latency_ms)


def query_embedding_ms(
    model: str, backend: str, home: Path | None, data: MultilingualSet, warmup: int = 10
) -> dict[str, float]:
    """p50 ms to embed one question, English and Chinese, on the model's own instance (no query cache)."""
    from memwrap.engine.embed.embedder import Embedder

    embedder = Embedder(model, backend=backend, home=home)
    try:
        english = generate_queries(60 + warmup, seed=23)
        chinese = [q.text for q in data.questions if q.category in ("zh", "mixed") and not q.text.isascii()]
        out: dict[str, float] = {}
        for name, queries in (("en", english), ("zh", chinese)):
            for q in queries[:warmup]:
                embedder.encode_queries([q])
            samples = []
            for q in queries[warmup:] if len(queries) > warmup * 2 else queries:
                t0 = time.perf_counter()
                embedder.encode_queries([q])
                samples.append((time.perf_counter() - t0) * 1000)
            out[name] = round(statistics.median(samples), 3)
        return out
    finally:
        embedder.close()


def other_models(configured: str, requested: Sequence[str] | None) -> list[str]:
    """The models to compare with the configured one: the requested ones, else the other packaged model."""
    from memwrap.config import ENGLISH_EMBEDDING_MODEL, MULTILINGUAL_EMBEDDING_MODEL, load_settings

    canonical = [load_settings(embedding_model=m).embedding_model for m in (requested or [])]
    if not canonical:
        canonical = [
            MULTILINGUAL_EMBEDDING_MODEL if configured != MULTILINGUAL_EMBEDDING_MODEL else ENGLISH_EMBEDDING_MODEL
        ]
    return [m for m in dict.fromkeys(canonical) if m != configured]


def open_memory_for(model: str) -> tuple[Any, Path]:
    """A Memory on a fresh temporary home with `model` (its own embedded PostgreSQL), learning off."""
    from memwrap import Memory
    from memwrap.config import load_settings

    home = Path(tempfile.mkdtemp(prefix="memwrap-bench-model-"))
    return Memory(settings=load_settings(home=home, embedding_model=model, worker="off")), home


__all__ = [
    "NOW",
    "RECALL_AT",
    "SetResult",
    "evaluate_set",
    "load_set",
    "open_memory_for",
    "other_models",
    "query_embedding_ms",
    "score",
    "set_items",
]
