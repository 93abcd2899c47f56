"""Statements of change and the earlier statements they replace, without an LLM.

"I use Neovim for all my coding" (January) and "Actually I switched to VS Code last week" (November) are two
memories about one thing; the second says it changed. Recall ranks the newer above the older and marks the older
as earlier (engine/recall/order.py); heuristic consolidation records it as a change, never as support
(engine/learn/heuristic.py). Both ask the same question of a pair, `replaces(newer, older)`:

1. the newer one *states a change*: "switched to", "no longer", "moved to", "stopped", "now …", "改用", "不再",
   "搬到", "现在" … (CHANGE_CUE: the named rules of change_rules.py);
2. it was said later;
3. the same speaker said both (a memory without a speaker, such as an extracted fact, goes with any);
4. they have the same *subject*: both are the speaker about themselves ("I …", "I'm …", "我…", "The user …"), or
   both name the same someone ("My sister …", "Alice …");
5. they are about the same *topic*: a content word in common ("tennis" / "padel instead of tennis"), or the same
   kind of thing that changes (TOPICS: where one lives, works, what one uses, eats, drinks, drives, …) — the
   newer one's topic being what its cue names: the cue and the few words after it (CUE_REACH). "Me mudé a
   Valencia el año pasado por trabajo" is a move, not a change of everything said about work;
6. the change did not happen before the older statement's time: "我去年搬到了北京" (said in November) does not
   replace "我住在北京朝阳区" said in March, which already knew it.

Vectors are not asked: a unit's vector carries the turn before it (retain embeds context), and MiniLM puts "My
sister lives in Berlin" nearer "I moved to Berlin" (0.73) than "I live in Lisbon" (0.33).

A question can ask about the present ("which editor do I use *now*?", "现在") — then, of two memories on one
topic, the newer leads even with no word of change — or about the past ("where did I live *before*?"), and then
the earlier statements are what it wants: they keep their place (still marked as earlier).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from datetime import datetime

from memwrap.engine.language.change_rules import CHANGE_CUE
from memwrap.engine.language.changes_es import (
    NOT_TOPIC_ES,
    PAST_ES,
    PRESENT_ES,
    TOPICS_ES,
    es_first,
)
from memwrap.engine.language.tech_changes import technical_change, technical_rules

_PRESENT = re.compile(
    r"\b(?:now|currently|current|these\s+days|nowadays|at\s+the\s+moment|at\s+present|presently|still|any\s*more|"
    r"latest|today)\b|现在|目前|如今|当前|这些天|这阵子|还在|最新",
    re.IGNORECASE,
)
_PAST = re.compile(
    r"\b(?:before|used\s+to|previous(?:ly)?|formerly|former|earlier|old|originally|at\s+first|first|back\s+when|"
    r"in\s+the\s+past|once)\b|以前|之前|原来|过去|曾经|起初|最初|当初",
    re.IGNORECASE,
)


# A change inside a clause that only sets the scene ("since I moved from Sweden", "after I quit smoking") is told,
# not stated: the sentence is about something else.
_SCENE = re.compile(
    r"\b(?:since|after|when|before|because|until|till|if|once|while|as)\s+(?:\w+\s+){0,2}$", re.IGNORECASE
)


# How far past its cue a change reaches: the cue and the ~24 characters after it name what changed ("改用 Postgres
# 存数据", "moved to Berlin last week", "mudé a Valencia el año pasado"). The whole statement named too much: on the
# multilingual set (bench/multilingual) "Me mudé a Valencia el año pasado por trabajo" replaced the Chinese memories
# about work (公司, 上班, 工作) as well as those about home, and pushed them below every other memory.
# The reach ends sooner at the end of the sentence or of a Chinese clause: 24 Chinese characters are a clause or
# two, and in "我改用Postgres了，因为公司的数据越来越多" the reason (公司: work) is no part of what changed. Not at a
# Latin comma: "I no longer, as of this week, drink coffee".
CUE_REACH = 24
_REACH_END = re.compile(r"[。！？；，、!?;]|\.(?:\s|$)")


@functools.lru_cache(maxsize=8192)
def change_spans(text: str) -> tuple[str, ...]:
    """The statements of change in a text, each as its cue and what follows it up to CUE_REACH characters or the
    end of its sentence (or Chinese clause); none for a change told in a clause that only sets the scene ("since I
    moved from Sweden, …")."""
    spans = []
    for m in CHANGE_CUE.finditer(text):
        if _SCENE.search(text, max(0, m.start() - 30), m.start()) is not None:
            continue
        end = _REACH_END.search(text, m.end(), m.end() + CUE_REACH)
        spans.append(text[m.start() : end.start() if end else m.end() + CUE_REACH])
    return tuple(spans)


def states_personal_change(text: str) -> bool:
    """Whether a statement says something of its speaker changed ("switched to", "no longer", "搬到" …)."""
    return bool(change_spans(text))


def states_change(text: str) -> bool:
    """Whether a statement says something changed: a personal change (CHANGE_CUE) or a technical one ("now
    averaging 250 ms", "moved from SQLite to Postgres", "renamed X to Y", "upgraded to 3.12": tech_changes.py)."""
    return states_personal_change(text) or bool(technical_rules(text))


def asks_present(question: str) -> bool:
    """Whether a question asks how things are now ("now", "currently", "these days", "现在")."""
    return _PRESENT.search(question) is not None or PRESENT_ES.search(question) is not None


def asks_past(question: str) -> bool:
    """Whether a question asks how things were ("before", "used to", "previously", "以前")."""
    return _PAST.search(question) is not None or PAST_ES.search(question) is not None


# The things that change, each by the words that name it (Latin words by their first five letters, Chinese as
# written). Two statements on one of these are about the same topic though they share no word: "I live in
# Lisbon" and "I moved to Berlin".
TOPICS: dict[str, tuple[str, ...]] = {
    "home": (
        "live",
        "lives",
        "livin",
        "moved",
        "move",
        "movin",
        "reloc",
        "based",
        "home",
        "house",
        "apart",
        "flat",
        "addre",
        "rent",
        "住",
        "搬",
        # Not 家 alone: it is in 大家 (everyone), 家人 (family), 专家 (expert), 老家 (one's home town, which no
        # move changes), 国家, 作家 …
        "我家在",
        "房子",
        "公寓",
        "地址",
    ),
    "work": (
        "work",
        "works",
        "worki",
        "job",
        "jobs",
        "compa",
        "emplo",
        "hired",
        "quit",
        "resig",
        "offic",
        "boss",
        "start",
        "caree",
        "posit",
        "role",
        "工作",
        "公司",
        "上班",
        "入职",
        "离职",
        "辞职",
        "跳槽",
        "老板",
        "职位",
    ),
    "tools": (
        "use",
        "uses",
        "using",
        "switc",
        "edito",
        "app",
        "apps",
        "phone",
        "lapto",
        "compu",
        "brows",
        "frame",
        "langu",
        "tool",
        "tools",
        "vscod",
        "vim",
        "neovi",
        "emacs",
        "用",
        "改用",
        "手机",
        "电脑",
        "软件",
        "编辑器",
        "框架",
        "工具",
    ),
    "diet": (
        "eat",
        "eats",
        "eatin",
        "veget",
        "vegan",
        "meat",
        "diet",
        "food",
        "aller",
        "glute",
        "dairy",
        "pesca",
        "吃",
        "素",
        "肉",
        "饮食",
        "过敏",
    ),
    "drink": ("drink", "coffe", "tea", "alcoh", "beer", "wine", "sober", "喝", "咖啡", "茶", "酒"),
    "transport": (
        "drive",
        "drive",
        "car",
        "cars",
        "bike",
        "cycle",
        "bus",
        "train",
        "commu",
        "scoot",
        "开车",
        "车",
        "骑车",
        "地铁",
        "公交",
        "通勤",
    ),
    "partner": (
        "datin",
        "marri",
        "boyfr",
        "girlf",
        "partn",
        "husba",
        "wife",
        "singl",
        "divor",
        "engag",
        "结婚",
        "男朋友",
        "女朋友",
        "对象",
        "分手",
        "离婚",
        "老公",
        "老婆",
    ),
    "study": (
        "schoo",
        "study",
        "studi",
        "unive",
        "colle",
        "major",
        "cours",
        "degre",
        "学校",
        "大学",
        "专业",
        "课程",
        "读书",
        "上学",
    ),
    "habit": (
        "smoke",
        "smoki",
        "vape",
        "vapin",
        "exerc",
        "gym",
        "run",
        "runni",
        "swim",
        "yoga",
        "抽烟",
        "戒烟",
        "健身",
        "跑步",
        "运动",
    ),
    "contact": ("numbe", "email", "phone", "电话", "号码", "邮箱", "微信"),
}
_TOPIC_OF: dict[str, set[str]] = {}
for _topic, _words in TOPICS.items():
    for _word in _words:
        _TOPIC_OF.setdefault(_word, set()).add(_topic)

for _topic, _words in TOPICS_ES.items():
    for _word in _words:
        _TOPIC_OF.setdefault(_word, set()).add(_topic)

_LATIN = re.compile(r"[^\W\d_\u3400-\u9fff]+(?:['’][^\W\d_\u3400-\u9fff]+)?")
_HAN = re.compile(r"[\u3400-\u9fff]+")
# Words that say nothing of a topic: function words, the change cues' own words, and chat filler.
_NOT_TOPIC = frozenset(
    """
    the a an and or but so to of in on at for from with by as is are was were be been am i i'm i've i'd me my mine
    we our us you your he she it they them their this that these those there here what which who when where why how
    have has had do does did will would can could should may might must not no yes yeah oh ok okay actually really
    just now also still then than too very much more most some any all one two last next week month year years
    today yesterday since ago about into over after before again already anymore longer switch switched change
    changed moved move instead these days nowadays currently used stopped quit started new different got get
    going went back from user assistant think thing things lot like love
    """.split()
)
_NOT_TOPIC = _NOT_TOPIC | NOT_TOPIC_ES  # Spanish function words too (issue 38)
_FIRST_PERSON = re.compile(
    r"^(?:(?:oh|so|well|actually|btw|by the way|also|and|but|ok|okay|yes|yeah|yep|hi|hey|update|fyi|"
    r"just so you know|guess what|good news|news|these days|nowadays|lately|recently|now|today|"
    r"(?:this|last|next) (?:week|month|year|spring|summer|autumn|fall|winter))[,!:.\s]+)*"
    r"(?:i\b|i['’]m\b|i['’]ve\b|i['’]d\b|i['’]ll\b|we\b|"
    r"we['’]re\b|we['’]ve\b|the user\b|user\b|(?:the )?user['’]s\b)",
    re.IGNORECASE,
)
# "My sister …" is about the sister; "my laptop …", "my job …" are about the speaker (their things).
_PEOPLE = frozenset(
    """
    sister sisters brother brothers mother mom mum father dad parents wife husband partner boyfriend girlfriend son
    daughter kid kids child children baby friend friends colleague colleagues coworker coworkers boss manager
    roommate flatmate housemate neighbour neighbor neighbours neighbors cousin aunt uncle grandma grandpa grandmother
    grandfather niece nephew fiance fiancee family team teacher doctor dentist landlord ex
    """.split()
)
_SOMEONE = re.compile(
    r"^(?:my|our|the user['’]s|user['’]s)\s+(?:[\w-]+\s+){0,2}?(\w+)\b|^([A-Z][\w'’-]+)\b", re.IGNORECASE
)
_POSSESSION = re.compile(r"^(?:my|our|the user['’]s|user['’]s)\s+([\w-]+)", re.IGNORECASE)
# A chat line often drops its "I": "Got a new job at Shopee!", "Moved to Berlin last week", "Bought a MacBook".
_DROPPED_I = re.compile(
    r"^(?:got|bought|moved|started|switched|quit|left|sold|joined|took|went|became|finished|stopped|changed|"
    r"signed|landed|accepted|adopted|upgraded|ditched|traded|swapped|picked|starting|moving|switching|leaving|"
    r"quitting|joining)\b",
    re.IGNORECASE,
)
_ZH_FIRST_PERSON = re.compile(
    r"^(?:对了|其实|哦|嗯|好的|告诉你)?[，,\s]*(?:我(?:们)?|用户)(?![的妈爸妹姐哥弟儿女朋同家老])"
)
# Chinese drops its subject even more: a line that names nobody first (no 他/她, no name, no "我的 + person") is
# the speaker's own.
_ZH_SOMEONE_FIRST = re.compile(
    r"^(?:他|她|它|他们|她们|我的|我们的|用户的|[\u3400-\u9fff]{0,2}(?:朋友|同事|室友|老板|妈妈|爸爸|"
    r"哥哥|姐姐|弟弟|妹妹|老公|老婆|孩子|儿子|女儿))|^[A-Za-z]"
)
_LABEL = re.compile(r"^[^:：\n]{1,40}?\s*[:：]\s*")
# Two-character pieces of Chinese that are function words, not topics (我们, 已经 …).
_HAN_FUNCTION_PAIRS = frozenset(
    "我们 你们 他们 她们 已经 现在 上个 个月 一个 这个 那个 什么 没有 还是 就是 不是 可以 因为 所以".split()
)


@dataclass(frozen=True, slots=True)
class Statement:
    """A memory as a statement: its words, who said it and when, and when what it tells happened (its dates, from
    a time expression in it: "last year", "去年"; None when it names no time)."""

    text: str
    speaker: str | None
    said_at: datetime | None
    occurred: tuple[datetime, datetime] | None = None


def _body(statement: Statement) -> str:
    """The words, without the speaker's label."""
    text = statement.text.strip()
    return _LABEL.sub("", text, count=1) if statement.speaker else text


def statement_body(text: str, speaker: str | None) -> str:
    """A memory's words as the rules read them: without its speaker's label."""
    return _body(Statement(text, speaker, None))


@functools.lru_cache(maxsize=8192)
def subject(text: str) -> str | None:
    """Whom a statement is about: "I" for the speaker themselves, else the someone it names first ("my sister" ->
    "sister", "Alice" -> "alice"), or None when it cannot tell."""
    if _FIRST_PERSON.match(text) or _ZH_FIRST_PERSON.match(text) or _DROPPED_I.match(text) or es_first(text):
        return "I"
    owned = _POSSESSION.match(text)
    if owned is not None and owned.group(1).casefold() not in _PEOPLE:
        return "I"  # my laptop, my job, my go-to editor
    someone = _SOMEONE.match(text)
    if someone is not None:
        return (someone.group(1) or someone.group(2)).casefold()
    if _HAN.match(text) and not _ZH_SOMEONE_FIRST.match(text):
        return "I"
    return None


@functools.lru_cache(maxsize=8192)
def topic_terms(text: str) -> tuple[frozenset[str], frozenset[str]]:
    """(content words, topics) of a statement: Latin words by their first five letters, Chinese words as jieba cuts
    them (and every two-character piece of a longer run)."""
    stems: set[str] = set()
    words: set[str] = set()
    for match in _LATIN.finditer(text):
        low = match.group().casefold().replace("’", "'")
        stems.add(low[:5])
        if low not in _NOT_TOPIC and len(low) > 2:
            words.add(low[:5])
    runs = _HAN.findall(text)
    for run in runs:
        words.update(run[i : i + 2] for i in range(len(run) - 1))
    topics = {topic for stem in stems | words for topic in _TOPIC_OF.get(stem, ())}
    topics.update(topic for run in runs for key, found in _TOPIC_OF.items() if key in run for topic in found)
    return frozenset(words - _HAN_FUNCTION_PAIRS), frozenset(topics)


def _same_subject(a: Statement, b: Statement) -> str | None:
    """Whom both are about (rules 3-4 of the module's docstring), or None when they are not about one someone."""
    if a.speaker and b.speaker and a.speaker.casefold() != b.speaker.casefold():
        return None
    who_a = subject(_body(a))
    return who_a if who_a is not None and who_a == subject(_body(b)) else None


def _shares_topic(who: str, text_a: str, text_b: str) -> bool:
    words_a, topics_a = topic_terms(text_a)
    words_b, topics_b = topic_terms(text_b)
    return bool(((words_a & words_b) - {who}) or (topics_a & topics_b))


def same_topic(a: Statement, b: Statement) -> bool:
    """Both about the same subject and the same topic (rules 3-5 of the module's docstring), in all their words."""
    who = _same_subject(a, b)
    return who is not None and _shares_topic(who, _body(a), _body(b))


def changes_topic_of(newer: Statement, older: Statement) -> bool:
    """Whether a change `newer` states is about what `older` says: the same subject, and the topic its cue names
    (the cue and CUE_REACH characters after it) shared with any of `older`'s words."""
    who = _same_subject(newer, older)
    if who is None:
        return False
    body = _body(older)
    return any(_shares_topic(who, span, body) for span in change_spans(_body(newer)))


def _happened_before(newer: Statement, older: Statement) -> bool:
    """Whether the change `newer` tells of was over before the time of `older` (what it tells of, else when it was
    said): then `older` was said knowing it, and is no earlier state."""
    if newer.occurred is None:
        return False
    since = older.occurred[0] if older.occurred is not None else older.said_at
    return since is not None and newer.occurred[1] < since


def replaces(newer: Statement, older: Statement) -> bool:
    """Whether `newer` states a change of what `older` said: said later, by the same speaker, of the same subject
    and topic, in words of change; or, said later by the same speaker, a technical change of what `older` says
    (tech_changes.py: the same measure, the old name, the same tool)."""
    return change_rule(newer, older) is not None


def change_rule(newer: Statement, older: Statement) -> str | None:
    """Why `newer` replaces `older`: "personal" (this module's rules) or the name of a technical rule; None when
    it does not."""
    if newer.said_at is None or older.said_at is None or newer.said_at <= older.said_at:
        return None
    if _happened_before(newer, older):
        return None
    if changes_topic_of(newer, older):
        return "personal"
    if newer.speaker and older.speaker and newer.speaker.casefold() != older.speaker.casefold():
        return None
    return technical_change(_body(newer), _body(older))


__all__ = [
    "CHANGE_CUE",
    "TOPICS",
    "Statement",
    "asks_past",
    "asks_present",
    "change_rule",
    "change_spans",
    "changes_topic_of",
    "replaces",
    "same_topic",
    "states_change",
    "states_personal_change",
    "statement_body",
    "subject",
    "topic_terms",
]
