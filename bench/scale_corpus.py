"""The scale run's corpus: synthetic turns (bench/synthetic.py) and their vectors, computed once and cached.

    python -m bench.scale_corpus --count 1000000     # embed what is missing (resumable), under nice -n 19

The turns are deterministic for a seed, so only the vectors are stored: float32 `.npy` chunks of CHUNK rows
under ~/.cache/memwrap-bench/corpus-<model>-<backend>-seed<seed>/ (MEMWRAP_BENCH_CACHE moves it). Each turn is
embedded as retain embeds it: its text after the end of the turn before it in its session (`embedding_text`),
so a bank imported from the corpus holds the vectors a bank built with `retain_many` would.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bench.synthetic import SyntheticTurn, iter_turns

CHUNK = 20_000
SEED = 7


def cache_root() -> Path:
    return Path(os.environ.get("MEMWRAP_BENCH_CACHE", Path.home() / ".cache" / "memwrap-bench"))


@dataclass
class Corpus:
    """The cached vectors of the first `count` turns of the synthetic stream for one model and backend."""

    folder: Path
    seed: int = SEED

    @classmethod
    def for_model(cls, model: str, backend: str, seed: int = SEED) -> Corpus:
        safe = model.replace("/", "_")
        return cls(cache_root() / f"corpus-{safe}-{backend}-seed{seed}", seed)

    def chunk_path(self, index: int) -> Path:
        return self.folder / f"vectors-{index:04d}.npy"

    def available(self) -> int:
        """How many leading turns have their vectors cached."""
        count = 0
        while self.chunk_path(count // CHUNK).exists():
            count += CHUNK
        return count

    def turns(self, count: int, start: int = 0) -> Iterator[SyntheticTurn]:
        return itertools.islice(iter_turns(start + count, seed=self.seed), start, start + count)

    def vectors(self, start: int, count: int) -> np.ndarray:
        """Rows [start, start + count) of the cached vectors."""
        parts = []
        index = start // CHUNK
        while sum(len(p) for p in parts) < count + start % CHUNK:
            parts.append(np.load(self.chunk_path(index), mmap_mode="r"))
            index += 1
        stacked = np.concatenate(parts) if len(parts) > 1 else parts[0]
        offset = start % CHUNK
        return np.asarray(stacked[offset : offset + count], dtype=np.float32)


def embedding_texts(turns: list[SyntheticTurn], before: SyntheticTurn | None) -> list[str]:
    """Each turn after the one before it in its session (document ids are "S<session>:<turn>")."""
    from memwrap.engine.embed.unit_text import embedding_text

    texts = []
    previous = before
    for turn in turns:
        same_session = previous is not None and previous.document_id.split(":")[0] == turn.document_id.split(":")[0]
        texts.append(embedding_text(turn.content, previous.content if same_session and previous else None))
        previous = turn
    return texts


def build(count: int, *, model: str | None = None, backend: str | None = None, log=print) -> Corpus:
    """Embed the chunks of the first `count` turns that are not cached yet."""
    from bench.baselines import baseline_embedder

    embedder = baseline_embedder(model=model, backend=backend)
    corpus = Corpus.for_model(embedder.model_name, embedder.backend)
    corpus.folder.mkdir(parents=True, exist_ok=True)
    (corpus.folder / "corpus.json").write_text(
        json.dumps({"model": embedder.model_name, "backend": embedder.backend, "seed": corpus.seed, "chunk": CHUNK})
    )
    chunks = (count + CHUNK - 1) // CHUNK
    stream = iter_turns(chunks * CHUNK, seed=corpus.seed)
    previous: SyntheticTurn | None = None
    for index in range(chunks):
        turns = list(itertools.islice(stream, CHUNK))
        path = corpus.chunk_path(index)
        if not path.exists():
            start = time.perf_counter()
            vectors = np.asarray(embedder.encode(embedding_texts(turns, previous)), dtype=np.float32)
            tmp = path.with_suffix(".tmp.npy")
            np.save(tmp, vectors)
            tmp.rename(path)
            log(f"chunk {index + 1}/{chunks}: {len(turns) / (time.perf_counter() - start):.0f} texts/s")
        previous = turns[-1]
    return corpus


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.scale_corpus", description=__doc__)
    parser.add_argument("--count", type=int, default=1_000_000)
    args = parser.parse_args()
    build(args.count, log=lambda m: print(m, flush=True))


if __name__ == "__main__":
    main()
