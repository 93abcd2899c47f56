"""Questions that span sessions: "in what order did I bring up …", "summarise how X progressed", "how many times …".

Their answer is spread over the conversations that mention the subject, and fused ranks tend to put one session's
turns on top (the session that talks about it most). For such a question, the hits are reordered so each further
memory of a session that already has better hits counts less (`SESSION_DECAY` per earlier hit of its session):
the block covers the distinct sessions that mention the subject; and for an ordering or progression question the
block lays its lines out in time order (pack.plan's `chronological`).

The cues are named rules (`span_rules(question)` names those that matched), English first. Nothing happens for a
question that matches none: the common case costs one regex search.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from memwrap.models import RecalledMemory


@dataclass(frozen=True, slots=True)
class SpanRule:
    name: str
    kind: str  # "order" (lay out in time order), "summary" (likewise), "count" (coverage only)
    pattern: re.Pattern[str]


def _rule(name: str, kind: str, pattern: str) -> SpanRule:
    return SpanRule(name, kind, re.compile(pattern, re.IGNORECASE))


SPAN_RULES: tuple[SpanRule, ...] = (
    _rule("in-what-order", "order", r"\bin\s+(?:what|which)\s+order\b|\bwhat\s+(?:was|is)\s+the\s+order\b"),
    _rule("order-of", "order", r"\b(?:the\s+)?(?:order|sequence|chronolog\w*|timeline)\s+(?:of|in\s+which)\b"),
    _rule(
        "which-first",
        "order",
        r"\bwhich\b[^?.]{0,60}?\b(?:first|earlier|earliest|sooner|last|latest)\b[^?.]{0,80}?\bor\b"
        r"|\bwhich\s+(?:\w+\s+){0,2}came\s+first\b|\b(?:before|after)\s+or\s+(?:before|after)\b",
    ),
    _rule("first-then", "order", r"\bwhat\s+did\s+i\s+\w+\s+(?:first|before|after)\b"),
    # "List the changes to X, earliest first", "… in chronological order" (issue 36's own session).
    _rule(
        "earliest-first",
        "order",
        r"\b(?:earliest|oldest|newest|latest|most\s+recent)\s+(?:one\s+)?(?:first|last)\b"
        r"|\bin\s+(?:chronological|time|date)\s+order\b",
    ),
    _rule(
        "progression",
        "summary",
        r"\bhow\s+(?:has|have|did|does|do)\s+(?:\w+\s+){0,6}?(?:progress(?:ed)?|evolve[sd]?|change[sd]?|develop(?:ed)?|"
        r"go(?:ne)?|went|improve[sd]?|grow|grown|grew)\b",
    ),
    _rule("summarise", "summary", r"\b(?:summari[sz]e|summary\s+of|recap|overview\s+of|walk\s+me\s+through)\b"),
    _rule(
        "over-time", "summary", r"\b(?:over\s+(?:time|the\s+(?:months|weeks|years|sessions))|so\s+far|history\s+of)\b"
    ),
    _rule("how-many-times", "count", r"\bhow\s+(?:many\s+times|often)\b|\bnumber\s+of\s+times\b"),
    _rule("how-many", "count", r"\bhow\s+many\b|\bhow\s+much\s+(?:in\s+total|altogether|total)\b|\bin\s+total\b"),
    _rule("every-time", "count", r"\b(?:every|each)\s+time\b|\ball\s+(?:the\s+)?(?:times|sessions)\b"),
)

# A further hit of a session that already has `n` better hits weighs SESSION_DECAY ** n of its score.
SESSION_DECAY = 0.5
# A span question's hit that does not name its subject, against one that does (cover_sessions' names_subject).
UNNAMED_WEIGHT = 0.5
# How far down the hits the reordering looks: every candidate a span question's packer is offered
# (recall/sessions.py's SPAN_CANDIDATES), so a mention fused low can still take its session's place.
SPAN_WINDOW = 200


@functools.lru_cache(maxsize=4096)
def span_rules(question: str) -> tuple[str, ...]:
    """The names of the span rules a question matches (empty: a question about one thing)."""
    return tuple(rule.name for rule in SPAN_RULES if rule.pattern.search(question))


def span_kinds(question: str) -> frozenset[str]:
    names = set(span_rules(question))
    return frozenset(rule.kind for rule in SPAN_RULES if rule.name in names)


def chronological(question: str) -> bool:
    """Whether the block should read as a timeline: an ordering or a progression question."""
    return bool(span_kinds(question) & {"order", "summary"})


def _session(memory: RecalledMemory) -> str | None:
    if memory.session_id:
        return memory.session_id
    document = memory.document_id
    return document.rsplit(":", 1)[0] if document and ":" in document else document


def cover_sessions(
    ranked: Sequence[RecalledMemory],
    question: str,
    names_subject: Callable[[RecalledMemory], float] | None = None,
) -> list[RecalledMemory]:
    """For a question that spans sessions, the hits reordered so the block covers the distinct sessions that
    mention its subject (see the module's docstring); any other question's list as it came. Chunks of one message
    count as one hit of their session (they are shown together anyway). Neighbours stay after the hits.

    `names_subject` (recall/sessions.py): how much of the question's subject a hit names, 0-1. A session's hits
    that name some are counted apart from those that name none, and a hit weighs from UNNAMED_WEIGHT (none) to 1
    (the most any hit names): a session's weak match (the short prompt before the answer that mentions the
    subject) no longer takes the session's first place from its mention. When no hit names the subject, every
    hit weighs the same factor: the order is the plain one."""
    if not span_rules(question):
        return list(ranked)
    hits = [m for m in ranked if m.neighbour_of is None]
    neighbours = [m for m in ranked if m.neighbour_of is not None]
    head, tail = hits[:SPAN_WINDOW], hits[SPAN_WINDOW:]
    seen: dict[tuple[str | None, str | None, bool], int] = {}
    message_weight: dict[tuple[str | None, str], float] = {}
    weighed: list[tuple[float, int, RecalledMemory]] = []
    for index, memory in enumerate(head):
        session = _session(memory)
        message = (memory.bank_id, memory.message_id) if memory.message_id else None
        if message is not None and message in message_weight:
            weight = message_weight[message]  # a further chunk of a message already weighed: as its message
        else:
            share = 1.0 if names_subject is None else names_subject(memory)
            named = share > 0.0
            factor = UNNAMED_WEIGHT + (1.0 - UNNAMED_WEIGHT) * share
            if session is None:
                weight = factor
            else:
                earlier = seen.get((memory.bank_id, session, named), 0)
                seen[(memory.bank_id, session, named)] = earlier + 1
                weight = factor * SESSION_DECAY**earlier
                if earlier:
                    memory.arms["session"] = earlier + 1  # its place among its session's hits (explain: why it moved)
        if message is not None:
            message_weight.setdefault(message, weight)
        weighed.append((memory.score * weight, index, memory))
    weighed.sort(key=lambda entry: (-entry[0], entry[1]))
    return [m for _score, _index, m in weighed] + tail + neighbours


__all__ = ["SESSION_DECAY", "SPAN_RULES", "chronological", "cover_sessions", "span_kinds", "span_rules"]
