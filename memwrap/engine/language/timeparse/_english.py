"""English time expressions: the word tables, the regex pieces, and the resolvers that turn a match into days
(_english_rules.py puts them together as rules)."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import date, timedelta

from memwrap.engine.language.timeparse._calendar import (
    _VAGUE_DAYS,
    _as_period,
    _choose,
    _day_of_month,
    _fixed,
    _holiday,
    _Mode,
    _month_span,
    _nth,
    _offset_window,
    _Period,
    _period_at,
    _pick,
    _pick_nth,
    _season_instance,
    _shift,
    _Span,
    _valid_day,
    _weekday_date,
    _weekday_span,
    _weekly_spans,
    _year_span,
)
from memwrap.engine.language.timeparse._rule import _tense_of
from memwrap.engine.language.timeparse._tense import _ARRIVING_AFTER

_MONTHS = {
    "january": 1, "jan": 1, "february": 2, "feb": 2, "march": 3, "mar": 3, "april": 4, "apr": 4,
    "may": 5, "june": 6, "jun": 6, "july": 7, "jul": 7, "august": 8, "aug": 8, "september": 9,
    "sept": 9, "sep": 9, "october": 10, "oct": 10, "november": 11, "nov": 11, "december": 12, "dec": 12,
}  # fmt: skip
_WEEKDAYS = {"monday": 0, "tuesday": 1, "wednesday": 2, "thursday": 3, "friday": 4, "saturday": 5, "sunday": 6}
_SEASON_START = {"spring": 3, "summer": 6, "autumn": 9, "fall": 9, "winter": 12}
_NUMBER_WORDS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14,
    "fifteen": 15, "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19, "twenty": 20,
    "thirty": 30, "forty": 40, "fifty": 50,
}  # fmt: skip
# Fuzzy counts as ranges: "a few weeks ago" covers 2 to 4 weeks ago.
_FUZZY_NUMBERS = {"a couple of": (2, 3), "a couple": (2, 3), "couple of": (2, 3), "a few": (2, 4), "few": (2, 4),
                  "several": (3, 6)}  # fmt: skip

_MON = "(?:" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + ")"
_WD = "(?:" + "|".join(_WEEKDAYS) + ")"
_Y4 = r"(?:19|20)\d\d"
_NUM = (
    r"(?:\d{1,3}|a\s+couple\s+of|a\s+couple|couple\s+of|a\s+few|few|several|half\s+a|an?|"
    + "|".join(sorted((w for w in _NUMBER_WORDS if len(w) > 2), key=len, reverse=True))
    + ")"
)
_UNIT = r"(?:day|week|month|year)"
_EN_REL = r"(?:this\s+past|this\s+coming|last|this|next|past)"
_EN_REL_MODE: dict[str, _Mode] = {"": "floating", "last": "last", "past": "last", "this past": "last",
                                  "this": "this", "next": "next", "this coming": "next"}  # fmt: skip

# Words that make a bare year or month a date: "in 2023", "during May", "the summer" after "over".
_YEAR_CONTEXT = re.compile(
    r"(?:\b(?:in|during|of|since|from|through|throughout|around|circa|year|early|mid|late|"
    r"beginning\s+of|start\s+of|end\s+of|middle\s+of)\s+(?:the\s+)?(?:year\s+)?|\bmid-)$",
    re.IGNORECASE,
)
_PERIOD_CONTEXT = re.compile(
    r"(?:\b(?:in|during|since|from|through|throughout|around|over|for|on|at|all|by|until|till|before|after|"
    r"early|mid|late|"
    r"beginning\s+of|start\s+of|end\s+of|middle\s+of)\s+(?:the\s+)?|\bmid-)$",
    re.IGNORECASE,
)
# What may stand before an expression and belongs to it: a preposition (dropped by strip_time_expression)
# and a modifier that narrows the period ("in the early 1990s", "at the end of last year", "mid-2023").
_EN_PREFIX = re.compile(
    r"(?:\b(?P<prep>in|on|at|during|since|from|between|throughout|over|around)\s+)?(?:\bthe\s+)?"
    r"(?:\b(?P<mod>early|mid|late|beginning\s+of|start\s+of|end\s+of|middle\s+of)(?:\s+|-)(?:the\s+)?)?"
    r"(?:\byear\s+)?$",
    re.IGNORECASE,
)
_EN_SINCE_SUFFIX = re.compile(r"\s+(?:and\s+)?onwards?\b", re.IGNORECASE)
_EN_MODS = {"early": "early", "mid": "mid", "late": "late", "beginning of": "early", "start of": "early",
            "end of": "late", "middle of": "mid"}  # fmt: skip

# Gates (see _Rule): a text is split into lower-case words once, and each English rule names the
# words it cannot match without.
_WORD = re.compile(r"[a-z]+")
# Every numeric rule needs a year (2023-05-08, 13/5/2023, in 2023, 2019-2021, 1990s) or a '90s.
_YEARISH = re.compile(r"(?:19|20)\d\d|['’]\d0s")
_YEARISH_WORD = "<year>"  # the pseudo-word a text gets when _YEARISH finds something
_YEARISH_GATE = frozenset({_YEARISH_WORD})


def _words(spaced: str) -> frozenset[str]:
    return frozenset(spaced.split())


_MONTH_WORDS = frozenset(_MONTHS)
_WEEKDAY_WORDS = frozenset(_WEEKDAYS)


def _norm(text: str) -> str:
    return " ".join(text.lower().replace("’", "'").split())


def _has_context(match: re.Match[str], context: re.Pattern[str]) -> bool:
    return context.search(match.string, max(0, match.start() - 32), match.start()) is not None


def _en_amount(text: str, unit: str) -> tuple[int, int, str] | None:
    """ "3"/"three"/"a few"/"half a" + unit -> (low, high, unit); halves step down a unit."""
    key = _norm(text)
    if key == "half a":
        return {"year": (6, 6, "month"), "month": (2, 2, "week")}.get(unit)
    if key in _FUZZY_NUMBERS:
        low, high = _FUZZY_NUMBERS[key]
        return low, high, unit
    value = int(key) if key.isdigit() else _NUMBER_WORDS.get(key)
    return None if value is None else (value, value, unit)


_EN_DAY_OFFSETS = {
    "the day before yesterday": -2, "yesterday": -1, "last night": -1, "last evening": -1, "today": 0,
    "tonight": 0, "earlier today": 0, "this morning": 0, "this afternoon": 0, "this evening": 0,
    "tomorrow": 1, "the day after tomorrow": 2,
}  # fmt: skip


def _en_day_word(m: re.Match[str], today: date | None) -> _Period | None:
    if today is None:
        return None
    day = today + timedelta(days=_EN_DAY_OFFSETS[_norm(m["w"])])
    return day, day, "day"


_REL_STEP = {"last": -1, "previous": -1, "this": 0, "current": 0, "next": 1, "coming": 1}


def _en_rel_period(m: re.Match[str], today: date | None) -> _Period | None:
    if today is None:
        return None
    return _period_at(today, m["unit"].lower(), _REL_STEP[m["rel"].lower()])


def _en_before_last(m: re.Match[str], today: date | None) -> _Period | None:
    if today is None:
        return None
    return _period_at(today, m["unit"].lower(), -2 if m["w"].lower().startswith("before") else 2)


def _en_earlier_this(m: re.Match[str], today: date | None) -> _Period | None:
    if today is None:
        return None
    first, last, _ = _period_at(today, m["unit"].lower(), 0)
    return (first, today, "range") if m["w"].lower() == "earlier" else (today, last, "range")


def _en_rolling(m: re.Match[str], today: date | None) -> _Period | None:
    """ "the past week", "the last 3 days", "over the past few months": from that long ago up to today."""
    if today is None:
        return None
    count, unit = (m["n1"], m["u1"]) if m["u1"] else (m["n2"], m["u2"])
    amount = _en_amount(count, unit.lower()) if count else (1, 1, unit.lower())
    if amount is None:
        return None
    _, high, unit = amount
    return _shift(today, -high, unit), today, "range"


def _en_ago(m: re.Match[str], today: date | None) -> _Period | None:
    if today is None:
        return None
    amount = _en_amount(m["n"], m["unit"].lower())
    if amount is None:
        return None
    direction = 1 if m["dir"].lower().startswith("from") else -1
    return _offset_window(today, *amount, direction)


_EVERY = re.compile(r"\b(?:every|each)\s+$", re.IGNORECASE)
# "Today is Sunday", "it's Friday": the name of today, whichever weekday the calendar says it is.
_NAMES_TODAY = re.compile(r"\b(?:(?:today|tonight)\s+is|it['’]s|it\s+is)\s+(?:a\s+)?$", re.IGNORECASE)


def _en_weekday(m: re.Match[str], today: date | None) -> _Period | None:
    # "every Monday" is a habit, not a date
    if today is None or (not m["rel"] and _has_context(m, _EVERY)):
        return None
    if not m["rel"] and _has_context(m, _NAMES_TODAY):
        return today, today, "day"
    mode = _EN_REL_MODE[_norm(m["rel"] or "")]
    tense = _tense_of(m) if mode in ("floating", "this") else "unknown"
    return _as_period(_weekday_span(today, _WEEKDAYS[m["wd"].lower()], mode, tense), "day")


def _en_weekday_of(m: re.Match[str]) -> int | None:
    return None if m["rel"] else _WEEKDAYS[m["wd"].lower()]


def _en_weekend(m: re.Match[str], today: date | None) -> _Period | None:
    if today is None:
        return None
    rel = _norm(m["rel"])
    weekends = _weekly_spans(today, 5, days=2)
    if rel in ("the past", "this past"):  # the latest weekend that has begun
        return _as_period(_choose(weekends, today, "this", "past"), "weekend")
    if rel in ("the", "this"):  # the tense decides; "this weekend" without one is this ISO week's
        tense = _tense_of(m)
        if rel == "the" or tense in ("past", "future"):
            return _as_period(_choose(weekends, today, "floating" if rel == "the" else "this", tense), "weekend")
    # by ISO week: last = the previous week's, this = this week's, next = the next week's
    saturday = _weekday_date(today, 5, {"last": -1, "this": 0}.get(rel, 1))
    return saturday, saturday + timedelta(days=1), "weekend"


def _en_season(m: re.Match[str], today: date | None) -> _Period | None:
    instance = _season_instance(_SEASON_START[m["s"].lower()])
    if m["y"]:
        return *instance(int(m["y"])), "season"
    rel = _norm(m["rel"] or "")
    # "fall", "spring" are common words; alone they need "in/during/over the ..." to be a season, or to be
    # arriving ("summer is almost here").
    arriving = _ARRIVING_AFTER.match(m.string, m.end()) is not None
    if today is None or (not rel and not arriving and not _has_context(m, _PERIOD_CONTEXT)):
        return None
    mode = _EN_REL_MODE[rel]
    span = _pick(instance, today, mode, _tense_of(m) if mode in ("floating", "this") else "unknown")
    return None if span is None else (*span, "season")


def _en_season_of(m: re.Match[str]) -> Callable[[int], _Span] | None:
    return None if m["rel"] or m["y"] else _season_instance(_SEASON_START[m["s"].lower()])


def _en_month_alone(m: re.Match[str], today: date | None) -> _Period | None:
    """ "in May", "last March", "this December": a month without a year (and without a day)."""
    rel = _norm(m["rel"] or "")
    # "may", "march" are also verbs: a month alone needs a preposition in front, and "this may" is
    # "this may take a while" unless it is written "May".
    in_context = _has_context(m, _PERIOD_CONTEXT)
    if today is None or not (in_context or (rel and not (rel == "this" and m["mon"] == "may"))):
        return None
    month = _MONTHS[m["mon"].lower()]
    mode = _EN_REL_MODE[rel]
    span = _pick(
        lambda year: _month_span(year, month), today, mode, _tense_of(m) if mode in ("floating", "this") else "unknown"
    )
    return None if span is None else (*span, "month")


def _en_month_of(m: re.Match[str]) -> Callable[[int], _Span] | None:
    if m["rel"]:
        return None
    month = _MONTHS[m["mon"].lower()]
    return lambda year: _month_span(year, month)


def _en_month_year(m: re.Match[str], today: date | None) -> _Period | None:
    return *_month_span(int(m["y"]), _MONTHS[m["mon"].lower().rstrip(".")]), "month"


def _en_month_day(m: re.Match[str], today: date | None) -> _Period | None:
    if m["y"]:
        return _day_of_month(_MONTHS[m["mon"].lower()], int(m["d"]), int(m["y"]), today)
    return _day_of_month(_MONTHS[m["mon"].lower()], int(m["d"]), None, today, _tense_of(m) if today else "unknown")


def _en_month_day_of(m: re.Match[str]) -> Callable[[int], _Span | None] | None:
    if m["y"]:
        return None
    month, day = _MONTHS[m["mon"].lower()], int(m["d"])
    return lambda year: _valid_day(year, month, day)


def _iso_date(m: re.Match[str], today: date | None) -> _Period | None:
    year, month = int(m["y"]), int(m["m"])
    if not 1 <= month <= 12:
        return None
    if m["d"] is None:
        # "2023.05" reads as a number far more often than as a month
        return None if m["s"] == "." else (*_month_span(year, month), "month")
    return _day_of_month(month, int(m["d"]), year, today)


def _numeric_date(m: re.Match[str], today: date | None) -> _Period | None:
    """8/5/2023 is the 8th of May in Europe and August 5th in the US: accept only what both agree on."""
    first, second = int(m["a"]), int(m["b"])
    if first > 12 >= second:
        day, month = first, second
    elif second > 12 >= first or first == second:
        day, month = second, first
    else:
        return None
    return _day_of_month(month, day, int(m["y"]), today)


_COUNT_CONTEXT = re.compile(r"\b(?:of|around)\s+$", re.IGNORECASE)
_PLURAL_NEXT = re.compile(r"\s+[a-z]+s\b")


def _en_year(m: re.Match[str], today: date | None) -> _Period | None:
    # A four-digit number is a year only after "in/during/since/early..." or before "onwards"
    # ("I paid 2000 dollars" is not) -- and "around 2000 cars", "a total of 2019 votes" count things.
    if not _has_context(m, _YEAR_CONTEXT) and not _EN_SINCE_SUFFIX.match(m.string, m.end()):
        return None
    if _has_context(m, _COUNT_CONTEXT) and _PLURAL_NEXT.match(m.string, m.end()):
        return None
    return *_year_span(int(m["y"])), "year"


def _en_year_range(m: re.Match[str], today: date | None) -> _Period | None:
    first, last = (int(m["a"]), int(m["b"])) if m["a"] else (int(m["c"]), int(m["d"]))
    if not first < last <= first + 100:
        return None
    return date(first, 1, 1), date(last, 12, 31), "range"


def _en_decade(m: re.Match[str], today: date | None) -> _Period | None:
    if m["y"]:
        start = int(m["y"])
    else:  # '90s -> 1990s, '10s -> 2010s
        start = int(m["yy"]) + (1900 if int(m["yy"]) >= 30 else 2000)
    return date(start, 1, 1), date(start + 9, 12, 31), "decade"


def _thanksgiving(year: int) -> _Span:
    first = date(year, 11, 1)
    day = first + timedelta(days=(3 - first.weekday()) % 7 + 21)  # fourth Thursday of November
    return day, day


_EN_HOLIDAYS: dict[str, Callable[[int], _Span]] = {
    "christmas eve": _fixed(12, 24), "christmas": _fixed(12, 25), "christmas day": _fixed(12, 25),
    "new years eve": _fixed(12, 31), "new years day": _fixed(1, 1), "new years": _fixed(1, 1),
    "new year": _fixed(1, 1), "halloween": _fixed(10, 31), "valentines day": _fixed(2, 14),
    "valentines": _fixed(2, 14), "thanksgiving": _thanksgiving,
}  # fmt: skip


def _en_holiday(m: re.Match[str], today: date | None) -> _Period | None:
    rel = _norm(m["rel"] or "")
    if not rel and not m["y"] and not _has_context(m, _PERIOD_CONTEXT):  # "I love Christmas" is no date
        return None
    instance = _EN_HOLIDAYS[_norm(m["h"]).replace("'", "")]
    mode = _EN_REL_MODE[rel]
    tense = _tense_of(m) if mode in ("floating", "this") and not m["y"] and today else "unknown"
    return _holiday(instance, int(m["y"]) if m["y"] else None, mode, today, tense)


def _en_holiday_of(m: re.Match[str]) -> Callable[[int], _Span] | None:
    return None if m["rel"] or m["y"] else _EN_HOLIDAYS[_norm(m["h"]).replace("'", "")]


# "two Marches ago", "three summers ago", "two Fridays ago", "the March before last", "the summer after next".
_EN_PLURAL_MONTHS = {
    "januaries": 1, "januarys": 1, "februaries": 2, "februarys": 2, "marches": 3, "aprils": 4, "mays": 5,
    "junes": 6, "julies": 7, "julys": 7, "augusts": 8, "septembers": 9, "octobers": 10, "novembers": 11,
    "decembers": 12,
}  # fmt: skip
_EN_PLURAL_HOLIDAYS = {"christmases": "christmas", "thanksgivings": "thanksgiving", "halloweens": "halloween"}
_EN_RECURRING_ONE = (
    "(?:"
    + "|".join(
        [*sorted(_MONTHS, key=len, reverse=True), *_SEASON_START, *_WEEKDAYS, "christmas", "thanksgiving", "halloween"]
    )
    + ")"
)
_EN_RECURRING_MANY = (
    "(?:"
    + "|".join(
        [*_EN_PLURAL_MONTHS, *(f"{s}s" for s in _SEASON_START), *(f"{w}s" for w in _WEEKDAYS), *_EN_PLURAL_HOLIDAYS]
    )
    + ")"
)


def _en_recurring(name: str) -> Callable[[date, int], _Span | None]:
    """A month, season, weekday or holiday by name (singular or plural) -> (today, count) -> that occurrence."""
    name = name.lower()
    month = _EN_PLURAL_MONTHS.get(name) or _MONTHS.get(name)
    season = _SEASON_START.get(name) or _SEASON_START.get(name[:-1])
    weekday = _WEEKDAYS.get(name, _WEEKDAYS.get(name[:-1]))
    if month is not None:
        return lambda today, count: _pick_nth(lambda year: _month_span(year, month), today, count)
    if season is not None:
        instance = _season_instance(season)
        return lambda today, count: _pick_nth(instance, today, count)
    if weekday is not None:
        return lambda today, count: _nth(_weekly_spans(today, weekday, weeks=abs(count) + 2), today, count)
    holiday = _EN_HOLIDAYS[_EN_PLURAL_HOLIDAYS.get(name, name)]
    return lambda today, count: _pick_nth(holiday, today, count)


def _en_occurrences_ago(m: re.Match[str], today: date | None) -> _Period | None:
    if today is None:
        return None
    occurrence = _en_recurring(m["what"] or m["what2"])
    if m["w"]:  # the March before last / the summer after next
        span = occurrence(today, 2 if m["w"].lower().startswith("before") else -2)
        return None if span is None else (*span, "range")
    amount = _en_amount(m["n"], "year")
    if amount is None or amount[2] != "year" or not 0 < amount[0] <= 20:  # "half a March ago" means nothing
        return None
    near, far = occurrence(today, amount[0]), occurrence(today, amount[1])
    return None if near is None or far is None else (far[0], near[1], "range")


def _en_vague(m: re.Match[str], today: date | None) -> _Period | None:
    if today is None:
        return None
    if _norm(m["w"]) == "the other day":
        return today - timedelta(days=7), today - timedelta(days=1), "range"
    return today - timedelta(days=_VAGUE_DAYS), today, "range"
