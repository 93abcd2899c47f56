"""When an extracted fact happened: our calendar decides, the model's dates are only checked against it.

A small model resolves "next Tuesday" said on Tuesday 2026-12-01 to 2026-12-02, and dates an undated allergy to
the day it was mentioned. So the span of a fact comes from the time expressions of the turns it was taken from,
resolved by memwrap's own calendar code (language/timeparse) against the moment each was said:

1. the phrase the model quotes (`when`), if the turns really contain it;
2. else a date written in the fact itself, if it agrees with the turns (or the turns name no time): the turn's
   date wins over a fact that contradicts it, and the wrong date in the fact's text is corrected;
3. else the time expression of the turn clause that shares most words with the fact;
4. else the fact is undated: dates the model gives without any time phrase behind them are not trusted.

The model's own dates are kept only when they narrow our span (a vague "that weekend" resolved from context).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import UTC, date, datetime, time

from memwrap.engine.language.timeparse import detect_tense, extract_occurred

Span = tuple[datetime, datetime]

_DATE_RE = re.compile(r"^\s*(\d{4})-(\d{1,2})(?:-(\d{1,2}))?")
_ISO_IN_TEXT = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
# Clauses of a turn: sentences, and parts joined by "and"/"but"/"；" that often carry a date each.
_CLAUSE_CUT = re.compile(r"(?<=[.!?;。！？；])\s*|,\s+(?:and|but)\s+|\s+(?:and|but)\s+|[，、]")
_WORD = re.compile(r"[^\W\d_\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]{3,}|\d+|[\u3400-\u9fff]", re.UNICODE)


def fact_span(
    when: str | None, start: str | None, end: str | None, text: str, turns: Sequence[tuple[str, datetime]]
) -> tuple[Span | None, str]:
    """(span, text) of a fact taken from `turns` ((text, said_at) each): its dates, and its text with a date
    that contradicts the turns corrected."""
    said_at = turns[0][1]
    theirs = model_span(start, end, said_at)
    phrase = (when or "").strip()
    if phrase:
        for turn_text, turn_said in turns:
            if phrase.casefold() in turn_text.casefold():
                # Cut out of its sentence, "in March" has no tense: read it in the tense of the clause it came from.
                clause = next((c for c in _clauses(turn_text) if phrase.casefold() in c.casefold()), turn_text)
                ours = extract_occurred(phrase, turn_said, tense=detect_tense(clause))
                if ours is not None:
                    return _narrowed(ours, theirs, turn_said), text
    clauses = [
        (clause, span)
        for turn_text, turn_said in turns
        for clause in _clauses(turn_text)
        if (span := extract_occurred(clause, turn_said)) is not None
    ]
    written = extract_occurred(text, said_at)
    chosen = _closest(clauses, text)
    if written is not None:
        if not clauses or any(_overlap(written, span) for _, span in clauses):
            # The turn's own phrase, when it is narrower: "next week" written for "下周三" (next Wednesday).
            inside = [
                span for _, span in clauses if written[0] <= span[0] and span[1] <= written[1] and span != written
            ]
            narrower = chosen if chosen in inside else (inside[0] if len(inside) == 1 else None)
            return narrower or written, text
        chosen = chosen or (clauses[0][1] if len(clauses) == 1 else None)
        return (chosen, _corrected(text, written, chosen)) if chosen else (written, text)
    if chosen is not None:
        return _narrowed(chosen, theirs, said_at), text
    return None, text


def model_span(start: str | None, end: str | None, said_at: datetime) -> Span | None:
    first = _parse_day(start, last=False)
    if first is None:
        return None
    last = _parse_day(end, last=True) or _parse_day(start, last=True)
    assert last is not None
    if last < first:
        first, last = last, first
    zone = said_at.tzinfo or UTC
    return (
        datetime.combine(first, time.min, tzinfo=zone).astimezone(UTC),
        datetime.combine(last, time.max, tzinfo=zone).astimezone(UTC),
    )


def _parse_day(value: str | None, *, last: bool) -> date | None:
    """YYYY-MM-DD or YYYY-MM (a whole month); anything else is not a date we trust."""
    match = _DATE_RE.match(value or "")
    if match is None:
        return None
    year, month = int(match.group(1)), int(match.group(2))
    try:
        if match.group(3):
            return date(year, month, int(match.group(3)))
        if not last:
            return date(year, month, 1)
        following = date(year + month // 12, month % 12 + 1, 1)
        return date.fromordinal(following.toordinal() - 1)
    except ValueError:
        return None


def _narrowed(ours: Span, theirs: Span | None, said_at: datetime | None = None) -> Span:
    """The model's span when it lies inside ours, except the day the turn was said: the date a small model
    gives when it has none ("since last week" is not "today")."""
    if theirs is None or not (ours[0] <= theirs[0] and theirs[1] <= ours[1]):
        return ours
    if said_at is not None and theirs[0].date() == theirs[1].date() == said_at.astimezone(UTC).date():
        return ours
    return theirs


def _overlap(a: Span, b: Span) -> bool:
    return a[0] <= b[1] and b[0] <= a[1]


def _clauses(text: str) -> list[str]:
    return [c for c in (part.strip() for part in _CLAUSE_CUT.split(text)) if c]


# Words every fact and turn has: sharing them says nothing about which clause a fact comes from.
_COMMON = frozenset(
    "the and user assistant for with that this was were are has have had his her its they them their you your "
    "from will would about into then than when what which who also just been being not but can our she him "
    "我 你 他 她 的 了 是 在".split()
)


def _words(text: str) -> set[str]:
    return {w.casefold()[:5] for w in _WORD.findall(text) if w.casefold() not in _COMMON}


def _closest(clauses: list[tuple[str, Span]], fact: str) -> Span | None:
    """The span of the clause sharing most words with the fact (the first on a tie); None if none shares any."""
    if not clauses:
        return None
    words = _words(fact)
    scores = [len(words & _words(clause)) for clause, _ in clauses]
    best = max(range(len(clauses)), key=lambda i: (scores[i], -i))
    return clauses[best][1] if scores[best] > 0 else None


def _corrected(text: str, wrong: Span, right: Span) -> str:
    """The fact's text with its ISO dates inside the wrong span replaced by the right day (or first day)."""
    day = right[0].date().isoformat() if right[0].date() == right[1].date() else None

    def fix(match: re.Match[str]) -> str:
        try:
            found = date(int(match.group(1)), int(match.group(2)), int(match.group(3)))
        except ValueError:
            return match.group(0)
        inside = wrong[0].date() <= found <= wrong[1].date()
        return day if inside and day else match.group(0)

    return _ISO_IN_TEXT.sub(fix, text)


__all__ = ["Span", "fact_span", "model_span"]
