"""The cues of a personal change ("switched to", "no longer", "搬到", "ya no" …) as named rules: CHANGE_CUE is
their alternation, each rule a named group, so a match says which rule made it (`cue_rule`, `change_rules`) and a
false positive is traced to its rule, as tech_changes.py's rules and timeparse's `_Rule`s are.

The alternation is the rules in order (English inside one pair of word boundaries, then Chinese, then Spanish):
the same regex as the one unnamed alternation it replaced, so it matches exactly what that did.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ChangeRule:
    """One kind of statement of change: its name, its regex (an alternative of CHANGE_CUE), a text it matches."""

    name: str
    pattern: str
    example: str

    @property
    def group(self) -> str:
        """Its named group in CHANGE_CUE."""
        return self.name.replace("-", "_")


# A change said in the first person: "I switched to VS Code", "we moved to Berlin", "I'm no longer vegetarian",
# "I don't drink coffee anymore", "I quit my job", "I got a new phone", "I now live in Porto". Past-tense narration
# ("I used to …", "instead of giving up") and present states ("I'm currently reading …") are no change of a fact:
# in chat they are everywhere.
_I = r"(?:i|we|the\s+user)(?:\s+(?:have|had|'ve|just|finally|recently|actually|also))*"
CHANGE_RULES_EN = (
    ChangeRule(
        "en-switched-to",
        rf"{_I}\s+(?:switched|changed|moved|relocated|transferred|converted)"
        r"(?:\s+(?:over|back|house))?\s+(?:to|from|into|out)\b",
        "I switched to VS Code last week",
    ),
    ChangeRule("en-no-longer", r"\bno\s+longer\b", "I'm no longer vegetarian"),
    ChangeRule(
        "en-dont-anymore",
        rf"{_I}\s+(?:do\s+not|don't|dont|does\s+not|doesn't|never)\s+\w+(?:\s+\w+){{0,3}}\s+any\s*more\b",
        "I don't drink coffee anymore",
    ),
    ChangeRule(
        "en-am-not-anymore",
        rf"{_I}(?:\s+(?:am|are|is)|'m|'re)\s+not\s+\w+(?:\s+\w+){{0,3}}\s+any\s*more\b",
        "I'm not a smoker any more",
    ),
    ChangeRule("en-stopped", rf"{_I}\s+(?:stopped|quit|gave\s+up|ditched)\s+\w+", "I quit smoking"),
    ChangeRule(
        "en-left-for",
        rf"{_I}\s+left\s+(?:my\s+|the\s+)?\w+(?:\s+\w+)?\s+(?:and|for|to)\b",
        "I left my job for a startup",
    ),
    ChangeRule(
        "en-got-rid-of", rf"{_I}\s+(?:sold|got\s+rid\s+of|replaced|swapped)\s+(?:my|our|the)\b", "we sold our car"
    ),
    ChangeRule(
        "en-got-a-new",
        rf"{_I}\s+(?:got|have|found|started|bought|landed|accepted)\s+(?:a\s+|an\s+)?new\s+(?:job|role|position|phone|car|"
        r"house|home|apartment|flat|address|number|email|laptop|computer|editor|place)\b",
        "I got a new phone",
    ),
    ChangeRule(
        "en-now-do",
        rf"(?:{_I}(?:'m|\s+am|'re|\s+are)?\s+now|now\s+{_I})\s+(?:use|using|live|living|work|working|prefer|drive|eat|"
        r"drink|own|based|vegan|vegetarian|at|in|with)\b",
        "I now live in Porto",
    ),
    ChangeRule(
        "en-these-days",
        rf"(?:these\s+days|nowadays),?\s+{_I}\s+(?:use|live|work|prefer|drive|eat|drink|go|take|play|am|'m)\b",
        "these days I work from home",
    ),
    ChangeRule(
        "en-became", rf"{_I}\s+(?:turned|went|became)\s+(?:vegan|vegetarian|pescatarian|sober)\b", "I went vegan"
    ),
    ChangeRule("en-am-now", rf"{_I}(?:'m|\s+am|'re|\s+are)\s+(?:\w+\s+){{0,3}}now\s*(?:[.!,;]|$)", "I'm a vegan now"),
    ChangeRule(
        "en-started-again",
        rf"(?:^|[.!?]\s+|{_I}\s+)(?:started|began)\s+\w+ing\b(?:\s+\w+){{0,3}}\s+again\b",
        "I started running again",
    ),
    ChangeRule(
        "en-joined-as",
        rf"(?:{_I}\s+)?\b(?:joined|joining)\s+\S+(?:\s+\S+)?\s+as\s+(?:a|an|the)?\b",
        "I joined Acme as a designer",
    ),
    ChangeRule(
        "en-job-offer", rf"(?:^|{_I}\s+)(?:got|accepted|took)\s+(?:an?\s+)?(?:job\s+)?offer\b", "I accepted an offer"
    ),
    ChangeRule(
        "en-moved-to", rf"(?:^|{_I}\s+)(?:moved|moving|relocated)\s+(?:to|into|out)\b", "moved to Berlin in May"
    ),
    ChangeRule(
        "en-instead-of",
        rf"{_I}\s+(?:now\s+)?\w+(?:\s+\w+){{0,6}}\s+instead\s+of\s+\w+ing\b",
        "I play padel instead of playing tennis",
    ),
    ChangeRule(
        "en-relationship", rf"{_I}\s+(?:broke\s+up|split\s+up|got\s+(?:divorced|married|engaged))\b", "we got married"
    ),
    ChangeRule("en-from-now-on", r"from\s+now\s+on\b", "from now on it's tea"),
)
CHANGE_RULES_ZH = (
    ChangeRule("zh-switched-to", r"改用|改成|改为|换成|换到|转到|转用", "我改用VS Code了"),
    ChangeRule("zh-no-longer", r"不再|已经不|再也不", "我不再吃肉了"),
    ChangeRule("zh-moved", r"搬到|搬去|搬家了|搬回", "我去年搬到了北京"),
    ChangeRule("zh-left-job", r"辞职了|离职了|跳槽", "我上个月辞职了"),
    ChangeRule("zh-quit-habit", r"戒了|戒烟|戒酒", "我戒烟三年了"),
    ChangeRule("zh-relationship", r"分手了|离婚了", "我们分手了"),
    ChangeRule("zh-before-now", r"以前.{0,12}现在|现在改", "我以前住上海，现在住北京"),
)
# A change said in Spanish: "ya no como carne", "dejé de fumar", "me mudé a Sevilla", "cambié de trabajo",
# "ahora uso VS Code", "renuncié", "en lugar de tenis juego pádel". Spanish drops its subject, so the cue carries
# the first person in the verb (-é, -o) rather than in a pronoun.
CHANGE_RULES_ES = (
    ChangeRule("es-ya-no", r"\bya\s+no\b", "ya no como carne"),
    ChangeRule("es-nunca-mas", r"\bnunca\s+m[áa]s\b", "nunca más fumo"),
    ChangeRule("es-deje-de", r"\b(?:dej[ée]|dejamos)\s+de\b", "dejé de fumar"),
    ChangeRule(
        "es-me-mude",
        r"\b(?:me|nos)\s+(?:cambi[ée]|cambiamos|mud[ée]|mudamos|pas[ée]|pasamos|fui|fuimos)\s+(?:a|al|de|del)\b",
        "me mudé a Sevilla",
    ),
    ChangeRule("es-cambie-de", r"\b(?:cambi[ée]|cambiamos)\s+(?:de|a|al|el|la|mi|mis)\b", "cambié de trabajo"),
    ChangeRule(
        "es-ahora",
        r"\bahora\s+(?:ya\s+)?(?:uso|usamos|vivo|vivimos|trabajo|trabajamos|prefiero|como|bebo|conduzco|soy|estoy|"
        r"tengo|juego|estudio)\b",
        "ahora uso VS Code",
    ),
    ChangeRule(
        "es-life-event",
        r"\b(?:renunci[ée]|dimit[íi]|me\s+jubil[ée]|me\s+divorci[ée]|me\s+cas[ée]|rompimos)\b",
        "renuncié en marzo",
    ),
    ChangeRule("es-en-lugar-de", r"\b(?:en\s+lugar|en\s+vez)\s+de\b", "en lugar de tenis juego pádel"),
)
CHANGE_RULES: tuple[ChangeRule, ...] = (*CHANGE_RULES_EN, *CHANGE_RULES_ZH, *CHANGE_RULES_ES)


def _alternation(rules: tuple[ChangeRule, ...]) -> str:
    return "|".join(f"(?P<{rule.group}>{rule.pattern})" for rule in rules)


CHANGE_CUE = re.compile(
    rf"(?:\b(?:{_alternation(CHANGE_RULES_EN)})\b)|(?:{_alternation(CHANGE_RULES_ZH)})|(?:{_alternation(CHANGE_RULES_ES)})",
    re.IGNORECASE,
)
_BY_GROUP = {rule.group: rule for rule in CHANGE_RULES}


def cue_rule(match: re.Match[str]) -> str:
    """The name of the rule a CHANGE_CUE match is of."""
    return _BY_GROUP[str(match.lastgroup)].name


def change_rules(text: str) -> tuple[str, ...]:
    """The names of the rules whose cue is in `text` (in the order found, each once; scene-setting clauses
    included: changes.change_spans leaves those out)."""
    return tuple(dict.fromkeys(cue_rule(m) for m in CHANGE_CUE.finditer(text)))


__all__ = ["CHANGE_CUE", "CHANGE_RULES", "ChangeRule", "change_rules", "cue_rule"]
