"""Find the period of time a query asks about, or a stored memory talks about, without an LLM.

Two callers, one scanner:

* recall's temporal arm: `parse_time_window("what did Alice do last spring", now)` gives the window to
  filter on, and `strip_time_expression` leaves "what did Alice do" for the semantic arms;
* retain: `extract_occurred(text, said_at)` gives the span of days a memory is about.

Every expression is a precompiled regex plus a small resolver that turns the match into a span of
whole days, (first day, last day). No dateparser: the formats are few and regular, and a regex
resolver is ~100x cheaper than dateparser's locale guessing, which matters because retain scans every
turn. All calendar arithmetic happens in the caller's time zone (the tzinfo of `now`/`reference`;
naive means UTC); the day bounds are converted to UTC only at the end.

Choices worth knowing (each is also noted where it is made):

* "N weeks ago" is the 7 days centred on today - N weeks (today - 7N +- 3 days). People say it
  loosely, and a centred window keeps the error small whichever weekday they speak on; the ISO week
  of that day would put "two weeks ago" said on a Sunday 6 days to one side. The same idea for the
  other units: "N months ago" is +-15 days around the shifted date, "N years ago" +-182 days,
  "N days ago" is exactly that day.
* Calendar words are calendar periods: "last week" is the ISO week (Monday-Sunday) before this one,
  "last month" the previous calendar month, "去年" the previous calendar year.
* Seasons are meteorological, northern hemisphere. "last spring" is the latest spring that has fully
  ended; "in (the) spring" / bare "春天" the latest one that has begun; "spring 2023" / "winter 2023"
  are labelled by the year they start in (winter 2023 = Dec 2023 - Feb 2024).
* A month or day without a year ("in May", "5月2日", "May 8") is the latest one that has begun by
  today; "last May" the latest that has ended. A bare weekday ("on Friday") is the latest one on or
  before today; "last Friday" the latest strictly before today; "this Friday" the one in this ISO
  week; "next Friday" the first one after today; "上周五" the Friday of last ISO week.
* Numeric dates like 8/5/2023 are used only when unambiguous (one part above 12, or both equal).
* "recently", "lately", "最近" are vague (the last 30 days): a query uses them only when it has no
  precise expression, and a memory's span ignores them when it has a precise one.
* A query with several expressions gets the window of the first precise one; a memory with several
  gets the span covering all of them.
"""

from __future__ import annotations

import contextvars

import calendar
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta, timezone, tzinfo

from memwrap.models import TimeWindow

__all__ = ["extract_occurred", "parse_time_window", "strip_time_expression"]

_Span = tuple[date, date]
# first day, last day, kind; kind decides which modifiers apply ("early 2023" narrows a year, not a day)
_Period = tuple[date, date, str]
_Resolver = Callable[[re.Match[str], date | None], _Period | None]

_NARROWABLE = frozenset({"year", "month", "decade", "season"})
# Half the width of the window around "N <unit>s ago"; see the module docstring for why it is centred.
_HALF_WIDTH_DAYS = {"day": 0, "week": 3, "month": 15, "year": 182}
_VAGUE_DAYS = 30  # "recently", "lately", "最近"


# ---------------------------------------------------------------------------------------------------
# Calendar helpers: everything is whole days
# ---------------------------------------------------------------------------------------------------


def _month_end(year: int, month: int) -> date:
    return date(year, month, calendar.monthrange(year, month)[1])


def _month_span(year: int, month: int) -> _Span:
    return date(year, month, 1), _month_end(year, month)


def _year_span(year: int) -> _Span:
    return date(year, 1, 1), date(year, 12, 31)


def _add_months(day: date, months: int) -> date:
    """Shift by whole months, clamping the day (Mar 31 - 1 month = Feb 28/29)."""
    year, month0 = divmod(day.year * 12 + day.month - 1 + months, 12)
    return date(year, month0 + 1, min(day.day, calendar.monthrange(year, month0 + 1)[1]))


def _shift(day: date, amount: int, unit: str) -> date:
    if unit == "day":
        return day + timedelta(days=amount)
    if unit == "week":
        return day + timedelta(weeks=amount)
    if unit == "month":
        return _add_months(day, amount)
    return _add_months(day, 12 * amount)


def _period_at(today: date, unit: str, step: int) -> _Period:
    """The calendar day/ISO week/month/year `step` units away from the one containing today."""
    if unit == "day":
        day = today + timedelta(days=step)
        return day, day, "day"
    if unit == "week":
        monday = today - timedelta(days=today.weekday()) + timedelta(weeks=step)
        return monday, monday + timedelta(days=6), "week"
    if unit == "month":
        first = _add_months(today.replace(day=1), step)
        return first, _month_end(first.year, first.month), "month"
    return *_year_span(today.year + step), "year"


def _valid_day(year: int, month: int, day: int) -> _Span | None:
    try:
        found = date(year, month, day)
    except ValueError:
        return None
    return found, found


def _season_instance(start_month: int) -> Callable[[int], _Span]:
    """The season that starts in `start_month` of a year (winter runs into the next year's February)."""

    def instance(year: int) -> _Span:
        end_year, end_month0 = divmod(year * 12 + start_month - 1 + 2, 12)
        return date(year, start_month, 1), _month_end(end_year, end_month0 + 1)

    return instance


# Set while reading stored text: a yearly period without a year ("in May") is the occurrence nearest to
# when it was said, not only the latest one begun (which is right for questions: "what did I do in May?").
_NEAREST: contextvars.ContextVar[bool] = contextvars.ContextVar("memwrap_timeparse_nearest", default=False)


def _pick(instance: Callable[[int], _Span | None], today: date, mode: str) -> _Span | None:
    """Choose one occurrence of a yearly period (a month, a season, a holiday, "May 8").

    recent: the latest that has begun by today; last: the latest that is over before today;
    this: the one containing today, else this year's; next: the first that begins after today.
    """
    # Eight years back reaches the previous Feb 29 from any date.
    spans = [span for year in range(today.year - 8, today.year + 3) if (span := instance(year)) is not None]
    if mode == "this":
        current = [span for span in spans if span[0] <= today <= span[1]]
        return current[0] if current else instance(today.year)
    if mode == "next":
        later = [span for span in spans if span[0] > today]
        return min(later) if later else None
    if mode == "last":
        earlier = [span for span in spans if span[1] < today]
    else:
        earlier = [span for span in spans if span[0] <= today]
    latest = max(earlier) if earlier else None
    if mode == "recent" and _NEAREST.get():
        # A statement ("my sister is visiting in May", said in April) may look ahead: take the closer one.
        later = [span for span in spans if span[0] > today]
        upcoming = min(later) if later else None
        if upcoming is not None and (latest is None or (upcoming[0] - today) < (today - latest[1])):
            return upcoming
    return latest


def _weekday_date(today: date, weekday: int, mode: str, weeks: int = 0) -> date:
    """recent: on or before today; before: strictly before; after: strictly after; week: in the ISO week
    `weeks` away from this one."""
    if mode == "recent":
        return today - timedelta(days=(today.weekday() - weekday) % 7)
    if mode == "before":
        return today - timedelta(days=(today.weekday() - weekday) % 7 or 7)
    if mode == "after":
        return today + timedelta(days=(weekday - today.weekday()) % 7 or 7)
    return today - timedelta(days=today.weekday()) + timedelta(weeks=weeks, days=weekday)


def _offset_window(today: date, low: int, high: int, unit: str, direction: int) -> _Period:
    """The window for "N units ago" (direction -1) or "in N units"/"N天后" (+1); N may be a range."""
    width = timedelta(days=_HALF_WIDTH_DAYS[unit])
    near, far = _shift(today, direction * low, unit), _shift(today, direction * high, unit)
    first, last = (far - width, near + width) if direction < 0 else (near - width, far + width)
    return first, last, "day" if first == last else "range"


def _narrow(first: date, last: date, kind: str, part: str) -> _Span:
    """early/mid/late thirds (and 上半年/下半年 halves) of a year, month, season or decade."""
    if kind == "month":
        bounds = {"early": (1, 10), "mid": (11, 20), "late": (21, last.day)}[part]
        return first.replace(day=bounds[0]), first.replace(day=bounds[1])
    if kind == "decade":
        years = {"early": (0, 3), "mid": (4, 6), "late": (7, 9)}[part]
        return date(first.year + years[0], 1, 1), date(first.year + years[1], 12, 31)
    if part in ("h1", "h2"):
        return (first, date(first.year, 6, 30)) if part == "h1" else (date(first.year, 7, 1), last)
    # Years and seasons are split by whole months: a year into Jan-Apr/May-Aug/Sep-Dec.
    months = 4 if kind == "year" else 1
    index = {"early": 0, "mid": 1, "late": 2}[part]
    start = _add_months(first, index * months)
    end = _add_months(start, months) - timedelta(days=1)
    return start, end


# ---------------------------------------------------------------------------------------------------
# Rules: a regex, a resolver, and a gate
# ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Rule:
    """One kind of expression: where it can be, and how it turns into days.

    `gate` is what the text must contain for the regex to be worth running at all: lower-case words
    for English rules (the pseudo-word _YEARISH_WORD for "has a 19xx/20xx number"), substrings for
    Chinese ones. Retain scans every turn, and most turns contain no date: the gates make those cheap.
    """

    pattern: re.Pattern[str]
    resolve: _Resolver
    gate: frozenset[str]
    chinese: bool = False
    vague: bool = False  # "recently": used only when nothing precise is there


# ---------------------------------------------------------------------------------------------------
# English
# ---------------------------------------------------------------------------------------------------

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
_EN_REL_MODE = {"": "recent", "last": "last", "past": "last", "this past": "last", "this": "this",
                "next": "next", "this coming": "next"}  # fmt: skip

# Words that make a bare year or month a date: "in 2023", "during May", "the summer" after "over".
_YEAR_CONTEXT = re.compile(
    r"(?:\b(?:in|during|of|since|from|through|throughout|around|circa|year|early|mid|late|"
    r"beginning\s+of|start\s+of|end\s+of|middle\s+of)\s+(?:the\s+)?(?:year\s+)?|\bmid-)$",
    re.IGNORECASE,
)
_PERIOD_CONTEXT = re.compile(
    r"(?:\b(?:in|during|since|from|through|throughout|around|over|for|on|at|all|early|mid|late|"
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
    """"3"/"three"/"a few"/"half a" + unit -> (low, high, unit); halves step down a unit."""
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
    """"the past week", "the last 3 days", "over the past few months": from that long ago up to today."""
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


def _en_weekday(m: re.Match[str], today: date | None) -> _Period | None:
    # "every Monday" is a habit, not a date
    if today is None or (not m["rel"] and _has_context(m, _EVERY)):
        return None
    weekday = _WEEKDAYS[m["wd"].lower()]
    mode = {"recent": "recent", "last": "before", "this": "week", "next": "after"}[_EN_REL_MODE[_norm(m["rel"] or "")]]
    day = _weekday_date(today, weekday, mode)
    return day, day, "day"


def _en_weekend(m: re.Match[str], today: date | None) -> _Period | None:
    if today is None:
        return None
    rel = _norm(m["rel"])
    if rel in ("the", "the past", "this past"):  # the latest weekend that has begun
        saturday = _weekday_date(today, 5, "recent")
    else:  # by ISO week: last = the previous week's, this = this week's, next = the next week's
        saturday = _weekday_date(today, 5, "week", {"last": -1, "this": 0}.get(rel, 1))
    return saturday, saturday + timedelta(days=1), "weekend"


def _en_season(m: re.Match[str], today: date | None) -> _Period | None:
    instance = _season_instance(_SEASON_START[m["s"].lower()])
    if m["y"]:
        return *instance(int(m["y"])), "season"
    rel = _norm(m["rel"] or "")
    # "fall", "spring" are common words; alone they need "in/during/over the ..." to be a season.
    if today is None or (not rel and not _has_context(m, _PERIOD_CONTEXT)):
        return None
    span = _pick(instance, today, _EN_REL_MODE[rel])
    return None if span is None else (*span, "season")


def _en_month_alone(m: re.Match[str], today: date | None) -> _Period | None:
    """"in May", "last March", "this December": a month without a year (and without a day)."""
    rel = _norm(m["rel"] or "")
    # "may", "march" are also verbs: a month alone needs a preposition in front, and "this may" is
    # "this may take a while" unless it is written "May".
    in_context = _has_context(m, _PERIOD_CONTEXT)
    if today is None or not (in_context or (rel and not (rel == "this" and m["mon"] == "may"))):
        return None
    month = _MONTHS[m["mon"].lower()]
    span = _pick(lambda year: _month_span(year, month), today, _EN_REL_MODE[rel])
    return None if span is None else (*span, "month")


def _en_month_year(m: re.Match[str], today: date | None) -> _Period | None:
    return *_month_span(int(m["y"]), _MONTHS[m["mon"].lower().rstrip(".")]), "month"


def _day_of_month(month: int, day: int, year: int | None, today: date | None) -> _Period | None:
    """A day with or without its year; without one it is the latest that is not after today."""
    if year is not None:
        span = _valid_day(year, month, day)
    elif today is None:
        return None
    else:
        span = _pick(lambda y: _valid_day(y, month, day), today, "recent")
    return None if span is None else (*span, "day")


def _en_month_day(m: re.Match[str], today: date | None) -> _Period | None:
    return _day_of_month(_MONTHS[m["mon"].lower()], int(m["d"]), int(m["y"]) if m["y"] else None, today)


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


def _fixed(month: int, day: int, days: int = 1) -> Callable[[int], _Span]:
    return lambda year: (date(year, month, day), date(year, month, day) + timedelta(days=days - 1))


_EN_HOLIDAYS: dict[str, Callable[[int], _Span]] = {
    "christmas eve": _fixed(12, 24), "christmas": _fixed(12, 25), "christmas day": _fixed(12, 25),
    "new years eve": _fixed(12, 31), "new years day": _fixed(1, 1), "new years": _fixed(1, 1),
    "new year": _fixed(1, 1), "halloween": _fixed(10, 31), "valentines day": _fixed(2, 14),
    "valentines": _fixed(2, 14), "thanksgiving": _thanksgiving,
}  # fmt: skip


def _holiday(instance: Callable[[int], _Span], year: int | None, mode: str, today: date | None) -> _Period | None:
    if year is not None:
        return *instance(year), "day"
    if today is None:
        return None
    span = _pick(instance, today, mode)
    return None if span is None else (*span, "day")


def _en_holiday(m: re.Match[str], today: date | None) -> _Period | None:
    rel = _norm(m["rel"] or "")
    if not rel and not m["y"] and not _has_context(m, _PERIOD_CONTEXT):  # "I love Christmas" is no date
        return None
    instance = _EN_HOLIDAYS[_norm(m["h"]).replace("'", "")]
    return _holiday(instance, int(m["y"]) if m["y"] else None, _EN_REL_MODE[rel], today)


def _en_vague(m: re.Match[str], today: date | None) -> _Period | None:
    if today is None:
        return None
    if _norm(m["w"]) == "the other day":
        return today - timedelta(days=7), today - timedelta(days=1), "range"
    return today - timedelta(days=_VAGUE_DAYS), today, "range"


def _en(pattern: str, resolve: _Resolver, gate: frozenset[str] | str, vague: bool = False) -> _Rule:
    words = _words(gate) if isinstance(gate, str) else gate
    return _Rule(re.compile(pattern, re.IGNORECASE), resolve, words, vague=vague)


_EN_NOT_A_TIME = r"(?!\s*(?::|[ap]\.?m\b|%|\.\d))"  # "May 5 pm", "Dec 3:30", "March 3.5" are not days
_EN_YEAR_UNITS = (
    r"years?|yrs?|words|people|dollars|euros|ms|seconds|minutes|hours|days|steps|items|times|rows|lines|"
    r"km|miles|meters|kg|lbs|calories|points|pages|tokens|users|units|pieces|copies|records"
)

_EN_RULES: tuple[_Rule, ...] = (
    _en(
        r"\b(?P<w>the\s+day\s+before\s+yesterday|the\s+day\s+after\s+tomorrow|yesterday|last\s+night|"
        r"last\s+evening|today|tonight|tomorrow|this\s+(?:morning|afternoon|evening)|earlier\s+today)\b"
        r"(?:\s+(?:morning|afternoon|evening|night)\b)?",
        _en_day_word, "yesterday today tonight tomorrow night evening morning afternoon",
    ),
    _en(r"\b(?P<rel>last|this|next|previous|current|coming)\s+(?P<unit>week|month|year)\b", _en_rel_period,
        "week month year"),
    _en(r"\bthe\s+(?P<unit>week|month|year)\s+(?P<w>before\s+last|after\s+next)\b", _en_before_last,
        "before after"),
    _en(r"\b(?P<w>earlier|later)\s+this\s+(?P<unit>week|month|year)\b", _en_earlier_this, "earlier later"),
    _en(
        r"\b(?:(?:the|this)\s+)?past\s+(?:(?P<n1>" + _NUM + r")\s+)?(?P<u1>" + _UNIT + r")s?\b"
        r"|\b(?:the\s+)?(?:last|previous)\s+(?P<n2>" + _NUM + r")\s+(?P<u2>" + _UNIT + r")s?\b",
        _en_rolling, "past last previous",
    ),
    _en(r"\b(?P<n>" + _NUM + r")\s+(?P<unit>" + _UNIT + r")s?\s+(?P<dir>ago|back|from\s+(?:now|today))\b", _en_ago,
        "ago back from"),
    _en(r"\b(?:(?P<rel>" + _EN_REL + r")\s+)?(?P<wd>" + _WD + r")\b(?:\s+(?:morning|afternoon|evening|night)\b)?",
        _en_weekday, _WEEKDAY_WORDS),
    _en(r"\b(?P<rel>this\s+past|this\s+coming|the\s+past|last|this|next|the)\s+weekend\b", _en_weekend, "weekend"),
    _en(
        r"\b(?:(?P<rel>" + _EN_REL + r")\s+)?(?P<s>spring|summer|autumn|fall|winter)\b"
        r"(?:,?\s+(?:of\s+)?(?P<y>" + _Y4 + r")\b)?",
        _en_season, "spring summer autumn fall winter",
    ),
    # Month rules: alone ("in May"), with a year ("May 2023"), with a day ("May 8, 2023", "8th of May").
    _en(r"\b(?:(?P<rel>" + _EN_REL + r")\s+)?(?P<mon>" + _MON + r")\b(?!\.?\s*\d|['’])", _en_month_alone,
        _MONTH_WORDS),
    _en(r"\b(?P<mon>" + _MON + r")\.?,?\s+(?:of\s+)?(?P<y>" + _Y4 + r")\b", _en_month_year, _MONTH_WORDS),
    _en(
        r"\b(?:" + _WD + r",?\s+)?(?P<mon>" + _MON + r")\.?\s+(?P<d>\d{1,2})(?:st|nd|rd|th)?\b" + _EN_NOT_A_TIME
        + r"(?:,?\s+(?P<y>" + _Y4 + r")\b)?",
        _en_month_day, _MONTH_WORDS,
    ),
    _en(
        r"\b(?:" + _WD + r",?\s+)?(?:the\s+)?(?P<d>\d{1,2})(?:st|nd|rd|th)?\s+(?:of\s+)?(?P<mon>" + _MON + r")\b\.?"
        r"(?:,?\s+(?P<y>" + _Y4 + r")\b)?",
        _en_month_day, _MONTH_WORDS,
    ),
    # Numbers: 2023-05-08, 13/5/2023, a year after "in", a range of years, a decade.
    _en(r"(?<![\d.])(?P<y>" + _Y4 + r")(?P<s>[-/.])(?P<m>\d{1,2})(?:(?P=s)(?P<d>\d{1,2}))?(?!\d)", _iso_date,
        _YEARISH_GATE),
    _en(r"(?<![\d./-])(?P<a>\d{1,2})(?P<s>[/.-])(?P<b>\d{1,2})(?P=s)(?P<y>" + _Y4 + r")(?!\d)", _numeric_date,
        _YEARISH_GATE),
    _en(
        r"(?<![\d.,:/$€£¥#+])(?<![\d.]-)(?P<y>" + _Y4 + r")(?!\d|[.,]\d|\s*(?:%|(?:" + _EN_YEAR_UNITS + r")\b))",
        _en_year, _YEARISH_GATE,
    ),
    _en(
        r"\b(?:(?:from\s+)?(?P<a>" + _Y4 + r")\s*(?:-|–|—|to|until|till|through)\s*(?P<b>" + _Y4 + r")"
        r"|between\s+(?P<c>" + _Y4 + r")\s+and\s+(?P<d>" + _Y4 + r"))\b",
        _en_year_range, _YEARISH_GATE,
    ),
    _en(r"\b(?P<y>(?:19|20)\d0)['’]?s\b|(?<!\w)['’](?P<yy>\d0)s\b", _en_decade, _YEARISH_GATE),
    _en(
        r"\b(?:(?P<rel>last|this|next)\s+)?(?P<h>christmas\s+eve|christmas(?:\s+day)?|new\s+year['’]?s\s+eve|"
        r"new\s+year['’]?s(?:\s+day)?|new\s+year|halloween|valentine['’]?s(?:\s+day)?|thanksgiving)\b"
        r"(?:,?\s+(?P<y>" + _Y4 + r")\b)?",
        _en_holiday, "christmas year halloween valentine valentines thanksgiving",
    ),
    _en(r"\b(?P<w>recently|lately|the\s+other\s+day)\b", _en_vague, "recently lately other", vague=True),
)


# ---------------------------------------------------------------------------------------------------
# Chinese
# ---------------------------------------------------------------------------------------------------

_CN_DIGITS = {"零": 0, "〇": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9}
_CN_NUM = r"(?:\d{1,3}|[一二两三四五六七八九十]{1,3})"
_CN_YEAR_DIGITS = r"(?:\d{4}|[〇零一二三四五六七八九]{4})"
_CN_MONTH = r"(?:1[0-2]|0?[1-9]|十[一二]?|[一二三四五六七八九])"
_CN_DAY = r"(?:3[01]|[12]\d|0?[1-9]|三十一?|二十[一二三四五六七八九]?|十[一二三四五六七八九]?|[一二三四五六七八九])"
# 以后年纪大了 ("when older, later") is not 后年 (the year after next).
_CN_REL_YEAR = r"(?:大前年|大后年|去年|今年|明年|(?<![以之然最落提向往空])前年|(?<![以之然最落提向往])后年)(?![轻纪龄级])"
_CN_REL_YEAR_STEP = {"大前年": -3, "前年": -2, "去年": -1, "今年": 0, "明年": 1, "后年": 2, "大后年": 3}
# 上/下/本 are everywhere in ordinary words: 马上周末 is "soon it's the weekend", 一下周围 "look around".
_CN_REL = r"(?:(?<![马晚早路身手楼网线班世向以加])上上?|(?<![一以底楼剩留天私地乡线])下下?|这|(?<![日基根书课版资成样账])本)"
_CN_REL_STEP = {"上上": -2, "上": -1, "这": 0, "本": 0, "下": 1, "下下": 2}
_CN_WEEK = r"(?:周|星期|礼拜)"
_CN_WEEKDAYS = {"一": 0, "二": 1, "三": 2, "四": 3, "五": 4, "六": 5, "日": 6, "天": 6,
                "1": 0, "2": 1, "3": 2, "4": 3, "5": 4, "6": 5, "7": 6}  # fmt: skip
_CN_UNITS = {"天": "day", "日": "day", "周": "week", "星期": "week", "礼拜": "week", "个周": "week",
             "个星期": "week", "个礼拜": "week", "个月": "month", "月": "month", "年": "year"}  # fmt: skip
_CN_SEASON_START = {"春": 3, "夏": 6, "秋": 9, "冬": 12}
_CN_PARTS = {"初": "early", "年初": "early", "上旬": "early", "中旬": "mid", "年中": "mid", "下旬": "late",
             "底": "late", "末": "late", "年底": "late", "年末": "late", "上半年": "h1", "下半年": "h2"}  # fmt: skip

# The lookaheads keep words apart: 今年初中毕业 is "finished junior high (初中) this year".
_CN_START = r"初(?![中次恋心步级稿赛选审])"
_CN_END = r"(?:底(?![下线层子气牌细])|末(?![日尾班期]))"
_CN_YEAR_SUFFIX = re.compile(
    r"(?P<part>年?" + _CN_START + r"|年?" + _CN_END + r"|年中|上半年|下半年)?(?P<since>以来|至今)?"
)
_CN_MONTH_SUFFIX = re.compile(r"(?P<part>" + _CN_START + "|" + _CN_END + r"|上旬|中旬|下旬)?(?P<since>以来|至今)?")
_CN_SINCE_SUFFIX = re.compile(r"(?P<part>)(?P<since>以来|至今)?")
_CN_PREFIX = re.compile(r"(?P<w>自从|自打|自|从|在|于)$")
_CJK = re.compile(r"[\u3007\u4e00-\u9fff]")


def _cn_int(text: str) -> int | None:
    """Arabic or Chinese numerals up to 99: 12, 十二, 二十三, 两."""
    if text.isdigit():
        return int(text)
    if "十" in text:
        tens, _, ones = text.partition("十")
        ten = _CN_DIGITS.get(tens) if tens else 1
        one = _CN_DIGITS.get(ones) if ones else 0
        return None if ten is None or one is None else ten * 10 + one
    return _CN_DIGITS.get(text) if len(text) == 1 else None


def _cn_amount(text: str) -> tuple[int, int] | None:
    """A count: 3, 三, 几 (a few: 2-4), 两三 (2-3)."""
    if text == "几":
        return 2, 4
    if len(text) == 2 and "十" not in text and not text.isdigit():
        low, high = _CN_DIGITS.get(text[0]), _CN_DIGITS.get(text[1])
        if low is not None and high == low + 1:
            return low, high
    value = _cn_int(text)
    return None if value is None else (value, value)


def _cn_year(text: str) -> int:
    return int(text) if text.isdigit() else int("".join(str(_CN_DIGITS[c]) for c in text))


def _cn_which_year(m: re.Match[str], today: date | None) -> int | None:
    """The year named by group y (2021, 二〇二一) or ry (去年) -- None if neither or unresolvable."""
    if m["y"]:
        return _cn_year(m["y"])
    if m["ry"] and today is not None:
        return today.year + _CN_REL_YEAR_STEP[m["ry"]]
    return None


_CN_DAY_OFFSETS = {"大前天": -3, "前天": -2, "昨天": -1, "昨日": -1, "昨晚": -1, "昨夜": -1, "今天": 0, "今日": 0,
                   "今晚": 0, "今早": 0, "明天": 1, "明日": 1, "明晚": 1, "后天": 2, "大后天": 3}  # fmt: skip


def _cn_day_word(m: re.Match[str], today: date | None) -> _Period | None:
    if today is None:
        return None
    day = today + timedelta(days=_CN_DAY_OFFSETS[m["w"]])
    return day, day, "day"


def _cn_rel_week(m: re.Match[str], today: date | None) -> _Period | None:
    return None if today is None else _period_at(today, "week", _CN_REL_STEP[m["rel"]])


def _cn_weekday(m: re.Match[str], today: date | None) -> _Period | None:
    if today is None:
        return None
    weekday = _CN_WEEKDAYS[m["wd"]]
    if m["rel"]:  # 上周五: the Friday of last ISO week
        day = _weekday_date(today, weekday, "week", _CN_REL_STEP[m["rel"]])
    else:
        # 每周五 (every Friday) and 一周五天 (five days a week) are no dates.
        if m.start() > 0 and m.string[m.start() - 1] in "每几一二两三四五六七八九十0123456789":
            return None
        day = _weekday_date(today, weekday, "recent")
    return day, day, "day"


def _cn_weekend(m: re.Match[str], today: date | None) -> _Period | None:
    if today is None:
        return None
    if m["rel"]:
        saturday = _weekday_date(today, 5, "week", _CN_REL_STEP[m["rel"]])
    else:
        saturday = _weekday_date(today, 5, "recent")
    return saturday, saturday + timedelta(days=1), "weekend"


def _cn_rel_month(m: re.Match[str], today: date | None) -> _Period | None:
    if today is None:
        return None
    first, last, kind = _period_at(today, "month", _CN_REL_STEP[m["rel"]])
    if m["d"]:  # 上个月5号
        day = _cn_int(m["d"])
        span = None if day is None else _valid_day(first.year, first.month, day)
        return None if span is None else (*span, "day")
    return first, last, kind


def _cn_rel_year(m: re.Match[str], today: date | None) -> _Period | None:
    return None if today is None else (*_year_span(today.year + _CN_REL_YEAR_STEP[m["w"]]), "year")


def _cn_abs_year(m: re.Match[str], today: date | None) -> _Period | None:
    year = _cn_year(m["y"])
    return (*_year_span(year), "year") if 1900 <= year <= 2099 else None


def _cn_month(m: re.Match[str], today: date | None) -> _Period | None:
    """2021年3月5日, 去年3月, 三月, 5月2日 -- without a year, the latest not after today."""
    month = _cn_int(m["m"])
    day = _cn_int(m["d"]) if m["d"] else None
    if month is None or not 1 <= month <= 12 or (m["d"] and day is None):
        return None
    year = _cn_which_year(m, today)
    if year is None and (m["y"] or m["ry"]):  # 去年 with nothing to count from
        return None
    if day is not None:
        return _day_of_month(month, day, year, today)
    if year is not None:
        return *_month_span(year, month), "month"
    if today is None:
        return None
    span = _pick(lambda y: _month_span(y, month), today, "recent")
    return None if span is None else (*span, "month")


def _cn_offset(m: re.Match[str], today: date | None) -> _Period | None:
    """三天前, 两周前, 3个月前, 半年前, 几年前, 三天后."""
    if today is None:
        return None
    unit = _CN_UNITS[m["u"]]
    if m["n"] == "半":
        halves = {"year": (6, 6, "month"), "month": (2, 2, "week")}
        if unit not in halves:
            return None
        low, high, unit = halves[unit]
    else:
        amount = _cn_amount(m["n"])
        if amount is None:
            return None
        low, high = amount
    return _offset_window(today, low, high, unit, -1 if m["dir"] == "前" else 1)


def _cn_rolling(m: re.Match[str], today: date | None) -> _Period | None:
    """最近三天, 过去两周, 近一年, 这几天: from that long ago up to today."""
    if today is None:
        return None
    amount = _cn_amount(m["n"])
    if amount is None:
        return None
    return _shift(today, -amount[1], _CN_UNITS[m["u"]]), today, "range"


_CN_FEW_DAYS = {"前几天": (5, 1), "前些天": (5, 1), "前两天": (3, 1), "近日": (7, 0)}  # days back: (from, to)


def _cn_few_days(m: re.Match[str], today: date | None) -> _Period | None:
    if today is None:
        return None
    back_from, back_to = _CN_FEW_DAYS[m["w"]]
    return today - timedelta(days=back_from), today - timedelta(days=back_to), "range"


def _cn_vague(m: re.Match[str], today: date | None) -> _Period | None:
    if today is None:
        return None
    if m["w"] in ("前阵子", "前段时间", "前些日子"):  # "a while ago": not this week, within two months
        return today - timedelta(days=60), today - timedelta(days=7), "range"
    return today - timedelta(days=_VAGUE_DAYS), today, "range"


def _cn_season(m: re.Match[str], today: date | None) -> _Period | None:
    instance = _season_instance(_CN_SEASON_START[m["s"]])
    year = _cn_which_year(m, today)
    if year is not None:
        return *instance(year), "season"
    if today is None or m["y"] or m["ry"]:
        return None
    span = _pick(instance, today, "recent")
    return None if span is None else (*span, "season")


def _cn_decade(m: re.Match[str], today: date | None) -> _Period | None:
    if m["y"]:
        start = int(m["y"])
    else:
        short = _cn_int(m["yy"])
        if short is None:
            return None
        start = short + (1900 if short >= 20 else 2000)  # 90年代 -> 1990s, 10年代 -> 2010s
    return date(start, 1, 1), date(start + 9, 12, 31), "decade"


_CN_HOLIDAYS: dict[str, Callable[[int], _Span]] = {
    "元旦": _fixed(1, 1), "情人节": _fixed(2, 14), "劳动节": _fixed(5, 1, 5), "国庆节": _fixed(10, 1, 7),
    "国庆": _fixed(10, 1, 7), "万圣节": _fixed(10, 31), "平安夜": _fixed(12, 24), "圣诞节": _fixed(12, 25),
    "圣诞": _fixed(12, 25),
}  # fmt: skip


def _cn_holiday(m: re.Match[str], today: date | None) -> _Period | None:
    year = _cn_which_year(m, today)
    if year is None and (m["y"] or m["ry"]):
        return None
    return _holiday(_CN_HOLIDAYS[m["h"]], year, "recent", today)


def _cn_bare_part(m: re.Match[str], today: date | None) -> _Period | None:
    """年底, 月初, 上半年 on their own: of this year / this month."""
    if today is None:
        return None
    part = _CN_PARTS[m["w"][1:] if m["w"].startswith("月") else m["w"]]
    first, last, kind = _period_at(today, "month" if m["w"].startswith("月") else "year", 0)
    return *_narrow(first, last, kind, part), "range"


# An optional year in front of a month, season or holiday: 2021年3月, 去年的春天.
_CN_YEAR_OR_REL = r"(?:(?:(?P<y>" + _CN_YEAR_DIGITS + r")\s*年|(?P<ry>" + _CN_REL_YEAR + r"))的?)?"


def _cn(pattern: str, resolve: _Resolver, *gate: str, vague: bool = False) -> _Rule:
    return _Rule(re.compile(pattern), resolve, frozenset(gate), chinese=True, vague=vague)


_CN_UNIT = r"(?P<u>个月|个星期|个礼拜|个周|星期|礼拜|周|天|日|年)"

_CN_RULES: tuple[_Rule, ...] = (
    _cn(r"(?P<w>大前天|前天|昨天|昨日|昨晚|昨夜|今天|今日|今晚|今早|明天|明日|明晚|大后天|后天)"
        r"(?:早上|上午|中午|下午|傍晚|晚上|夜里)?", _cn_day_word, "天", "日", "晚", "夜", "早"),
    _cn(r"(?P<rel>" + _CN_REL + r")个?" + _CN_WEEK + r"(?![围边期刊年岁到全])", _cn_rel_week, "周", "星期", "礼拜"),
    _cn(r"(?P<rel>" + _CN_REL + r")?个?" + _CN_WEEK + r"(?P<wd>[一二三四五六日天1-7])(?![次个年岁期十])", _cn_weekday,
        "周", "星期", "礼拜"),
    _cn(r"(?P<rel>" + _CN_REL + r")?个?周末", _cn_weekend, "周末"),
    _cn(r"(?P<rel>" + _CN_REL + r")个?月(?:(?P<d>" + _CN_DAY + r")[日号])?", _cn_rel_month, "月"),
    _cn(r"(?P<w>" + _CN_REL_YEAR + r")", _cn_rel_year, "年"),
    _cn(r"(?<!\d)(?P<y>" + _CN_YEAR_DIGITS + r")\s*年(?![代级龄前后内间来])", _cn_abs_year, "年"),
    _cn(_CN_YEAR_OR_REL + r"(?<![\d一二三四五六七八九十两几])(?P<m>" + _CN_MONTH + r")月份?(?:(?P<d>" + _CN_DAY
        + r")[日号])?", _cn_month, "月"),
    _cn(r"(?<!\d)(?P<n>" + _CN_NUM + r"|几|半)" + _CN_UNIT + r"(?:之|以)?(?P<dir>前|后)", _cn_offset, "前", "后"),
    _cn(r"(?<![将接靠附])(?:最近|过去的?|近|这)(?P<n>" + _CN_NUM + r"|几)" + _CN_UNIT + r"(?:里|内|以来|来)?",
        _cn_rolling, "近", "过去", "这"),
    _cn(r"(?P<w>前几天|前些天|前两天|近日)", _cn_few_days, "前", "近日"),
    _cn(r"(?P<w>最近|近来|近期|这段时间|这阵子|这些天|前阵子|前段时间|前些日子)", _cn_vague,
        "最近", "近来", "近期", "这段", "这阵", "这些天", "前阵", "前段", "前些", vague=True),
    _cn(_CN_YEAR_OR_REL + r"(?P<s>[春夏秋冬])[天季]", _cn_season, "春", "夏", "秋", "冬"),
    _cn(r"(?:(?<!\d)(?P<yy>\d0|[二三四五六七八九]十)|(?P<y>\d{3}0))年代", _cn_decade, "年代"),
    _cn(_CN_YEAR_OR_REL + r"(?P<h>元旦|情人节|劳动节|国庆节|国庆|万圣节|平安夜|圣诞节|圣诞)", _cn_holiday,
        "元旦", "情人节", "劳动节", "国庆", "万圣节", "平安夜", "圣诞"),
    _cn(r"(?P<w>年初|年底|年末|上半年|下半年|月初|月底|月末)", _cn_bare_part, "年初", "年底", "年末", "半年", "月初", "月底", "月末"),
)


# ---------------------------------------------------------------------------------------------------
# Scanning
# ---------------------------------------------------------------------------------------------------


_RULES: tuple[_Rule, ...] = _EN_RULES + _CN_RULES


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
            found = _Found(m.start(), m.end(), *period, vague=rule.vague, chinese=rule.chinese, order=order)
            _absorb_suffix(text, found)
            candidates.append(found)
    candidates.sort(key=lambda f: (f.start, -f.end, f.order))
    chosen: list[_Found] = []
    floor = 0
    for found in candidates:
        if found.start < floor:
            continue
        _absorb_prefix(text, found, floor)
        if found.since and today is not None and today > found.last:  # "since 2020": up to today
            found.last = today
        chosen.append(found)
        floor = found.end
    return _join_ranges(text, chosen)


def _local(moment: datetime) -> tuple[date, tzinfo]:
    """The calendar date at `moment` in its own zone; naive datetimes are UTC."""
    if moment.tzinfo is None or moment.utcoffset() is None:
        return moment.date(), timezone.utc
    return moment.date(), moment.tzinfo


def _utc_bounds(first: date, last: date, zone: tzinfo) -> tuple[datetime, datetime]:
    start = datetime.combine(first, time.min, tzinfo=zone).astimezone(timezone.utc)
    end = datetime.combine(last, time.max, tzinfo=zone).astimezone(timezone.utc)
    return start, end


# ---------------------------------------------------------------------------------------------------
# Public API
# ---------------------------------------------------------------------------------------------------


def parse_time_window(query: str, now: datetime) -> TimeWindow | None:
    """The period a query asks about, relative to `now`, or None when it names no time.

    `start` is the first instant of the first day, `end` the last instant of the last day, both in UTC;
    `expression` is the phrase as it appears in the query (with its preposition: "in May 2023").
    """
    today, zone = _local(now)
    found = _scan(query, today)
    if not found:
        return None
    chosen = next((f for f in found if not f.vague), found[0])
    start, end = _utc_bounds(chosen.first, chosen.last, zone)
    return TimeWindow(start=start, end=end, expression=query[chosen.start : chosen.end])


_SPACE_BEFORE_PUNCT = re.compile(r"\s+([?.!,;:，。？！；：、])")
_SPACE_BETWEEN_CJK = re.compile(r"(?<=[\u3000-\u9fff\uff00-\uffef])\s+(?=[\u3000-\u9fff\uff00-\uffef])")
_LEADING_JUNK = re.compile(r"^[\s,;:，；：、]+")


def strip_time_expression(query: str, window: TimeWindow) -> str:
    """The query without the window's phrase, tidied, so the rest can be searched by meaning."""
    expression = window.expression
    index = query.find(expression) if expression else -1
    if index < 0 and expression:
        index = query.lower().find(expression.lower())
    if index < 0:
        return query.strip()
    rest = f"{query[:index]} {query[index + len(expression):]}"
    rest = _SPACE_BETWEEN_CJK.sub("", " ".join(rest.split()))
    rest = _LEADING_JUNK.sub("", _SPACE_BEFORE_PUNCT.sub(r"\1", rest))
    # Only punctuation left ("yesterday?" -> "?") means nothing is left to search for.
    return "" if not any(c.isalnum() for c in rest) else rest


def extract_occurred(text: str, reference: datetime | None) -> tuple[datetime, datetime] | None:
    """The span of time a memory talks about, from the dates in it, or None if it names none.

    Relative phrases ("yesterday", "last year", "三天前") are resolved against `reference`, the time the
    text was said, and are skipped when it is None. Several dates give the span covering them all;
    vague words ("recently") count only when nothing precise is there. Bounds are UTC.
    """
    if reference is None:
        today, zone = None, timezone.utc
    else:
        today, zone = _local(reference)
    token = _NEAREST.set(True)
    try:
        found = _scan(text, today)
    finally:
        _NEAREST.reset(token)
    precise = [f for f in found if not f.vague] or found
    if not precise:
        return None
    return _utc_bounds(min(f.first for f in precise), max(f.last for f in precise), zone)
