"""What a rule is: a regex, a resolver that turns its match into days, and a gate."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, timedelta

from memwrap.engine.language.timeparse._calendar import _READING, _Period, _Span
from memwrap.engine.language.timeparse._tense import Tense, tense_at

_Resolver = Callable[[re.Match[str], date | None], _Period | None]
# Resolve a match inside a period named elsewhere in its sentence: (match, first, last, kind) -> span, or None
# when that kind of period does not hold this one ("in March" inside "last year"; "on Friday" inside "last week").
_Within = Callable[[re.Match[str], date, date, str], _Span | None]


@dataclass(frozen=True, slots=True)
class _Rule:
    """One kind of expression: where it can be, and how it turns into days.

    `gate` is what the text must contain for the regex to be worth running at all: lower-case words
    for English rules (the pseudo-word _YEARISH_WORD for "has a 19xx/20xx number"), substrings for
    Chinese ones. Retain scans every turn, and most turns contain no date: the gates make those cheap.
    `within` is set for periods that recur (a month, a season, a weekday without a year or week): "Last year
    I moved to Lisbon in March" is March of last year, whatever the tense says.
    """

    pattern: re.Pattern[str]
    resolve: _Resolver
    gate: frozenset[str]
    chinese: bool = False
    vague: bool = False  # "recently": used only when nothing precise is there
    within: _Within | None = None


def _tense_of(m: re.Match[str]) -> Tense:
    """The tense that chooses an occurrence for this match: the caller's, else the words around it."""
    given = _READING.get().tense
    return given if given is not None else tense_at(m.string, m.start(), m.end())


def _within_year(instance_for: Callable[[re.Match[str]], Callable[[int], _Span | None] | None]) -> _Within:
    """A yearly period ("in March", "May 8", "at Christmas") inside a year named elsewhere in the sentence."""

    def within(m: re.Match[str], first: date, last: date, kind: str) -> _Span | None:
        instance = instance_for(m) if kind == "year" else None
        return None if instance is None else instance(first.year)

    return within


def _within_week(weekday_for: Callable[[re.Match[str]], int | None]) -> _Within:
    """A weekday ("on Friday") inside a week named elsewhere in the sentence ("last week", "上周")."""

    def within(m: re.Match[str], first: date, last: date, kind: str) -> _Span | None:
        weekday = weekday_for(m) if kind == "week" else None
        if weekday is None:
            return None
        day = first + timedelta(days=weekday)
        return day, day

    return within
