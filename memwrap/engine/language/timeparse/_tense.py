"""Which way a sentence looks: back (past tense, a completed event), ahead (future, a plan) or neither.

A month, season, holiday or weekday named without a year ("in March", "三月", "on Friday") has one
occurrence behind and one ahead; the words around it choose. This is a weighing of cues, not a grammar:
"will", "'ll", "going to", "要", "会", "打算" look ahead; "was", "did", "moved", "went", "了", "过", "已经"
look back. Cues are read from the clause that holds the expression, then its sentence, then the whole
text, and the first of those that leans one way decides. A tie ("I was going to move in March") is
"unknown": the caller then takes the clearly nearer occurrence or keeps both rather than guess. A habit
("usually", "every winter", "每周", "经常") in the expression's own clause is "habitual": no one occurrence.

Cues are found once per text (one regex pass, cached), so every expression in a turn costs a lookup.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

# habitual: "I usually ski in the winter", "每周都会在周末去打球" -- a habit names no one occurrence.
Tense = Literal["past", "future", "unknown", "habitual"]

# ---------------------------------------------------------------------------------------------------
# English cues
# ---------------------------------------------------------------------------------------------------

# Simple past forms that do not end in -ed. Forms that are also the present (read, put, set, cut, hit,
# let, quit, cost, hurt, shut, spread) say nothing and are left out.
_EN_IRREGULAR_PAST = (
    "went came saw got bought took made met left began flew drove ate gave told said thought found felt kept lost "
    "paid ran sat sent spent stood taught won wrote heard held brought built caught chose fell fought forgot grew "
    "knew led lent meant rode rose sang sold shot slept spoke stole swam threw understood woke wore became broke "
    "drew drank forgave froze hid lay sank sprang stuck struck swore swung tore wept wound dug fed fled hung slid "
    "spun strove bit blew bore bred dealt dreamt fit had leapt learnt lit rang shook shone sought spat split stank "
    "stung strode begun"
).split()
_EN_PARTICIPLES = (
    "been gone done seen had got gotten taken given written eaten driven flown known met made bought left begun "
    "found lost paid sent spent told heard held brought built caught chosen fallen forgotten grown ridden risen "
    "sold spoken stolen swum thrown understood woken worn become broken drawn drunk forgiven frozen hidden lain "
    "put set read cut let quit come run won"
).split()
# -ed words that are not past verbs, or that name something still ahead ("booked a table for Friday").
_EN_NOT_PAST_ED = frozenset(
    "need feed seed speed weed breed bleed proceed exceed succeed indeed deed greed heed reed steed tweed "
    "shed sled fred hundred kindred sacred naked wicked beloved rugged ragged crooked "
    "interested excited tired bored scared worried pleased located based named related limited detailed crowded "
    "complicated talented supposed expected scheduled planned booked reserved arranged organised organized "
    "advanced experienced qualified concerned prepared".split()
)
_EN_AHEAD_ED = frozenset("scheduled planned booked reserved arranged organised organized".split())
# -ing words after "is/are/'m" that are not a verb in the progressive ("the trip is amazing").
_EN_NOT_PROGRESSIVE = frozenset(
    "amazing interesting boring exciting annoying tiring charming confusing surprising stunning thing nothing "
    "something anything everything morning evening spring king ring during wedding ceiling "
    "feeling missing willing fascinating relaxing refreshing disappointing frustrating worrying terrifying "
    "shocking embarrassing pleasing loving caring outstanding upcoming".split()
)

_EN_CUES = (
    # "every day in March" still happened in March; "every weekend", "every March" is the habit itself.
    r"(?P<habit>\b(?:usually|always|often|normally|typically|generally|sometimes|used\s+to|tend\s+to"
    r"|(?:every|each)\s+(?:other\s+)?(?:week|weekend|month|year|season|time|spring|summer|autumn|fall|winter"
    r"|christmas|(?:mon|tues|wednes|thurs|fri|satur|sun)day|january|february|march|april|may|june|july|august"
    r"|september|october|november|december))\b)"
    # ahead
    r"|(?P<will>\b(?:will|shall|won['’]?t|gonna|wanna)\b|['’]ll\b)"
    r"|(?P<intend>\b(?:(?:going|plan(?:ning)?|intend(?:ing)?|hop(?:e|ing)|want(?:ing)?|expect(?:ing)?|aim(?:ing)?"
    r"|about|supposed|due|scheduled|set|(?:would|['’]d)\s+(?:like|love))\s+to|plan(?:ning)?\s+on"
    r"|looking\s+forward|can['’]?t\s+wait)\b)"
    r"|(?P<must>\b(?:have|has|need|needs|must|ought)\s+to\b"
    r"|\b(?:must|should|might|let['’]s|let\s+us|remind\s+me)\b)"
    r"|(?P<soon>\b(?:soon|upcoming|tomorrow|someday|next)\b)"
    r"|(?P<prog>\b(?:am|is|are|['’]m|['’]re|['’]s)\s+(?:(?:not|i|you|we|they|he|she|it)\s+)?(?P<ing>[a-z]+ing)\b)"
    # back
    r"|(?P<perfect>\b(?P<have>have|has|had|['’]ve|['’]d|['’]s)\s+"
    r"(?:not\s+|never\s+|already\s+|just\s+|ever\s+|recently\s+)?(?P<part>[a-z]+)\b)"
    r"|(?P<aux>\b(?:was|were|did|didn['’]?t|wasn['’]?t|weren['’]?t|used\s+to|already|previously|back\s+then)\b)"
    r"|(?P<before>\b(?:ago|yesterday)\b|(?<!\bbe\s)(?<!\bcome\s)\bback\s+in\b)"
    r"|(?P<since>\b(?:since|ever\s+since)\b)"
    r"|(?P<word>\b[a-z]+\b)"
)

# ---------------------------------------------------------------------------------------------------
# Chinese cues
# ---------------------------------------------------------------------------------------------------

# 会 in a noun (会议, 聚会, 机会, 开了一个会) is not "will"; nor is 要 in 重要, 需要, 要求, 要是.
_CN_HUI_NOUN_BEFORE = (
    "开聚约机社学宴晚乐唱动览展大协员工商年例体国舞茶庙酒峰讨座友省教集赴拜融附易运博盛话面布谈告欢待洽论流书长班理误"
    "领个场次"
)
_CN_HUI_NOUN_AFTER = "议员长场所计话谈面见合儿馆址徽费务旗"
_CN_YAO_WORD_BEFORE = "重需主只必首紧摘纲简概不"
_CN_YAO_WORD_AFTER = "求是素点么不紧命闻"
_CN_CUES = (
    r"(?P<cnhabit>有时候|有时|偶尔|每周|每星期|每个星期|每礼拜|每个周末|每逢|每到|每年|每个月|每月"
    r"|经常|通常|总是|平时|往往|常常)"
    r"|(?P<cnwill>(?<![" + _CN_HUI_NOUN_BEFORE + r"])会(?![" + _CN_HUI_NOUN_AFTER + r"，。！？,.!?]|$)"
    r"|(?<![" + _CN_YAO_WORD_BEFORE + r"])要(?![" + _CN_YAO_WORD_AFTER + r"])"
    r"|打算|准备|计划|将要|即将|将会|预计|预定|预订|想(?=[去要买搬做学换])|快要|等着)"
    r"|(?P<cnsoon>下个|下周|下星期|下礼拜|明年|明天|后天|以后|将来|马上|下次)"
    r"|(?P<cndone>已经|曾经|(?<![不未])曾(?![经])|早就)"
    r"|(?P<cnle>(?<![为除])了(?![解不]))"
    r"|(?P<cnguo>(?<![不通经超难太度路])过(?![去来年节生日程度分敏期于夜冬春]))"
    r"|(?P<cnbefore>去年|前年|上个|上周|上星期|昨天|前天|以前|之前|当时|那时|刚才|刚刚|(?<![自])从前)"
    r"|(?P<cnsince>自从|自打)"
)

_CUES = re.compile(_EN_CUES + "|" + _CN_CUES, re.IGNORECASE)


def _english_word_lean(word: str) -> int:
    """A lone English word: +1 if it reads as a past verb, -1 if as a plan ("booked"), else 0."""
    if word in _EN_AHEAD_ED:
        return -1
    if word in _EN_NOT_PAST_ED or len(word) < 4:
        return 1 if word in ("fed", "led", "met", "ran", "sat", "won", "got", "saw", "ate", "dug", "bit", "lit") else 0
    if word.endswith("eed"):  # need, speed, seaweed; but agreed, freed
        return 1 if word in ("agreed", "freed", "guaranteed", "decreed") else 0
    if word.endswith("ed") or word in _IRREGULAR_PAST_SET:
        return 1
    return 0


_IRREGULAR_PAST_SET = frozenset(_EN_IRREGULAR_PAST)
_PARTICIPLE_SET = frozenset(_EN_PARTICIPLES)
_BE_BEFORE = re.compile(
    r"\b(?:am|is|are|be|being|['’]m|['’]re|['’]s|get|gets|getting|got|feel|feels|seem|seems)\s+$", re.IGNORECASE
)


def _lean(m: re.Match[str], text: str) -> int:
    """How much one cue leans back (positive) or ahead (negative)."""
    group = m.lastgroup
    if group in ("habit", "cnhabit"):
        return 0
    if group in ("will", "intend", "cnwill"):
        return -2
    if group in ("must", "soon", "cnsoon"):
        return -1
    if group == "prog":
        return 0 if m["ing"].lower() in _EN_NOT_PROGRESSIVE else -1
    if group == "perfect":
        have, part = m["have"].lower().replace("’", "'"), m["part"].lower()
        if part in ("like", "love", "rather", "better"):  # "I'd like", "you'd better"
            return -1
        if have == "'s":  # "it's been", "she's gone"; "Maya's wedding" is a name's, "he's tired" an adjective
            return 2 if part in _PARTICIPLE_SET else 0
        if part in _PARTICIPLE_SET or part.endswith("ed") or part.endswith("en"):
            return 2
        return 2 if have == "had" else 0  # "had a party"; "have a meeting" is the present
    if group in ("aux", "cndone"):
        return 2
    if group in ("since", "cnsince"):
        return 2
    if group in ("before", "cnle", "cnguo", "cnbefore"):
        return 1
    word = m.group().lower()
    lean = _english_word_lean(word)
    if lean > 0 and word.endswith("ed") and _BE_BEFORE.search(text, max(0, m.start() - 12), m.start()):
        return 0  # "I'm excited", "she is married": an adjective, not a past event
    return lean


@dataclass(frozen=True, slots=True)
class _Cues:
    """Where a text leans: the cues with their positions, and the clause and sentence boundaries."""

    positions: tuple[int, ...]
    ends: tuple[int, ...]
    leans: tuple[int, ...]  # > 0 back, < 0 ahead, 0 a habit
    clause_breaks: tuple[int, ...]
    sentence_breaks: tuple[int, ...]


# A sentence ends at . ! ? ; (not "Dec. 5" or "etc. and": the next word must not be a number or lower case)
# or a line break; a clause also ends at a comma or before a conjunction.
_SENTENCE_END = re.compile(r"[.!?;]+(?=\s+[^\sa-z0-9]|\s*$)|[。！？；\n]+")
_CLAUSE_END = re.compile(
    r"[,:，、：]|\s(?=(?:and|but|so|then|while|because|although|though|whereas|after|before)\b)"
    r"|(?=但是|可是|然后|所以|而且|不过|因为|后来)",
    re.IGNORECASE,
)


@lru_cache(maxsize=256)
def _cues(text: str) -> _Cues:
    positions: list[int] = []
    ends: list[int] = []
    leans: list[int] = []
    for m in _CUES.finditer(text):
        lean = _lean(m, text)
        if lean or m.lastgroup in ("habit", "cnhabit"):
            positions.append(m.start())
            ends.append(m.end())
            leans.append(lean)
    sentences = tuple(m.end() for m in _SENTENCE_END.finditer(text))
    clauses = tuple(sorted({m.end() for m in _CLAUSE_END.finditer(text)} | set(sentences)))
    return _Cues(tuple(positions), tuple(ends), tuple(leans), clauses, sentences)


def _bounds(breaks: tuple[int, ...], position: int, length: int) -> tuple[int, int]:
    index = bisect_right(breaks, position)
    return (breaks[index - 1] if index else 0), (breaks[index] if index < len(breaks) else length)


def _weigh(cues: _Cues, low: int, high: int, skip_from: int, skip_to: int) -> tuple[int, bool]:
    """The sum of the leans between low and high (outside the expression), and whether a habit is there."""
    total, habit = 0, False
    for start, end, lean in zip(cues.positions, cues.ends, cues.leans, strict=True):
        if low <= start and end <= high and (end <= skip_from or start >= skip_to):
            total += lean
            habit = habit or lean == 0
    return total, habit


_TARGET_BEFORE = re.compile(r"\b(?:for|by)\s+(?:the\s+)?$", re.IGNORECASE)
# The period itself arriving: "summer is almost here", "夏天到了，", "春天快来了。" (but 三月到了北京 is someone
# arriving in Beijing in March).
_ARRIVING_AFTER = re.compile(
    r"\s+(?:is|['’]s)\s+(?:almost\s+|nearly\s+|finally\s+)?"
    r"(?:here|coming|around\s+the\s+corner|upon\s+us|approaching)\b"
    r"|(?:就|快|要|就要|快要)?(?:到了|来了|到来)(?:吧|啊|呢)?(?=[\s，。！？、,.!?~～]|$)",
    re.IGNORECASE,
)


def tense_at(text: str, start: int, end: int) -> Tense:
    """The tense of the clause around text[start:end] (a time expression), falling back to its sentence and
    then the whole text. The expression's own words do not count; a habit counts only in its own clause."""
    if _ARRIVING_AFTER.match(text, end):
        return "future"
    cues = _cues(text)
    # "booked a flight for March", "finish it by Friday": a target, which lies ahead.
    target = -1 if _TARGET_BEFORE.search(text, max(0, start - 12), start) else 0
    for level, breaks in enumerate((cues.clause_breaks, cues.sentence_breaks, ())):
        low, high = _bounds(breaks, start, len(text))
        total, habit = _weigh(cues, low, high, start, end)
        if habit and level == 0:
            return "habitual"
        if total + target:
            return "past" if total + target > 0 else "future"
    return "unknown"


def detect_tense(text: str) -> Tense:
    """The tense of a whole sentence or fact: "past", "future", "habitual" ("usually", "every", "每周") or
    "unknown" (no cue, or cues that cancel)."""
    total, habit = _weigh(_cues(text), 0, len(text), len(text), len(text))
    if habit:
        return "habitual"
    return "past" if total > 0 else "future" if total < 0 else "unknown"
