"""Calendar arithmetic for the time parser: everything is whole days.

A period is (first day, last day), plus a kind when a resolver hands it on ("early 2023" narrows a
year, not a day). Nothing here knows about text; the language modules call these to resolve matches.
"""

from __future__ import annotations

import calendar
import contextvars
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Literal

from memwrap.engine.language.timeparse._tense import Tense

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


def _as_period(span: _Span | None, kind: str) -> _Period | None:
    return None if span is None else (*span, kind)


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


@dataclass(frozen=True, slots=True)
class _Reading:
    """How the text being scanned is read.

    `statement`: stored text (retain) rather than a question (recall). A question whose tense says nothing
    looks back ("trip to Lisbon in March?" asks about the March behind us); a statement that says nothing
    takes the nearer occurrence, or both when neither is clearly nearer.
    `tense`: given by the caller (a bare phrase such as an LLM's "in March", whose sentence it knows);
    None reads it from the words around each expression.
    """

    statement: bool = False
    tense: Tense | None = None


# B039: the default is shared by every context; _Reading is frozen, so no context can change it for the others.
_READING: contextvars.ContextVar[_Reading] = contextvars.ContextVar(
    "memwrap_timeparse_reading",
    default=_Reading(),  # noqa: B039 - frozen (see above)
)

# The modes a named period resolves in: floating ("in May", "on Friday": the tense decides), last ("last May":
# the latest that is over), this ("this May"), next ("next May": the first that begins after today).
_Mode = Literal["floating", "last", "this", "next"]


def _nearer(behind: _Span | None, ahead: _Span | None, today: date) -> _Span | None:
    """The clearly nearer of the occurrence behind today and the one ahead; both when neither is twice as near.

    Said on 1 December, "Maya visits in May" could be last May (6 months back) or next May (5 months ahead):
    keeping May-to-May is honest, a guess would be wrong half the time. "My birthday is in March" (3 months
    ahead, 8 back) is next March.
    """
    if behind is None or ahead is None:
        return behind or ahead
    back, forward = (today - behind[1]).days, (ahead[0] - today).days
    if forward * 2 <= back:
        return ahead
    if back * 2 <= forward:
        return behind
    return behind[0], ahead[1]


def _choose(spans: Sequence[_Span], today: date, mode: _Mode, tense: Tense) -> _Span | None:
    """One occurrence of a recurring period among `spans` (sorted, around today), or None.

    last: the latest that is over before today; next: the first that begins after today.
    Floating ("in March", "on Friday"), by tense: past -> the latest that began before today (a month still
    running counts: "I moved in December", said on 15 December; on 1 December it is last December, and a
    Friday said on a Friday is last week's); future -> the first that is not over by the end of today.
    "this", by tense: the same, but today's own occurrence always counts ("this December I moved").
    No tense: the one running today; else a question looks back (the latest begun) and a statement takes the
    nearer (see _nearer). A habit ("I usually ski in the winter") is no one occurrence: None. "this" without a
    tense is the caller's (_pick, _weekday_span).
    """
    if tense == "habitual" and mode == "floating":
        return None
    if mode == "last":
        return next((s for s in reversed(spans) if s[1] < today), None)
    if mode == "next":
        return next((s for s in spans if s[0] > today), None)
    inclusive = mode == "this"
    if tense == "past":
        return next((s for s in reversed(spans) if s[0] < today or (inclusive and s[0] == today)), None)
    if tense == "future":
        return next((s for s in spans if s[1] > today or (inclusive and s[1] == today)), None)
    latest = next((s for s in reversed(spans) if s[0] <= today), None)
    if latest is not None and latest[1] >= today:
        return latest
    if mode == "floating" and _READING.get().statement:
        return _nearer(latest, next((s for s in spans if s[0] > today), None), today)
    return latest


def _yearly_spans(instance: Callable[[int], _Span | None], today: date, back: int = 8) -> list[_Span]:
    # Eight years each way reach a Feb 29 from any date.
    return [span for year in range(today.year - back, today.year + 9) if (span := instance(year)) is not None]


def _pick(instance: Callable[[int], _Span | None], today: date, mode: _Mode, tense: Tense = "unknown") -> _Span | None:
    """One occurrence of a yearly period (a month, a season, a holiday, "May 8"); see _choose.

    "this May" with no tense to go by is the May running today, else this calendar year's.
    """
    if mode == "this" and tense in ("unknown", "habitual"):
        current = [span for span in _yearly_spans(instance, today) if span[0] <= today <= span[1]]
        return current[0] if current else instance(today.year)
    return _choose(_yearly_spans(instance, today), today, mode, tense)


def _pick_nth(instance: Callable[[int], _Span | None], today: date, count: int) -> _Span | None:
    """ "two Marches ago" (count 2), "the summer after next" (count -2): the count-th occurrence that is over
    before today (or that begins after it)."""
    spans = _yearly_spans(instance, today, back=8 + abs(count))
    return _nth(spans, today, count)


def _nth(spans: Sequence[_Span], today: date, count: int) -> _Span | None:
    if count > 0:
        over = [s for s in spans if s[1] < today]
        return over[-count] if len(over) >= count else None
    ahead = [s for s in spans if s[0] > today]
    return ahead[-count - 1] if len(ahead) >= -count else None


def _weekly_spans(today: date, first_weekday: int, days: int = 1, weeks: int = 3) -> list[_Span]:
    """The same weekday (or weekend: Saturday, two days) in the ISO weeks around today's."""
    monday = today - timedelta(days=today.weekday())
    starts = [monday + timedelta(weeks=k, days=first_weekday) for k in range(-weeks, weeks + 1)]
    return [(start, start + timedelta(days=days - 1)) for start in starts]


def _weekday_span(today: date, weekday: int, mode: _Mode, tense: Tense = "unknown") -> _Span | None:
    """A weekday by name; see _choose. "this Friday" without a tense is the one in this ISO week."""
    if mode == "this" and tense in ("unknown", "habitual"):
        day = _weekday_date(today, weekday)
        return day, day
    return _choose(_weekly_spans(today, weekday), today, mode, tense)


def _weekday_date(today: date, weekday: int, weeks: int = 0) -> date:
    """The weekday in the ISO week `weeks` away from this one."""
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


def _day_of_month(
    month: int, day: int, year: int | None, today: date | None, tense: Tense = "unknown"
) -> _Period | None:
    """A day with or without its year; without one the tense chooses which (see _choose)."""
    if year is not None:
        span = _valid_day(year, month, day)
    elif today is None:
        return None
    else:
        span = _pick(lambda y: _valid_day(y, month, day), today, "floating", tense)
    return None if span is None else (*span, "day")


def _fixed(month: int, day: int, days: int = 1) -> Callable[[int], _Span]:
    return lambda year: (date(year, month, day), date(year, month, day) + timedelta(days=days - 1))


def _holiday(
    instance: Callable[[int], _Span], year: int | None, mode: _Mode, today: date | None, tense: Tense = "unknown"
) -> _Period | None:
    if year is not None:
        return *instance(year), "day"
    if today is None:
        return None
    span = _pick(instance, today, mode, tense)
    return None if span is None else (*span, "day")
