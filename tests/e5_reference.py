"""Reference vectors of multilingual-e5-small's default engine (onnx-int8) for tests/test_embed_e5.py.

tests/data/e5_int8_reference.npz holds REFERENCE_TEXTS' language-centred vectors as the engine computed them at
d1120df, before it batched texts (issue 38): each text alone, one onnxruntime run per 510-token window. The
batched engine must give the same vectors up to float rounding. Written by `python tests/e5_reference.py` (run it
only to re-derive the file from an engine known to be right: the test's point is that the file does not move).
"""

from __future__ import annotations

import sys
from pathlib import Path

from test_multilingual import EDGE_TEXTS as MULTILINGUAL_EDGE_TEXTS

REFERENCE_FILE = Path(__file__).resolve().parent / "data" / "e5_int8_reference.npz"

# test_multilingual's edge texts (scripts, spacing, out-of-vocabulary characters, special tokens' spellings, two
# windows) and a one-letter text.
EDGE_TEXTS = [*MULTILINGUAL_EDGE_TEXTS, "x"]


def reference_texts() -> list[str]:
    """Edge texts, short chat turns with their session context (as retain embeds them), questions, the
    multilingual set's memories, and long technical messages (one window and several)."""
    repo = str(Path(__file__).resolve().parent.parent)
    if repo not in sys.path:
        sys.path.insert(0, repo)
    from bench.long_session.generator import generate_bank
    from bench.multilingual.data import load_set
    from bench.synthetic import generate_queries, generate_turns
    from memwrap.engine.embed.unit_text import embedding_text

    texts = list(EDGE_TEXTS)
    previous: str | None = None
    for turn in generate_turns(40, seed=3):
        texts.append(embedding_text(turn.content, previous))
        previous = turn.content
    texts += generate_queries(12, seed=5)
    data = load_set()
    texts += [m.text for m in data.memories[::10]][:30]
    texts += [q.text for q in data.questions[::5]][:12]
    long = sorted((m.content for m in generate_bank(1, 12_000).messages), key=len)
    texts += long[-6:] + long[len(long) // 2 : len(long) // 2 + 4]
    return texts


def main() -> None:
    import numpy as np

    from memwrap.engine.embed.e5 import E5Encoder

    texts = reference_texts()
    encoder = E5Encoder("onnx-int8")
    vectors = np.stack([encoder.encode([text], 1)[0] for text in texts])
    REFERENCE_FILE.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(REFERENCE_FILE, texts=np.array(texts), vectors=vectors)
    print(f"{len(texts)} vectors written to {REFERENCE_FILE}")


if __name__ == "__main__":
    main()
