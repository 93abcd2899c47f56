"""Cosine thresholds per embedding model: two models spread cosines differently, so a threshold is the model's.

all-MiniLM-L6-v2's values are memwrap's historical ones, tuned on its cosines (each module says how).
multilingual-e5-small's (the default since issue 38) were derived by `python -m bench.multilingual.thresholds`
(dev data only: MemoryBank's distractor users and bench/multilingual's set; figures of 2026-12-06 below): on the
same English pairs, the share of each kind of pair a threshold lets through, with MiniLM at its value and e5 at
the chosen one. Any other model (a sentence-transformers name or directory) gets MiniLM's values, as before.
"""

from __future__ import annotations

from dataclasses import dataclass

from memwrap.config import ENGLISH_EMBEDDING_MODEL, MULTILINGUAL_EMBEDDING_MODEL


@dataclass(frozen=True)
class SimilarityProfile:
    min_similarity: float  # recall's semantic arm: less similar hits are noise (Settings.min_similarity overrides)
    coverage: float  # retain/coverage.py: a sentence and a fact say the same thing in other words
    observation: float  # learn: facts are near-duplicates (Settings.observation_threshold overrides)
    twin: float  # learn/llm_consolidate.py: an observation restates another
    typo_cosine: float  # retain/resolve.py: below it two spellings are different names (a veto)
    short_form_cosine: float  # retain/resolve.py: "Alice" is "Alice Smith"


MINILM = SimilarityProfile(
    min_similarity=0.15,  # unrelated text sits near 0.0-0.1 (config's comment before issue 38)
    coverage=0.75,
    observation=0.92,
    twin=0.95,
    typo_cosine=0.35,
    short_form_cosine=0.60,
)

E5 = SimilarityProfile(
    # The lowest cosine of a question to its own memory on bench/multilingual: Chinese 0.108, mixed 0.229,
    # cross-language 0.221, Spanish 0.341; at 0.15 a Chinese paraphrase lost its semantic hit. Unrelated
    # MemoryBank pairs: median 0.00 (en-en, zh-zh, en-zh), 95th percentile 0.25 / 0.28 / 0.19: the arm's limit
    # (60) and fusion rank them, the floor only keeps pure noise out of tiny banks.
    min_similarity=0.10,
    # A sentence with one content word swapped for another's: MiniLM at 0.75 calls 0.70 of them covered, e5 at
    # 0.85 also 0.70 (at 0.75: 0.91); its rewordings ("Well, …") stay covered (1.00 both).
    coverage=0.85,
    # Rewordings ("Well, …") pass 1.00 at 0.92 (MiniLM 0.94); one word swapped 0.35 (MiniLM 0.25), negated 0.25
    # (MiniLM separates negation worse). Carried over by rank it would be 0.861, which lets 0.64 of the swapped
    # pairs and 0.47 of the negated ones through: 0.92 kept.
    observation=0.92,
    # At 0.95: rewordings 0.97 (MiniLM 0.84), one word swapped 0.20 (MiniLM 0.13). But e5 moves on punctuation
    # alone: "The user prefers dark mode in their code editor." / "...editor!" is 0.947 (tests/test_learn_llm.py's
    # restated observation; MiniLM 0.99): 0.94.
    twin=0.94,
    # 40 names with a letter dropped pass 0.95 at 0.45 (MiniLM at 0.35: 0.53), unrelated first names 0.05
    # (MiniLM 0.42), unrelated full names 0.05 (MiniLM 0.33).
    typo_cosine=0.45,
    # First name to full name 1.00 at 0.60 (MiniLM 1.00); unrelated names 0.00-0.03 (and a short form must also
    # be contained in the long one): 0.60 kept.
    short_form_cosine=0.60,
)

PROFILES: dict[str, SimilarityProfile] = {ENGLISH_EMBEDDING_MODEL: MINILM, MULTILINGUAL_EMBEDDING_MODEL: E5}


def similarity_profile(model: str) -> SimilarityProfile:
    """The thresholds for a model's cosines (`model`: a canonical name, or an embedding space "name@recipe")."""
    return PROFILES.get(model.split("@")[0], MINILM)
