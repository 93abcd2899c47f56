"""The date table: expressions x the day they were said -> the interval they mean, English and Chinese.

Every row is worked out by hand from a calendar, not from the code. "S" rows are stored statements
(extract_occurred: what retain dates a memory with), "Q" rows are questions (parse_time_window: the window
recall searches). The rules being checked (timeparse/__init__.py says why):

* a month, season, holiday, day or weekday without a year or week resolves by tense: past or a completed
  event -> the latest that began before today; future -> the first not over by the end of today;
* no tense: the one running today; else a question looks back, and a statement takes the clearly nearer
  occurrence (twice as near) or keeps both (a wider interval) rather than guess a year;
* a year or week elsewhere in the sentence holds the month or weekday ("Last year ... in March").

Run as a script to print the counts: `.venv/bin/python tests/test_timeparse_table.py`.
"""

from __future__ import annotations

from datetime import date, datetime
from typing import Literal, NamedTuple

import pytest

from memwrap.engine.language.timeparse import extract_occurred, parse_time_window


class Row(NamedTuple):
    language: Literal["en", "zh"]
    reader: Literal["S", "Q"]
    said: datetime
    text: str
    first: str  # NO_DATE: the text names no one time
    last: str | None = None  # None: a single day


NO_DATE = "-"


# The days things are said on (weekday; ISO week).
TUE = datetime(2026, 12, 1, 10)  # Tuesday; the day. Winter and December begin today.
MON = datetime(2026, 11, 30, 10)  # Monday
SUN = datetime(2026, 11, 29, 10)  # Sunday, the last day of ISO week 48
MID_DEC = datetime(2026, 12, 15, 10)  # Tuesday
NYE = datetime(2026, 12, 31, 10)  # Thursday, ISO week 53 (Mon 28 Dec 2026 - Sun 3 Jan 2027)
NYD = datetime(2027, 1, 1, 10)  # Friday, still ISO week 53 of 2026
MID_MAR = datetime(2026, 3, 15, 10)  # Sunday
APR1 = datetime(2026, 4, 1, 10)  # Wednesday
MID_JUN = datetime(2026, 6, 15, 10)  # Monday
MID_SEP = datetime(2026, 9, 15, 10)  # Tuesday
LEAP = datetime(2024, 2, 29, 10)  # Thursday
AFTER_LEAP = datetime(2024, 3, 1, 10)  # Friday
BEFORE_LEAP = datetime(2024, 2, 28, 10)  # Wednesday
LATE_MAY = datetime(2026, 5, 20, 10)  # Wednesday


def en(reader: Literal["S", "Q"], said: datetime, text: str, first: str, last: str | None = None) -> Row:
    return Row("en", reader, said, text, first, last)


def zh(reader: Literal["S", "Q"], said: datetime, text: str, first: str, last: str | None = None) -> Row:
    return Row("zh", reader, said, text, first, last)


TABLE: list[Row] = [
    # --- The issue: said on 1 December 2026, a month without a year ------------------------------------
    en("S", TUE, "I moved to Lisbon in March.", "2026-03-01", "2026-03-31"),
    en("S", TUE, "I started a new job in May.", "2026-05-01", "2026-05-31"),
    zh("S", TUE, "我三月搬到了里斯本。", "2026-03-01", "2026-03-31"),
    en("Q", TUE, "What did I do last spring?", "2026-03-01", "2026-05-31"),
    # --- English months by tense -------------------------------------------------------------------------
    en("S", TUE, "I'll visit Tokyo in March.", "2027-03-01", "2027-03-31"),
    en("S", TUE, "I'm going to visit Tokyo in March.", "2027-03-01", "2027-03-31"),
    en("S", TUE, "We are flying to Tokyo in March.", "2027-03-01", "2027-03-31"),  # progressive: a plan
    en("S", TUE, "I'm planning to repaint the kitchen in April.", "2027-04-01", "2027-04-30"),
    en("S", TUE, "We went skiing in January.", "2026-01-01", "2026-01-31"),
    en("S", TUE, "I will start the course in January.", "2027-01-01", "2027-01-31"),
    en("S", TUE, "We got married in June.", "2026-06-01", "2026-06-30"),
    en("S", TUE, "Back in March I quit my job.", "2026-03-01", "2026-03-31"),
    en("S", TUE, "I booked a flight for March.", "2027-03-01", "2027-03-31"),  # booked for: a target ahead
    en("S", TUE, "I need to renew my passport by April.", "2027-04-01", "2027-04-30"),
    en("S", TUE, "I've lived here since March.", "2026-03-01", "2026-12-01"),
    en("S", TUE, "I moved to Lisbon in December.", "2025-12-01", "2025-12-31"),  # December began today
    en("S", MID_DEC, "I moved to Lisbon in December.", "2026-12-01", "2026-12-31"),
    en("S", TUE, "The conference is in December.", "2026-12-01", "2026-12-31"),  # running today
    # no tense: the nearer, or both when neither is twice as near
    en("S", TUE, "My birthday is in March.", "2027-03-01", "2027-03-31"),  # 90 days ahead, 245 back
    en("S", TUE, "My sister Maya visits in May.", "2026-05-01", "2027-05-31"),  # 184 back, 151 ahead: both
    en("S", TUE, "I was going to move in March.", "2027-03-01", "2027-03-31"),  # cues cancel: the nearer
    en("S", MID_SEP, "Dentist appointment in March", "2026-03-01", "2027-03-31"),  # 168 back, 167 ahead
    en("S", MID_JUN, "Tokyo trip in December", "2025-12-01", "2026-12-31"),
    en("S", MID_JUN, "I'll visit Tokyo in March.", "2027-03-01", "2027-03-31"),
    en("S", MID_JUN, "I visited Tokyo in March.", "2026-03-01", "2026-03-31"),
    en("S", MID_MAR, "I moved in March.", "2026-03-01", "2026-03-31"),
    en("S", MID_MAR, "I'll move in March.", "2026-03-01", "2026-03-31"),  # still running
    en("S", NYE, "I'll visit Tokyo in January.", "2027-01-01", "2027-01-31"),
    en("S", NYE, "I visited Tokyo in January.", "2026-01-01", "2026-01-31"),
    en("S", NYE, "Tokyo in January", "2027-01-01", "2027-01-31"),  # tomorrow vs 334 days back
    en("S", NYD, "I'll start a new job in January.", "2027-01-01", "2027-01-31"),
    en("S", NYD, "We went skiing in December.", "2026-12-01", "2026-12-31"),
    en("S", NYD, "Next December we'll go skiing.", "2027-12-01", "2027-12-31"),
    # --- English questions by tense ----------------------------------------------------------------------
    en("Q", TUE, "What did I do in March?", "2026-03-01", "2026-03-31"),
    en("Q", TUE, "What will I do in March?", "2027-03-01", "2027-03-31"),
    en("Q", TUE, "What am I doing in March?", "2027-03-01", "2027-03-31"),
    en("Q", TUE, "in March", "2026-03-01", "2026-03-31"),  # no tense: a question looks back
    en("Q", TUE, "What did I do in December?", "2025-12-01", "2025-12-31"),
    en("Q", TUE, "What's happening in December?", "2026-12-01", "2026-12-31"),
    en("Q", NYD, "in December", "2026-12-01", "2026-12-31"),
    en("Q", AFTER_LEAP, "in February", "2024-02-01", "2024-02-29"),
    # --- English weekdays (TUE is a Tuesday; the week is Mon 30 Nov - Sun 6 Dec) -------------------------
    en("S", TUE, "On Friday I met Anna.", "2026-11-27"),
    en("S", TUE, "I'll meet Anna on Friday.", "2026-12-04"),
    en("S", TUE, "I have a dentist appointment on Friday.", "2026-11-27", "2026-12-04"),  # 4 back, 3 ahead
    en("S", TUE, "On Tuesday I went to the gym.", "2026-11-24"),  # today's name, past: a week ago
    en("S", TUE, "I'm seeing Anna on Tuesday.", "2026-12-08"),  # today's name, future: a week ahead
    en("S", TUE, "Yoga on Tuesday", "2026-12-01"),  # no tense: today
    en("S", TUE, "On Wednesday I'll fly home.", "2026-12-02"),
    en("S", TUE, "On Monday I fixed the bike.", "2026-11-30"),
    en("S", TUE, "Team lunch on Wednesday", "2026-12-02"),  # 1 ahead vs 6 back
    en("S", TUE, "Team lunch on Monday", "2026-11-30"),  # 1 back vs 6 ahead
    en("S", TUE, "I saw her last Friday.", "2026-11-27"),
    en("S", TUE, "I'll see her next Friday.", "2026-12-04"),
    en("S", TUE, "Next week I'm in Paris on Friday.", "2026-12-11"),  # the week holds the weekday
    en("S", TUE, "Last week, on Friday, I lost my keys.", "2026-11-27"),
    en("S", TUE, "Two Fridays ago the server crashed.", "2026-11-20"),
    en("S", TUE, "Three Mondays ago I joined.", "2026-11-16"),
    en("Q", TUE, "What did I do the Friday before last?", "2026-11-20"),
    en("Q", TUE, "the Friday after next", "2026-12-11"),
    en("Q", TUE, "What did I do on Tuesday?", "2026-11-24"),
    en("Q", TUE, "What am I doing on Friday?", "2026-12-04"),
    en("Q", TUE, "What did I do on Friday?", "2026-11-27"),
    en("Q", TUE, "on Friday", "2026-11-27"),
    en("Q", SUN, "this week", "2026-11-23", "2026-11-29"),
    en("Q", SUN, "next week", "2026-11-30", "2026-12-06"),
    en("Q", SUN, "this Monday", "2026-11-23"),  # no tense: this ISO week's
    en("S", SUN, "I'll call you on Monday.", "2026-11-30"),
    en("S", SUN, "I called him on Monday.", "2026-11-23"),
    en("Q", SUN, "last Sunday", "2026-11-22"),
    en("S", SUN, "On Sunday I'll rest.", "2026-12-06"),
    en("S", MID_MAR, "On Sunday we went to the beach.", "2026-03-08"),
    en("S", MID_MAR, "Brunch on Sunday", "2026-03-15"),
    en("S", NYE, "I'll be in Berlin on Monday.", "2027-01-04"),
    en("S", NYD, "I'm meeting Anna on Monday.", "2027-01-04"),
    en("S", NYD, "We met on Monday.", "2026-12-28"),
    en("S", NYD, "On Thursday we watched fireworks.", "2026-12-31"),
    en("S", NYD, "Pizza night on Friday", "2027-01-01"),
    # --- English weekends --------------------------------------------------------------------------------
    en("S", TUE, "We went hiking over the weekend.", "2026-11-28", "2026-11-29"),
    en("S", TUE, "We'll go hiking over the weekend.", "2026-12-05", "2026-12-06"),
    en("Q", TUE, "What are my plans for the weekend?", "2026-12-05", "2026-12-06"),
    en("Q", TUE, "What did I do over the weekend?", "2026-11-28", "2026-11-29"),
    en("S", SUN, "We'll relax over the weekend.", "2026-12-05", "2026-12-06"),  # this one ends today
    en("Q", SUN, "the weekend", "2026-11-28", "2026-11-29"),
    en("Q", MON, "this past weekend", "2026-11-28", "2026-11-29"),
    en("Q", NYE, "this weekend", "2027-01-02", "2027-01-03"),
    en("Q", NYE, "the weekend", "2026-12-26", "2026-12-27"),
    en("S", MON, "This weekend I painted the fence.", "2026-11-28", "2026-11-29"),  # past: the one behind
    # --- English seasons (meteorological; winter 2026 = Dec 2026 - Feb 2027) -----------------------------
    en("S", TUE, "I went hiking in the spring.", "2026-03-01", "2026-05-31"),
    en("S", TUE, "I'll go hiking in the spring.", "2027-03-01", "2027-05-31"),
    en("S", TUE, "We visited Rome in the summer.", "2026-06-01", "2026-08-31"),
    en("S", TUE, "We'll visit Rome in the summer.", "2027-06-01", "2027-08-31"),
    en("S", TUE, "It snowed a lot in the winter.", "2025-12-01", "2026-02-28"),  # this winter began today
    en("S", NYD, "In the winter we went skiing.", "2026-12-01", "2027-02-28"),
    en("S", TUE, "In the autumn we moved.", "2026-09-01", "2026-11-30"),
    en("S", TUE, "We'll move in the autumn.", "2027-09-01", "2027-11-30"),
    en("S", TUE, "The harvest festival is in the autumn.", "2026-09-01", "2026-11-30"),  # ended yesterday
    en("Q", TUE, "last winter", "2025-12-01", "2026-02-28"),
    en("Q", TUE, "this winter", "2026-12-01", "2027-02-28"),
    en("Q", TUE, "next winter", "2027-12-01", "2028-02-29"),
    en("Q", TUE, "next summer", "2027-06-01", "2027-08-31"),
    en("Q", TUE, "this autumn", "2026-09-01", "2026-11-30"),
    en("Q", TUE, "during the spring", "2026-03-01", "2026-05-31"),
    en("Q", NYD, "last winter", "2025-12-01", "2026-02-28"),
    en("Q", NYD, "this winter", "2026-12-01", "2027-02-28"),
    en("Q", MID_MAR, "this spring", "2026-03-01", "2026-05-31"),
    en("Q", MID_MAR, "last winter", "2025-12-01", "2026-02-28"),
    en("Q", MID_JUN, "in the winter", "2025-12-01", "2026-02-28"),
    en("Q", MID_JUN, "this winter", "2026-12-01", "2027-02-28"),  # none running: this year's
    en("S", MID_JUN, "We'll go skiing this winter.", "2026-12-01", "2027-02-28"),
    en("S", MID_JUN, "We went skiing this winter.", "2025-12-01", "2026-02-28"),
    en("S", TUE, "I'll plant tulips this spring.", "2027-03-01", "2027-05-31"),
    en("S", TUE, "This spring I visited Rome.", "2026-03-01", "2026-05-31"),
    en("Q", TUE, "Where did we go in the spring of 2024?", "2024-03-01", "2024-05-31"),
    en("S", TUE, "We renovated in spring 2024.", "2024-03-01", "2024-05-31"),
    en("Q", TUE, "the summer of 2019", "2019-06-01", "2019-08-31"),
    en("Q", TUE, "winter 2023", "2023-12-01", "2024-02-29"),
    en("S", TUE, "In the spring of last year we moved.", "2025-03-01", "2025-05-31"),
    en("S", TUE, "In 2019 we went to Greece in the summer.", "2019-06-01", "2019-08-31"),
    # --- Counting occurrences back -------------------------------------------------------------------------
    en("S", TUE, "Two Marches ago we moved to Porto.", "2025-03-01", "2025-03-31"),
    en("Q", MID_MAR, "two Marches ago", "2024-03-01", "2024-03-31"),  # this March is not over
    en("Q", APR1, "two Marches ago", "2025-03-01", "2025-03-31"),
    en("Q", MID_MAR, "last March", "2025-03-01", "2025-03-31"),
    en("S", TUE, "Three summers ago I learned to surf.", "2024-06-01", "2024-08-31"),
    en("S", TUE, "A few summers ago we sailed.", "2023-06-01", "2025-08-31"),  # two to four summers back
    en("S", TUE, "Two Christmases ago we were in Vienna.", "2024-12-25"),
    en("Q", TUE, "the summer before last", "2025-06-01", "2025-08-31"),
    en("Q", TUE, "the March after next", "2028-03-01", "2028-03-31"),
    en("Q", TUE, "What did I do two winters ago?", "2024-12-01", "2025-02-28"),
    # --- A year in the sentence holds the month -----------------------------------------------------------
    en("S", TUE, "Last year I moved to Lisbon in March.", "2025-03-01", "2025-03-31"),
    en("S", TUE, "Last year my wife and I moved to Lisbon in March.", "2025-03-01", "2025-03-31"),
    # another statement ("but ..."): the year and the month are two times
    en("S", TUE, "Last year I moved to Lisbon, but in March I started a new job.", "2025-01-01", "2026-03-31"),
    en("S", TUE, "Next year I'll run a marathon in April.", "2027-04-01", "2027-04-30"),
    en("Q", TUE, "What did I do last year in March?", "2025-03-01", "2025-03-31"),
    en("Q", TUE, "What happened in March last year?", "2025-03-01", "2025-03-31"),
    en("S", TUE, "In 2021 we met on May 8.", "2021-05-08"),
    en("S", TUE, "This year we went to Rome at Christmas.", "2026-12-25"),  # the year decides, not the tense
    # --- English holidays and days of a month ---------------------------------------------------------------
    en("S", TUE, "We celebrated at Christmas.", "2025-12-25"),
    en("S", TUE, "We'll celebrate at Christmas.", "2026-12-25"),
    en("S", TUE, "At Christmas we see my parents.", "2026-12-25"),  # 24 days ahead
    en("S", MID_JUN, "We met at Christmas.", "2025-12-25"),
    en("S", MID_JUN, "See you at Christmas!", "2025-12-25", "2026-12-25"),  # 172 back, 193 ahead: both
    en("S", TUE, "We ate turkey at Thanksgiving.", "2026-11-26"),
    en("Q", TUE, "last Thanksgiving", "2026-11-26"),
    en("Q", TUE, "next Thanksgiving", "2027-11-25"),
    en("S", TUE, "We carved pumpkins at Halloween.", "2026-10-31"),
    en("S", TUE, "We'll party on New Year's Eve.", "2026-12-31"),
    en("S", NYD, "We met on Christmas Eve.", "2026-12-24"),
    en("S", TUE, "We met on May 8.", "2026-05-08"),
    en("S", TUE, "The wedding will be on May 8.", "2027-05-08"),
    # --- Leap days --------------------------------------------------------------------------------------------
    en("S", TUE, "I was promoted on Feb 29.", "2024-02-29"),
    en("S", TUE, "We'll celebrate on Feb 29.", "2028-02-29"),
    en("S", LEAP, "Party on Feb 29", "2024-02-29"),
    en("S", AFTER_LEAP, "We met on Feb 29.", "2024-02-29"),
    en("Q", AFTER_LEAP, "last month", "2024-02-01", "2024-02-29"),
    en("Q", AFTER_LEAP, "yesterday", "2024-02-29"),
    en("Q", BEFORE_LEAP, "tomorrow", "2024-02-29"),
    en("Q", LEAP, "next February", "2025-02-01", "2025-02-28"),
    en("Q", LEAP, "last February", "2023-02-01", "2023-02-28"),
    # --- Year boundaries --------------------------------------------------------------------------------------
    en("Q", NYD, "last week", "2026-12-21", "2026-12-27"),
    en("Q", NYD, "this week", "2026-12-28", "2027-01-03"),
    en("Q", NYD, "last year", "2026-01-01", "2026-12-31"),
    en("Q", NYE, "next month", "2027-01-01", "2027-01-31"),
    en("Q", NYE, "next year", "2027-01-01", "2027-12-31"),
    # --- Habits name no one occurrence; "today is Sunday" names today; a season arriving is this one ------------
    en("S", TUE, "I usually go skiing in the winter.", NO_DATE),
    en("S", TUE, "We play tennis every week on Saturday.", NO_DATE),
    en("Q", TUE, "What do I usually do at Christmas?", NO_DATE),
    en("S", SUN, "Today is Sunday and I plan to watch a movie.", "2026-11-29"),
    en("S", LATE_MAY, "Summer is almost here.", "2026-06-01", "2026-08-31"),
    # =====================================================================================================
    # Chinese
    # =====================================================================================================
    # --- months by tense: 了/过/已经 look back, 要/会/打算 ahead --------------------------------------------
    zh("S", TUE, "我五月开始了新工作。", "2026-05-01", "2026-05-31"),
    zh("S", TUE, "我三月要去东京。", "2027-03-01", "2027-03-31"),
    zh("S", TUE, "我打算四月去东京。", "2027-04-01", "2027-04-30"),
    zh("S", TUE, "我们三月会去东京。", "2027-03-01", "2027-03-31"),
    zh("S", TUE, "三月我去过东京。", "2026-03-01", "2026-03-31"),
    zh("S", TUE, "我三月要搬到里斯本了。", "2027-03-01", "2027-03-31"),  # 要……了: about to
    zh("S", TUE, "我已经在三月交了税。", "2026-03-01", "2026-03-31"),
    zh("S", TUE, "三月份我参加了一个聚会。", "2026-03-01", "2026-03-31"),  # 聚会 is a party, not "will"
    zh("S", TUE, "三月我们学会了开车。", "2026-03-01", "2026-03-31"),  # 学会: learned
    zh("S", MID_DEC, "我们十二月开了一个会。", "2026-12-01", "2026-12-31"),  # 会 here is a meeting
    zh("S", TUE, "我重要的会议在三月。", "2027-03-01", "2027-03-31"),  # no tense (重要, 会议): the nearer
    zh("S", TUE, "我妹妹五月来看我。", "2026-05-01", "2027-05-31"),  # no tense, neither nearer: both
    zh("S", TUE, "我的生日在三月。", "2027-03-01", "2027-03-31"),
    zh("S", TUE, "自从三月我一直住在里斯本。", "2026-03-01", "2026-12-01"),
    zh("S", TUE, "我十二月搬到了里斯本。", "2025-12-01", "2025-12-31"),  # December began today
    zh("S", MID_JUN, "我十二月去东京。", "2025-12-01", "2026-12-31"),
    zh("S", MID_JUN, "我十二月去了东京。", "2025-12-01", "2025-12-31"),
    zh("S", MID_JUN, "我十二月要去东京。", "2026-12-01", "2026-12-31"),
    zh("S", NYE, "一月我要去东京。", "2027-01-01", "2027-01-31"),
    zh("S", NYD, "十二月我们去滑雪了。", "2026-12-01", "2026-12-31"),
    zh("S", TUE, "5月8日我们结婚了。", "2026-05-08"),
    zh("S", TUE, "5月8日我们要结婚。", "2027-05-08"),
    zh("S", TUE, "2月29日我们结婚了。", "2024-02-29"),
    zh("S", TUE, "去年我三月搬到了里斯本。", "2025-03-01", "2025-03-31"),  # 去年 holds the month
    zh("S", TUE, "明年我们五月要去东京。", "2027-05-01", "2027-05-31"),
    zh("Q", TUE, "我三月做了什么？", "2026-03-01", "2026-03-31"),
    zh("Q", TUE, "我三月要做什么？", "2027-03-01", "2027-03-31"),
    zh("Q", TUE, "三月", "2026-03-01", "2026-03-31"),
    zh("Q", TUE, "去年三月", "2025-03-01", "2025-03-31"),
    zh("Q", TUE, "明年三月", "2027-03-01", "2027-03-31"),
    zh("Q", NYD, "去年十二月", "2026-12-01", "2026-12-31"),
    # --- seasons --------------------------------------------------------------------------------------------
    zh("S", TUE, "春天我们去了杭州。", "2026-03-01", "2026-05-31"),
    zh("S", TUE, "春天我们要去杭州。", "2027-03-01", "2027-05-31"),
    zh("S", TUE, "明年春天我们要去杭州。", "2027-03-01", "2027-05-31"),
    zh("S", TUE, "冬天我们去了哈尔滨。", "2025-12-01", "2026-02-28"),
    zh("Q", TUE, "我春天去了哪里？", "2026-03-01", "2026-05-31"),
    zh("Q", TUE, "前年春天我去了哪里？", "2024-03-01", "2024-05-31"),
    zh("Q", TUE, "去年夏天", "2025-06-01", "2025-08-31"),
    zh("Q", TUE, "前年冬天", "2024-12-01", "2025-02-28"),
    zh("Q", TUE, "今年冬天", "2026-12-01", "2027-02-28"),
    zh("Q", TUE, "2023年冬天", "2023-12-01", "2024-02-29"),
    zh("Q", TUE, "2024年春天", "2024-03-01", "2024-05-31"),
    # --- weekdays and weeks (TUE: this week is 30 Nov - 6 Dec) ---------------------------------------------
    zh("S", TUE, "周五我见了安娜。", "2026-11-27"),
    zh("S", TUE, "周五我要见安娜。", "2026-12-04"),
    zh("S", TUE, "星期三我们开会了。", "2026-11-25"),  # 开会 is a meeting; 了 looks back
    zh("S", TUE, "礼拜天我要去教堂。", "2026-12-06"),
    zh("S", TUE, "周二我去了健身房。", "2026-11-24"),  # today's name, past: a week ago
    zh("S", TUE, "上周我周五去了医院。", "2026-11-27"),  # 上周 holds the weekday
    zh("S", TUE, "下周我周五要去医院。", "2026-12-11"),
    zh("S", TUE, "上周我们周五去了医院，然后周日回家了。", "2026-11-27", "2026-11-29"),
    zh("Q", TUE, "周五我去了哪里？", "2026-11-27"),
    zh("Q", TUE, "周五我要去哪里？", "2026-12-04"),
    zh("Q", TUE, "周日", "2026-11-29"),
    zh("Q", TUE, "上周五", "2026-11-27"),
    zh("Q", TUE, "上个星期五", "2026-11-27"),
    zh("Q", TUE, "这周五", "2026-12-04"),
    zh("Q", TUE, "下礼拜三", "2026-12-09"),
    zh("Q", TUE, "上上周", "2026-11-16", "2026-11-22"),
    zh("S", TUE, "上上周我们见过面。", "2026-11-16", "2026-11-22"),
    zh("Q", TUE, "上上周三", "2026-11-18"),
    zh("Q", TUE, "下下周", "2026-12-14", "2026-12-20"),
    zh("Q", SUN, "上周", "2026-11-16", "2026-11-22"),
    zh("Q", SUN, "下周一", "2026-11-30"),
    zh("Q", NYD, "上周三", "2026-12-23"),
    zh("Q", NYE, "下周一", "2027-01-04"),
    # --- weekends ---------------------------------------------------------------------------------------------
    zh("S", TUE, "周末我们去爬山了。", "2026-11-28", "2026-11-29"),
    zh("S", TUE, "周末我们要去爬山。", "2026-12-05", "2026-12-06"),
    zh("Q", TUE, "上周末", "2026-11-28", "2026-11-29"),
    zh("Q", TUE, "这个周末", "2026-12-05", "2026-12-06"),
    # --- years and months by name ---------------------------------------------------------------------------
    zh("Q", TUE, "前年", "2024-01-01", "2024-12-31"),
    zh("S", TUE, "前年我们结婚了。", "2024-01-01", "2024-12-31"),
    zh("Q", TUE, "大前年", "2023-01-01", "2023-12-31"),
    zh("Q", TUE, "上上个月", "2026-10-01", "2026-10-31"),
    zh("Q", TUE, "上个月", "2026-11-01", "2026-11-30"),
    zh("Q", TUE, "下个月", "2027-01-01", "2027-01-31"),
    zh("S", TUE, "上个月我们去了东京。", "2026-11-01", "2026-11-30"),
    zh("Q", NYD, "去年", "2026-01-01", "2026-12-31"),
    zh("Q", NYD, "前年", "2025-01-01", "2025-12-31"),
    zh("Q", NYD, "今年", "2027-01-01", "2027-12-31"),
    zh("Q", NYD, "上个月", "2026-12-01", "2026-12-31"),
    zh("Q", NYD, "上个月底", "2026-12-21", "2026-12-31"),
    zh("Q", NYE, "明年", "2027-01-01", "2027-12-31"),
    zh("Q", datetime(2024, 3, 31, 10), "上个月", "2024-02-01", "2024-02-29"),
    zh("Q", AFTER_LEAP, "昨天", "2024-02-29"),
    zh("Q", datetime(2024, 3, 7, 10), "两个星期前", "2024-02-19", "2024-02-25"),
    # --- holidays ---------------------------------------------------------------------------------------------
    zh("S", TUE, "圣诞节我们去了维也纳。", "2025-12-25"),
    zh("S", TUE, "圣诞节我们要去维也纳。", "2026-12-25"),
    zh("S", TUE, "国庆节我们去了北京。", "2026-10-01", "2026-10-07"),
    zh("S", TUE, "国庆节我们要去北京。", "2027-10-01", "2027-10-07"),
    zh("S", TUE, "元旦我们要去哈尔滨。", "2027-01-01"),
    zh("S", TUE, "情人节我们去了巴黎。", "2026-02-14"),
    zh("Q", TUE, "去年国庆", "2025-10-01", "2025-10-07"),
    # --- habits, "今天是星期天", a season arriving ------------------------------------------------------------
    zh("S", TUE, "我们每周都会在周末去打球。", NO_DATE),
    zh("S", TUE, "有时我周末会去唱片店。", NO_DATE),
    zh("S", TUE, "我平时在冬天去滑雪。", NO_DATE),
    zh("S", SUN, "今天是星期天，我准备去看电影。", "2026-11-29"),
    zh("S", LATE_MAY, "夏天快到了，有什么推荐的旅游线路？", "2026-06-01", "2026-08-31"),
    zh("S", TUE, "冬天到了，记得多穿衣服。", "2026-12-01", "2027-02-28"),
]


def _expected(row: Row) -> tuple[date, date] | None:
    if row.first == NO_DATE:
        return None
    return date.fromisoformat(row.first), date.fromisoformat(row.last or row.first)


def _days(row: Row) -> tuple[date, date] | None:
    if row.reader == "S":
        found = extract_occurred(row.text, row.said)
        return None if found is None else (found[0].date(), found[1].date())
    window = parse_time_window(row.text, row.said)
    return None if window is None else (window.start.date(), window.end.date())


@pytest.mark.parametrize("row", TABLE, ids=[f"{r.said:%Y-%m-%d}|{r.reader}|{r.text}" for r in TABLE])
def test_date_table(row: Row) -> None:
    assert _days(row) == _expected(row)


def test_the_table_is_big_enough_and_has_no_duplicates() -> None:
    keys = [(r.text, r.said, r.reader) for r in TABLE]
    assert len(set(keys)) == len(keys)
    english = sum(r.language == "en" for r in TABLE)
    chinese = sum(r.language == "zh" for r in TABLE)
    assert english + chinese >= 150 and chinese >= 60


if __name__ == "__main__":
    english = sum(r.language == "en" for r in TABLE)
    chinese = sum(r.language == "zh" for r in TABLE)
    said = len({r.said for r in TABLE})
    failed = [r for r in TABLE if _days(r) != _expected(r)]
    print(
        f"date table: {len(TABLE)} rows ({english} English, {chinese} Chinese) on {said} reference days; "
        f"{len(TABLE) - len(failed)} pass"
    )
    for row in failed:
        print(f"  FAIL {row.said:%Y-%m-%d} {row.reader} {row.text!r}: {_days(row)} != {row.first}..{row.last}")
