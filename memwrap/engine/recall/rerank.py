"""Optional reranking of fused candidates with a sentence-transformers CrossEncoder (off by default: no
cross-encoder ships offline). Set MEMWRAP_RERANKER to a model name in the local cache or a directory."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Sequence
from pathlib import Path

from memwrap.engine.embed.encoders import SENTENCE_TRANSFORMERS_EXTRA
from memwrap.errors import EmbeddingModelError


@functools.lru_cache(maxsize=4)
def _load(name: str):
    try:
        from sentence_transformers import CrossEncoder
    except ImportError as exc:
        raise EmbeddingModelError(
            f"The reranker {name!r} needs torch and sentence-transformers: {SENTENCE_TRANSFORMERS_EXTRA}"
        ) from exc
    try:
        path = str(Path(name).expanduser()) if Path(name).expanduser().exists() else name
        return CrossEncoder(path, device="cpu")
    except Exception as exc:
        raise EmbeddingModelError(
            f"Could not load the reranker {name!r}: {exc}. Set MEMWRAP_RERANKER to a local CrossEncoder directory, "
            "or unset it to recall without reranking."
        ) from exc


class Reranker:
    def __init__(self, name: str) -> None:
        self.name = name
        self._model = _load(name)

    def _scores(self, query: str, texts: Sequence[str]) -> list[float]:
        return [float(s) for s in self._model.predict([(query, t) for t in texts], show_progress_bar=False)]

    async def scores(self, query: str, texts: Sequence[str]) -> list[float]:
        if not texts:
            return []
        return await asyncio.get_running_loop().run_in_executor(None, self._scores, query, list(texts))
