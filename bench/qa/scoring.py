"""LoCoMo's token F1: the paper's own QA score, beside the LLM judge's verdict.

The rules of the LoCoMo release (its QA evaluation), restated here:
- normalise: lowercase, drop commas and punctuation, drop the words "a", "an", "the" and "and", collapse spaces;
  then Porter-stem every token (NLTK's PorterStemmer, as the release does);
- F1 = 2PR / (P + R) over the multiset of stemmed tokens shared by the answer and the gold answer; 0 when none is
  shared (an empty answer scores 0);
- per category: multi-hop (1) gold answers are lists ("pottery, camping, painting"): both sides are split on
  commas, each gold part takes the best F1 of any answer part, and the question scores the mean over the gold
  parts; open-domain (3) keeps the gold answer's first ";"-separated part ("Likely no; she ..." -> "Likely no");
  temporal (2) and single-hop (4) score the whole strings. Adversarial questions (5) are not asked by bench.qa.

Other data sets (LongMemEval) score the whole strings, as categories 2 and 4 do.
"""

from __future__ import annotations

import functools
import re
import string
from collections import Counter

_PUNCTUATION = frozenset(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the|and)\b")

MULTI_HOP = "multi-hop"
OPEN_DOMAIN = "open-domain"


@functools.lru_cache(maxsize=1)
def _stemmer():  # nltk ships no type hints
    try:
        from nltk.stem import PorterStemmer
    except ImportError as error:  # the bench extra brings it
        raise RuntimeError("token F1 needs NLTK's Porter stemmer: pip install -e '.[bench]'") from error
    return PorterStemmer()


def normalise(text: str) -> str:
    """LoCoMo's answer normalisation (before stemming): "The beach, and a lake!" -> "beach lake"."""
    text = text.replace(",", "").lower()
    text = "".join(ch for ch in text if ch not in _PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def tokens(text: str) -> list[str]:
    stem = _stemmer().stem
    return [stem(word) for word in normalise(text).split()]


def token_f1(answer: str, gold: str) -> float:
    """F1 of the shared stemmed tokens (a token counts as often as it appears on both sides)."""
    predicted, expected = tokens(answer), tokens(gold)
    shared = sum((Counter(predicted) & Counter(expected)).values())
    if shared == 0:
        return 0.0
    precision, recall = shared / len(predicted), shared / len(expected)
    return 2 * precision * recall / (precision + recall)


def multi_answer_f1(answer: str, gold: str) -> float:
    """Multi-hop: the mean over the gold's comma-separated parts of the best F1 against any answer part."""
    parts = [p.strip() for p in answer.split(",")]
    golds = [g.strip() for g in gold.split(",")]
    return sum(max(token_f1(p, g) for p in parts) for g in golds) / len(golds)


def locomo_f1(answer: str, gold: str, category: str | None = None) -> float:
    """The LoCoMo score of one answer, by the question's category name (bench.locomo.CATEGORY_NAMES)."""
    if category == MULTI_HOP:
        return multi_answer_f1(answer, gold)
    if category == OPEN_DOMAIN:
        gold = gold.split(";")[0].strip()
    return token_f1(answer, gold)


__all__ = ["locomo_f1", "multi_answer_f1", "normalise", "token_f1", "tokens"]
