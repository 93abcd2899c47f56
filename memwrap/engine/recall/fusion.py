"""Fusing the arms' ranked lists: weighted reciprocal rank fusion, or round-robin interleaving."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from uuid import UUID

from memwrap.engine.recall.arms import Hits

# A memory across banks (bank id, memory id), and an arm's hits keyed so.
Key = tuple[str, UUID]
KeyedHits = list[tuple[Key, float]]


@dataclass
class Fused:
    id: UUID
    score: float
    arms: dict[str, int] = field(default_factory=dict)  # arm → 1-based rank in that arm


def _ranks(results: Mapping[str, Hits]) -> dict[UUID, dict[str, int]]:
    ranks: dict[UUID, dict[str, int]] = {}
    for arm, hits in results.items():
        for rank, (memory_id, _score) in enumerate(hits, start=1):
            ranks.setdefault(memory_id, {}).setdefault(arm, rank)
    return ranks


# Arms whose hits carry how strongly they match (0..1), and the strength that counts as a full vote. The keyword
# arm's coverage: a hit matching half of the question's term weight or more votes fully, one matching a single
# incidental word of a paraphrased question barely. Measured on LoCoMo (MiniLM) and the multilingual set (e5),
# offline on the same arm lists: recall@5 0.510 -> 0.542 and 0.719 -> 0.809 (bench/README.md).
GRADED_ARMS: dict[str, float] = {"keyword": 0.5}

# The semantic arm's nearest memory votes this much more than its rank alone gives, when the keyword arm did not
# find it: a paraphrase, which no wording matches, and which plain RRF put behind distractors that the keyword and
# graph arms agreed on (graph rank ~40 beside busy sessions). When the keyword arm found it too, the words already
# speak for it, and the bonus would only outvote a memory matching more of them ("cello teacher": the teacher's
# memory, not the nearest "practises the cello"). Replayed offline on saved arm lists: multilingual Chinese
# recall@5 0.800 -> 0.875 (e5), LoCoMo 0.542 -> 0.548 (MiniLM); any bonus from 0.3 to 1.0 ranked the same there.
NEAREST_BONUS = 0.5


def _vote(arm: str, rank: int, strength: float, weights: Mapping[str, float], k: int, *, bonus: bool = False) -> float:
    full = GRADED_ARMS.get(arm)
    grade = 1.0 if full is None else min(1.0, max(strength, 0.0) / full)
    if bonus:
        grade += NEAREST_BONUS
    return weights.get(arm, 1.0) * grade / (k + rank)


def _nearest_unmatched(arm: str, rank: int, arms: Mapping[str, int]) -> bool:
    return arm == "semantic" and rank == 1 and "keyword" not in arms


def reciprocal_rank(results: Mapping[str, Hits], weights: Mapping[str, float], k: int = 60) -> list[Fused]:
    """score = Σ over arms of weight × grade / (k + rank), the grade 1 but for GRADED_ARMS and the semantic arm's
    nearest memory when the keyword arm missed it (1 + NEAREST_BONUS). Order only: scores
    from different arms are not comparable.

    A total order, so the same arm lists give the same ranking whatever order the memories were stored in: fsum
    makes equal sets of terms add up to the same float (a plain sum depends on the order of the terms), and ties
    are broken by the best rank in any arm, then by id."""
    strengths: dict[tuple[str, UUID], float] = {}
    for arm, hits in results.items():
        for memory_id, strength in hits:
            strengths.setdefault((arm, memory_id), strength)  # its first place in the arm, as _ranks keeps
    fused = [
        Fused(
            memory_id,
            math.fsum(
                _vote(arm, rank, strengths[(arm, memory_id)], weights, k, bonus=_nearest_unmatched(arm, rank, arms))
                for arm, rank in arms.items()
            ),
            arms,
        )
        for memory_id, arms in _ranks(results).items()
    ]
    fused.sort(key=lambda f: (-f.score, min(f.arms.values()), str(f.id)))
    return fused


def interleave(results: Mapping[str, Hits], weights: Mapping[str, float]) -> list[Fused]:
    """Take each arm's next best in turn (heaviest arm first). A memory ranked high by one arm only is never cut,
    which matters when looking for near-duplicates ("twins") of a new fact."""
    order = sorted(results, key=lambda arm: -weights.get(arm, 1.0))
    ranks = _ranks(results)
    seen: set[UUID] = set()
    fused: list[Fused] = []
    longest = max((len(h) for h in results.values()), default=0)
    for position in range(longest):
        for arm in order:
            hits = results[arm]
            if position < len(hits) and hits[position][0] not in seen:
                memory_id = hits[position][0]
                seen.add(memory_id)
                fused.append(Fused(memory_id, 1.0 / (1 + len(fused)), ranks[memory_id]))
    return fused


# Arms whose scores mean the same in every bank (cosine similarity). The others' scores grow with the bank (BM25's
# idf, the graph's entity rarity): across banks they are merged by rank. The temporal arm's order is its own
# (slices of the window taken in turns), so it is merged by rank too.
SCORE_COMPARABLE_ARMS = frozenset({"semantic"})


def merge_banks(results: dict[tuple[str, str], Hits], limit: int) -> dict[str, KeyedHits]:
    """Each arm's hits from every bank in one list: by similarity where it is comparable across banks (a memory
    ranks by how well it matches, not by how busy its bank is), else by rank in its bank, banks taking turns.
    One bank: its lists as they came, keyed by (bank, id)."""
    per_arm: dict[str, list[tuple[int, Key, float]]] = {}
    for (arm, bank), hits in results.items():
        per_arm.setdefault(arm, []).extend(
            (rank, (bank, memory_id), score) for rank, (memory_id, score) in enumerate(hits)
        )
    merged: dict[str, KeyedHits] = {}
    several = len({bank for _arm, bank in results}) > 1
    for arm, ranked in per_arm.items():
        if several:
            # Stable sorts: within a bank the arm's own order (and its tie-breaks) stands.
            ranked = sorted(ranked, key=(lambda h: -h[2]) if arm in SCORE_COMPARABLE_ARMS else (lambda h: h[0]))[:limit]
        merged[arm] = [(key, score) for _rank, key, score in ranked]
    return merged
