"""The ONNX export of an embedding model and its on-disk cache (the `onnx` and `onnx-int8` backends of
memwrap/engine/embed/embedder.py, whose docstring has the measurements).

A sentence-transformers model directory (`_Spec`) is exported once to one ONNX graph (transformer + pooling +
normalisation, fused by onnxruntime's transformer optimizer, checked against torch) and optionally quantised to
int8. Both files are cached under ``MEMWRAP_HOME/models/<name>-<hash>/`` (written to a temporary file and renamed
into place, under a file lock, so processes starting together export once and never read half a file); bump
EXPORT_VERSION when the recipe (graph, optimisation, quantisation) changes. Whatever cannot be exported raises
`OnnxUnsupported`, and the embedder falls back to torch.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from memwrap.engine.embed.encoders import (
    OnnxEncoder,
    _load_tokenizer,
    _offline_environment,
    _pad,
    _quiet_transformers,
    resolve_model_path,
)
from memwrap.private_files import private_dir, private_file, publish, temporary_file

log = logging.getLogger("memwrap.embed")

# Bump when the exported graph changes (inputs, pooling, optimisation): old caches are then left unused.
EXPORT_VERSION = 1
ONNX_FILE = "model.onnx"
ONNX_INT8_FILE = "model-int8.onnx"
# An exported graph must reproduce the torch model on these (padding, truncation, non-Latin text included).
_PROBE_TEXTS = (
    "dimension probe",
    "Caroline: I went to a LGBTQ support group yesterday and it was so powerful.",
    "Melanie: Wow, that's really cool!\nCaroline: Thanks, it means a lot.",
    "我昨天去了超市，买了很多水果。",
    "",
    "a very long text " * 120,
)


class OnnxUnsupported(Exception):
    """This model cannot run on the ONNX backend; the caller falls back to torch."""


class _Spec:
    """What sentence-transformers does with a model directory: tokenizer limits, pooling, lower-casing."""

    def __init__(self, model_dir: Path) -> None:
        self.model_dir = model_dir
        modules_file = model_dir / "modules.json"
        if not modules_file.exists():
            raise OnnxUnsupported(f"{model_dir} has no modules.json (not a sentence-transformers model)")
        modules = json.loads(modules_file.read_text())
        kinds = [m.get("type", "").rsplit(".", 1)[-1] for m in modules]
        if (
            not kinds
            or kinds[0] != "Transformer"
            or any(k not in ("Transformer", "Pooling", "Normalize") for k in kinds)
        ):
            raise OnnxUnsupported(f"module layout {kinds} is not Transformer + Pooling (+ Normalize)")
        if kinds.count("Transformer") != 1 or kinds.count("Pooling") != 1:
            raise OnnxUnsupported(f"module layout {kinds} is not Transformer + Pooling (+ Normalize)")
        if modules[0].get("path"):
            raise OnnxUnsupported("the transformer is not at the top of the model directory")
        pooling = next(m for m in modules if m.get("type", "").endswith("Pooling"))
        pooling_config = json.loads((model_dir / pooling.get("path", "") / "config.json").read_text())
        modes = [k for k, v in pooling_config.items() if k.startswith("pooling_mode") and v is True]
        if modes == ["pooling_mode_mean_tokens"]:
            self.pooling = "mean"
        elif modes == ["pooling_mode_cls_token"]:
            self.pooling = "cls"
        else:
            raise OnnxUnsupported(f"pooling {modes} is not supported (mean or cls only)")
        if pooling_config.get("include_prompt") is False:
            raise OnnxUnsupported("pooling that excludes the prompt is not supported")
        st_config = _read_json(model_dir / "sentence_bert_config.json")
        hf_config = _read_json(model_dir / "config.json")
        tok_config = _read_json(model_dir / "tokenizer_config.json")
        # sentence-transformers: max_seq_length if set (else the tokenizer's), capped by the position embeddings.
        length = _positive(st_config.get("max_seq_length")) or _positive(tok_config.get("model_max_length"))
        positions = _positive(hf_config.get("max_position_embeddings"))
        if length and positions:
            length = min(length, positions)
        maximum = length or positions
        if not maximum:
            raise OnnxUnsupported("no maximum sequence length found")
        self.max_length = int(maximum)
        self.lower_case = bool(st_config.get("do_lower_case", False))
        self.model_type = str(hf_config.get("model_type", ""))
        self.num_heads = int(hf_config.get("num_attention_heads", 0))
        self.hidden_size = int(hf_config.get("hidden_size", 0))
        if _read_json(model_dir / "config_sentence_transformers.json").get("default_prompt_name"):
            raise OnnxUnsupported("models with a default prompt are not supported")
        if not (model_dir / "tokenizer.json").exists():
            raise OnnxUnsupported(f"{model_dir} has no tokenizer.json (fast tokenizer)")

    def fingerprint(self) -> str:
        """Changes when the model's files, the export recipe or onnxruntime (whose fused ops it holds) change."""
        import onnxruntime

        digest = hashlib.sha256(f"memwrap-onnx-export:{EXPORT_VERSION}:{onnxruntime.__version__}".encode())
        for path in sorted(p for p in self.model_dir.rglob("*") if p.is_file() and ".git" not in p.parts):
            rel = path.relative_to(self.model_dir).as_posix()
            if path.suffix in (".json", ".txt") and path.stat().st_size < 4_000_000:
                digest.update(f"{rel}\0".encode() + path.read_bytes())
            else:  # weights: size and modification time stand for the content (hashing 90+ MB per start is not free)
                stat = path.stat()
                digest.update(f"{rel}\0{stat.st_size}\0{stat.st_mtime_ns}".encode())
        return digest.hexdigest()[:16]


def _positive(value: object) -> int | None:
    return int(value) if isinstance(value, int | float) and 0 < value < 1_000_000 else None


def _read_json(path: Path) -> dict[str, Any]:
    try:
        value = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def local_model_dir(model_name: str) -> Path:
    """The directory holding the model's files (a path, or a snapshot already in the local Hugging Face cache)."""
    path = resolve_model_path(model_name)
    if Path(path).is_dir():
        return Path(path).resolve()
    try:
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(path, local_files_only=True))
    except Exception as exc:
        raise OnnxUnsupported(f"{model_name!r} is neither a directory nor in the local Hugging Face cache") from exc


def cache_dir_for(model_name: str, spec: _Spec, models_home: Path) -> Path:
    label = re.sub(r"[^A-Za-z0-9._-]+", "_", model_name.strip("/\\")).strip("._")[-60:] or "model"
    return models_home / f"{label}-{spec.fingerprint()}"


@contextlib.contextmanager
def _export_lock(directory: Path) -> Iterator[None]:
    """One exporting process at a time per cache directory; the others wait, then find the file there."""
    private_dir(directory)
    try:
        import fcntl
    except ImportError:  # Windows: no lock; the atomic rename still keeps readers safe
        yield
        return
    with open(private_file(directory / ".lock"), "a+b") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


class _DropLibraryChatter(logging.Filter):
    """onnxruntime's quantiser logs on the root logger ('consider pre-processing...'): not the application's
    business."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "onnxruntime" not in record.pathname


def _reference_vectors(model: Any, spec: _Spec, texts: Sequence[str]) -> np.ndarray:
    """Vectors of the torch module that was exported, on the same tokens: checks the graph, not the tokenizer."""
    import torch

    tokenizer = _load_tokenizer(spec)
    ids, mask = _pad([e.ids for e in tokenizer.encode_batch(list(texts))])
    with torch.no_grad():
        return model(torch.from_numpy(ids), torch.from_numpy(mask)).numpy()


def export_onnx(spec: _Spec, destination: Path) -> None:
    """The transformer + pooling + normalisation as one ONNX graph, fused for CPU, checked against torch."""
    import torch
    from transformers import AutoModel

    _offline_environment()
    _quiet_transformers()
    # Eager attention exports to plain MatMul/Softmax that onnxruntime's optimizer fuses into its Attention op.
    bert = AutoModel.from_pretrained(str(spec.model_dir), attn_implementation="eager").eval()

    class Pooled(torch.nn.Module):
        def __init__(self, transformer: torch.nn.Module) -> None:
            super().__init__()
            self.transformer = transformer

        def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
            tokens = self.transformer(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
            if spec.pooling == "cls":
                pooled = tokens[:, 0]
            else:  # mean over real tokens, as sentence_transformers.models.Pooling
                mask = attention_mask.unsqueeze(-1).to(tokens.dtype)
                pooled = (tokens * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            return torch.nn.functional.normalize(pooled, p=2, dim=1)

    model = Pooled(bert).eval()
    raw = temporary_file(destination.parent, ".raw.onnx")
    fused = temporary_file(destination.parent, ".onnx")
    try:
        # A padded example: tracing must follow the masked path (an all-ones mask may be optimised away).
        example_mask = torch.ones(2, 8, dtype=torch.long)
        example_mask[1, 5:] = 0
        example = (torch.full((2, 8), 1000, dtype=torch.long), example_mask)
        import warnings

        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # tracer and deprecation chatter
            torch.onnx.export(
                model,
                example,
                str(raw),
                input_names=["input_ids", "attention_mask"],
                output_names=["sentence_embedding"],
                dynamic_axes={
                    "input_ids": {0: "batch", 1: "sequence"},
                    "attention_mask": {0: "batch", 1: "sequence"},
                    "sentence_embedding": {0: "batch"},
                },
                opset_version=17,
                do_constant_folding=True,
                dynamo=False,
            )
        candidates = [raw]
        if spec.model_type == "bert" and spec.num_heads and spec.hidden_size:
            try:
                from onnxruntime.transformers import optimizer

                optimized = optimizer.optimize_model(
                    str(raw), model_type="bert", num_heads=spec.num_heads, hidden_size=spec.hidden_size, opt_level=0
                )
                optimized.save_model_to_file(str(fused))
                candidates.insert(0, fused)
            except Exception as exc:  # noqa: BLE001 - the unfused graph is still correct, only slower
                log.info("onnxruntime's transformer optimizer failed (%s); keeping the unfused graph", exc)
        reference = _reference_vectors(model, spec, _PROBE_TEXTS)
        agreement = 0.0
        for source in candidates:  # the fused graph if it reproduces torch, else the plain export
            exported = OnnxEncoder(source, spec).encode(list(_PROBE_TEXTS), batch_size=len(_PROBE_TEXTS))
            agreement = float((reference * exported).sum(axis=1).min())
            if agreement >= 0.9999:
                publish(source, destination)
                return
            log.info("the ONNX graph %s disagrees with torch (cosine %.5f)", source.name, agreement)
        raise OnnxUnsupported(f"the exported graph disagrees with torch (cosine {agreement:.5f})")
    finally:
        for leftover in (raw, fused):
            leftover.unlink(missing_ok=True)


_GELU_OPS = {"Gelu", "BiasGelu", "FastGelu", "QuickGelu"}


def _gelu_fed_matmuls(model: Any) -> list[str]:
    """The feed-forward output projections: MatMuls whose input is a GELU's output.

    GELU outputs carry a few large outliers; quantised per tensor (as dynamic quantisation does with activations)
    they crush every other value. Kept in float32, the int8 model's vectors go from a median cosine of 0.993 to
    0.996 (worst 0.94 → 0.984 on LoCoMo turns) and LoCoMo recall at 256 tokens from -0.01 to torch's level,
    for ~25% of int8's speed.
    """
    producers = {out: node.op_type for node in model.graph.node for out in node.output}
    excluded = []
    for node in model.graph.node:
        if node.op_type == "MatMul" and node.input and producers.get(node.input[0]) in _GELU_OPS:
            excluded.append(node.name)
    return excluded


def quantize_onnx(source: Path, destination: Path) -> None:
    """Dynamic int8 quantisation of the weights (activations quantised per batch at run time)."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    temp = temporary_file(destination.parent, ".onnx")
    chatter = _DropLibraryChatter()
    logging.getLogger().addFilter(chatter)
    try:
        quantize_dynamic(
            str(source),
            str(temp),
            weight_type=QuantType.QInt8,
            # Per-tensor weight scales cost MiniLM a median cosine of 0.955 to the exact vectors; per-channel, 0.993.
            per_channel=True,
            nodes_to_exclude=_gelu_fed_matmuls(onnx.load(str(source))),
            # The fused contrib ops (Attention, SkipLayerNormalization) have no shape inference in onnx.
            extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT},
        )
        publish(temp, destination)
    finally:
        logging.getLogger().removeFilter(chatter)
        temp.unlink(missing_ok=True)


def ensure_onnx_model(model_name: str, models_home: Path, *, int8: bool = False) -> tuple[Path, _Spec]:
    """The cached ONNX file for a model, exporting (and quantising) it first if it is not there yet."""
    _offline_environment()
    spec = _Spec(local_model_dir(model_name))
    directory = cache_dir_for(model_name, spec, Path(models_home).expanduser())
    fp32, target = directory / ONNX_FILE, directory / (ONNX_INT8_FILE if int8 else ONNX_FILE)
    if target.exists():
        return target, spec
    with _export_lock(directory):
        for stale in directory.glob(".tmp-*"):  # left by a process killed mid-export (it no longer holds the lock)
            stale.unlink(missing_ok=True)
        if not fp32.exists():  # another process may have written it while this one waited for the lock
            log.info("exporting the embedding model %s to ONNX in %s (once)", model_name, directory)
            export_onnx(spec, fp32)
        if int8 and not target.exists():
            quantize_onnx(fp32, target)
    return target, spec
