"""The default model's graph kept between processes (memwrap/engine/embed/graph_cache.py): read back bit for bit,
never stale, never trusted when damaged, and never a reason to fail."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from memwrap.engine.embed import graph_cache

TEXTS = ["In what order did we try the speed-ups on the billing service?", "你好世界，去年夏天我们改用了 Postgres。"]

# A process that starts the default model's engine and says what it computed and whether it imported onnx.
# As the engine makes it: load_encoder with the model cache (MEMWRAP_MODEL_CACHE) a home's settings name.
ENGINE_RUN = """
import json, sys
from memwrap.engine.embed.embedder import load_encoder
encoder = load_encoder("multilingual-e5-small", "onnx-int8")
print(json.dumps({"vectors": encoder.encode(json.loads(sys.argv[1]), 8).tolist(), "onnx": "onnx" in sys.modules}))
"""


def _engine_run(cache: Path) -> dict[str, object]:
    env = {**os.environ, "MEMWRAP_MODEL_CACHE": str(cache)}
    done = subprocess.run(
        [sys.executable, "-c", ENGINE_RUN, json.dumps(TEXTS)], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, object] = json.loads(done.stdout)
    return result


def test_a_second_process_reads_the_graph_and_computes_the_same_vectors(tmp_path: Path) -> None:
    built = _engine_run(tmp_path)
    kept = list((tmp_path / "models").glob("e5-int8-*.onnx"))
    assert len(kept) == 1 and built["onnx"] is True
    read = _engine_run(tmp_path)
    assert read["onnx"] is False  # read back: onnx (1.2-1.4 s of a start) never imported
    assert read["vectors"] == built["vectors"]  # bit for bit, as floats
    from memwrap.engine.embed.e5 import E5Encoder

    never_kept = E5Encoder("onnx-int8").encode(TEXTS, 8)  # no folder: built in this process, as before
    assert never_kept.tolist() == built["vectors"]


def test_a_damaged_graph_is_built_again_and_replaced(tmp_path: Path) -> None:
    builds: list[int] = []

    def build() -> bytes:
        builds.append(1)
        return b"graph bytes " * 100

    assert graph_cache.load_or_build(tmp_path, "g", "k" * 64, build) == b"graph bytes " * 100
    assert graph_cache.load_or_build(tmp_path, "g", "k" * 64, build) == b"graph bytes " * 100
    assert len(builds) == 1
    [path] = tmp_path.glob("g-*.onnx")
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF
    path.write_bytes(bytes(data))
    assert graph_cache.load_or_build(tmp_path, "g", "k" * 64, build) == b"graph bytes " * 100
    assert len(builds) == 2 and path.read_bytes() != bytes(data)  # replaced by a good copy
    assert (
        graph_cache.load_or_build(tmp_path, "g", "n" * 64, build) and not path.exists()
    )  # a new key: the old one goes
    [path] = tmp_path.glob("g-*.onnx")
    path.write_bytes(b"")  # emptied
    assert graph_cache.load_or_build(tmp_path, "g", "n" * 64, build) == b"graph bytes " * 100 and len(builds) == 4


def test_the_key_follows_the_builders_source_and_the_recipe(tmp_path: Path) -> None:
    source = tmp_path / "builder.py"
    source.write_text("def build(): return 1\n")
    first = graph_cache.graph_key([source], ["weights", b"ranges"])
    assert graph_cache.graph_key([source], ["weights", b"ranges"]) == first
    assert graph_cache.graph_key([source], ["weights", b"other ranges"]) != first
    source.write_text("def build(): return 2\n")
    assert graph_cache.graph_key([source], ["weights", b"ranges"]) != first


def test_no_folder_or_an_unwritable_one_only_costs_the_build(tmp_path: Path) -> None:
    assert graph_cache.load_or_build(None, "g", "k" * 64, lambda: b"built") == b"built"
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    # Cannot be made: a file is in the way.
    assert graph_cache.load_or_build(blocker / "models", "g", "k" * 64, lambda: b"built") == b"built"
