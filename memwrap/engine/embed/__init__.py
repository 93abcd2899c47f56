"""Embedding: the embedder and its backends (embedder.py; encoders.py, e5.py, e5_onnx.py, the ONNX export in
onnx_export.py), the model loaded on first use (lazy.py) and a store re-embedded in place (reembed.py)."""
