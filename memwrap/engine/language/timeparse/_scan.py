"""Finding the time expressions in a text: run the rules, take the leftmost-longest matches, absorb the
words around them that belong to them (prepositions, early/mid/late, 以来), and join ranges."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date

from memwrap.engine.language.timeparse._calendar import _narrow
from memwrap.engine.language.timeparse._chinese import (
    _CJK,
    _CN_MONTH_SUFFIX,
    _CN_PARTS,
    _CN_PREFIX,
    _CN_RULES,
    _CN_SINCE_SUFFIX,
    _CN_YEAR_SUFFIX,
)
from memwrap.engine.language.timeparse._english import (
    _EN_MODS,
    _EN_PREFIX,
    _EN_SINCE_SUFFIX,
    _WORD,
    _YEARISH,
    _YEARISH_WORD,
    _norm,
)
from memwrap.engine.language.timeparse._english_rules import _EN_RULES
from memwrap.engine.language.timeparse._rule import _Rule
from memwrap.engine.language.timeparse._spanish import _ES_RULES

# What an early/mid/late modifier may narrow: "early 2023" is a third of a year, "early last week" stays the week.
_NARROWABLE = frozenset({"year", "month", "decade", "season"})

_RULES: tuple[_Rule, ...] = _EN_RULES + _CN_RULES + _ES_RULES


@dataclass(slots=True)
class _Found:
    start: int
    end: int
    first: date
    last: date
    kind: str
    vague: bool
    chinese: bool
    order: int  # rule index: breaks ties between equally long matches
    match: re.Match[str]
    since: bool = False


def _apply_part(found: _Found, part: str) -> None:
    found.first, found.last = _narrow(found.first, found.last, found.kind, part)
    found.kind = "range"


def _absorb_suffix(text: str, found: _Found) -> None:
    """Chinese modifiers follow the period (去年年底, 3月初, 2020年以来); English has "2020 onwards"."""
    if found.chinese:
        suffix = {"year": _CN_YEAR_SUFFIX, "month": _CN_MONTH_SUFFIX}.get(found.kind, _CN_SINCE_SUFFIX)
        m = suffix.match(text, found.end)
        assert m is not None  # every group is optional
        if m["part"]:
            _apply_part(found, _CN_PARTS[m["part"]])
        found.since = bool(m["since"])
        found.end = m.end()
    elif m := _EN_SINCE_SUFFIX.match(text, found.end):
        found.since = True
        found.end = m.end()


def _absorb_prefix(text: str, found: _Found, floor: int) -> None:
    """Take in a preposition and an early/mid/late modifier standing before the period, if any."""
    low = max(floor, found.start - 40)
    if found.chinese:
        m = _CN_PREFIX.search(text, low, found.start)
        if m:
            found.since = found.since or m["w"] in ("自从", "自打", "自")
            found.start = m.start()
        return
    m = _EN_PREFIX.search(text, low, found.start)
    if m is None or m.start() == found.start:
        return
    if m["mod"]:
        if found.kind not in _NARROWABLE:  # "early last week": keep the week, leave the words alone
            return
        _apply_part(found, _EN_MODS[_norm(m["mod"])])
    found.since = found.since or (m["prep"] or "").lower() == "since"
    found.start = m.start()


# Two expressions with only one of these between them make one range: "May 2023 to June 2023", "3月到5月".
# A range must run forward; "and" ("today and yesterday") just asks for both, in any order.
_RANGE_JOINER = re.compile(r"\s*(?:(?P<both>and|和|与|跟)|to|until|till|-|–|—|~|～|到|至)\s*", re.IGNORECASE)


def _join_ranges(text: str, chosen: list[_Found]) -> list[_Found]:
    joined: list[_Found] = []
    for found in chosen:
        previous = joined[-1] if joined else None
        joiner = None if previous is None else _RANGE_JOINER.fullmatch(text, previous.end, found.start)
        if (
            previous is not None
            and joiner is not None
            and not (previous.vague or found.vague)
            and (joiner["both"] or previous.first <= found.last)
        ):
            previous.end, previous.kind = found.end, "range"
            previous.first, previous.last = min(previous.first, found.first), max(previous.last, found.last)
            continue
        joined.append(found)
    return joined


def _scan(text: str, today: date | None) -> list[_Found]:
    """All time expressions in `text`, leftmost-longest, not overlapping, in order."""
    words = set(_WORD.findall(text.lower()))
    if _YEARISH.search(text):
        words.add(_YEARISH_WORD)
    has_cjk = _CJK.search(text) is not None
    candidates: list[_Found] = []
    for order, rule in enumerate(_RULES):
        # The gates, inline because this loop runs 36 times per retained turn.
        if rule.chinese:
            if not has_cjk or not any(key in text for key in rule.gate):
                continue
        elif rule.gate.isdisjoint(words):
            continue
        for m in rule.pattern.finditer(text):
            period = rule.resolve(m, today)
            if period is None:
                continue
            found = _Found(m.start(), m.end(), *period, vague=rule.vague, chinese=rule.chinese, order=order, match=m)
            _absorb_suffix(text, found)
            candidates.append(found)
    candidates.sort(key=lambda f: (f.start, -f.end, f.order))
    chosen: list[_Found] = []
    floor = 0
    for found in candidates:
        if found.start < floor:
            continue
        _absorb_prefix(text, found, floor)
        chosen.append(found)
        floor = found.end
    chosen = _place_within(text, chosen)
    for found in chosen:
        if found.since and today is not None and today > found.last:  # "since 2020": up to today
            found.last = today
    return _join_ranges(text, chosen)


# The year or week that holds a recurring period must be in the same sentence, and not across a conjunction that
# starts another statement ("..., and", "but", "然后"); a bare "and" may join subjects ("my wife and I").
_ANOTHER_STATEMENT = re.compile(
    r"[.!?;。！？；\n]|,\s*and\b|\band\s+then\b|\b(?:but|so|because|although|though|whereas|while)\b"
    r"|但是|可是|然后|所以|而且|不过|因为|后来",
    re.IGNORECASE,
)


def _place_within(text: str, chosen: list[_Found]) -> list[_Found]:
    """ "Last year I moved to Lisbon in March": March of last year, and the year said no more than that.

    A recurring period without its own year or week (a month, season, holiday, day of a month, weekday) is
    placed inside the nearest year (or week) named in its sentence; that year is then context, not a time of
    its own, and is dropped.
    """
    holders = [f for f in chosen if f.kind in ("year", "week") and not f.vague and not f.since]
    if not holders:
        return chosen
    used: set[int] = set()
    for found in chosen:
        within = _RULES[found.order].within
        if within is None or found.vague:
            continue
        for holder in sorted(holders, key=lambda h: abs(h.start - found.start)):
            between = text[min(holder.end, found.end) : max(holder.start, found.start)]
            if holder is found or _ANOTHER_STATEMENT.search(between):
                continue
            span = within(found.match, holder.first, holder.last, holder.kind)
            if span is not None:
                found.first, found.last = span
                used.add(id(holder))
                break
    return [f for f in chosen if id(f) not in used]
