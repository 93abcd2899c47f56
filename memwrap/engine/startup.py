"""Starting an engine: its independent parts load side by side, each one timed (`Engine.startup_ms`).

    engine = await open_engine(settings)

The parts are the database (attach to, or start, the embedded PostgreSQL), the embedding model (onnxruntime
session) and the token counter (tiktoken's tables), each in a thread of its own, and the engine's own modules
(memwrap/engine/engine.py and everything it imports). `open_engine` begins the parts *before* importing those
modules, so the database server starts and the model loads while Python imports the rest: on 2 cores the
import alone is about as long as the parts. This module imports nothing heavy, for the same reason.

    engine = await open_engine(settings, model_on_first_use=True)

is the start of a process that may never embed (`memwrap worker`, `memwrap jobs`, `memwrap export`): the model
loads on its first use instead (engine/embed/lazy.py).
"""

from __future__ import annotations

import asyncio
import importlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from memwrap.config import Settings


@dataclass
class StartParts:
    """The parts in flight (asyncio futures over threads) and how long each took, in ms."""

    database: asyncio.Future[str] | None  # None with MEMWRAP_DATABASE_URL: nothing to start
    model: asyncio.Future[Any]
    tokenizer: asyncio.Future[Any]
    began: float = field(default_factory=time.perf_counter)
    timings: dict[str, float] = field(default_factory=dict)

    @classmethod
    def begin(cls, settings: Settings) -> StartParts:
        timings: dict[str, float] = {}
        database = None if settings.database_url else _timed(timings, "database", lambda: _database_url(settings))
        model = _timed(timings, "model", lambda: _embedder(settings))
        tokenizer = _timed(timings, "tokenizer", _token_counter)
        return cls(database=database, model=model, tokenizer=tokenizer, timings=timings)

    def abandon(self) -> None:
        """The start failed: threads already loading go on, their results (or errors) are dropped."""
        for part in (self.database, self.model, self.tokenizer):
            if part is not None:
                part.cancel()
                part.add_done_callback(_drop_result)

    def elapsed_ms(self) -> float:
        return round((time.perf_counter() - self.began) * 1000, 1)


async def open_engine(settings: Settings, *, allow_model_change: bool = False, model_on_first_use: bool = False) -> Any:
    """Begin the parts, import the engine meanwhile, then open it on them (memwrap.engine.engine.Engine).

    `model_on_first_use`: for processes that may never embed anything (`memwrap worker`, `memwrap jobs`,
    `memwrap export`). When the store already says its embedding dimension, the model is not loaded at start but
    on the first embed call (engine/embed/lazy.py); a new store, or one built with another model, opens as usual
    (the model decides the schema)."""
    if model_on_first_use and not allow_model_change:
        engine = await _open_with_model_on_first_use(settings)
        if engine is not None:
            return engine
    parts = StartParts.begin(settings)
    try:
        module = await _timed(parts.timings, "import", lambda: importlib.import_module("memwrap.engine.engine"))
    except BaseException:
        parts.abandon()
        raise
    return await module.Engine.open(settings, allow_model_change=allow_model_change, parts=parts)


async def _open_with_model_on_first_use(settings: Settings) -> Any | None:
    """The engine on a LazyEmbedder, or None when the store does not say its dimension for this model."""
    from memwrap.engine.embed.lazy import LazyEmbedder
    from memwrap.store.db import Store

    engine_class = importlib.import_module("memwrap.engine.engine").Engine  # the one way in, as open_engine's

    url = settings.database_url
    if not url:
        url = await asyncio.get_running_loop().run_in_executor(None, _database_url, settings)
    from memwrap.engine.embed.legacy import settings_for_home

    settings, kept = await settings_for_home(url, settings)  # a home of the former default keeps it
    dim = await _stored_dim(url, settings.embedding_space)
    if dim is None:
        return None
    store = await Store.open(
        url,
        embedding_model=settings.embedding_space,
        embedding_dim=dim,
        min_size=settings.pool_min_size,
        max_size=settings.pool_max_size,
    )
    embedder = LazyEmbedder(
        settings.embedding_model,
        settings.embedding_batch_size,
        dim,
        backend=settings.embedding_backend,
        home=settings.model_cache,
    )
    engine = engine_class(store, embedder, settings)
    engine.kept_model = kept
    await engine.learning.start()
    return engine


async def _stored_dim(url: str, model: str) -> int | None:
    """The store's embedding dimension, if it was built with `model` (else None: load the model to find out)."""
    import asyncpg

    conn = await asyncpg.connect(url)
    try:
        if not await conn.fetchval("SELECT to_regclass('store_meta') IS NOT NULL"):
            return None
        rows = {r["key"]: r["value"] for r in await conn.fetch("SELECT key, value FROM store_meta")}
    finally:
        await conn.close()
    if rows.get("embedding_model") != model or not rows.get("embedding_dim"):
        return None
    return int(rows["embedding_dim"])


def _timed(timings: dict[str, float], name: str, load: Callable[[], Any]) -> asyncio.Future[Any]:
    async def run() -> Any:
        start = time.perf_counter()
        try:
            return await asyncio.get_running_loop().run_in_executor(None, load)
        finally:
            timings[name] = round((time.perf_counter() - start) * 1000, 1)

    return asyncio.ensure_future(run())


def _database_url(settings: Settings) -> str:
    from memwrap.store.embedded_pg import embedded_database_url

    return embedded_database_url(settings.pgdata)


def _embedder(settings: Settings) -> Any:
    from memwrap.engine.embed.embedder import shared_embedder

    return shared_embedder(
        settings.embedding_model,
        settings.embedding_batch_size,
        backend=settings.embedding_backend,
        home=settings.model_cache,
    )


def _token_counter() -> Any:
    from memwrap.tokens import encoding_for_model

    return encoding_for_model()


def _drop_result(future: asyncio.Future[Any]) -> None:
    """A part abandoned after another failed: its own error is not worth a "never retrieved" warning."""
    if not future.cancelled():
        future.exception()


# For Engine.open, which loads another model than the one begun when the home keeps a former default
# (engine/embed/legacy.py).
home_embedder = _embedder
drop_result = _drop_result
