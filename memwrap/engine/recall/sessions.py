"""The block of a question that spans sessions: every session that mentions the subject, each line as short as it
can be, in time order.

span.py names these questions ("in what order did we …", "summarise how X progressed", "how many times …"),
lets further hits of one session count less and lays the block out by date. What that left, on generated long
technical sessions (bench/long_session/diagnose.py, seeds 1 and 7 at 120k tokens, 1,024-token block): the
mentions that were fused but missed the block sat in long messages — a 150-250-token chunk of an assistant's
answer, a prompt with pasted code — so four or five of them filled the block and the later sessions had *no
room*; and some were fused *below the cut* (the candidates the packer is offered: the budget's share, 85 at
1,024 tokens). For a span question only, this module:

* `arm_limit`, `candidate_cut`: each arm returns twice its usual hits and the packer is offered every fused
  candidate (up to `SPAN_CANDIDATES`). They come in the same queries as before (the arms' LIMIT, the details
  query); what it costs is the extra rows read and their lines counted (measured in bench/README.md), never an
  extra round trip.
* `excerpt`: shows a long memory as the sentences of it that name the question's *subject* — the question's
  words outside its span cue ("in what order did", "summarise how … progressed") and function words —, with
  "[…]" where text is left out. Code blocks are never kept (their identifiers are not a statement about the
  subject). A memory with no such sentence, or one whose sentences would keep most of it, stays whole. So a
  mention inside a long answer costs its sentence, not the answer, and a block of 1,024 tokens holds a line for
  every session that mentions the subject. The memory handed back (`Recall.memories`) carries the excerpt: it is
  what the block shows.

Everything here is plain text work on the candidates already read: no model, no SQL. The rules are general
(sentences, the question's own words); the generator's wording was read while writing them, and the README's
figures say which were measured on banks not looked at.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence

from memwrap.engine.language.entities import QUERY_STOPWORDS
from memwrap.engine.language.text import LATIN_FUNCTION_WORDS
from memwrap.engine.recall.pack import GAP
from memwrap.engine.recall.span import SPAN_RULES, cover_sessions, span_rules
from memwrap.models import RecalledMemory

# A span question's arms each return this many times the usual number of hits (arm_limit, 60),
SPAN_ARM_FACTOR = 2
# and its packer is offered this many fused candidates (search.MAX_CANDIDATES, the most any budget gets).
SPAN_CANDIDATES = 200
# Memories shorter than this (characters) are shown whole: a chat turn, a one-line remark.
EXCERPT_MIN_CHARS = 240
# An excerpt that would keep this share of the text or more is not worth its "[…]" marks: the memory stays whole.
EXCERPT_MAX_SHARE = 0.7
# At most this many sentences of one memory: a statement about the subject, and what explains it.
EXCERPT_SENTENCES = 3

_WORD = re.compile(r"[^\W\d_][\w'’-]*", re.UNICODE)
_FENCE = re.compile(r"^ ?(?:```|~~~)[^\n]*\n.*?(?:^ ?(?:```|~~~)[^\n]*$|\Z)", re.MULTILINE | re.DOTALL)
# A sentence ends at . ! ? (before white space) or a line break; bullets and headings are sentences of their own.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\s*\n\s*")
# Inflections folded for matching a question's words to a memory's: change, changes, changed, changing -> chang.
_SUFFIX = re.compile(r"(?:'s|’s|s|ed|ing)$")
# Question words that are no subject ("tell", "give", "remind": QUERY_STOPWORDS), but for these two, which in
# technical talk name things ("the search relevance work", "the name of the module").
_NOT_SUBJECT = QUERY_STOPWORDS - {"search", "name"}


def is_span_question(question: str) -> bool:
    return bool(span_rules(question))


def arm_limit(question: str, limit: int) -> int:
    """How many hits each arm returns: SPAN_ARM_FACTOR times as many for a span question, whose answer is spread
    over sessions that each match it less than the one session that talks about it most."""
    return limit * SPAN_ARM_FACTOR if is_span_question(question) else limit


def candidate_cut(question: str, cut: int) -> int:
    """How many fused candidates the packer is offered: all of them (up to SPAN_CANDIDATES) for a span question."""
    return max(cut, SPAN_CANDIDATES) if is_span_question(question) else cut


@functools.lru_cache(maxsize=65536)
def _stem(word: str) -> str:
    word = word.casefold().strip("'’-")
    if len(word) <= 4:
        return word
    word = _SUFFIX.sub("", word)
    return word[:-1] if word.endswith(("e", "i")) and len(word) > 4 else word


@functools.lru_cache(maxsize=4096)
def subject_terms(question: str) -> frozenset[str]:
    """The stems of the words that name what a span question is about: its words outside the span cues' matches,
    less function words and question words ("In what order did we try the speed-ups on the report exporter?" ->
    try, speed-up, report, exporter)."""
    text = question
    for rule in SPAN_RULES:
        text = rule.pattern.sub(" ", text)
    words = (w for w in _WORD.findall(text) if len(w) > 2)
    return frozenset(
        _stem(w) for w in words if w.casefold() not in _NOT_SUBJECT and w.casefold() not in LATIN_FUNCTION_WORDS
    )


def _sentences(text: str) -> list[tuple[str, bool]]:
    """(piece, is code) in text order: each fenced code block whole, the prose between them cut into sentences."""
    pieces: list[tuple[str, bool]] = []
    at = 0
    for fence in _FENCE.finditer(text):
        pieces.extend((s, False) for s in _SENTENCE_END.split(text[at : fence.start()]) if s.strip())
        pieces.append((fence.group(), True))
        at = fence.end()
    pieces.extend((s, False) for s in _SENTENCE_END.split(text[at:]) if s.strip())
    return pieces


# The same memories come back recall after recall and budget after budget: their stems and excerpts are kept.
_CACHED = 16384


@functools.lru_cache(maxsize=_CACHED)
def _stems(text: str) -> frozenset[str]:
    return frozenset(_stem(w) for w in _WORD.findall(text))


def _named(sentence: str, terms: frozenset[str]) -> int:
    """How many of the subject's terms a sentence names."""
    return len(terms & _stems(sentence))


@functools.lru_cache(maxsize=_CACHED)
def excerpt(text: str, terms: frozenset[str]) -> str | None:
    """The sentences of `text` that name the most of the subject's terms (at least one; at most EXCERPT_SENTENCES,
    in text order), "[…]" where text is left out; None when the text should stay whole (short, no such sentence,
    or most of it kept). The most, not any: a word like "test" is in every other sentence of technical talk."""
    if len(text) < EXCERPT_MIN_CHARS or not terms:
        return None
    pieces = _sentences(text)
    named = [0 if code else _named(sentence, terms) for sentence, code in pieces]
    most = max(named)
    if not most:
        return None
    kept = [i for i, n in enumerate(named) if n == most][:EXCERPT_SENTENCES]
    shown: list[str] = [GAP] if kept[0] > 0 else []
    for n, i in enumerate(kept):
        if n and i > kept[n - 1] + 1:
            shown.append(GAP)
        shown.append(pieces[i][0].strip())
    if kept[-1] < len(pieces) - 1:
        shown.append(GAP)
    short = " ".join(shown)
    return short if len(short) < EXCERPT_MAX_SHARE * len(text) else None


def span_block(ranked: Sequence[RecalledMemory], question: str) -> list[RecalledMemory]:
    """For a span question, the hits reordered to cover the sessions (span.cover_sessions) and long memories shown
    as their sentences about the subject; any other question's list as it came."""
    if not is_span_question(question):
        return list(ranked)
    terms = subject_terms(question)
    named = {id(memory): _named(memory.text, terms) for memory in ranked}
    most = max(named.values(), default=0) or 1
    covered = cover_sessions(ranked, question, lambda memory: named[id(memory)] / most)
    out: list[RecalledMemory] = []
    for memory in covered:
        short = excerpt(memory.text, terms)
        out.append(memory if short is None else memory.model_copy(update={"text": short}))
    return out


__all__ = [
    "EXCERPT_MIN_CHARS",
    "SPAN_ARM_FACTOR",
    "SPAN_CANDIDATES",
    "arm_limit",
    "candidate_cut",
    "excerpt",
    "is_span_question",
    "span_block",
    "subject_terms",
]
