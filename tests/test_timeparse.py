"""Time expressions in queries (parse_time_window) and in memories (extract_occurred). Pure functions: no DB.

Run as a script to print extract_occurred's throughput: `.venv/bin/python tests/test_timeparse.py`.
"""

from __future__ import annotations

import random
import time as clock
from datetime import UTC, date, datetime, time, timedelta, timezone

import pytest

from memwrap.engine.language.timeparse import (
    Tense,
    detect_tense,
    extract_occurred,
    find_time_expressions,
    parse_time_window,
    strip_time_expression,
)
from memwrap.models import TimeWindow

MONDAY = datetime(2026, 11, 30, 15, 30)  # the acceptance "now": Monday 30 November 2026


def days(query: str, now: datetime = MONDAY) -> tuple[date, date] | None:
    """The window as (first day, last day), after checking it covers whole UTC days."""
    window = parse_time_window(query, now)
    if window is None:
        return None
    assert window.start.tzinfo is not None and window.start.utcoffset() == timedelta(0)
    assert window.end.tzinfo is not None and window.end.utcoffset() == timedelta(0)
    assert window.start.timetz().replace(tzinfo=None) == time.min
    assert window.end.timetz().replace(tzinfo=None) == time.max
    assert window.start <= window.end
    return window.start.date(), window.end.date()


def d(text: str) -> date:
    return date.fromisoformat(text)


def span(first: str, last: str | None = None) -> tuple[date, date]:
    return d(first), d(last or first)


def occurred(text: str, reference: datetime | None) -> tuple[date, date] | None:
    found = extract_occurred(text, reference)
    if found is None:
        return None
    start, end = found
    assert start.utcoffset() == timedelta(0) and end.utcoffset() == timedelta(0)
    assert start <= end
    return start.date(), end.date()


# --------------------------------------------------------------------------------------------------
# Acceptance
# --------------------------------------------------------------------------------------------------


def test_acceptance_last_spring() -> None:
    window = parse_time_window("what did Alice do last spring", MONDAY)
    assert window is not None
    assert window.start == datetime(2026, 3, 1, tzinfo=UTC)
    assert window.end == datetime(2026, 5, 31, 23, 59, 59, 999999, tzinfo=UTC)
    assert window.expression == "last spring"


def test_acceptance_last_spring_before_this_spring_is_over() -> None:
    assert days("last spring", datetime(2026, 4, 10)) == span("2025-03-01", "2025-05-31")


def test_acceptance_shang_zhou_is_the_previous_iso_week() -> None:
    assert days("上周", MONDAY) == span("2026-11-23", "2026-11-29")


def test_acceptance_two_weeks_ago_is_centred_on_now_minus_14_days() -> None:
    # Choice: the 7 days centred on now - 14 days (2026-11-16), i.e. +-3 days.
    assert days("two weeks ago", MONDAY) == span("2026-11-13", "2026-11-19")


def test_acceptance_in_may_2023() -> None:
    window = parse_time_window("in May 2023", MONDAY)
    assert window is not None and window.expression == "in May 2023"
    assert days("in May 2023") == span("2023-05-01", "2023-05-31")


def test_acceptance_qu_nian_san_yue() -> None:
    assert days("去年三月", MONDAY) == span("2025-03-01", "2025-03-31")


def test_acceptance_last_friday() -> None:
    assert days("last Friday", MONDAY) == span("2026-11-27")


# --------------------------------------------------------------------------------------------------
# English, relative to Monday 2026-11-30
# --------------------------------------------------------------------------------------------------

ENGLISH = [
    ("What did Alice say yesterday?", "2026-11-29", None),
    ("what happened today", "2026-11-30", None),
    ("where did we go last night", "2026-11-29", None),
    ("yesterday morning", "2026-11-29", None),
    ("the day before yesterday", "2026-11-28", None),
    ("tomorrow", "2026-12-01", None),
    ("3 days ago", "2026-11-27", None),
    ("three days ago", "2026-11-27", None),
    ("a few days ago", "2026-11-26", "2026-11-28"),
    ("a couple of days ago", "2026-11-27", "2026-11-28"),
    ("a week ago", "2026-11-20", "2026-11-26"),
    ("2 weeks ago", "2026-11-13", "2026-11-19"),
    ("a few weeks ago", "2026-10-30", "2026-11-19"),
    ("a month ago", "2026-10-15", "2026-11-14"),
    ("3 months ago", "2026-08-15", "2026-09-14"),
    ("a year ago", "2025-06-01", "2026-05-31"),  # 2025-11-30 +- 182 days
    ("two years ago", "2024-06-01", "2025-05-31"),
    ("three days from now", "2026-12-03", None),
    ("last week", "2026-11-23", "2026-11-29"),
    ("this week", "2026-11-30", "2026-12-06"),
    ("next week", "2026-12-07", "2026-12-13"),
    ("the week before last", "2026-11-16", "2026-11-22"),
    ("earlier this week", "2026-11-30", "2026-11-30"),
    ("last month", "2026-10-01", "2026-10-31"),
    ("this month", "2026-11-01", "2026-11-30"),
    ("earlier this month", "2026-11-01", "2026-11-30"),
    ("last year", "2025-01-01", "2025-12-31"),
    ("this year", "2026-01-01", "2026-12-31"),
    ("the past week", "2026-11-23", "2026-11-30"),
    ("over the past few months", "2026-07-30", "2026-11-30"),
    ("in the last 3 days", "2026-11-27", "2026-11-30"),
    ("last summer", "2026-06-01", "2026-08-31"),
    ("last autumn", "2025-09-01", "2025-11-30"),  # autumn 2026 ends today: not over yet
    ("last fall", "2025-09-01", "2025-11-30"),
    ("last winter", "2025-12-01", "2026-02-28"),
    ("this spring", "2026-03-01", "2026-05-31"),
    ("this winter", "2026-12-01", "2027-02-28"),
    ("in the summer", "2026-06-01", "2026-08-31"),
    ("spring 2023", "2023-03-01", "2023-05-31"),
    ("the summer of 2019", "2019-06-01", "2019-08-31"),
    ("in May", "2026-05-01", "2026-05-31"),
    ("in December", "2025-12-01", "2025-12-31"),  # the latest December that has begun
    ("last May", "2026-05-01", "2026-05-31"),
    ("next May", "2027-05-01", "2027-05-31"),
    ("late May", "2026-05-21", "2026-05-31"),
    ("Dec 2024", "2024-12-01", "2024-12-31"),
    ("on 8 May 2023", "2023-05-08", None),
    ("May 8, 2023", "2023-05-08", None),
    ("May 8th 2023", "2023-05-08", None),
    ("the 8th of May, 2023", "2023-05-08", None),
    ("Friday, May 8, 2023", "2023-05-08", None),
    ("on May 8", "2026-05-08", None),
    ("2023-05-08", "2023-05-08", None),
    ("2023/5/8", "2023-05-08", None),
    ("13/5/2023", "2023-05-13", None),
    ("12/25/2023", "2023-12-25", None),
    ("5/5/2023", "2023-05-05", None),
    ("in 2023", "2023-01-01", "2023-12-31"),
    ("during 2019", "2019-01-01", "2019-12-31"),
    ("in the year 2019", "2019-01-01", "2019-12-31"),
    ("early 2023", "2023-01-01", "2023-04-30"),
    ("mid 2023", "2023-05-01", "2023-08-31"),
    ("mid-2023", "2023-05-01", "2023-08-31"),
    ("late 2023", "2023-09-01", "2023-12-31"),
    ("at the end of last year", "2025-09-01", "2025-12-31"),
    ("the beginning of March 2024", "2024-03-01", "2024-03-10"),
    ("since 2020", "2020-01-01", "2026-11-30"),
    ("2020 onwards", "2020-01-01", "2026-11-30"),
    ("from 2019 to 2021", "2019-01-01", "2021-12-31"),
    ("between March 2024 and May 2024", "2024-03-01", "2024-05-31"),
    ("in the 1990s", "1990-01-01", "1999-12-31"),
    ("the early '90s", "1990-01-01", "1993-12-31"),
    ("on Friday", "2026-11-27", None),
    ("this Friday", "2026-12-04", None),
    ("next Friday", "2026-12-04", None),
    ("last Monday", "2026-11-23", None),  # strictly before today, which is a Monday
    ("on Monday", "2026-11-30", None),
    ("the weekend", "2026-11-28", "2026-11-29"),
    ("over the weekend", "2026-11-28", "2026-11-29"),
    ("last weekend", "2026-11-28", "2026-11-29"),
    ("next weekend", "2026-12-12", "2026-12-13"),
    ("last Christmas", "2025-12-25", None),
    ("on Thanksgiving 2024", "2024-11-28", None),
    ("recently", "2026-10-31", "2026-11-30"),
    ("lately", "2026-10-31", "2026-11-30"),
    ("the other day", "2026-11-23", "2026-11-29"),
]


@pytest.mark.parametrize(("query", "first", "last"), ENGLISH)
def test_english(query: str, first: str, last: str | None) -> None:
    assert days(query) == span(first, last)


def test_english_is_case_insensitive() -> None:
    assert days("WHAT DID I DO LAST WEEK") == days("what did i do last week") == span("2026-11-23", "2026-11-29")
    assert days("what did i do in may") == span("2026-05-01", "2026-05-31")


def test_a_precise_expression_beats_a_vague_one() -> None:
    assert days("recently, what happened in May 2023?") == span("2023-05-01", "2023-05-31")


def test_the_first_of_two_separate_expressions_wins() -> None:
    assert days("yesterday, and in 2019") == span("2026-11-29")


def test_joined_expressions_make_one_range() -> None:
    assert days("yesterday and today") == span("2026-11-29", "2026-11-30")
    assert days("today and yesterday") == span("2026-11-29", "2026-11-30")
    assert days("from May 2023 to June 2023") == span("2023-05-01", "2023-06-30")


# --------------------------------------------------------------------------------------------------
# Chinese, relative to Monday 2026-11-30
# --------------------------------------------------------------------------------------------------

CHINESE = [
    ("昨天", "2026-11-29", None),
    ("爱丽丝昨天说了什么", "2026-11-29", None),
    ("昨晚", "2026-11-29", None),
    ("前天", "2026-11-28", None),
    ("大前天", "2026-11-27", None),
    ("今天", "2026-11-30", None),
    ("明天", "2026-12-01", None),
    ("上周", "2026-11-23", "2026-11-29"),
    ("上个星期", "2026-11-23", "2026-11-29"),
    ("上星期", "2026-11-23", "2026-11-29"),
    ("上个礼拜", "2026-11-23", "2026-11-29"),
    ("上上周", "2026-11-16", "2026-11-22"),
    ("本周", "2026-11-30", "2026-12-06"),
    ("这周", "2026-11-30", "2026-12-06"),
    ("下周", "2026-12-07", "2026-12-13"),
    ("上个月", "2026-10-01", "2026-10-31"),
    ("上月", "2026-10-01", "2026-10-31"),
    ("这个月", "2026-11-01", "2026-11-30"),
    ("本月", "2026-11-01", "2026-11-30"),
    ("上个月5号", "2026-10-05", None),
    ("去年", "2025-01-01", "2025-12-31"),
    ("今年", "2026-01-01", "2026-12-31"),
    ("前年", "2024-01-01", "2024-12-31"),
    ("明年", "2027-01-01", "2027-12-31"),
    ("三天前", "2026-11-27", None),
    ("3天前", "2026-11-27", None),
    ("几天前", "2026-11-26", "2026-11-28"),
    ("两周前", "2026-11-13", "2026-11-19"),
    ("两个星期前", "2026-11-13", "2026-11-19"),
    ("3个月前", "2026-08-15", "2026-09-14"),
    ("半年前", "2026-05-15", "2026-06-14"),
    ("三天后", "2026-12-03", None),
    ("上周五", "2026-11-27", None),
    ("上星期三", "2026-11-25", None),
    ("这周六", "2026-12-05", None),
    ("下周三", "2026-12-09", None),
    ("周日", "2026-11-29", None),
    ("星期天", "2026-11-29", None),
    ("周末", "2026-11-28", "2026-11-29"),
    ("上周末", "2026-11-28", "2026-11-29"),
    ("去年三月", "2025-03-01", "2025-03-31"),
    ("去年3月", "2025-03-01", "2025-03-31"),
    ("去年的三月", "2025-03-01", "2025-03-31"),
    ("2021年", "2021-01-01", "2021-12-31"),
    ("2021年3月", "2021-03-01", "2021-03-31"),
    ("2021年3月5日", "2021-03-05", None),
    ("二〇二一年三月五号", "2021-03-05", None),
    ("5月2日", "2026-05-02", None),
    ("十二月", "2025-12-01", "2025-12-31"),
    ("三月份", "2026-03-01", "2026-03-31"),
    ("3月初", "2026-03-01", "2026-03-10"),
    ("上个月底", "2026-10-21", "2026-10-31"),
    ("去年年底", "2025-09-01", "2025-12-31"),
    ("去年底", "2025-09-01", "2025-12-31"),
    ("2023年初", "2023-01-01", "2023-04-30"),
    ("去年上半年", "2025-01-01", "2025-06-30"),
    ("2020年以来", "2020-01-01", "2026-11-30"),
    ("自从去年", "2025-01-01", "2026-11-30"),
    ("2019年到2021年", "2019-01-01", "2021-12-31"),
    ("去年春天", "2025-03-01", "2025-05-31"),
    ("今年冬天", "2026-12-01", "2027-02-28"),
    ("2023年夏天", "2023-06-01", "2023-08-31"),
    ("春天", "2026-03-01", "2026-05-31"),
    ("九十年代", "1990-01-01", "1999-12-31"),
    ("去年国庆", "2025-10-01", "2025-10-07"),
    ("最近三天", "2026-11-27", "2026-11-30"),
    ("过去两周", "2026-11-16", "2026-11-30"),
    ("这两天", "2026-11-28", "2026-11-30"),
    ("前几天", "2026-11-25", "2026-11-29"),
    ("最近", "2026-10-31", "2026-11-30"),
]


@pytest.mark.parametrize(("query", "first", "last"), CHINESE)
def test_chinese(query: str, first: str, last: str | None) -> None:
    assert days(query) == span(first, last)


# --------------------------------------------------------------------------------------------------
# No time at all
# --------------------------------------------------------------------------------------------------

NO_TIME = [
    "Where does Alice work?",
    "What is 2+2",
    "I have 3 cats",
    "",
    "   ",
    "May I ask where Alice works?",
    "This may take a while",
    "we march on",
    "hot spring water",
    "I fall asleep easily",
    "Python 3.11",
    "he paid 2000 dollars",
    "we have 2023 users",
    "call 555-123-4567",
    "meet at 5 pm",
    "room 101",
    "8/5/2023",  # 8 May or August 5: ambiguous, so no date
    "the last time we spoke",
    "I love Christmas",
    "That was on Jan's birthday",
    "I go to the gym every Monday",
    "around 2000 cars were sold",
    "write it in 2000 words or less",
    "爱丽丝在哪里工作？",
    "我有三只猫",
    "每周五我都去游泳",
    "一周五天工作",
    "我以后年纪大了",
    "三个月的项目",
    "5号线",
]


@pytest.mark.parametrize("query", NO_TIME)
def test_no_time_expression(query: str) -> None:
    assert parse_time_window(query, MONDAY) is None


# --------------------------------------------------------------------------------------------------
# Boundaries: month and year ends, ISO weeks across New Year, leap years, time zones
# --------------------------------------------------------------------------------------------------


def test_last_month_in_january_is_last_december() -> None:
    assert days("last month", datetime(2026, 1, 15)) == span("2025-12-01", "2025-12-31")
    assert days("上个月", datetime(2026, 1, 1)) == span("2025-12-01", "2025-12-31")


def test_next_month_in_december_is_next_january() -> None:
    assert days("next month", datetime(2026, 12, 31)) == span("2027-01-01", "2027-01-31")


def test_yesterday_on_new_years_day() -> None:
    assert days("yesterday", datetime(2026, 1, 1)) == span("2025-12-31")
    assert days("last year", datetime(2026, 1, 1)) == span("2025-01-01", "2025-12-31")


def test_iso_week_across_new_year() -> None:
    # Friday 2027-01-01 lies in the ISO week that starts Monday 2026-12-28.
    assert days("this week", datetime(2027, 1, 1)) == span("2026-12-28", "2027-01-03")
    assert days("上周", datetime(2027, 1, 1)) == span("2026-12-21", "2026-12-27")


def test_this_week_on_a_sunday_still_starts_on_monday() -> None:
    assert days("this week", datetime(2026, 11, 29)) == span("2026-11-23", "2026-11-29")


def test_last_month_in_a_leap_march() -> None:
    assert days("last month", datetime(2024, 3, 15)) == span("2024-02-01", "2024-02-29")
    assert days("last month", datetime(2025, 3, 15)) == span("2025-02-01", "2025-02-28")


def test_february_29() -> None:
    assert days("Feb 29, 2024") == span("2024-02-29")
    assert days("Feb 29, 2023") is None  # no such day
    assert days("2月29日", datetime(2026, 3, 1)) == span("2024-02-29")  # the latest one that existed


def test_winter_runs_into_a_leap_february() -> None:
    assert days("winter 2023") == span("2023-12-01", "2024-02-29")


def test_month_offsets_clamp_to_the_end_of_the_month() -> None:
    # 31 March - 1 month = 28 February, +-15 days
    assert days("a month ago", datetime(2026, 3, 31)) == span("2026-02-13", "2026-03-15")


def test_a_year_ago_from_february_29() -> None:
    assert days("one year ago", datetime(2024, 2, 29)) == span("2022-08-30", "2023-08-29")


def test_in_may_during_may_is_this_may() -> None:
    assert days("in May", datetime(2026, 5, 3)) == span("2026-05-01", "2026-05-31")
    assert days("last May", datetime(2026, 5, 3)) == span("2025-05-01", "2025-05-31")


def test_last_friday_said_on_saturday_is_yesterday() -> None:
    assert days("last Friday", datetime(2026, 11, 28)) == span("2026-11-27")


def test_naive_now_is_utc() -> None:
    naive = parse_time_window("yesterday", datetime(2026, 11, 30, 23, 0))
    aware = parse_time_window("yesterday", datetime(2026, 11, 30, 23, 0, tzinfo=UTC))
    assert naive == aware


def test_calendar_is_the_callers_zone_and_bounds_are_utc() -> None:
    shanghai = timezone(timedelta(hours=8))
    window = parse_time_window("昨天", datetime(2026, 11, 30, 7, 0, tzinfo=shanghai))  # 23:00 on the 29th in UTC
    assert window is not None
    assert window.start == datetime(2026, 11, 28, 16, 0, tzinfo=UTC)
    assert window.end == datetime(2026, 11, 29, 15, 59, 59, 999999, tzinfo=UTC)


# --------------------------------------------------------------------------------------------------
# strip_time_expression
# --------------------------------------------------------------------------------------------------

STRIP = [
    ("what did Alice do last spring", "what did Alice do"),
    ("What did Alice do last spring?", "What did Alice do?"),
    ("What did Alice say in May 2023 about Paris?", "What did Alice say about Paris?"),
    ("Yesterday, what did Bob cook?", "what did Bob cook?"),
    ("what happened in the early 1990s", "what happened"),
    ("上周爱丽丝做了什么", "爱丽丝做了什么"),
    ("爱丽丝上周做了什么？", "爱丽丝做了什么？"),
    ("我在去年三月去了哪里", "我去了哪里"),
    ("yesterday?", ""),
]


@pytest.mark.parametrize(("query", "rest"), STRIP)
def test_strip_time_expression(query: str, rest: str) -> None:
    window = parse_time_window(query, MONDAY)
    assert window is not None
    assert strip_time_expression(query, window) == rest


def test_strip_with_a_foreign_expression_leaves_the_query() -> None:
    window = TimeWindow(
        start=datetime(2026, 1, 1, tzinfo=UTC), end=datetime(2026, 1, 2, tzinfo=UTC), expression="x y z"
    )
    assert strip_time_expression("  where does Alice work  ", window) == "where does Alice work"


# --------------------------------------------------------------------------------------------------
# extract_occurred
# --------------------------------------------------------------------------------------------------

SAID = datetime(2023, 5, 8, 14, 0)  # a Monday

OCCURRED = [
    ("I went hiking yesterday", "2023-05-07", None),
    ("Last year I moved to Berlin", "2022-01-01", "2022-12-31"),
    ("On 8 May 2023 we signed the lease", "2023-05-08", None),
    ("I lived in Paris in 2021", "2021-01-01", "2021-12-31"),
    ("2021年3月我去了上海", "2021-03-01", "2021-03-31"),
    ("I start the new job in March 2026", "2026-03-01", "2026-03-31"),
    ("昨天我去了医院", "2023-05-07", None),
    ("我三天前买了车", "2023-05-05", None),
    ("上周五和Bob吃饭", "2023-05-05", None),
    ("I'll fly to Tokyo next Friday", "2023-05-12", None),
    ("Music from the 1990s is the best", "1990-01-01", "1999-12-31"),
    ("We met in 2019 and married on 8 May 2021", "2019-01-01", "2021-05-08"),
    ("I recently started piano", "2023-04-08", "2023-05-08"),
    ("I recently moved; on 2 May 2023 I signed", "2023-05-02", None),  # the vague word gives way
    ("Python 3.11.4 came out on 2023-06-06", "2023-06-06", None),
    ("Between 2019 and 2021 I worked at Acme", "2019-01-01", "2021-12-31"),
    ("I've lived here since 2020", "2020-01-01", "2023-05-08"),
    ("We went skiing in the winter", "2022-12-01", "2023-02-28"),
]


@pytest.mark.parametrize(("text", "first", "last"), OCCURRED)
def test_extract_occurred(text: str, first: str, last: str | None) -> None:
    assert occurred(text, SAID) == span(first, last)


def test_relative_phrases_need_a_reference() -> None:
    assert occurred("I went hiking yesterday", None) is None
    assert occurred("Last year I moved to Berlin", None) is None
    assert occurred("我三天前买了车", None) is None
    assert occurred("in May we went to Rome", None) is None  # which May?


def test_absolute_dates_need_no_reference() -> None:
    assert occurred("On 8 May 2023 we signed the lease", None) == span("2023-05-08")
    assert occurred("2021年3月我去了上海", None) == span("2021-03-01", "2021-03-31")


def test_without_a_reference_only_the_absolute_part_counts() -> None:
    assert occurred("Yesterday I found photos from 2019", None) == span("2019-01-01", "2019-12-31")
    assert occurred("Yesterday I found photos from 2019", SAID) == span("2019-01-01", "2023-05-07")


def test_extract_occurred_bounds_are_whole_utc_days() -> None:
    found = extract_occurred("I went hiking yesterday", SAID)
    assert found == (datetime(2023, 5, 7, tzinfo=UTC), datetime(2023, 5, 7, 23, 59, 59, 999999, tzinfo=UTC))


NO_OCCURRED = [
    "I have 2 kids",
    "Meet me at 5 pm",
    "We upgraded to version 3.11",
    "Call me at 555-123-4567 or +1 (415) 555-0199",
    "My number is 13800138000",
    "I paid 2000 dollars for 3 tickets",
    "Room 2023 at 10:30",
    "The meeting is on 5/8/2023",  # ambiguous day/month
    "The May release was good",
    "I love Christmas",
    "I fall asleep at 11",
    "a total of 2019 votes",
    "I'm 25 years old and spent 2 years in Japan",
    "The price is $2,023.50",
    "Email me at jan.2023@example.com",
    "版本2.3.1发布了",
    "价格是2023元",
    "每周五我都去游泳",
    "我在5号线上",
    "",
]


@pytest.mark.parametrize("text", NO_OCCURRED)
def test_extract_occurred_none(text: str) -> None:
    assert extract_occurred(text, SAID) is None


# --------------------------------------------------------------------------------------------------
# Volume: extract_occurred runs on every retained turn
# --------------------------------------------------------------------------------------------------

_FILLER = (
    "the a I we you went to store with my friend and talked about work project coffee lunch meeting team "
    "plan book movie dog cat weather really good nice think maybe doctor caught market decided 我们 今天 "
    "去 吃饭 工作 项目"
).split()
_DATES = [
    "yesterday", "last week", "on 8 May 2023", "in 2021", "2021年3月", "three days ago", "last Friday", "上周五",
    "next month", "at 5 pm", "version 3.11", "recently", "in March 2026", "2023-05-08", "I have 2 kids", "去年春天",
    "a few weeks ago", "the 1990s", "555-123-4567", "since 2020", "三个月前", "Feb 29, 2023",
]  # fmt: skip


def chat_turns(count: int = 2000, seed: int = 7) -> list[str]:
    """Synthetic ~30-word chat turns; two in three carry a date-like phrase somewhere."""
    rng = random.Random(seed)
    turns = []
    for index in range(count):
        words = [rng.choice(_FILLER) for _ in range(28)]
        if index % 3:
            words.insert(rng.randrange(len(words)), rng.choice(_DATES))
        turns.append(" ".join(words))
    return turns


def test_extract_occurred_on_2000_turns() -> None:
    # A smoke run over the volume retain sees (no timing assertion; see __main__ for the throughput).
    found = 0
    for turn in chat_turns():
        for reference in (SAID, None):
            result = extract_occurred(turn, reference)
            if result is not None:
                assert result[0] <= result[1]
                found += 1
    assert found > 0


if __name__ == "__main__":
    turns = chat_turns()
    started = clock.perf_counter()
    rounds = 5
    for _ in range(rounds):
        for turn in turns:
            extract_occurred(turn, SAID)
    elapsed = clock.perf_counter() - started
    per_turn_us = elapsed / rounds / len(turns) * 1e6
    print(f"extract_occurred: {rounds * len(turns) / elapsed:,.0f} turns/s ({per_turn_us:.0f} µs/turn)")


def test_stored_text_takes_the_nearest_month_but_questions_look_back() -> None:
    said = datetime(2026, 4, 12, tzinfo=UTC)
    upcoming = extract_occurred("My sister Maya is visiting in May.", said)
    assert upcoming is not None and upcoming[0].date().isoformat() == "2026-05-01"
    window = parse_time_window("what did I do in May", said)
    assert window is not None and window.start.date().isoformat() == "2025-05-01"


# --------------------------------------------------------------------------------------------------
# Tense: what chooses between the March behind and the March ahead (the full table: test_timeparse_table.py)
# --------------------------------------------------------------------------------------------------

DECEMBER_1 = datetime(2026, 12, 1, 10)

TENSES: list[tuple[str, Tense]] = [
    ("Alice moved to Lisbon in March", "past"),
    ("I started a new job", "past"),
    ("We went skiing", "past"),
    ("I've been to Paris", "past"),
    ("I had a party", "past"),
    ("We got married", "past"),
    ("I'll visit Tokyo", "future"),
    ("I'm going to visit Tokyo", "future"),
    ("We are flying to Tokyo", "future"),
    ("I booked a table", "future"),  # a booking is for something ahead
    ("Let's meet", "future"),
    ("My birthday is in March", "unknown"),
    ("I'm excited about the trip", "unknown"),  # an adjective, not a past verb
    ("I was going to move", "unknown"),  # the cues cancel
    ("We have a meeting", "unknown"),
    ("I usually ski in the winter", "habitual"),
    ("We play tennis every weekend", "habitual"),
    ("我三月搬到了里斯本", "past"),
    ("我已经交税", "past"),
    ("我去过东京", "past"),
    ("我三月要去东京", "future"),
    ("我们会去东京", "future"),
    ("我打算去东京", "future"),
    ("我要搬家了", "future"),  # 要……了: about to
    ("我的生日在三月", "unknown"),
    ("我重要的会议在三月", "unknown"),  # 重要, 会议: no 要 or 会 of the future
    ("我们每周都去打球", "habitual"),
]


@pytest.mark.parametrize(("text", "tense"), TENSES)
def test_detect_tense(text: str, tense: Tense) -> None:
    assert detect_tense(text) == tense


def test_a_phrase_cut_from_its_sentence_takes_the_tense_it_is_given() -> None:
    # An LLM's "when" is a bare phrase: alone, "in March" said on 1 December is the nearer March (next one).
    assert occurred("in March", DECEMBER_1) == span("2027-03-01", "2027-03-31")
    sentence_tense = detect_tense("Alice moved to Lisbon in March.")
    found = extract_occurred("in March", DECEMBER_1, tense=sentence_tense)
    assert found is not None and (found[0].date(), found[1].date()) == span("2026-03-01", "2026-03-31")
    found = extract_occurred("in March", DECEMBER_1, tense="future")
    assert found is not None and found[0].date() == d("2027-03-01")
    assert extract_occurred("in March", DECEMBER_1, tense="habitual") is None


def test_a_question_can_be_given_its_tense() -> None:
    window = parse_time_window("in March", DECEMBER_1)
    assert window is not None and window.start.date() == d("2026-03-01")  # a question looks back
    window = parse_time_window("in March", DECEMBER_1, tense="future")
    assert window is not None and window.start.date() == d("2027-03-01")


def test_find_time_expressions_reads_each_clause_by_its_own_tense() -> None:
    text = "I moved to Lisbon in March and will visit Tokyo in May."
    found = find_time_expressions(text, DECEMBER_1)
    assert [(e.phrase, e.offset, e.start.date(), e.end.date(), e.vague) for e in found] == [
        ("in March", text.index("in March"), d("2026-03-01"), d("2026-03-31"), False),
        ("in May", text.index("in May"), d("2027-05-01"), d("2027-05-31"), False),
    ]
    assert found[0].start == datetime(2026, 3, 1, tzinfo=UTC)
    # extract_occurred covers both
    assert occurred("I moved to Lisbon in March and will visit Tokyo in May.", DECEMBER_1) == span(
        "2026-03-01", "2027-05-31"
    )


# --------------------------------------------------------------------------------------------------
# A question that names a day reads its relative words on that day
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "first", "last"),
    [
        ("What did Joanna just finish last Friday on 23 January, 2022?", "2022-01-21", "2022-01-23"),
        ("What was the writing issue last week, as mentioned on November 6, 2023?", "2023-10-30", "2023-11-06"),
        ("What did John do the week before August 3, 2023?", "2023-07-27", "2023-08-03"),
        ("Which puppy did Maria get two weeks before August 11, 2023?", "2023-07-28", "2023-08-11"),
        ("What did Maria do last weekend before April 10, 2023?", "2023-04-03", "2023-04-10"),
        ("What did she start recently, as mentioned on 3 June, 2023?", "2023-05-04", "2023-06-03"),
        ("What happened three days after 3 May 2024?", "2024-05-03", "2024-05-06"),
    ],
)
def test_relative_words_are_read_on_the_day_the_question_names(query: str, first: str, last: str) -> None:
    window = parse_time_window(query, MONDAY)
    assert window is not None and not window.vague
    assert (window.start.date(), window.end.date()) == span(first, last)


def test_only_a_day_anchors_and_a_question_without_one_reads_today() -> None:
    assert days("yesterday, and in 2019") == span("2026-11-29")  # a year is when, not where the question stands
    assert days("what did I do last spring?") == span("2026-03-01", "2026-05-31")
    window = parse_time_window("what did I do recently?", MONDAY)
    assert window is not None and window.vague
