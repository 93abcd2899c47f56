"""The English rules: each regex with its resolver (_english.py), its gate and how it sits inside a period named
elsewhere in the sentence. Order matters where two rules can match the same words (_scan.py keeps the longest)."""

from __future__ import annotations

import re

from memwrap.engine.language.timeparse._english import (
    _EN_RECURRING_MANY,
    _EN_RECURRING_ONE,
    _EN_REL,
    _MON,
    _MONTH_WORDS,
    _NUM,
    _UNIT,
    _WD,
    _WEEKDAY_WORDS,
    _Y4,
    _YEARISH_GATE,
    _en_ago,
    _en_before_last,
    _en_day_word,
    _en_decade,
    _en_earlier_this,
    _en_holiday,
    _en_holiday_of,
    _en_month_alone,
    _en_month_day,
    _en_month_day_of,
    _en_month_of,
    _en_month_year,
    _en_occurrences_ago,
    _en_rel_period,
    _en_rolling,
    _en_season,
    _en_season_of,
    _en_vague,
    _en_weekday,
    _en_weekday_of,
    _en_weekend,
    _en_year,
    _en_year_range,
    _iso_date,
    _numeric_date,
    _words,
)
from memwrap.engine.language.timeparse._rule import _Resolver, _Rule, _Within, _within_week, _within_year


def _en(
    pattern: str, resolve: _Resolver, gate: frozenset[str] | str, vague: bool = False, within: _Within | None = None
) -> _Rule:
    words = _words(gate) if isinstance(gate, str) else gate
    return _Rule(re.compile(pattern, re.IGNORECASE), resolve, words, vague=vague, within=within)


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
        _en_day_word,
        "yesterday today tonight tomorrow night evening morning afternoon",
    ),
    _en(
        r"\b(?P<rel>last|this|next|previous|current|coming)\s+(?P<unit>week|month|year)\b",
        _en_rel_period,
        "week month year",
    ),
    _en(r"\bthe\s+(?P<unit>week|month|year)\s+(?P<w>before\s+last|after\s+next)\b", _en_before_last, "before after"),
    _en(r"\b(?P<w>earlier|later)\s+this\s+(?P<unit>week|month|year)\b", _en_earlier_this, "earlier later"),
    _en(
        r"\b(?:(?:the|this)\s+)?past\s+(?:(?P<n1>" + _NUM + r")\s+)?(?P<u1>" + _UNIT + r")s?\b"
        r"|\b(?:the\s+)?(?:last|previous)\s+(?P<n2>" + _NUM + r")\s+(?P<u2>" + _UNIT + r")s?\b",
        _en_rolling,
        "past last previous",
    ),
    _en(
        r"\b(?P<n>" + _NUM + r")\s+(?P<unit>" + _UNIT + r")s?\s+(?P<dir>ago|back|from\s+(?:now|today))\b",
        _en_ago,
        "ago back from",
    ),
    _en(
        r"\b(?:(?P<rel>" + _EN_REL + r")\s+)?(?P<wd>" + _WD + r")\b(?:\s+(?:morning|afternoon|evening|night)\b)?",
        _en_weekday,
        _WEEKDAY_WORDS,
        within=_within_week(_en_weekday_of),
    ),
    _en(r"\b(?P<rel>this\s+past|this\s+coming|the\s+past|last|this|next|the)\s+weekend\b", _en_weekend, "weekend"),
    _en(
        r"\b(?:(?P<rel>" + _EN_REL + r")\s+)?(?P<s>spring|summer|autumn|fall|winter)\b"
        r"(?:,?\s+(?:of\s+)?(?P<y>" + _Y4 + r")\b)?",
        _en_season,
        "spring summer autumn fall winter",
        within=_within_year(_en_season_of),
    ),
    # Month rules: alone ("in May"), with a year ("May 2023"), with a day ("May 8, 2023", "8th of May").
    _en(
        r"\b(?:(?P<rel>" + _EN_REL + r")\s+)?(?P<mon>" + _MON + r")\b(?!\.?\s*\d|['’])",
        _en_month_alone,
        _MONTH_WORDS,
        within=_within_year(_en_month_of),
    ),
    _en(r"\b(?P<mon>" + _MON + r")\.?,?\s+(?:of\s+)?(?P<y>" + _Y4 + r")\b", _en_month_year, _MONTH_WORDS),
    _en(
        r"\b(?:"
        + _WD
        + r",?\s+)?(?P<mon>"
        + _MON
        + r")\.?\s+(?P<d>\d{1,2})(?:st|nd|rd|th)?\b"
        + _EN_NOT_A_TIME
        + r"(?:,?\s+(?P<y>"
        + _Y4
        + r")\b)?",
        _en_month_day,
        _MONTH_WORDS,
        within=_within_year(_en_month_day_of),
    ),
    _en(
        r"\b(?:" + _WD + r",?\s+)?(?:the\s+)?(?P<d>\d{1,2})(?:st|nd|rd|th)?\s+(?:of\s+)?(?P<mon>" + _MON + r")\b\.?"
        r"(?:,?\s+(?P<y>" + _Y4 + r")\b)?",
        _en_month_day,
        _MONTH_WORDS,
        within=_within_year(_en_month_day_of),
    ),
    # Numbers: 2023-05-08, 13/5/2023, a year after "in", a range of years, a decade.
    _en(
        r"(?<![\d.])(?P<y>" + _Y4 + r")(?P<s>[-/.])(?P<m>\d{1,2})(?:(?P=s)(?P<d>\d{1,2}))?(?!\d)",
        _iso_date,
        _YEARISH_GATE,
    ),
    _en(
        r"(?<![\d./-])(?P<a>\d{1,2})(?P<s>[/.-])(?P<b>\d{1,2})(?P=s)(?P<y>" + _Y4 + r")(?!\d)",
        _numeric_date,
        _YEARISH_GATE,
    ),
    _en(
        r"(?<![\d.,:/$€£¥#+])(?<![\d.]-)(?P<y>" + _Y4 + r")(?!\d|[.,]\d|\s*(?:%|(?:" + _EN_YEAR_UNITS + r")\b))",
        _en_year,
        _YEARISH_GATE,
    ),
    _en(
        r"\b(?:(?:from\s+)?(?P<a>" + _Y4 + r")\s*(?:-|–|—|to|until|till|through)\s*(?P<b>" + _Y4 + r")"
        r"|between\s+(?P<c>" + _Y4 + r")\s+and\s+(?P<d>" + _Y4 + r"))\b",
        _en_year_range,
        _YEARISH_GATE,
    ),
    _en(r"\b(?P<y>(?:19|20)\d0)['’]?s\b|(?<!\w)['’](?P<yy>\d0)s\b", _en_decade, _YEARISH_GATE),
    _en(
        r"\b(?:(?P<rel>last|this|next)\s+)?(?P<h>christmas\s+eve|christmas(?:\s+day)?|new\s+year['’]?s\s+eve|"
        r"new\s+year['’]?s(?:\s+day)?|new\s+year|halloween|valentine['’]?s(?:\s+day)?|thanksgiving)\b"
        r"(?:,?\s+(?P<y>" + _Y4 + r")\b)?",
        _en_holiday,
        "christmas year halloween valentine valentines thanksgiving",
        within=_within_year(_en_holiday_of),
    ),
    _en(
        r"\b(?P<n>" + _NUM + r")\s+(?P<what>" + _EN_RECURRING_MANY + r")\s+ago\b"
        r"|\bthe\s+(?P<what2>" + _EN_RECURRING_ONE + r")\s+(?P<w>before\s+last|after\s+next)\b",
        _en_occurrences_ago,
        "ago before after",
    ),
    _en(r"\b(?P<w>recently|lately|the\s+other\s+day)\b", _en_vague, "recently lately other", vague=True),
)
