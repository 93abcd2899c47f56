"""Calendar arithmetic for the time parser: everything is whole days.

A period is (first day, last day), plus a kind when a resolver hands it on ("early 2023" narrows a
year, not a day). Nothing here knows about text; the language modules call these to resolve matches.
"""

from __future__ import annotations

import calendar
import contextvars
from collections.abc import Callable
from datetime import date, timedelta

_Span = tuple[date, date]
# first day, last day, kind; kind decides which modifiers apply ("early 2023" narrows a year, not a day)
_Period = tuple[date, date, str]

# Half the width of the window around "N <unit>s ago"; see the package docstring (timeparse/__init__.py)
# for why it is centred.
_HALF_WIDTH_DAYS = {"day": 0, "week": 3, "month": 15, "year": 182}
_VAGUE_DAYS = 30  # "recently", "lately", "最近"


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
# Yearly periods both languages name: a day of a month, a fixed-date holiday
# ---------------------------------------------------------------------------------------------------


def _day_of_month(month: int, day: int, year: int | None, today: date | None) -> _Period | None:
    """A day with or without its year; without one it is the latest that is not after today."""
    if year is not None:
        span = _valid_day(year, month, day)
    elif today is None:
        return None
    else:
        span = _pick(lambda y: _valid_day(y, month, day), today, "recent")
    return None if span is None else (*span, "day")


def _fixed(month: int, day: int, days: int = 1) -> Callable[[int], _Span]:
    return lambda year: (date(year, month, day), date(year, month, day) + timedelta(days=days - 1))


def _holiday(instance: Callable[[int], _Span], year: int | None, mode: str, today: date | None) -> _Period | None:
    if year is not None:
        return *instance(year), "day"
    if today is None:
        return None
    span = _pick(instance, today, mode)
    return None if span is None else (*span, "day")
