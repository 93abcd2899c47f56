"""The similarity thresholds of the multilingual default model, derived from all-MiniLM-L6-v2's (issue 38).

    .venv/bin/python -m bench.multilingual.thresholds [--json out.json]

memwrap's cosine thresholds were set on the English model's cosines (memwrap/engine/embed/profiles.py lists
them). multilingual-e5-small, language-centred, spreads cosines differently, so each threshold is carried over by
rank: on a pool of English text pairs both models can judge, the e5 threshold is the cosine that keeps the same
share of pairs above it as the MiniLM threshold does (the same decisions on English, where MiniLM's values were
tuned). The pools, from the dev data only (MemoryBank's distractor users, read in place, and bench/multilingual's
set; no LoCoMo):

- sentences: up to 300 English MemoryBank turns (first sentence), each paired with itself lower-cased without
  punctuation (a near-duplicate), with "Well, " before it, negated (a near-duplicate that says the opposite),
  with one content word swapped for another turn's, and with an unrelated turn;
- names: 40 first names and full names: a typo (a letter dropped), the short form (first name of the full
  name), and an unrelated name.

It also prints, for min_similarity, the lowest cosine of a question to its own memory on the multilingual set
(Chinese, cross-language, Spanish, mixed: a threshold above it would drop true hits) and the share of unrelated
MemoryBank pairs (en-en, zh-zh, en-zh) above each candidate.
"""

from __future__ import annotations

import argparse
import json
import random
import re
from pathlib import Path
from typing import Any

import numpy as np

from bench.multilingual.data import load_set
from bench.multilingual.memorybank import distractor_turns

MINILM, E5 = "all-MiniLM-L6-v2", "multilingual-e5-small"
# name -> (MiniLM value, pool it is carried over on)
THRESHOLDS: dict[str, tuple[float, str]] = {
    "min_similarity": (0.15, "sentences"),
    "coverage_similar": (0.75, "sentences"),
    "observation_threshold": (0.92, "sentences"),
    "twin_similarity": (0.95, "sentences"),
    "typo_cosine": (0.35, "names"),
    "short_form_cosine": (0.60, "names"),
}
FIRST = (
    "Caroline Melanie Jonathan Alice Robert Patricia Michael Jennifer William Elizabeth Richard Barbara Thomas "
    "Jessica Christopher Sarah Daniel Karen Matthew Nancy Anthony Lisa Andrew Margaret Joshua Sandra Kenneth "
    "Ashley Kevin Kimberly Brian Emily George Donna Timothy Michelle Edward Carol Ronald Amanda"
).split()
LAST = "Smith Johnson Brown Garcia Miller Davis Wilson Moore Taylor Anderson".split()
_NEGATABLE = re.compile(r"\b(is|am|are|was|were|will|can|do|did|have)\b", re.IGNORECASE)


def _first_sentence(text: str) -> str:
    return re.split(r"(?<=[.!?])\s", text.strip())[0]


def sentence_pairs(rng: random.Random) -> list[tuple[str, str, str]]:
    english = [_first_sentence(t.text) for t in distractor_turns() if t.language == "en"]
    english = [s for s in english if 25 <= len(s) <= 160 and _NEGATABLE.search(s)]
    rng.shuffle(english)
    half = min(300, len(english) // 2)
    chosen, others = english[:half], english[half:]
    pairs: list[tuple[str, str, str]] = []
    for i, s in enumerate(chosen):
        words = s.split()
        swap = rng.choice(others[i].split())
        j = max(range(len(words)), key=lambda k: len(words[k]))
        pairs += [
            ("same", s, re.sub(r"[^\w\s]", "", s).lower()),
            ("well", s, "Well, " + s[0].lower() + s[1:]),
            ("negated", s, _NEGATABLE.sub(lambda m: m.group(0) + " not", s, count=1)),
            ("swapped", s, " ".join([*words[:j], swap, *words[j + 1 :]])),
            ("unrelated", s, others[-1 - i]),
        ]
    return pairs


def name_pairs(rng: random.Random) -> list[tuple[str, str, str]]:
    pairs: list[tuple[str, str, str]] = []
    for i, first in enumerate(FIRST):
        full = f"{first} {LAST[i % len(LAST)]}"
        cut = rng.randrange(1, len(first) - 1)
        pairs += [
            ("typo", first, first[:cut] + first[cut + 1 :]),
            ("short form", first, full),
            ("unrelated", first, FIRST[(i + 7) % len(FIRST)]),
            ("unrelated full", full, f"{FIRST[(i + 3) % len(FIRST)]} {LAST[(i + 5) % len(LAST)]}"),
        ]
    return pairs


def cosines(embedder: Any, pairs: list[tuple[str, str, str]]) -> np.ndarray:
    left = embedder.encode([a for _, a, _ in pairs])
    right = embedder.encode([b for _, _, b in pairs])
    return np.asarray((left * right).sum(axis=1), dtype=np.float64)


def carried(minilm: np.ndarray, e5: np.ndarray, threshold: float) -> float:
    """The e5 cosine that keeps the same share of the pool above it as `threshold` does with MiniLM."""
    share = float(np.mean(minilm >= threshold))
    return float(np.quantile(e5, 1.0 - share)) if 0.0 < share < 1.0 else threshold


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(prog="python -m bench.multilingual.thresholds", description=__doc__)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    from memwrap.engine.embed.embedder import Embedder

    rng = random.Random(38)
    pools = {"sentences": sentence_pairs(rng), "names": name_pairs(rng)}
    models = {name: Embedder(name) for name in (MINILM, E5)}
    cos = {(m, p): cosines(e, pairs) for m, e in models.items() for p, pairs in pools.items()}
    out: dict[str, Any] = {"thresholds": {}, "pools": {}}
    for pool, pairs in pools.items():
        kinds = sorted({k for k, _, _ in pairs})
        out["pools"][pool] = {
            kind: {m: [round(float(np.median(cos[m, pool][[k == kind for k, _, _ in pairs]])), 3)] for m in models}
            for kind in kinds
        }
    for name, (value, pool) in THRESHOLDS.items():
        out["thresholds"][name] = {"minilm": value, "e5": round(carried(cos[MINILM, pool], cos[E5, pool], value), 3)}
    # min_similarity's other side: true question-memory pairs of the multilingual set, and unrelated turns.
    data = load_set()
    e5 = models[E5]
    by_id = {m.id: m.text for m in data.memories}
    truth = [(q.category, q.text, by_id[q.evidence[0]]) for q in data.questions]
    true_cos = cosines(e5, truth)
    out["true_pairs_e5"] = {
        cat: {"min": round(float(true_cos[[c == cat for c, _, _ in truth]].min()), 3)}
        for cat in sorted({c for c, _, _ in truth})
    }
    turns = distractor_turns()
    en = [t.text for t in turns if t.language == "en"]
    zh = [t.text for t in turns if t.language == "zh"]
    unrelated = [("en-en", rng.choice(en), rng.choice(en)) for _ in range(400)]
    unrelated += [("zh-zh", rng.choice(zh), rng.choice(zh)) for _ in range(400)]
    unrelated += [("en-zh", rng.choice(en), rng.choice(zh)) for _ in range(400)]
    un_cos = cosines(e5, unrelated)
    out["unrelated_e5"] = {
        kind: {
            "p50": round(float(np.median(un_cos[[k == kind for k, _, _ in unrelated]])), 3),
            "p95": round(float(np.quantile(un_cos[[k == kind for k, _, _ in unrelated]], 0.95)), 3),
        }
        for kind in ("en-en", "zh-zh", "en-zh")
    }
    print(json.dumps(out, indent=1, ensure_ascii=False))
    if args.json:
        args.json.write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return out


if __name__ == "__main__":
    main()
