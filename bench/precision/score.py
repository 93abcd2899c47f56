"""Scores of one question, from the ranked list memwrap served and from the block it packed at a tight budget.

Every score is in [0, 1] and higher is better. `ranked` is the list of the set's memory ids in the order recall
returned them (`Recall.memories`, session neighbours at their place; an id seen again, e.g. a second unit of a long
item, keeps its first place; a memory the set does not know is None and still takes its place). `block` is the set
of memory ids that went into the block at the tight budget.

* time: `top3_in_range` = share of the first 3 places holding a memory that answers (one inside the asked range,
  or one of the named ones for a topical question), out of min(3, how many answer); `first_in_range`; and
  `block_in_range` = share of the tight block's memories that answer (0 for an empty block).
* replaced: `newer_above_older` = the best-ranked statement of the current state is ranked (found, and) above
  every older statement; `newer_first`; `block_has_newer`.
* speakers and entities: `first`, `r@3`, `r@5` (an expected memory at rank 1, within 3, within 5) and
  `block_has_expected`; speakers with restatements also `user_above_assistant`: the user's own statement is
  ranked (found, and) above every restatement by the assistant.

`chance_scores` gives what a uniformly random order of the bank's memories scores on the ranked-list metrics
(block metrics have no such reference), so a figure can be read against how easy its question is: a "last year"
question in a bank that is half last year is easy by chance, a single expected memory among forty is not.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Collection, Iterable, Sequence
from typing import Any

from bench.precision.data import Question, Scenario

# The metrics of each category, in the order the tables show them, with their headings.
METRICS: dict[str, dict[str, str]] = {
    "time": {
        "top3_in_range": "top-3 places in range (of possible)",
        "first_in_range": "first memory in range",
        "block_in_range": "share of the tight block in range",
    },
    "replaced": {
        "newer_above_older": "newer ranked above older",
        "newer_first": "newer first",
        "block_has_newer": "tight block holds the newer",
    },
    "speakers": {
        "first": "expected first",
        "r@3": "expected in top 3",
        "r@5": "expected in top 5",
        "block_has_expected": "tight block holds it",
        "user_above_assistant": "user's words above the assistant's restatement",
    },
    "entities": {
        "first": "expected first",
        "r@3": "expected in top 3",
        "r@5": "expected in top 5",
        "block_has_expected": "tight block holds it",
    },
}


def first_rank(ranked: Sequence[str | None], wanted: Collection[str]) -> float:
    """1-based place of the first wanted memory; infinity when none is in the list."""
    return next((float(i) for i, m in enumerate(ranked, start=1) if m in wanted), math.inf)


def distinct(ids: Iterable[str | None]) -> list[str | None]:
    """Ids in order, each set memory at its first place only (None placeholders kept)."""
    seen: set[str] = set()
    out: list[str | None] = []
    for memory_id in ids:
        if memory_id is not None:
            if memory_id in seen:
                continue
            seen.add(memory_id)
        out.append(memory_id)
    return out


def score_question(
    scenario: Scenario, question: Question, ranked: Sequence[str | None], block: Collection[str]
) -> dict[str, float]:
    ranked = distinct(ranked)
    category = scenario.category
    if category == "time":
        relevant = scenario.relevant(question)
        top3 = {m for m in ranked[:3] if m is not None}
        return {
            "top3_in_range": len(top3 & relevant) / min(3, len(relevant)),
            "first_in_range": float(bool(ranked) and ranked[0] in relevant),
            "block_in_range": len(set(block) & relevant) / len(block) if block else 0.0,
        }
    if category == "replaced":
        newer = first_rank(ranked, question.newer)
        return {
            "newer_above_older": float(newer < first_rank(ranked, question.older)),
            "newer_first": float(newer == 1),
            "block_has_newer": float(bool(set(block) & set(question.newer))),
        }
    rank = first_rank(ranked, question.expected)
    scores = {
        "first": float(rank == 1),
        "r@3": float(rank <= 3),
        "r@5": float(rank <= 5),
        "block_has_expected": float(bool(set(block) & set(question.expected))),
    }
    if question.restated:
        scores["user_above_assistant"] = float(rank < first_rank(ranked, question.restated))
    return scores


def chance_scores(scenario: Scenario, question: Question) -> dict[str, float]:
    """Expected ranked-list scores of a uniformly random order of all the scenario's memories."""
    n = len(scenario.items)

    def within(k: int, wanted: int) -> float:  # P(at least one of `wanted` memories in the first k)
        return 1 - math.comb(n - wanted, k) / math.comb(n, k)

    if scenario.category == "time":
        relevant = len(scenario.relevant(question))
        return {"top3_in_range": 3 * relevant / n / min(3, relevant), "first_in_range": relevant / n}
    if scenario.category == "replaced":
        newer, older = len(question.newer), len(question.older)
        return {"newer_above_older": newer / (newer + older), "newer_first": newer / n}
    expected = len(question.expected)
    scores = {"first": expected / n, "r@3": within(3, expected), "r@5": within(5, expected)}
    if question.restated:
        scores["user_above_assistant"] = expected / (expected + len(question.restated))
    return scores


def summarise(rows: Sequence[dict[str, Any]]) -> dict[str, dict[str, dict[str, Any]]]:
    """{category: {split: {"n": questions, metric: mean, "n_<metric>": questions it applies to, "chance_<metric>":
    a random order's mean}}}; the split "all" pools both."""
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for category, metrics in METRICS.items():
        for split in ("dev", "heldout", "all"):
            chosen = [r for r in rows if r["category"] == category and split in ("all", r["split"])]
            if not chosen:
                continue
            cell: dict[str, Any] = {"n": len(chosen)}
            for metric in metrics:
                values = [r["scores"][metric] for r in chosen if metric in r["scores"]]
                if values:
                    cell[metric] = round(statistics.fmean(values), 3)
                    cell[f"n_{metric}"] = len(values)
                chance = [r["chance"][metric] for r in chosen if metric in r.get("chance", {})]
                if chance:
                    cell[f"chance_{metric}"] = round(statistics.fmean(chance), 3)
            out.setdefault(category, {})[split] = cell
    return out


__all__ = ["METRICS", "chance_scores", "distinct", "first_rank", "score_question", "summarise"]
