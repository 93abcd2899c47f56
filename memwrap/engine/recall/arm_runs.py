"""One recall's arms, run at once over each bank searched: the names of the question's entities, the keyword arm
(started first: it needs no vector), the semantic and temporal arms (started once the vector is there), the graph
arm (once the names are), and the bank's standing instructions read meanwhile (Searcher._recall, search.py).

`Searcher` inherits these; kept apart so search.py reads as the recall's steps.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any
from uuid import UUID

import asyncpg
import numpy as np

from memwrap import tracing
from memwrap.engine.banks.names import han_names, names_in, with_names
from memwrap.engine.language.entities import entity_key
from memwrap.engine.language.text import search_text, without_function_words
from memwrap.engine.recall import arms, details
from memwrap.engine.recall.arms import Filters, Hits
from memwrap.engine.recall.fusion import merge_banks
from memwrap.engine.recall.names import related_names
from memwrap.engine.recall.standing import standing_instructions
from memwrap.models import RecalledMemory, TimeWindow

KeyedHits = list[tuple[details.Key, float]]


@dataclass
class ArmPlan:
    """What one recall searches, worked out before its arms start."""

    searched: list[str]  # the banks that hold something
    sizes: dict[str, int]  # their memory counts
    filters: dict[str, Filters]
    topic: str  # the question without its time expression
    keyword_text: str  # the topic, with the calendar's names of the time expression
    entity_keys: list[str]
    window: TimeWindow | None
    limit: int  # each arm's
    timings: dict[str, float]
    started: float  # perf_counter() at the recall's start


class ArmRuns:
    pool: asyncpg.Pool
    min_similarity: float

    async def _run_arms(
        self, plan: ArmPlan, embedding: asyncio.Future[np.ndarray] | None, query: str, query_vector: Any
    ) -> tuple[dict[str, KeyedHits], asyncio.Future[list[RecalledMemory]]]:
        """Every arm's hits, merged over the banks, and the standing instructions (still being read)."""
        timings, started = plan.timings, plan.started
        # The other names of the question's entities (张伟 for "Zhang Wei"): the keyword and graph arms use them.
        names = {
            bank: asyncio.ensure_future(
                timed(self._names(bank, plan.topic, plan.entity_keys), timings, "names", started)
            )
            for bank in plan.searched
        }
        keyword = {
            bank: asyncio.ensure_future(
                self._keyword(plan.filters[bank], plan.keyword_text, names[bank], plan.limit, plan.sizes[bank], timings)
            )
            for bank in plan.searched
        }
        try:
            vector = query_vector if embedding is None else await embedding
        except BaseException:
            for future in [*keyword.values(), *names.values()]:
                discard(future)
            raise
        # The arms that need only the vector start now, while the names (and the keyword arm) may still run;
        # the graph arm waits for the names too.
        early = self._start_vector_arms(plan, vector)
        try:
            related = {bank: await names[bank] for bank in plan.searched}
        except BaseException:
            for future in [*keyword.values(), *names.values(), *early.values()]:
                discard(future)
            raise
        tasks = self._arm_tasks(plan, vector, early, keyword, related)
        # A task's standing instructions depend on the question alone: read while the arms finish.
        standing = asyncio.ensure_future(standing_instructions(self.pool, plan.filters, query))
        try:
            arm_hits = await asyncio.gather(*tasks.values())
        except BaseException:
            discard(standing)
            raise
        return merge_banks(dict(zip(tasks, arm_hits, strict=True)), plan.limit), standing

    def _start_vector_arms(self, plan: ArmPlan, vector: Any) -> dict[tuple[str, str], asyncio.Task[Hits]]:
        """The nearest memories of each bank (one scan for the semantic arm and the graph arm's seeds), and its
        temporal arm when the question names a time range, started."""
        early: dict[tuple[str, str], asyncio.Task[Hits]] = {}
        window, timings = plan.window, plan.timings
        for bank in plan.searched:
            size, bank_filters = plan.sizes[bank], plan.filters[bank]
            early[("nearest", bank)] = asyncio.ensure_future(
                self._arm(
                    "semantic",
                    bank,
                    timings,
                    self._on_connection,
                    arms.nearest,
                    bank_filters,
                    vector,
                    plan.limit,
                    size,
                )
            )
            if window is not None:
                early[("temporal", bank)] = asyncio.ensure_future(
                    self._arm(
                        "temporal",
                        bank,
                        timings,
                        self._on_connection,
                        arms.temporal,
                        bank_filters,
                        vector,
                        window.start,
                        window.end,
                        plan.limit,
                    )
                )
        return early

    def _arm_tasks(
        self,
        plan: ArmPlan,
        vector: Any,
        early: dict[tuple[str, str], asyncio.Task[Hits]],
        keyword: Mapping[str, Awaitable[Hits]],
        related: dict[str, list[tuple[str, str]]],
    ) -> dict[tuple[str, str], Awaitable[Hits]]:
        """Every arm of every bank, in the arms' usual order (fusion breaks ties by it); the graph arm starts here."""
        tasks: dict[tuple[str, str], Awaitable[Hits]] = {}
        timings = plan.timings
        for bank in plan.searched:
            graph_keys = sorted({*plan.entity_keys, *(key for _name, key in related[bank])})
            nearest = early[("nearest", bank)]
            tasks[("semantic", bank)] = _above(nearest, self.min_similarity)
            tasks[("keyword", bank)] = self._arm("keyword", bank, timings, _awaited, keyword[bank])
            tasks[("graph", bank)] = self._graph(plan, bank, vector, graph_keys, nearest)
            if ("temporal", bank) in early:
                tasks[("temporal", bank)] = early[("temporal", bank)]
        return tasks

    async def _on_connection(self, fn: Callable[..., Awaitable[Hits]], *args: Any) -> Hits:
        async with self.pool.acquire() as conn:
            return await fn(conn, *args)

    async def _arm(
        self, arm: str, bank_id: str, timings: dict[str, float], fn: Callable[..., Awaitable[Hits]], *args: Any
    ) -> Hits:
        with tracing.span("recall.arm", arm=arm, bank_id=bank_id) as current:
            started = time.perf_counter()
            hits = await fn(*args)
            if fn is not _awaited:  # the keyword arm, started before the others, times itself (_keyword)
                # Its own time (the arms run at once: they add up to more than the wall time of "arms").
                timings[f"arm.{arm}"] = timings.get(f"arm.{arm}", 0.0) + ms_since(started)
            tracing.set_attributes(current, hits=len(hits))
            return hits

    async def _names(self, bank_id: str, query: str, entity_keys: list[str]) -> list[tuple[str, str]]:
        """(name, key) of the question's entities in this bank besides `entity_keys`: the bank's Han names the
        question holds (jieba may have cut them: banks/names.py), and the other names of all of them."""
        seen = [(name, entity_key(name)) for name in sorted(await names_in(self.pool, bank_id, query))]
        keys = sorted({*entity_keys, *(key for _name, key in seen)})
        related = await related_names(self.pool, bank_id, keys)
        return [*seen, *related]

    async def _graph(
        self, plan: ArmPlan, bank_id: str, vector: Any, entity_keys: list[str], nearest: Awaitable[Hits]
    ) -> Hits:
        """The graph arm, started once its seeds are known (timed from then: its own time)."""
        filters, size = plan.filters[bank_id], plan.sizes[bank_id]
        graph = functools.partial(arms.graph, seed_ids=await self._shared_seeds(filters, plan.limit, size, nearest))
        return await self._arm(
            "graph", bank_id, plan.timings, self._on_connection, graph, filters, vector, entity_keys, plan.limit, size
        )

    async def _shared_seeds(
        self, filters: Filters, limit: int, bank_size: int, nearest: Awaitable[Hits]
    ) -> list[UUID] | None:
        """The graph arm's seeds from the semantic arm's scan, when they are the ones it would find itself: the
        bank's nearest-memory scan, the costliest step of both arms, then runs once. None: the arm scans on its own
        (filtered, the semantic arm's memories pass the filter, while the graph's seeds need not)."""
        count = arms.seed_count(bank_size)
        if filters.narrowed or limit < count:
            return None
        return [memory_id for memory_id, _score in await nearest][:count]

    async def _keyword(
        self,
        filters: Filters,
        query: str,
        names: asyncio.Future[list[tuple[str, str]]],
        limit: int,
        bank_size: int,
        timings: dict[str, float],
    ) -> Hits:
        related = await names
        started = time.perf_counter()
        # Other languages' function words are no terms ("mi", "que": rare in a mostly English bank, so the arm
        # would take them for telling words; text.LATIN_FUNCTION_WORDS). English ones the text-search config drops.
        text = " ".join([without_function_words(query), *(name for name, _key in related)])
        words = with_names(search_text(text), han_names(name for name, _key in related))
        try:
            return await self._on_connection(arms.keyword, filters, words, limit, bank_size)
        finally:
            timings["arm.keyword"] = timings.get("arm.keyword", 0.0) + ms_since(started)


async def _awaited(future: Awaitable[Hits]) -> Hits:
    return await future


async def _above(nearest: Awaitable[Hits], min_similarity: float) -> Hits:
    """The semantic arm: the nearest memories at least `min_similarity` similar to the question."""
    return arms.above(await nearest, min_similarity)


def discard(future: asyncio.Future[Any] | None) -> None:
    """Abandon a started step whose result is no longer wanted, without an unretrieved-exception warning."""
    if future is not None:
        future.cancel()
        future.add_done_callback(lambda f: f.cancelled() or f.exception())


async def timed(step: Awaitable[Any], timings: dict[str, float], name: str, started: float) -> Any:
    """`step`'s result, with when it was done (ms from `started`) in timings[name]."""
    try:
        return await step
    finally:
        timings[name] = ms_since(started)


def ms_since(since: float) -> float:
    return (time.perf_counter() - since) * 1000.0
