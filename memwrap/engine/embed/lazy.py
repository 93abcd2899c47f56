"""An embedding model loaded on first use, for processes that may never embed anything: `memwrap worker`,
`memwrap jobs`, `memwrap export` (open_engine(..., model_on_first_use=True) in engine/startup.py).

Loading the model (onnxruntime, the graph built from the weights) costs a few seconds and a few hundred MB per
process. A worker that only groups near-duplicates (their vectors are in the database), expires facts or lists
jobs never needs it; one that writes LLM observations or refreshes mental models loads it on first use, in a
thread (the event loop, and with it the job's lease renewal, keeps running).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from functools import partial
from typing import Any

import numpy as np

from memwrap.engine.embed.embedder import Embedder, shared_embedder


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
