"""The BERT encoder both ONNX models build (minilm.py's all-MiniLM-L6-v2, e5_onnx.py's multilingual-e5-small): the
nodes and initialisers of one graph, and the loop of its transformer layers on onnxruntime's operators.

What differs between the models is a parameter: how a matrix product is spelled (`Linear`: int8, 4-bit or float32
weights, SmoothQuant), where the float tensors come from, whether the attention takes a key padding mask, whether
the residual layer norms are onnxruntime's fused SkipLayerNormalization (MiniLM) or Add + LayerNormalization
(e5, ~5x faster on onnxruntime 1.32's CPU kernels), and the last layer's output name. Each layer is:

    qkv = x @ [Wq Wk Wv]; q, k, v = Split(qkv); ctx = MultiHeadAttention(q, k, v, bias_qkv[, mask])
    mid = LayerNorm(ctx @ Wao + b_ao + x); out = LayerNorm(BiasGelu(mid @ Wfi, b_fi) @ Wfo + b_fo + mid)

Node and initialiser names, and their order, are the ones each model's graph had before this module: the graphs
are byte-identical (tests/test_embed_e5.py and the MiniLM reference vectors check the numbers).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

__all__ = ["EncoderGraph", "Linear", "encoder_layers"]


class Linear(Protocol):
    """out = source @ the matrix `role` ("qkv", "ao", "fi", "fo") of layer `layer` (+ the float tensor `bias`:
    given only when the residual norm does not add it)."""

    def __call__(self, source: str, layer: int, role: str, out: str, bias: str | None) -> None: ...


@dataclass
class EncoderGraph:
    """An ONNX graph being built: its nodes and initialisers in the order they are made."""

    tensors: Callable[[str], np.ndarray]  # the model's float tensors by name ("l0.aln.w", "emb.ln.b", ...)
    nodes: list[Any] = field(default_factory=list)
    initialisers: list[Any] = field(default_factory=list)

    def constant(self, name: str, value: np.ndarray) -> str:
        from onnx import numpy_helper

        self.initialisers.append(numpy_helper.from_array(np.ascontiguousarray(value), name))
        return name

    def floats(self, name: str) -> str:
        """The model's float tensor `name` as an initialiser of that name."""
        return self.constant(name, self.tensors(name))

    def node(self, op: str, inputs: list[str], outputs: list[str], **attributes: Any) -> None:
        from onnx import helper

        self.nodes.append(helper.make_node(op, inputs, outputs, **attributes))

    def residual_norm(self, source: str, skip: str, norm: str, bias: str, out: str, *, eps: float, fused: bool) -> None:
        """LayerNorm(source + bias + skip): `source` unbiased for the fused SkipLayerNormalization, which adds
        `bias` itself; already biased for Add + LayerNormalization."""
        if not fused:
            self.node("Add", [source, skip], [source + ".sum"])
            self.node(
                "LayerNormalization",
                [source + ".sum", self.floats(norm + ".w"), self.floats(norm + ".b")],
                [out],
                epsilon=eps,
                axis=-1,
            )
            return
        self.node(
            "SkipLayerNormalization",
            [source, skip, self.floats(norm + ".w"), self.floats(norm + ".b"), self.floats(bias)],
            [out],
            domain="com.microsoft",
            epsilon=eps,
        )

    def serialise(self, name: str, inputs: list[Any], outputs: list[Any]) -> bytes:
        """The model (opset 17 and com.microsoft 1, IR 8), each node named after its first output."""
        from onnx import helper

        for node in self.nodes:
            node.name = node.output[0]
        graph = helper.make_graph(self.nodes, name, inputs, outputs, initializer=self.initialisers)
        model = helper.make_model(
            graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)], ir_version=8
        )
        return bytes(model.SerializeToString())


def encoder_layers(
    graph: EncoderGraph,
    linear: Linear,
    *,
    layers: int,
    hidden: int,
    heads: int,
    eps: float,
    fused_skip: bool,
    key_padding_mask: str | None = None,
    last_output: str | None = None,
) -> str:
    """The transformer layers on the graph's "x" [B, T, hidden]; returns the last layer's output name
    (`last_output`, or "l<n>.out")."""
    graph.constant("qkv.split", np.array([hidden] * 3, dtype=np.int64))
    x = "x"
    for layer in range(layers):
        p = f"l{layer}"
        linear(x, layer, "qkv", f"{p}.qkv", None)
        graph.node("Split", [f"{p}.qkv", "qkv.split"], [f"{p}.q", f"{p}.k", f"{p}.v"], axis=-1)
        bias = graph.constant(f"{p}.qkv.b", np.concatenate([graph.tensors(f"{p}.{n}.b") for n in ("q", "k", "v")]))
        mask = [key_padding_mask] if key_padding_mask is not None else []
        graph.node(
            "MultiHeadAttention",
            [f"{p}.q", f"{p}.k", f"{p}.v", bias, *mask],
            [f"{p}.ctx"],
            domain="com.microsoft",
            num_heads=heads,
        )
        linear(f"{p}.ctx", layer, "ao", f"{p}.ao", None if fused_skip else f"{p}.ao.b")
        graph.residual_norm(f"{p}.ao", x, f"{p}.aln", f"{p}.ao.b", f"{p}.mid", eps=eps, fused=fused_skip)
        linear(f"{p}.mid", layer, "fi", f"{p}.fi", None)
        graph.node("BiasGelu", [f"{p}.fi", graph.floats(f"{p}.fi.b")], [f"{p}.gelu"], domain="com.microsoft")
        linear(f"{p}.gelu", layer, "fo", f"{p}.fo", None if fused_skip else f"{p}.fo.b")
        out = last_output if last_output is not None and layer == layers - 1 else f"{p}.out"
        graph.residual_norm(f"{p}.fo", f"{p}.mid", f"{p}.oln", f"{p}.fo.b", out, eps=eps, fused=fused_skip)
        x = out
    return x
