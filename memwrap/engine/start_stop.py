"""Opening and closing an engine: the store, the model and the token counter load side by side (startup.py),
then a warm-up recall, the learning worker and the background fill of change cues; closing stops them in reverse.

`Engine` inherits these (engine/engine.py); kept apart so the engine module stays about its verbs.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from memwrap import lifecycle, tracing
from memwrap.config import Settings
from memwrap.engine.change_cues import fill_quietly
from memwrap.engine.embed.embedder import Embedder
from memwrap.engine.embed.legacy import settings_for_home
from memwrap.engine.recall.search import RecallRequest, Searcher
from memwrap.engine.startup import StartParts, drop_result, home_embedder
from memwrap.store.db import Store
from memwrap.store.pg_tuning import index_build_cap
from memwrap.tokens import encoding_for_model

if TYPE_CHECKING:
    from memwrap.engine.learn.service import Learning
    from memwrap.engine.llm.client import LLM
    from memwrap.engine.retain.reextract import Reextractor

log = logging.getLogger("memwrap.engine")

# Engine.open's warm-up recall reads this bank, which holds nothing (bank ids cannot start with two underscores
# followed by this name by accident: it is just an unlikely name; a recall on it reads, never writes).
WARMUP_BANK = "__memwrap_warmup__"


async def open_store(
    settings: Settings, parts: StartParts, *, allow_model_change: bool
) -> tuple[Store, Embedder, Settings, str | None]:
    """The store on the database server, and the embedding model (the home's former default model when it keeps
    one: embed/legacy.py); returns them with the settings the engine runs with and the kept model (or None)."""
    timings = parts.timings
    try:
        url = settings.database_url or await parts.database  # type: ignore[misc]  # set when no database_url
        kept = None
        if not allow_model_change:  # a home of the former default keeps it until reembed (embed/legacy.py)
            settings, kept = await settings_for_home(url, settings)
        if kept is None:
            embedder = await parts.model
        else:
            parts.model.add_done_callback(drop_result)  # the default model, loaded for nothing
            embedder = await asyncio.get_running_loop().run_in_executor(None, home_embedder, settings)
        start = time.perf_counter()
        store = await Store.open(
            url,
            embedding_model=settings.embedding_space,
            embedding_dim=embedder.dim,
            allow_model_change=allow_model_change,
            min_size=settings.pool_min_size,
            max_size=settings.pool_max_size,
            index_memory_cap=None if settings.database_url else index_build_cap(),
        )
        timings["store"] = round((time.perf_counter() - start) * 1000, 1)
    except BaseException:
        parts.abandon()
        raise
    return store, embedder, settings, kept


class StartStop:
    store: Store
    searcher: Searcher
    learning: Learning
    llm: LLM | None
    reextractor: Reextractor | None
    startup_ms: dict[str, float]
    _change_cues: asyncio.Task[None] | None

    async def _started(self, parts: StartParts, *, allow_model_change: bool) -> None:
        """The rest of Engine.open, once the engine is built on its store: warm up, start learning and the
        background fill of change cues; `startup_ms` says how long each part took."""
        timings = parts.timings
        start = time.perf_counter()
        if not allow_model_change:  # reembed: the stored vectors may not fit the model yet
            await self._warm_up()
        timings["first_query"] = round((time.perf_counter() - start) * 1000, 1)
        self.startup_ms = {**timings, "total": parts.elapsed_ms()}
        lifecycle.engine_started()
        log.debug("memwrap: engine started in %s ms", self.startup_ms)
        if not allow_model_change:  # no learning while every vector is being rewritten
            await self.learning.start()
        # Memories written before migration 0023 (or since changed) get their change cue (engine/change_cues.py).
        self._change_cues = asyncio.get_running_loop().create_task(
            fill_quietly(self.store.pool), name="memwrap-change-cues"
        )

    async def _warm_up(self) -> None:
        """Every recall arm once, on connections of their own, on a bank that holds nothing: the connections,
        their catalog and plan caches and the model's first run are then ready for the first real call."""
        # Nobody asked for it: no trace of it in the app's exporter (tracing.quiet).
        with tracing.quiet(), contextlib.suppress(Exception):  # the first real recall reports real errors
            await self.searcher.recall(
                RecallRequest(
                    bank_id=WARMUP_BANK,
                    query="what did we say last week?",
                    token_budget=64,
                    now=datetime.now(UTC),
                    types=None,
                    tags=None,
                    model=None,
                    neighbours=True,
                    fusion=None,
                    warm_up=True,
                )
            )
            encoding_for_model().encode("the first count on this thread builds its tokenizer state")

    async def close(self) -> None:
        if self._change_cues is not None:
            self._change_cues.cancel()
            await asyncio.gather(self._change_cues, return_exceptions=True)
        await self.learning.stop()
        if self.reextractor is not None:
            await self.reextractor.stop()
        if self.llm is not None:
            await self.llm.aclose()
        await self.searcher.close()
        await self.store.close()
