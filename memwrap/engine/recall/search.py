"""One recall: parse time, embed the query, run the four arms at once, fuse, rerank, attach neighbours, pack."""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

import asyncpg
import numpy as np

from memwrap.config import Settings
from memwrap.engine.recall import arms
from memwrap.engine.recall.names import related_names
from memwrap.engine.recall.arms import Filters, Hits
from memwrap.engine.recall.common_terms import CommonTerms
from memwrap.engine.recall.fusion import Fused, interleave, reciprocal_rank
from memwrap.engine.recall.pack import plan
from memwrap.engine.recall.rerank import Reranker
from memwrap.engine.recall.timeparse import parse_time_window, strip_time_expression
from memwrap.engine.retain.entities import QUERY_STOPWORDS, entity_key, extract_query_entities
from memwrap.engine.text import search_text
from memwrap.models import Recall, RecalledMemory, TimeWindow
from memwrap.tokens import encoding_for_model, encoding_name

# How many fused candidates get their details fetched and offered to the packer: enough to fill the budget
# with short memories (a chat turn is ~15-40 tokens), never more than a long list is worth.
MIN_CANDIDATES, MAX_CANDIDATES = 40, 200
TOKENS_PER_CANDIDATE = 12
# Neighbours are fetched for this many of the best hits and offered after all ranked hits.
NEIGHBOUR_HITS = 10
NEIGHBOUR_DISCOUNT = 0.5

DETAILS = """
SELECT m.id, m.text, m.fact_type, m.document_id, m.metadata, m.tags, m.occurred_start, m.occurred_end,
       m.mentioned_at,
       coalesce((SELECT array_agg(e.name ORDER BY e.name)
                 FROM unit_entities ue JOIN entities e ON e.bank_id = ue.bank_id AND e.id = ue.entity_id
                 WHERE ue.bank_id = m.bank_id AND ue.unit_id = m.id), '{}') AS entities
FROM memory_units m
WHERE m.bank_id = $1 AND m.id = ANY($2::uuid[])
"""


@dataclass
class RecallRequest:
    bank_id: str
    query: str
    max_tokens: int
    now: datetime
    types: list[str] | None
    tags: list[str] | None
    model: str | None
    neighbours: bool
    fusion: str | None = None
    prefer_observations: bool = False
    query_vector: np.ndarray | None = None  # a precomputed query embedding (benchmarks, batch callers)  # an observation replaces the facts it covers (learn/prefer.py)
    warm_up: bool = False  # run every arm even on an empty bank (Engine.open's warm-up: caches, connections)
    explain: bool = False  # also return every candidate weighed, with its line and whether it fit (Recall.considered)


class Searcher:
    def __init__(
        self,
        pool: asyncpg.Pool,
        embed_query: Callable[[str], Awaitable[np.ndarray]],
        settings: Settings,
    ) -> None:
        self.pool = pool
        self.embed_query = embed_query
        self.settings = settings
        self.reranker = Reranker(settings.reranker) if settings.reranker else None
        self.common_terms = CommonTerms(pool, arms.TERM_SCAN_CAP)

    async def close(self) -> None:
        await self.common_terms.close()

    @property
    def weights(self) -> dict[str, float]:
        s = self.settings
        return {
            "semantic": s.weight_semantic,
            "keyword": s.weight_keyword,
            "graph": s.weight_graph,
            "temporal": s.weight_temporal,
        }

    async def _on_connection(self, fn: Callable[..., Awaitable[Hits]], *args: Any) -> Hits:
        async with self.pool.acquire() as conn:
            return await fn(conn, *args)

    async def recall(self, request: RecallRequest) -> Recall:
        timings: dict[str, float] = {}
        started = time.perf_counter()
        encoding = encoding_for_model(request.model)
        window = parse_time_window(request.query, request.now)
        topic = strip_time_expression(request.query, window) if window else request.query
        filters = Filters(request.bank_id, request.types, request.tags)
        limit = self.settings.arm_limit
        # The query's embedding (its own thread), the bank-size lookup and then the keyword arm, which needs no
        # vector, all run at once: on a warm bank the embedding is a good share of a recall.
        embedding: asyncio.Future[np.ndarray] | None = (
            asyncio.ensure_future(self.embed_query(topic.strip() or request.query))
            if request.query_vector is None
            else None
        )
        try:
            bank = await self.pool.fetchrow(
                "SELECT memory_count, common_terms_at FROM banks WHERE bank_id = $1", request.bank_id
            )
        except BaseException:
            _discard(embedding)
            raise
        bank_size = bank["memory_count"] if bank else 0
        if bank_size and self.common_terms.due(bank_size, bank["common_terms_at"]):
            self.common_terms.refresh_soon(request.bank_id)  # for the recalls after this one
        if request.warm_up:
            bank_size = max(bank_size, 1)
        if not bank_size:
            _discard(embedding)
            return Recall(
                bank_id=request.bank_id, query=request.query, context="", tokens=0, max_tokens=request.max_tokens,
                encoding=encoding_name(encoding), time_window=window, considered=[] if request.explain else None,
            )
        entity_keys = _query_entity_keys(request.query)
        # The other names of the question's entities (张伟 for "Zhang Wei"): the keyword and graph arms use them.
        names = asyncio.ensure_future(related_names(self.pool, request.bank_id, entity_keys))
        keyword = asyncio.ensure_future(self._keyword(filters, request.query, names, limit, bank_size))
        try:
            vector = request.query_vector if embedding is None else await embedding
            related = await names
        except BaseException:
            _discard(keyword)
            _discard(names)
            raise
        timings["embed"] = _ms(started)
        graph_keys = sorted({*entity_keys, *(key for _name, key in related)})
        tasks: dict[str, Awaitable[Hits]] = {
            "semantic": self._on_connection(
                arms.semantic, filters, vector, limit, bank_size, self.settings.min_similarity
            ),
            "keyword": keyword,
            "graph": self._on_connection(arms.graph, filters, vector, graph_keys, limit, bank_size),
        }
        if window is not None:
            tasks["temporal"] = self._on_connection(arms.temporal, filters, vector, window.start, window.end, limit)
        results = dict(zip(tasks, await asyncio.gather(*tasks.values()), strict=True))
        timings["arms"] = _ms(started) - timings["embed"]

        fusion = request.fusion or self.settings.fusion
        fused = (
            interleave(results, self.weights)
            if fusion == "interleave"
            else reciprocal_rank(results, self.weights, self.settings.rrf_k)
        )[: max(MIN_CANDIDATES, min(MAX_CANDIDATES, request.max_tokens // TOKENS_PER_CANDIDATE))]
        ranked = await self._details(filters, fused, request.neighbours)
        if self.reranker is not None and ranked:
            ranked = await self._rerank(request.query, ranked)
        if request.prefer_observations and ranked:
            from memwrap.engine.learn.prefer import prefer_observations

            ranked = await prefer_observations(self.pool, request.bank_id, ranked)
        timings["fuse"] = _ms(started) - timings["embed"] - timings["arms"]

        packing = plan(ranked, max_tokens=request.max_tokens, now=request.now, encoding=encoding)
        timings["total"] = _ms(started)
        return Recall(
            bank_id=request.bank_id, query=request.query, context=packing.context, tokens=packing.tokens,
            max_tokens=request.max_tokens, encoding=encoding_name(encoding), memories=packing.picked(ranked),
            time_window=window, candidates=len(ranked), timings_ms=timings,
            considered=packing.considered(ranked) if request.explain else None,
        )

    async def _keyword(
        self, filters: Filters, query: str, names: asyncio.Future[list[tuple[str, str]]], limit: int, bank_size: int
    ) -> Hits:
        related = await names
        text = " ".join([query, *(name for name, _key in related)])
        return await self._on_connection(arms.keyword, filters, search_text(text), limit, bank_size)

    async def _details(self, filters: Filters, fused: list[Fused], with_neighbours: bool) -> list[RecalledMemory]:
        ids = [f.id for f in fused]
        async with self.pool.acquire() as conn:
            pairs: list[tuple[UUID, UUID]] = []
            if with_neighbours and ids:
                pairs = await arms.neighbours(conn, filters, ids[:NEIGHBOUR_HITS])
            wanted = ids + [n for _hit, n in pairs if n not in set(ids)]
            rows = {r["id"]: r for r in await conn.fetch(DETAILS, filters.bank_id, wanted)}

        ranked: list[RecalledMemory] = []
        placed: set[UUID] = set()
        for item in fused:
            if item.id in rows and item.id not in placed:
                ranked.append(_memory(rows[item.id], item.score, item.arms))
                placed.add(item.id)
        # Neighbours come after every ranked hit: they only fill what the budget leaves over.
        scores = {m.id: m.score for m in ranked}
        for hit, neighbour in pairs:
            if neighbour in rows and neighbour not in placed:
                memory = _memory(rows[neighbour], scores.get(hit, 0.0) * NEIGHBOUR_DISCOUNT, {})
                memory.neighbour_of = hit
                ranked.append(memory)
                placed.add(neighbour)
        return ranked

    async def _rerank(self, query: str, ranked: list[RecalledMemory]) -> list[RecalledMemory]:
        assert self.reranker is not None
        head = ranked[:50]
        scores = await self.reranker.scores(query, [m.text for m in head])
        for memory, score in zip(head, scores, strict=True):
            memory.score = score
        return sorted(head, key=lambda m: -m.score) + ranked[50:]


_WORD = re.compile(r"[^\W\d_][\w'’-]{2,}")


def _query_entity_keys(query: str) -> list[str]:
    """Keys that may name an entity of the bank: the query's entities, and — since people type "where does
    melanie live" in lower case — its plain words too. Words that name no entity simply match nothing."""
    keys = {entity_key(e) for e in extract_query_entities(query)}
    keys.update(entity_key(w) for w in _WORD.findall(query) if w.lower() not in QUERY_STOPWORDS)
    return sorted(k for k in keys if k)


def _memory(row: asyncpg.Record, score: float, arm_ranks: dict[str, int]) -> RecalledMemory:
    return RecalledMemory(
        id=row["id"], text=row["text"], type=row["fact_type"], document_id=row["document_id"],
        metadata=row["metadata"] or {}, tags=list(row["tags"] or []), entities=list(row["entities"] or []),
        occurred_start=row["occurred_start"], occurred_end=row["occurred_end"], mentioned_at=row["mentioned_at"],
        score=score, arms=arm_ranks,
    )


def _discard(future: asyncio.Future[Any] | None) -> None:
    """Abandon a started step whose result is no longer wanted, without an unretrieved-exception warning."""
    if future is not None:
        future.cancel()
        future.add_done_callback(lambda f: f.cancelled() or f.exception())


def _ms(since: float) -> float:
    return (time.perf_counter() - since) * 1000.0


__all__ = ["RecallRequest", "Searcher", "TimeWindow"]
