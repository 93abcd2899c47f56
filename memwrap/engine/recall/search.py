"""One recall: parse time, embed the query, run the four arms at once, fuse, rerank, attach neighbours, pack."""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import asyncpg
import numpy as np

from memwrap import tracing, validate
from memwrap.config import Settings
from memwrap.engine.embed.profiles import similarity_profile
from memwrap.engine.language.entities import QUERY_STOPWORDS, entity_key, extract_query_entities
from memwrap.engine.language.timeparse import parse_time_window, strip_time_expression
from memwrap.engine.recall import details, sessions
from memwrap.engine.recall import options as recall_options
from memwrap.engine.recall.arm_runs import ArmPlan, ArmRuns, KeyedHits, discard, ms_since, timed
from memwrap.engine.recall.arms import Filters
from memwrap.engine.recall.common_terms import CommonTerms
from memwrap.engine.recall.filters import recall_filter
from memwrap.engine.recall.fusion import interleave, reciprocal_rank
from memwrap.engine.recall.order import apply_changes, favour_named_speakers, governs, weigh_speakers, window_first
from memwrap.engine.recall.pack import plan as plan_packing
from memwrap.engine.recall.prefer import prefer_observations
from memwrap.engine.recall.rerank import Reranker
from memwrap.engine.recall.sessions import span_block
from memwrap.engine.recall.span import chronological
from memwrap.engine.recall.standing import lead_with
from memwrap.filters import RecallFilter
from memwrap.models import DEFAULT_TOKEN_BUDGET, Recall, RecalledMemory, TimeWindow
from memwrap.tokens import encoding_for_model, encoding_name

# How many fused candidates get their details fetched and offered to the packer: enough to fill the budget
# with short memories (a chat turn is ~15-40 tokens), never more than a long list is worth.
MIN_CANDIDATES, MAX_CANDIDATES = 40, 200
TOKENS_PER_CANDIDATE = 12

# DEFAULT_TOKEN_BUDGET (memwrap/models/): the declared default (memwrap/verbs.py); also when top_k is not given


@dataclass
class RecallRequest:
    """One recall, checked: the declared parameters (memwrap/verbs.py, `recall`) with defaults resolved, and the
    engine's own (`fusion`, `query_vector`, `warm_up`), which no public surface offers."""

    bank_id: str
    query: str
    token_budget: int
    now: datetime
    types: list[str] | None
    tags: list[str] | None
    model: str | None
    neighbours: bool
    prefer_observations: bool = False  # an observation replaces the facts it covers (recall/prefer.py)
    fusion: str | None = None
    query_vector: np.ndarray | None = None  # a precomputed query embedding (benchmarks, batch callers)
    warm_up: bool = False  # run every arm even on an empty bank (Engine.open's warm-up: caches, connections)
    where: RecallFilter | None = None  # metadata, time ranges, documents, sessions (memwrap/filters.py)
    top_k: int | None = None  # at most this many memories
    min_score: float | None = None  # leave out memories whose score (fused, or the reranker's) is below this
    bank_ids: list[str] | None = None  # several banks at once (bank_id is the first of them)
    explain: bool = False  # also return every candidate weighed, with its line and whether it fit (Recall.considered)
    ids_in_block: bool = False  # each line of the block starts with its memory's id (pack.plan's `ids_in_block`)

    @property
    def banks(self) -> list[str]:
        return self.bank_ids or [self.bank_id]

    @classmethod
    def checked(
        cls,
        settings: Settings,
        *,
        bank_id: str | Sequence[str],
        query: str,
        token_budget: int | None = None,
        now: datetime | None = None,
        types: Sequence[str] | None = None,
        tags: Sequence[str] | None = None,
        model: str | None = None,
        neighbours: bool | None = None,
        prefer_observations: bool | None = None,
        filters: RecallFilter | Mapping[str, Any] | None = None,
        top_k: int | None = None,
        min_score: float | None = None,
        **engine_only: Any,
    ) -> RecallRequest:
        """A request from the verb's arguments; None means the configured default (MEMWRAP_NEIGHBOURS, ...).
        `bank_id` may be a list, read as one bank (one budget). With `top_k` and no `token_budget`, the budget is
        not what limits the list."""
        banks = recall_options.bank_ids(bank_id)
        top_k = recall_options.top_k(top_k)
        if token_budget is None:
            token_budget = validate.MAX_BUDGET_TOKENS if top_k is not None else DEFAULT_TOKEN_BUDGET
        return cls(
            bank_id=banks[0],
            bank_ids=banks,
            where=recall_filter(filters),
            top_k=top_k,
            min_score=recall_options.min_score(min_score),
            query=validate.query(query),
            token_budget=validate.budget(token_budget),
            now=validate.now_or(now),
            types=validate.memory_types(types),
            tags=validate.tags(tags),
            model=model,
            neighbours=settings.neighbours if neighbours is None else neighbours,
            prefer_observations=settings.prefer_observations if prefer_observations is None else prefer_observations,
            **engine_only,
        )


Key = details.Key


class Searcher(ArmRuns):
    def __init__(
        self,
        pool: asyncpg.Pool,
        embed_query: Callable[[str], Awaitable[np.ndarray]],
        settings: Settings,
    ) -> None:
        self.pool = pool
        self.embed_query = embed_query
        self.settings = settings
        # The semantic arm's floor: the setting, else the embedding model's own (engine/embed/profiles.py).
        self.min_similarity = (
            settings.min_similarity
            if settings.min_similarity is not None
            else similarity_profile(settings.embedding_model).min_similarity
        )
        self.reranker = Reranker(settings.reranker) if settings.reranker else None
        self.common_terms = CommonTerms(pool)

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

    async def recall(self, request: RecallRequest) -> Recall:
        banks = request.banks
        with tracing.span(
            "recall",
            bank_id=banks[0],
            bank_ids=banks if len(banks) > 1 else None,
            token_budget=request.token_budget,
            top_k=request.top_k,
            filtered=request.where is not None,
            **tracing.memory_operation("search_memory", banks),
            **tracing.memory_query(request.query),
        ) as current:
            result = await self._recall(request)
            tracing.set_attributes(
                current,
                tokens=result.tokens,
                memories=len(result.memories),
                candidates=result.candidates,
                time_window=result.time_window is not None,
                **{"gen_ai.memory.record.count": len(result.memories)},
                **{f"timings_ms.{step}": round(ms, 2) for step, ms in result.timings_ms.items()},
            )
            return result

    async def _recall(self, request: RecallRequest) -> Recall:
        timings: dict[str, float] = {}
        started = time.perf_counter()
        encoding = encoding_for_model(request.model)
        window = parse_time_window(request.query, request.now)
        topic = strip_time_expression(request.query, window) if window else request.query
        banks = request.banks
        limit = max(sessions.arm_limit(request.query, self.settings.arm_limit), request.top_k or 0)
        # The query's embedding (its own thread), the bank-size lookup and then the keyword arm, which needs no
        # vector, all run at once: on a warm bank the embedding is a good share of a recall.
        embedding: asyncio.Future[np.ndarray] | None = (
            asyncio.ensure_future(timed(self.embed_query(topic.strip() or request.query), timings, "embed", started))
            if request.query_vector is None
            else None
        )
        sizes = await self._bank_sizes(request, embedding)
        searched = [bank for bank in banks if sizes.get(bank)]
        if not searched:
            discard(embedding)
            return self._result(
                request, banks, encoding, window, context="", tokens=0, considered=[] if request.explain else None
            )
        plan = ArmPlan(
            searched=searched,
            sizes=sizes,
            filters={
                bank: Filters(bank, request.types, request.tags, request.where, now=request.now) for bank in searched
            },
            topic=topic,
            # The calendar's names in it stay ("on Friday" still matches "the launch is on Friday").
            keyword_text=" ".join([topic, *calendar_names(window.expression)]) if window else topic,
            # The time expression is the temporal arm's: its words ("last" of "last spring") are no keyword terms
            # and no entities (they matched "last month" in memories of any date).
            entity_keys=_query_entity_keys(topic),
            window=window,
            limit=limit,
            timings=timings,
            started=started,
        )
        results, standing = await self._run_arms(plan, embedding, request.query, request.query_vector)
        timings["arms"] = ms_since(started)  # from the start: the embedding, the names and the keyword arm overlap
        ranked = await self._fuse_and_order(request, plan, results, standing)

        with tracing.span("recall.pack", token_budget=request.token_budget) as pack_span:
            step = time.perf_counter()
            packing = plan_packing(
                ranked,
                max_tokens=request.token_budget,
                now=request.now,
                encoding=encoding,
                chronological=chronological(request.query),
                ids_in_block=request.ids_in_block,
            )
            timings["pack"] = ms_since(step)
        shown = ranked if request.explain else [ranked[i] for i in packing.chosen]
        if shown:
            step = time.perf_counter()
            async with self.pool.acquire() as conn:
                await details.add_entities(conn, shown)
            timings["entities"] = ms_since(step)
            tracing.set_attributes(pack_span, tokens=packing.tokens, memories=len(packing.chosen))
        timings["total"] = ms_since(started)
        return self._result(
            request,
            banks,
            encoding,
            window,
            context=packing.context,
            tokens=packing.tokens,
            memories=packing.picked(ranked),
            candidates=len(ranked),
            timings_ms=timings,
            considered=packing.considered(ranked) if request.explain else None,
        )

    async def _bank_sizes(self, request: RecallRequest, embedding: asyncio.Future[Any] | None) -> dict[str, int]:
        """Each bank's memory count (a bank that does not exist: none); a bank due for a new count of its common
        terms gets one soon, for the recalls after this one."""
        try:
            rows = await self.pool.fetch(
                "SELECT bank_id, memory_count, common_terms_at FROM banks WHERE bank_id = ANY($1::text[])",
                request.banks,
            )
        except BaseException:
            discard(embedding)
            raise
        sizes: dict[str, int] = {}
        for row in rows:
            sizes[row["bank_id"]] = row["memory_count"]
            if row["memory_count"] and self.common_terms.due(row["memory_count"], row["common_terms_at"]):
                self.common_terms.refresh_soon(row["bank_id"])  # for the recalls after this one
        if request.warm_up:
            sizes = {bank: max(sizes.get(bank, 0), 1) for bank in request.banks}
        return sizes

    async def _fuse_and_order(
        self,
        request: RecallRequest,
        plan: ArmPlan,
        results: dict[str, KeyedHits],
        standing: asyncio.Future[list[RecalledMemory]],
    ) -> list[RecalledMemory]:
        """The arms' hits fused, cut to the candidates worth their details, read with them, and put in order."""
        timings, started, window = plan.timings, plan.started, plan.window
        with tracing.span("recall.fuse", banks=len(plan.searched)) as fuse_span:
            fusion = request.fusion or self.settings.fusion
            fused = (
                interleave(results, self.weights)  # type: ignore[arg-type]  # fusion works on any key; here (bank, id)
                if fusion == "interleave"
                else reciprocal_rank(results, self.weights, self.settings.rrf_k)  # type: ignore[arg-type]  # as above
            )
            timings["fuse"] = ms_since(started) - timings["arms"]
            cut = max(
                MIN_CANDIDATES, min(MAX_CANDIDATES, request.token_budget // TOKENS_PER_CANDIDATE), request.top_k or 0
            )
            cut = sessions.candidate_cut(request.query, cut)  # a question that spans sessions weighs every candidate
            ruling = window if governs(window, request.query, request.now) else None
            # Under a time range every memory the temporal arm found inside it is a candidate, however it fused:
            # they come first (order.window_first).
            in_range = {key for key, _score in results.get("temporal", [])} if ruling else set()
            fused = fused[:cut] + [f for f in fused[cut:] if f.id in in_range]
            step = time.perf_counter()
            change_cues: dict[Key, bool] = {}
            try:
                async with self.pool.acquire() as conn:
                    ranked = await details.candidates(
                        conn, plan.filters, fused, with_neighbours=request.neighbours, change_cues=change_cues
                    )
            except BaseException:
                discard(standing)
                raise
            # A task ("write a function that …") brings the user's standing instructions for it (standing.py).
            ranked = lead_with(ranked, await standing)
            timings["details"] = ms_since(step)
            step = time.perf_counter()
            ranked = await self._order(request, plan, ranked, change_cues, ruling)
            timings["order"] = ms_since(step)  # speakers, rerank, observations, changes, the time range
            tracing.set_attributes(fuse_span, fusion=fusion, candidates=len(ranked))
        return ranked

    async def _order(
        self,
        request: RecallRequest,
        plan: ArmPlan,
        ranked: list[RecalledMemory],
        change_cues: dict[Key, bool],
        ruling: TimeWindow | None,
    ) -> list[RecalledMemory]:
        """Speakers weighed, the optional reranker, observations in place of their facts, replaced facts last, the
        time range first; then min_score and top_k."""
        ranked = weigh_speakers(ranked, self.settings.assistant_weight, change_cues)
        ranked = favour_named_speakers(ranked, plan.entity_keys, self.settings.weight_speaker, self.settings.rrf_k)
        if self.reranker is not None and ranked:
            ranked = await self._rerank(request.query, ranked)
        if request.prefer_observations and ranked:
            for bank in plan.searched:
                ranked = await prefer_observations(self.pool, bank, ranked)
        ranked = span_block(ranked, request.query)  # "in what order did I …": every session, short lines
        ranked = apply_changes(ranked, request.query, change_cues)
        ranked = window_first(ranked, ruling)
        if request.min_score is not None:
            ranked = [m for m in ranked if m.score >= request.min_score]
        if request.top_k is not None:
            ranked = ranked[: request.top_k]
        return ranked

    @staticmethod
    def _result(
        request: RecallRequest, banks: list[str], encoding: Any, window: TimeWindow | None, **fields: Any
    ) -> Recall:
        return Recall(
            bank_id=banks[0],
            bank_ids=banks,
            query=request.query,
            token_budget=request.token_budget,
            encoding=encoding_name(encoding),
            time_window=window,
            **fields,
        )

    async def _rerank(self, query: str, ranked: list[RecalledMemory]) -> list[RecalledMemory]:
        assert self.reranker is not None
        head = ranked[:50]
        scores = await self.reranker.scores(query, [m.text for m in head])
        for memory, score in zip(head, scores, strict=True):
            memory.score = score
        return sorted(head, key=lambda m: -m.score) + ranked[50:]


_WORD = re.compile(r"[^\W\d_][\w'’-]{2,}")

# Names of the calendar (months, weekdays, seasons, holidays), which memories say as they are: the words of a time
# expression that stay keyword terms. Relative words ("last", "next", "ago", 去年) do not.
_CALENDAR_NAME = re.compile(
    r"\b(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|"
    r"oct(?:ober)?|nov(?:ember)?|dec(?:ember)?|(?:mon|tues|wednes|thurs|fri|satur|sun)day|spring|summer|autumn|fall|"
    r"winter|christmas|easter|thanksgiving|halloween|hanukkah|diwali|ramadan|weekend)\b"
    r"|[一二三四五六七八九十]{1,2}月|[春夏秋冬]天|(?:周|星期|礼拜)[一二三四五六日天]|春节|国庆|中秋|元旦|周末",
    re.IGNORECASE,
)


def calendar_names(expression: str) -> list[str]:
    """The names of the calendar in a time expression ("on Friday" -> ["Friday"], "last year" -> [])."""
    return _CALENDAR_NAME.findall(expression)


def _query_entity_keys(query: str) -> list[str]:
    """Keys that may name an entity of the bank: the query's entities, and — since people type "where does
    melanie live" in lower case — its plain words too. Words that name no entity simply match nothing."""
    keys = {entity_key(e) for e in extract_query_entities(query)}
    keys.update(entity_key(w) for w in _WORD.findall(query) if w.lower() not in QUERY_STOPWORDS)
    return sorted(k for k in keys if k)


__all__ = ["RecallRequest", "Searcher", "TimeWindow"]
