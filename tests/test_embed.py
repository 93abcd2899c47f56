"""Embedding backends (engine/embed/embedder.py): torch and ONNX give the same vectors; the ONNX export is made once,
cached under MEMWRAP_HOME/models and shared safely between processes. No timing assertions (engine/embed/embedder.py's
docstring has the measured comparison)."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from memwrap.config import Settings
from memwrap.engine.embed import embedder as embed
from memwrap.engine.embed import onnx_export as embed_export
from memwrap.engine.embed.embedder import Embedder, available_cpus, ensure_onnx_model
from memwrap.errors import EmbeddingModelError

MODEL = "all-MiniLM-L6-v2"
ROOT = Path(__file__).resolve().parents[1]

TEXTS = [
    "Caroline: I went to a LGBTQ support group yesterday and it was so powerful.",
    "Melanie: Wow, that's really cool! What did you learn there?\nCaroline: That I am not alone.",
    "Yes, it was amazing!",
    "我昨天去了超市，买了很多新鲜的水果和蔬菜。",
    "Café crème, naïve résumé — ünïcödé façade.",
    "",
    "   ",
    "word " * 1000,  # far past the 256-token limit
    "The quarterly report is due on Friday; please send the figures by Thursday noon.",
]


@pytest.fixture(scope="module")
def models_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("embed-home")


@pytest.fixture(scope="module")
def torch_embedder() -> Embedder:
    return Embedder(MODEL, backend="torch")


@pytest.fixture(scope="module")
def onnx_embedder(models_home: Path) -> Embedder:
    embedder = Embedder(MODEL, backend="onnx", home=models_home)
    assert embedder.backend == "onnx"  # not a silent fallback to torch
    return embedder


@pytest.fixture(scope="module")
def int8_embedder(models_home: Path, onnx_embedder: Embedder) -> Embedder:
    embedder = Embedder(MODEL, backend="onnx-int8", home=models_home)
    assert embedder.backend == "onnx-int8"
    return embedder


def _cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a * b).sum(axis=1)


def test_onnx_matches_torch(torch_embedder: Embedder, onnx_embedder: Embedder) -> None:
    reference = torch_embedder.encode(TEXTS)
    vectors = onnx_embedder.encode(TEXTS)
    assert _cosines(reference, vectors).min() > 0.9999
    # Batch composition (padding, order) does not change a text's vector.
    one_by_one = np.stack([onnx_embedder.encode([t])[0] for t in TEXTS])
    assert _cosines(one_by_one, vectors).min() > 0.99999


def test_int8_is_close_to_torch(torch_embedder: Embedder, int8_embedder: Embedder) -> None:
    cosines = _cosines(torch_embedder.encode(TEXTS), int8_embedder.encode(TEXTS))
    assert cosines.min() > 0.97  # LoCoMo turns: median 0.996, worst 0.984
    assert np.median(cosines) > 0.99


@pytest.mark.parametrize("backend", ["torch", "onnx", "onnx-int8"])
def test_shapes_and_unit_length(
    backend: str, torch_embedder: Embedder, onnx_embedder: Embedder, int8_embedder: Embedder
) -> None:
    embedder = {"torch": torch_embedder, "onnx": onnx_embedder, "onnx-int8": int8_embedder}[backend]
    assert embedder.dim == 384
    vectors = embedder.encode(TEXTS)
    assert vectors.shape == (len(TEXTS), 384)
    assert vectors.dtype == np.float32
    assert np.isfinite(vectors).all()
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


@pytest.mark.parametrize("backend", ["torch", "onnx", "onnx-int8"])
async def test_empty_input(
    backend: str, torch_embedder: Embedder, onnx_embedder: Embedder, int8_embedder: Embedder
) -> None:
    embedder = {"torch": torch_embedder, "onnx": onnx_embedder, "onnx-int8": int8_embedder}[backend]
    assert (await embedder.embed([])).shape == (0, 384)
    assert embedder.encode([]).shape == (0, 384)
    blank = await embedder.embed([""])
    assert blank.shape == (1, 384)
    assert abs(float(np.linalg.norm(blank[0])) - 1.0) < 1e-5


async def test_query_embedding_is_the_text_embedding(onnx_embedder: Embedder) -> None:
    query = "When did Caroline go to the support group?"
    vector = await onnx_embedder.embed_query(query)
    assert vector.shape == (384,)
    np.testing.assert_allclose(vector, onnx_embedder.encode([query])[0], atol=1e-6)
    assert (await onnx_embedder.embed_query(query)) is vector  # cached


def test_long_input_is_truncated_like_sentence_transformers(
    torch_embedder: Embedder, onnx_embedder: Embedder, models_home: Path
) -> None:
    _, spec = ensure_onnx_model(MODEL, models_home / "models")
    torch_length = torch_embedder._encoder.model.max_seq_length  # type: ignore[attr-defined]  # torch's encoder
    assert spec.max_length == torch_length == 256
    words = " ".join(f"w{i}" for i in range(3000))
    longer = words + " and a very different ending about volcanoes and submarines"
    # Only the first 256 tokens count: what follows changes nothing.
    np.testing.assert_allclose(onnx_embedder.encode([words])[0], onnx_embedder.encode([longer])[0], atol=1e-6)
    assert float(torch_embedder.encode([words])[0] @ onnx_embedder.encode([words])[0]) > 0.9999


def test_chinese_text(torch_embedder: Embedder, onnx_embedder: Embedder) -> None:
    texts = ["我今天去了超市买水果", "我今天去超市买了苹果和香蕉", "机器学习模型需要大量的数据"]
    reference, vectors = torch_embedder.encode(texts), onnx_embedder.encode(texts)
    assert _cosines(reference, vectors).min() > 0.9999
    blank = onnx_embedder.encode([""])[0]
    assert float(vectors[0] @ blank) < 0.99  # characters became tokens, not [UNK]s or nothing
    assert float(vectors[0] @ vectors[1]) > float(vectors[0] @ vectors[2])


def test_export_is_cached_and_reused(onnx_embedder: Embedder, models_home: Path) -> None:
    path, _ = ensure_onnx_model(MODEL, models_home / "models")
    assert path == onnx_embedder._encoder.path  # type: ignore[attr-defined]  # the ONNX encoder's path
    assert path.parent.parent == models_home / "models"
    assert path.parent.name.startswith(MODEL + "-")
    before = path.stat()
    # A new process finds the file: it neither exports again nor even imports torch.
    script = textwrap.dedent(
        f"""
        import json, sys
        from memwrap.engine.embed.embedder import Embedder
        e = Embedder({MODEL!r}, backend="onnx", home={str(models_home)!r})
        print(json.dumps({{"backend": e.backend, "torch": "torch" in sys.modules,
                          "sentence_transformers": "sentence_transformers" in sys.modules}}))
        """
    )
    out = _run_python(script)
    assert json.loads(out.strip().splitlines()[-1]) == {
        "backend": "onnx",
        "torch": False,
        "sentence_transformers": False,
    }
    after = path.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    assert not list(path.parent.glob(".tmp-*"))


@pytest.mark.slow
def test_two_processes_exporting_at_once(tmp_path: Path, onnx_embedder: Embedder) -> None:
    """Two processes start on an empty cache together: both come up on ONNX with the same vectors, one file."""
    home = tmp_path / "race-home"
    script = textwrap.dedent(
        f"""
        import json, logging
        logging.basicConfig(level=logging.WARNING)
        logging.getLogger("memwrap.embed").setLevel(logging.INFO)
        from memwrap.engine.embed.embedder import Embedder
        e = Embedder({MODEL!r}, backend="onnx-int8", home={str(home)!r})
        print(json.dumps({{"backend": e.backend, "vector": e.encode(["a race"])[0].tolist()}}))
        """
    )
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", script], cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for _ in range(2)
    ]
    results, logs = [], ""
    for proc in procs:
        out, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err[-3000:]
        results.append(json.loads(out.strip().splitlines()[-1]))
        logs += err
    assert [r["backend"] for r in results] == ["onnx-int8", "onnx-int8"]
    assert logs.count("exporting the embedding model") == 1  # the other process waited, then used that file
    assert "using torch" not in logs
    np.testing.assert_allclose(results[0]["vector"], results[1]["vector"], atol=1e-6)
    (directory,) = (home / "models").iterdir()
    assert sorted(p.name for p in directory.iterdir() if not p.name.startswith(".lock")) == [
        "model-int8.onnx",
        "model.onnx",
    ]


def test_stale_temp_files_are_cleared(tmp_path: Path, models_home: Path, onnx_embedder: Embedder) -> None:
    path, _ = ensure_onnx_model(MODEL, models_home / "models")
    stale = path.parent / ".tmp-killed-mid-export.onnx"
    stale.write_bytes(b"half a model")
    (path.parent / embed.ONNX_INT8_FILE).unlink(missing_ok=True)
    ensure_onnx_model(MODEL, models_home / "models", int8=True)  # work to do: takes the lock, leftovers go
    assert not stale.exists()
    assert (path.parent / embed.ONNX_INT8_FILE).exists()


def test_failed_export_falls_back_to_torch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, torch_embedder: Embedder
) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("exporter exploded")

    monkeypatch.setattr(embed_export, "export_onnx", broken)  # where ensure_onnx_model looks it up
    with caplog.at_level(logging.WARNING, logger="memwrap.embed"):
        embedder = Embedder(MODEL, backend="onnx", home=tmp_path)
    assert embedder.backend == "torch"
    assert embedder.requested_backend == "onnx"
    assert "exporter exploded" in caplog.text and "using torch" in caplog.text
    np.testing.assert_allclose(embedder.encode(TEXTS[:2]), torch_embedder.encode(TEXTS[:2]), atol=1e-5)
    assert not list((tmp_path / "models").rglob("*.onnx"))


def test_unsupported_model_layout_falls_back(tmp_path: Path) -> None:
    model_dir = Path(embed.resolve_model_path(MODEL))
    copy = tmp_path / "model"
    copy.mkdir()
    for item in model_dir.iterdir():
        (copy / item.name).symlink_to(item)
    (copy / "modules.json").unlink()
    modules = json.loads((model_dir / "modules.json").read_text())
    modules.insert(2, {"idx": 2, "name": "2", "path": "2_Dense", "type": "sentence_transformers.models.Dense"})
    (copy / "modules.json").write_text(json.dumps(modules))
    with pytest.raises(embed.OnnxUnsupported, match="Dense"):
        embed._Spec(copy)


def test_unknown_backend_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(EmbeddingModelError, match="onnx-int8"):
        Embedder(MODEL, backend="tensorflow", home=tmp_path)


def test_backend_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    assert Settings().embedding_backend in ("torch", "onnx", "onnx-int8")
    monkeypatch.setenv("MEMWRAP_EMBEDDING_BACKEND", "torch")
    assert Settings().embedding_backend == "torch"
    monkeypatch.setenv("MEMWRAP_EMBEDDING_BACKEND", "gpu-please")
    with pytest.raises(ValueError):
        Settings()


def test_torch_threads_fit_the_machine(torch_embedder: Embedder) -> None:
    import torch

    assert torch.get_num_threads() <= available_cpus()


def test_importing_memwrap_loads_no_model_library() -> None:
    out = _run_python(
        "import sys, memwrap, memwrap.engine.embed.embedder, memwrap.engine.engine\n"
        "print(sorted(m for m in ('torch', 'onnxruntime', 'sentence_transformers', 'transformers', 'onnx')"
        " if m in sys.modules))"
    )
    assert out.strip().splitlines()[-1] == "[]"


def _run_python(script: str) -> str:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    result = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout
