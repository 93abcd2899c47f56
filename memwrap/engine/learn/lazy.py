"""An engine for processes that may never embed anything: `memwrap worker`, `memwrap jobs`, `memwrap export`.

Importing sentence-transformers and loading the model costs ~7 s and ~300 MB per process. A worker that only
groups near-duplicates (their vectors are in the database), expires facts or lists jobs never needs it; one
that writes LLM observations or refreshes mental models loads it on first use, in a thread (the event loop,
and with it the job's lease renewal, keeps running).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from functools import partial
from typing import Any

import asyncpg
import numpy as np

from memwrap.config import Settings
from memwrap.engine.embed import Embedder, shared_embedder


class LazyEmbedder:
    """The Embedder interface; the model loads on the first embed call."""

    def __init__(
        self, model_name: str, batch_size: int, dim: int, *, backend: str | None = None, home: Any = None
    ) -> None:
        self.model_name = model_name
        self.batch_size = batch_size
        self.dim = dim
        self.backend = backend
        self.home = home
        self._embedder: Embedder | None = None
        self._lock: asyncio.Lock | None = None

    @property
    def loaded(self) -> bool:
        return self._embedder is not None

    async def _load(self) -> Embedder:
        if self._embedder is None:
            if self._lock is None:
                self._lock = asyncio.Lock()
            async with self._lock:
                if self._embedder is None:
                    loop = asyncio.get_running_loop()
                    self._embedder = await loop.run_in_executor(
                        None,
                        partial(
                            shared_embedder, self.model_name, self.batch_size, backend=self.backend, home=self.home
                        ),
                    )
        return self._embedder

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return await (await self._load()).embed(texts)

    async def embed_query(self, text: str) -> np.ndarray:
        return await (await self._load()).embed_query(text)

    def close(self) -> None:
        if self._embedder is not None:
            self._embedder.close()


async def _stored_dim(url: str, model: str) -> int | None:
    """The store's embedding dimension, if it was built with `model` (else None: load the model to find out)."""
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


async def open_engine(settings: Settings) -> Any:
    """Engine.open, with a lazily loaded embedding model when the store already says its dimension."""
    from memwrap.engine.engine import Engine
    from memwrap.store.db import Store
    from memwrap.store.embedded_pg import embedded_database_url

    loop = asyncio.get_running_loop()
    url = settings.database_url
    if not url:
        url = await loop.run_in_executor(None, embedded_database_url, settings.pgdata)
    dim = await _stored_dim(url, settings.embedding_space)
    if dim is None:
        return await Engine.open(settings)  # a new store, or another model: the model decides the schema
    store = await Store.open(
        url, embedding_model=settings.embedding_space, embedding_dim=dim,
        min_size=settings.pool_min_size, max_size=settings.pool_max_size,
    )
    embedder = LazyEmbedder(
        settings.embedding_model, settings.embedding_batch_size, dim,
        backend=settings.embedding_backend, home=settings.model_cache,
    )
    engine = Engine(store, embedder, settings)  # type: ignore[arg-type]  # stands in for an Embedder until loaded
    await engine.learning.start()
    return engine
