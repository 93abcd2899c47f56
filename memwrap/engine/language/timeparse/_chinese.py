"""Chinese time expressions: the word tables, the regexes, and the resolvers that turn a match into days."""

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
    _month_span,
    _narrow,
    _offset_window,
    _Period,
    _period_at,
    _pick,
    _season_instance,
    _shift,
    _Span,
    _valid_day,
    _weekday_date,
    _weekday_span,
    _weekly_spans,
    _year_span,
)
from memwrap.engine.language.timeparse._rule import _Resolver, _Rule, _tense_of, _Within, _within_week, _within_year

_CN_DIGITS = {
    "零": 0,
    "〇": 0,
    "一": 1,
    "二": 2,
    "两": 2,
    "三": 3,
    "四": 4,
    "五": 5,
    "六": 6,
    "七": 7,
    "八": 8,
    "九": 9,
}
_CN_NUM = r"(?:\d{1,3}|[一二两三四五六七八九十]{1,3})"
_CN_YEAR_DIGITS = r"(?:\d{4}|[〇零一二三四五六七八九]{4})"
_CN_MONTH = r"(?:1[0-2]|0?[1-9]|十[一二]?|[一二三四五六七八九])"
_CN_DAY = r"(?:3[01]|[12]\d|0?[1-9]|三十一?|二十[一二三四五六七八九]?|十[一二三四五六七八九]?|[一二三四五六七八九])"
# 以后年纪大了 ("when older, later") is not 后年 (the year after next).
_CN_REL_YEAR = (
    r"(?:大前年|大后年|去年|今年|明年|(?<![以之然最落提向往空])前年|(?<![以之然最落提向往])后年)(?![轻纪龄级])"
)
_CN_REL_YEAR_STEP = {"大前年": -3, "前年": -2, "去年": -1, "今年": 0, "明年": 1, "后年": 2, "大后年": 3}
# 上/下/本 are everywhere in ordinary words: 马上周末 is "soon it's the weekend", 一下周围 "look around".
_CN_REL = (
    r"(?:(?<![马晚早路身手楼网线班世向以加])上上?|(?<![一以底楼剩留天私地乡线])下下?|这|(?<![日基根书课版资成样账])本)"
)
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
        day = _weekday_date(today, weekday, _CN_REL_STEP[m["rel"]])
        return day, day, "day"
    # 每周五 (every Friday) and 一周五天 (five days a week) are no dates.
    if m.start() > 0 and m.string[m.start() - 1] in "每几一二两三四五六七八九十0123456789":
        return None
    if m.string.endswith(("今天是", "今天", "今日是"), 0, m.start()):  # 今天是星期天: the name of today
        return today, today, "day"
    return _as_period(_weekday_span(today, weekday, "floating", _tense_of(m)), "day")


def _cn_weekday_of(m: re.Match[str]) -> int | None:
    return None if m["rel"] else _CN_WEEKDAYS[m["wd"]]


def _cn_weekend(m: re.Match[str], today: date | None) -> _Period | None:
    if today is None:
        return None
    if m["rel"]:
        saturday = _weekday_date(today, 5, _CN_REL_STEP[m["rel"]])
        return saturday, saturday + timedelta(days=1), "weekend"
    return _as_period(_choose(_weekly_spans(today, 5, days=2), today, "floating", _tense_of(m)), "weekend")


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
    if year is None and today is None:
        return None
    if day is not None:
        return _day_of_month(month, day, year, today, _tense_of(m) if year is None else "unknown")
    if year is not None:
        return *_month_span(year, month), "month"
    assert today is not None
    span = _pick(lambda y: _month_span(y, month), today, "floating", _tense_of(m))
    return None if span is None else (*span, "month")


def _cn_month_of(m: re.Match[str]) -> Callable[[int], _Span | None] | None:
    """The yearly instance of a month (or a day of it) that names no year, for _within_year."""
    if m["y"] or m["ry"]:
        return None
    month = _cn_int(m["m"])
    day = _cn_int(m["d"]) if m["d"] else None
    if month is None or not 1 <= month <= 12:
        return None
    if day is not None:
        return lambda year: _valid_day(year, month, day)
    return lambda year: _month_span(year, month)


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
    span = _pick(instance, today, "floating", _tense_of(m))
    return None if span is None else (*span, "season")


def _cn_season_of(m: re.Match[str]) -> Callable[[int], _Span] | None:
    return None if m["y"] or m["ry"] else _season_instance(_CN_SEASON_START[m["s"]])


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
    tense = _tense_of(m) if year is None and today is not None else "unknown"
    return _holiday(_CN_HOLIDAYS[m["h"]], year, "floating", today, tense)


def _cn_holiday_of(m: re.Match[str]) -> Callable[[int], _Span] | None:
    return None if m["y"] or m["ry"] else _CN_HOLIDAYS[m["h"]]


def _cn_bare_part(m: re.Match[str], today: date | None) -> _Period | None:
    """年底, 月初, 上半年 on their own: of this year / this month."""
    if today is None:
        return None
    part = _CN_PARTS[m["w"][1:] if m["w"].startswith("月") else m["w"]]
    first, last, kind = _period_at(today, "month" if m["w"].startswith("月") else "year", 0)
    return *_narrow(first, last, kind, part), "range"


# An optional year in front of a month, season or holiday: 2021年3月, 去年的春天.
_CN_YEAR_OR_REL = r"(?:(?:(?P<y>" + _CN_YEAR_DIGITS + r")\s*年|(?P<ry>" + _CN_REL_YEAR + r"))的?)?"


def _cn(pattern: str, resolve: _Resolver, *gate: str, vague: bool = False, within: _Within | None = None) -> _Rule:
    return _Rule(re.compile(pattern), resolve, frozenset(gate), chinese=True, vague=vague, within=within)


_CN_UNIT = r"(?P<u>个月|个星期|个礼拜|个周|星期|礼拜|周|天|日|年)"

_CN_RULES: tuple[_Rule, ...] = (
    _cn(
        r"(?P<w>大前天|前天|昨天|昨日|昨晚|昨夜|今天|今日|今晚|今早|明天|明日|明晚|大后天|后天)"
        r"(?:早上|上午|中午|下午|傍晚|晚上|夜里)?",
        _cn_day_word,
        "天",
        "日",
        "晚",
        "夜",
        "早",
    ),
    _cn(r"(?P<rel>" + _CN_REL + r")个?" + _CN_WEEK + r"(?![围边期刊年岁到全])", _cn_rel_week, "周", "星期", "礼拜"),
    _cn(
        r"(?P<rel>" + _CN_REL + r")?个?" + _CN_WEEK + r"(?P<wd>[一二三四五六日天1-7])(?![次个年岁期十])",
        _cn_weekday,
        "周",
        "星期",
        "礼拜",
        within=_within_week(_cn_weekday_of),
    ),
    _cn(r"(?P<rel>" + _CN_REL + r")?个?周末", _cn_weekend, "周末"),
    _cn(r"(?P<rel>" + _CN_REL + r")个?月(?:(?P<d>" + _CN_DAY + r")[日号])?", _cn_rel_month, "月"),
    _cn(r"(?P<w>" + _CN_REL_YEAR + r")", _cn_rel_year, "年"),
    _cn(r"(?<!\d)(?P<y>" + _CN_YEAR_DIGITS + r")\s*年(?![代级龄前后内间来])", _cn_abs_year, "年"),
    _cn(
        _CN_YEAR_OR_REL
        + r"(?<![\d一二三四五六七八九十两几])(?P<m>"
        + _CN_MONTH
        + r")月份?(?:(?P<d>"
        + _CN_DAY
        + r")[日号])?",
        _cn_month,
        "月",
        within=_within_year(_cn_month_of),
    ),
    _cn(r"(?<!\d)(?P<n>" + _CN_NUM + r"|几|半)" + _CN_UNIT + r"(?:之|以)?(?P<dir>前|后)", _cn_offset, "前", "后"),
    _cn(
        r"(?<![将接靠附])(?:最近|过去的?|近|这)(?P<n>" + _CN_NUM + r"|几)" + _CN_UNIT + r"(?:里|内|以来|来)?",
        _cn_rolling,
        "近",
        "过去",
        "这",
    ),
    _cn(r"(?P<w>前几天|前些天|前两天|近日)", _cn_few_days, "前", "近日"),
    _cn(
        r"(?P<w>最近|近来|近期|这段时间|这阵子|这些天|前阵子|前段时间|前些日子)",
        _cn_vague,
        "最近",
        "近来",
        "近期",
        "这段",
        "这阵",
        "这些天",
        "前阵",
        "前段",
        "前些",
        vague=True,
    ),
    _cn(
        _CN_YEAR_OR_REL + r"(?P<s>[春夏秋冬])[天季]",
        _cn_season,
        "春",
        "夏",
        "秋",
        "冬",
        within=_within_year(_cn_season_of),
    ),
    _cn(r"(?:(?<!\d)(?P<yy>\d0|[二三四五六七八九]十)|(?P<y>\d{3}0))年代", _cn_decade, "年代"),
    _cn(
        _CN_YEAR_OR_REL + r"(?P<h>元旦|情人节|劳动节|国庆节|国庆|万圣节|平安夜|圣诞节|圣诞)",
        _cn_holiday,
        "元旦",
        "情人节",
        "劳动节",
        "国庆",
        "万圣节",
        "平安夜",
        "圣诞",
        within=_within_year(_cn_holiday_of),
    ),
    _cn(
        r"(?P<w>年初|年底|年末|上半年|下半年|月初|月底|月末)",
        _cn_bare_part,
        "年初",
        "年底",
        "年末",
        "半年",
        "月初",
        "月底",
        "月末",
    ),
)
