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
  ended; "spring 2023" / "winter 2023" are labelled by the year they start in (winter 2023 = Dec 2023 -
  Feb 2024).
* A month, season, holiday or day without a year ("in May", "三月", "at Christmas", "May 8") and a bare
  weekday or weekend ("on Friday", "周五", "over the weekend") have an occurrence behind and one ahead:
  the tense of the words around them chooses (_tense.py; the caller may give it instead). Past tense or
  a completed event ("I moved to Lisbon in March", "我三月搬到了里斯本") -> the latest that began before
  today (a month still running counts; today's own weekday means last week's, since a speaker would
  say "today"); future ("I'll visit Tokyo in March", "我三月要去东京") -> the first not over by the end
  of today. No tense: the one running today; else a question looks back (the latest begun) and a
  stored statement takes the clearly nearer occurrence (twice as near) -- or the span from the one
  behind to the one ahead: a wider interval rather than a wrong year. A habit ("I usually ski in the
  winter", "每周都会在周末去打球") names no one occurrence and gives no date.
* "last May" is the latest May that has ended; "next May" the first that begins after today; "this May"
  follows the tense, else the one running today or this calendar year's. "last Friday" is the latest
  strictly before today; "this Friday" the one in this ISO week unless the tense says otherwise; "next
  Friday" the first one after today; "上周五" the Friday of last ISO week. "two Marches ago" and "the
  summer before last" count back over occurrences that are over.
* A recurring period in the same sentence as a year or a week takes that one: "last year ... in March"
  is March of last year, "上周我周五..." the Friday of last week.
* Numeric dates like 8/5/2023 are used only when unambiguous (one part above 12, or both equal).
* "recently", "lately", "最近" are vague (the last 30 days): a query uses them only when it has no
  precise expression, and a memory's span ignores them when it has a precise one.
* A query with several expressions gets the window of the first precise one; a memory with several
  gets the span covering all of them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta, tzinfo

from memwrap.engine.language.timeparse._calendar import _READING, _Reading
from memwrap.engine.language.timeparse._scan import _Found, _scan
from memwrap.engine.language.timeparse._tense import Tense, detect_tense
from memwrap.models import TimeWindow

__all__ = [
    "Tense",
    "TimeExpression",
    "detect_tense",
    "extract_occurred",
    "find_time_expressions",
    "parse_time_window",
    "strip_time_expression",
]


def _local(moment: datetime) -> tuple[date, tzinfo]:
    """The calendar date at `moment` in its own zone; naive datetimes are UTC."""
    if moment.tzinfo is None or moment.utcoffset() is None:
        return moment.date(), UTC
    return moment.date(), moment.tzinfo


def _utc_bounds(first: date, last: date, zone: tzinfo) -> tuple[datetime, datetime]:
    start = datetime.combine(first, time.min, tzinfo=zone).astimezone(UTC)
    end = datetime.combine(last, time.max, tzinfo=zone).astimezone(UTC)
    return start, end


def _read(text: str, today: date | None, reading: _Reading) -> list[_Found]:
    token = _READING.set(reading)
    try:
        return _scan(text, today)
    finally:
        _READING.reset(token)


def parse_time_window(query: str, now: datetime, *, tense: Tense | None = None) -> TimeWindow | None:
    """The period a query asks about, relative to `now`, or None when it names no time.

    `start` is the first instant of the first day, `end` the last instant of the last day, both in UTC;
    `expression` is the phrase as it appears in the query (with its preposition: "in May 2023").
    `tense` overrides the tense read from the query's own words ("what will I do in March" -> "future").
    """
    today, zone = _local(now)
    reading = _Reading(statement=False, tense=tense)
    found = _read(query, today, reading)
    if not found:
        return None
    chosen = next((f for f in found if not f.vague), found[0])
    first, last, start_at, end_at = chosen.first, chosen.last, chosen.start, chosen.end
    anchor = _anchor(query, today, found, reading)
    if anchor is not None:
        first, last, start_at, end_at = anchor
    start, end = _utc_bounds(first, last, zone)
    return TimeWindow(start=start, end=end, expression=query[start_at:end_at], vague=chosen.vague and anchor is None)


# "two weeks before August 11, 2023", "the week before Christmas 2022", "a month after 3 May 2024".
_UNITS_OFF = re.compile(
    r"\b(?:(?P<n>a|an|one|two|three|four|five|six|seven|eight|nine|ten|\d{1,2})\s+|(?:the|last)\s+)?"
    r"(?P<unit>days?|weeks?|weekend|months?|years?)\s+(?P<dir>before|after|prior\s+to)\s*$",
    re.IGNORECASE,
)
_NUMBER_WORDS = {
    "a": 1,
    "an": 1,
    "the": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
}
_UNIT_DAYS = {"day": 1, "week": 7, "weekend": 7, "month": 31, "year": 366}


def _anchor(query: str, today: date, found: list[_Found], reading: _Reading) -> tuple[date, date, int, int] | None:
    """A question that names a date anchors its other time words to it, not to today: "what did Joanna finish last
    Friday, on 23 January 2022" is the Friday before that Sunday, "two weeks before August 11, 2023" the fortnight
    before it. Returns (first day, last day, where the phrase starts, where it ends), or None when the question
    names no day besides its relative words.

    Which expressions are dates: those that resolve the same whatever today is (the question read again a thousand
    days later); the others are relative to the day they are read on."""
    later = _read(query, today + timedelta(days=1000), reading)
    absolute = [
        f
        for f in found
        if not f.vague and any((g.start, g.end, g.first, g.last) == (f.start, f.end, f.first, f.last) for g in later)
    ]
    # Only a day anchors ("in 2019" is the year something happened, not the day the question stands on).
    if not absolute or absolute[0].first != absolute[0].last:
        return None
    date_ = absolute[0]
    before = _UNITS_OFF.search(query, 0, date_.start)
    if before is not None:
        count = _NUMBER_WORDS.get((before["n"] or "the").lower()) or int(before["n"])
        days = count * _UNIT_DAYS[before["unit"].lower().rstrip("s")]
        if before["dir"].lower() == "after":
            return date_.last, date_.last + timedelta(days=days), before.start(), date_.end
        return date_.first - timedelta(days=days), date_.first, before.start(), date_.end
    relative = [f for f in found if f is not date_ and f not in absolute]
    if not relative:
        return None
    # The relative words read on the named day (its last day: "last Friday on 23 January" is before the 23rd),
    # and the window spans both: the day it was said and the day it was about.
    anchored = _read(query, date_.last, reading)
    spans = [g for g in anchored if (g.start, g.end) in {(f.start, f.end) for f in relative}]
    if not spans:
        return None
    first = min([date_.first, *(g.first for g in spans)])
    last = max([date_.last, *(g.last for g in spans)])
    return first, last, min(date_.start, *(g.start for g in spans)), max(date_.end, *(g.end for g in spans))


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
    rest = f"{query[:index]} {query[index + len(expression) :]}"
    rest = _SPACE_BETWEEN_CJK.sub("", " ".join(rest.split()))
    rest = _LEADING_JUNK.sub("", _SPACE_BEFORE_PUNCT.sub(r"\1", rest))
    # Only punctuation left ("yesterday?" -> "?") means nothing is left to search for.
    return "" if not any(c.isalnum() for c in rest) else rest


def _reference(reference: datetime | None) -> tuple[date | None, tzinfo]:
    return (None, UTC) if reference is None else _local(reference)


def extract_occurred(
    text: str, reference: datetime | None, *, tense: Tense | None = None
) -> tuple[datetime, datetime] | None:
    """The span of time a memory talks about, from the dates in it, or None if it names none.

    Relative phrases ("yesterday", "last year", "三天前") are resolved against `reference`, the time the
    text was said, and are skipped when it is None. Several dates give the span covering them all;
    vague words ("recently") count only when nothing precise is there. Bounds are UTC.
    `tense` is for a phrase cut out of its sentence (an LLM's "when": "in March"): pass the sentence's
    tense (`detect_tense(sentence)`), and "in March" resolves as the sentence means it. None reads the
    tense from `text` itself.
    """
    today, zone = _reference(reference)
    found = _read(text, today, _Reading(statement=True, tense=tense))
    precise = [f for f in found if not f.vague] or found
    if not precise:
        return None
    return _utc_bounds(min(f.first for f in precise), max(f.last for f in precise), zone)


@dataclass(frozen=True, slots=True)
class TimeExpression:
    """One time expression found in a text: the words, where they are, and the span of time they mean."""

    phrase: str  # as written, with its preposition ("in March")
    offset: int  # where the phrase starts in the text
    start: datetime  # first instant of the first day, UTC
    end: datetime  # last instant of the last day, UTC
    vague: bool  # "recently", "最近": a rough window, not a date


def find_time_expressions(text: str, reference: datetime | None, *, tense: Tense | None = None) -> list[TimeExpression]:
    """Every time expression in a stored text, each resolved on its own (extract_occurred joins them).

    Read as a statement, like extract_occurred: each recurring period takes the tense of its own clause
    ("I moved in March and will visit Tokyo in May" -> March behind, May ahead) unless `tense` is given.
    """
    today, zone = _reference(reference)
    found = _read(text, today, _Reading(statement=True, tense=tense))
    return [TimeExpression(text[f.start : f.end], f.start, *_utc_bounds(f.first, f.last, zone), f.vague) for f in found]
