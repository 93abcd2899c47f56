"""Technical changes, without an LLM: a number that moved, a migration, a rename, a version bump.

"p95 is now averaging 250 ms" after "the search endpoint's p95 is 350 ms"; "we moved from SQLite to Postgres"
after "the cache lives in SQLite"; "renamed utils.py to helpers.py"; "upgraded to Python 3.12" after "we're on
3.11". Technical talk rarely says "I" (rule 4 of changes.py: the same subject), so these rules carry their own
test of what the older statement must say: the number's unit, the old name, the tool.

Each rule has a name: `technical_rules(text)` says which matched, `technical_change(newer, older)` which rule
made `newer` replace `older` (None: none did), so a false positive is traced to its rule. changes.replaces asks
this module after its own (personal) rules; states_change counts these cues too (heuristic consolidation).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass

_NUM = r"\d+(?:[.,]\d+)?"
# Units of the numbers that change in technical talk, each spelling with its canonical name.
_UNITS: dict[str, str] = {
    "ms": "ms",
    "msec": "ms",
    "millisecond": "ms",
    "milliseconds": "ms",
    "s": "s",
    "sec": "s",
    "secs": "s",
    "second": "s",
    "seconds": "s",
    "min": "min",
    "mins": "min",
    "minute": "min",
    "minutes": "min",
    "h": "h",
    "hours": "h",
    "hour": "h",
    "%": "%",
    "percent": "%",
    "kb": "kb",
    "mb": "mb",
    "gb": "gb",
    "tb": "tb",
    "rps": "rps",
    "req/s": "rps",
    "qps": "qps",
    "requests/s": "rps",
    "x": "x",
    "k": "k",
    "users": "users",
    "connections": "connections",
    "workers": "workers",
    "replicas": "replicas",
    "nodes": "nodes",
    "cores": "cores",
    "errors": "errors",
    "tokens": "tokens",
    "items": "items",
    "rows": "rows",
}
_UNIT = "(?:" + "|".join(re.escape(u) for u in sorted(_UNITS, key=len, reverse=True)) + ")"
_MEASURE = re.compile(rf"(?<![\w.]){_NUM}\s*(?P<unit>{_UNIT})(?![\w/])", re.IGNORECASE)
# A name ends in a word character, "+" or "#" ("C++", "utils.py"): the period that ends a sentence is not its own.
_NAME = r"`?(?P<{}>\w(?:[\w./+#-]*[\w+#])?)`?"
_VERSION = r"v?(?P<version>\d+(?:\.\d+)+|\d+)(?!\w|\.\d)"
_WORD = re.compile(r"[^\W\d_]{3,}")
# Words that tell nothing of what a technical statement is about.
_FILLER = frozenset(
    """
    the and for with from into now our we are was were is has have had just about around averaging average
    down dropped went fell rose climbed improved increased decreased reduced brought cut up after before since
    this that these those then than its it's which what when there here also still currently moved migrated
    switched ported renamed upgraded updated bumped downgraded pinned version release latest new old
    """.split()
)


# Words that name nothing a change could be about: "it is called from the daemon", "replaced it with".
_NOT_NAMES = frozenset(
    """
    a an the it its this that these those he she they them him her we us you i me my our your their his what which
    who whom whose there here one ones something anything everything nothing someone everyone all both each some any
    """.split()
)
# Words after "called", "to", "with" that show the sentence goes on about something else ("is called from the
# daemon", "is named after a martyr", "is called to worship"): never a new name.
_NOT_TARGETS = _NOT_NAMES | frozenset(
    """
    from by to after for with in on at upon into onto as out back off up down over again when if because so and or
    but not be being been is are was were do does did before thus also now then still just finally already soon
    eventually later more less much very only even
    """.split()
)
# What a renamed thing is ("renamed the `Job` class to `Task`"): the word after the old name, not the name.
_KINDS = (
    r"(?:class|function|method|module|file|folder|directory|service|table|column|field|package|variable|endpoint|"
    r"flag|repo|repository|branch|job|queue|bucket|topic|command|script|project|app|crate|library|type|struct)"
)
_CODE_LIKE = re.compile(r"[._/#+\d-]|[a-z][A-Z]")
_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+|\n+")
_DOTTED_VERSION = re.compile(r"(?<![\w.])v?\d+\.\d+")
_NUMBER = re.compile(r"(?<![\w.])\d")


@dataclass(frozen=True, slots=True)
class TechRule:
    """A technical change: its cue, and what an older statement must say to be the thing it changed."""

    name: str
    pattern: re.Pattern[str]
    related: Callable[[re.Match[str], str, str], bool]  # (match in the newer, newer text, older text)
    # Whether a match of `pattern` is a cue at all ("it is called from the daemon" is no rename): read once per text.
    cue: Callable[[re.Match[str]], bool]


def _words(text: str) -> set[str]:
    return {w.casefold()[:6] for w in _WORD.findall(text)} - {f[:6] for f in _FILLER}


def _mentions(name: str | None, text: str) -> bool:
    """Whether `text` names `name` as a word (case-insensitive; "Postgres" in "postgres is up")."""
    if not name:
        return False
    return re.search(rf"(?<![\w.]){re.escape(name)}(?![\w])", text, re.IGNORECASE) is not None


def _units(text: str) -> set[str]:
    return {_UNITS[m.group("unit").casefold()] for m in _MEASURE.finditer(text)}


def _sentences(text: str) -> list[str]:
    return [s for s in _SENTENCE_END.split(text) if s.strip()]


def _sentence_of(match: re.Match[str], text: str) -> str:
    """The sentence of `text` that holds the cue: a long message's other sentences are about other things."""
    starts = [m.end() for m in _SENTENCE_END.finditer(text, 0, match.start())]
    end = _SENTENCE_END.search(text, match.end())
    return text[starts[-1] if starts else 0 : end.start() if end else len(text)]


def _group(match: re.Match[str], name: str) -> str | None:
    return match.groupdict().get(name)


# --- what makes a match a cue -------------------------------------------------------------------------------------


def _is_name(name: str | None) -> bool:
    return bool(name) and name.casefold() not in _NOT_TARGETS and not name.replace(".", "").isdigit()  # type: ignore[union-attr]


def _names_cue(match: re.Match[str]) -> bool:
    """Both sides name something: neither a pronoun nor a preposition, nor a bare number."""
    old, new = _group(match, "old"), _group(match, "new")
    return _is_name(old) and _is_name(new) and old.casefold() != new.casefold()  # type: ignore[union-attr]


def _backticked(match: re.Match[str], group: str) -> bool:
    return match.start(group) > 0 and match.string[match.start(group) - 1] == "`"


def _renamed_cue(match: re.Match[str]) -> bool:
    """A rename or a replacement read from the words around its verb names code or a proper name on one side
    (`utils.py`, `fetch_all`, Postgres, "the Job class"): "renamed the folder to archive", "a right to be forgotten
    was replaced by a more limited right" say too little to find the older statement by."""
    if not _names_cue(match):
        return False
    if _group(match, "kind"):
        return True
    return any(
        _backticked(match, side) or _CODE_LIKE.search(name) or any(c.isupper() for c in name)
        for side in ("old", "new")
        if (name := _group(match, side))
    )


def _version_cue(match: re.Match[str]) -> bool:
    """A version: dotted (3.12), or v-prefixed (v2), or a bare number of a named tool ("Node to 20"); the tool is
    no pronoun. "moved to 3 servers" is no version."""
    tools = [t for t in (_group(match, "tool"), _group(match, "tool2")) if t]
    if any(t.casefold() in _NOT_NAMES for t in tools):
        return False
    version = match.group("version")
    return "." in version or match.group(0)[match.start("version") - match.start() - 1 :].startswith("v") or bool(tools)


def _setting_cue(match: re.Match[str]) -> bool:
    """The thing set is named: not "it", "them" nor only words that name nothing ("set it up to 5")."""
    setting = match.group("setting")
    return setting.split()[0].casefold() not in _NOT_TARGETS and bool(_words(setting))


# --- what the older statement must say -----------------------------------------------------------------------------


def _same_measure(match: re.Match[str], newer: str, older: str) -> bool:
    """A sentence of the older statement gives a number of the same unit, about the same thing (a word in common
    with the cue's sentence), or the cue's sentence is a terse update ("now averaging 250 ms") naming nothing else."""
    unit = _UNITS[match.group("unit").casefold()]
    mine = _words(_sentence_of(match, newer))
    return any(
        unit in _units(sentence) and (len(mine) <= 2 or bool(mine & _words(sentence))) for sentence in _sentences(older)
    )


def _names_old(match: re.Match[str], newer: str, older: str) -> bool:
    """The older statement names what was left ("SQLite" for "from SQLite to Postgres", "utils.py" renamed)."""
    return _mentions(match.group("old"), older)


def _states_version(tool: str, sentence: str) -> bool:
    """ "Python 3.11", "celery==2.12.7", "Node v18", "Postgres version 15" in `sentence`."""
    pattern = rf"(?<![\w.]){re.escape(tool)}\W{{0,3}}(?:(?:version|to|at|is|on)\s+)?v?\d"
    return re.search(pattern, sentence, re.IGNORECASE) is not None


def _same_tool_version(match: re.Match[str], newer: str, older: str) -> bool:
    """A version bump: a sentence of the older statement gives a version of the tool, or (no tool named) a dotted
    version and a word in common with the cue's sentence. Naming the tool alone ("the celery client") states no
    version."""
    tools = [t for t in (_group(match, "tool"), _group(match, "tool2")) if t and t.casefold() not in _FILLER]
    sentences = _sentences(older)
    if any(_states_version(tool, s) for tool in tools for s in sentences):
        return True
    mine = _words(_sentence_of(match, newer))
    return any(_DOTTED_VERSION.search(s) and mine & _words(s) for s in sentences)


def _same_setting(match: re.Match[str], newer: str, older: str) -> bool:
    """A sentence of the older statement gives a number (of the same unit, when the newer gives one) for the same
    setting: the setting's words in it, two of them when it has two ("worker concurrency" in
    "WORKER_CONCURRENCY is 4")."""
    wanted = _words(match.group("setting"))
    unit = _group(match, "unit")
    need = min(2, len(wanted))
    for sentence in _sentences(older):
        if not _NUMBER.search(sentence) or len(wanted & _words(sentence)) < need:
            continue
        if unit is None or _UNITS[unit.casefold()] in _units(sentence):
            return True
    return False


def _rule(
    name: str,
    pattern: str,
    related: Callable[[re.Match[str], str, str], bool],
    cue: Callable[[re.Match[str]], bool] = lambda _match: True,
) -> TechRule:
    return TechRule(name, re.compile(pattern, re.IGNORECASE), related, cue)


_DET = r"(?:(?:the|our|my|your|their|its|a|an)\s+)?"
_NOT_A_UNIT = rf"(?!\s*{_UNIT}(?![\w/]))"  # "bumped memory to 4 GB" is a setting, not a version

TECH_RULES: tuple[TechRule, ...] = (
    # "now averaging 250 ms", "is now 250ms", "now at 12 workers", "now down to 3%".
    _rule(
        "metric-now",
        rf"\bnow\s+(?:(?:averag\w*|at|around|about|roughly|down\s+to|up\s+to|sitting\s+at|hovering\s+(?:at|around)|"
        rf"running\s+at|takes?|taking|is|are|only|just|under|over|below|above)\s+){{0,2}}~?{_NUM}\s*(?P<unit>{_UNIT})"
        r"(?![\w/])",
        _same_measure,
    ),
    # "p95 dropped to 250 ms", "went down from 350 ms to 250 ms", "memory rose to 2 GB".
    _rule(
        "metric-moved",
        rf"\b(?:dropped|fell|went\s+(?:down|up)|rose|climbed|improved|increased|decreased|reduced|cut|brought\s+"
        rf"(?:it\s+)?down|grew|shrank|jumped|spiked)\s+(?:from\s+~?{_NUM}\s*{_UNIT}?\s+)?(?:down\s+|up\s+)?to\s+"
        rf"~?{_NUM}\s*(?P<unit>{_UNIT})(?![\w/])",
        _same_measure,
    ),
    # "That brings the search tail (p95) to 200 ms", "brought the cold start down to 2 s".
    _rule(
        "metric-brings",
        rf"\b(?:brings|brought|bringing)\s+(?:[^\s.!?;]+\s+){{1,6}}?(?:down\s+|up\s+)?to\s+~?{_NUM}\s*"
        rf"(?P<unit>{_UNIT})(?![\w/])",
        _same_measure,
    ),
    # "we moved from SQLite to Postgres", "migrated the queue from Celery to RQ", "switched from npm to pnpm".
    _rule(
        "migrated-from-to",
        r"\b(?:moved|migrated|switched|ported|transitioned|changed|converted)\s+(?:\w+\s+){0,3}?from\s+"
        + _DET
        + _NAME.format("old")
        + r"\s+(?:over\s+)?to\s+"
        + _DET
        + _NAME.format("new"),
        _names_old,
        _names_cue,
    ),
    # "replaced Redux with Zustand", "swapped out requests for httpx".
    _rule(
        "replaced-with",
        r"\b(?:replaced|swapped(?:\s+out)?)\s+"
        + _DET
        + r"(?:old\s+)?"
        + _NAME.format("old")
        + r"\s+(?:with|for|by)\s+"
        + _DET
        + r"(?:new\s+)?"
        + _NAME.format("new"),
        _names_old,
        _names_cue,
    ),
    # "Postgres replaces SQLite as our database", "the new `httpx` client replaces the old `requests` one".
    _rule(
        "replaces",
        _NAME.format("new")
        + r"[^\S\n]+(?:now\s+)?(?:replaces|replaced|has\s+replaced|supersedes|superseded|takes\s+over\s+from|"
        r"took\s+over\s+from)\s+" + _DET + r"(?:old\s+)?" + _NAME.format("old"),
        _names_old,
        _renamed_cue,
    ),
    # "SQLite was replaced by Postgres", "`cron.py` has been superseded by `scheduler.py`".
    _rule(
        "replaced-by",
        _NAME.format("old")
        + r"[^\S\n]+(?:is|was|has\s+been|got|will\s+be)\s+(?:now\s+)?(?:replaced|superseded)\s+(?:by|with)\s+"
        + _DET
        + r"(?:new\s+)?"
        + _NAME.format("new"),
        _names_old,
        _renamed_cue,
    ),
    # "renamed utils.py to helpers.py", "renamed the `Job` class to `Task`".
    _rule(
        "renamed",
        r"\brenamed\s+(?:the\s+)?(?:\w+\s+){0,2}?"
        + _NAME.format("old")
        + rf"(?:\s+(?P<kind>{_KINDS}))?"
        + r"\s+(?:to|as|into)\s+"
        + _NAME.format("new"),
        _names_old,
        _renamed_cue,
    ),
    # "`fetch_all` is now called `load_all`", "the service is now named billing-api", "utils.py was renamed to
    # helpers.py". Without "now" or "renamed", "St Albans is named after a martyr": no rename.
    _rule(
        "now-called",
        _NAME.format("old")
        + r"\s+(?:is|was|has\s+been|got)\s+(?:now\s+(?:called|named|renamed(?:\s+to)?)|renamed(?:\s+to)?)\s+"
        + _NAME.format("new"),
        _names_old,
        _renamed_cue,
    ),
    # "upgraded to Python 3.12", "bumped fastapi to 0.115", "updated Node from 18 to 20".
    _rule(
        "version-bump",
        r"\b(?:upgraded|updated|bumped|moved|migrated|downgraded|pinned|switched)\s+(?:(?:the|our|my)\s+)?"
        r"(?:(?P<tool>[A-Za-z][\w.+-]*)\s+)?(?:from\s+v?\d+(?:\.\d+)*\s+)?to\s+(?:(?P<tool2>[A-Za-z][\w.+-]*)\s+)?"
        + _VERSION
        + _NOT_A_UNIT,
        _same_tool_version,
        _version_cue,
    ),
    # "we're now on Python 3.12", "now running Postgres 16", "the lock file now resolves httpx 0.27.2".
    _rule(
        "now-on-version",
        r"\bnow\s+(?:on|running|using|at|resolves|requires|targets|ships)\s+(?:version\s+)?"
        r"(?:(?P<tool>[A-Za-z][\w.+-]*)\s+)?" + _VERSION + _NOT_A_UNIT,
        _same_tool_version,
        _version_cue,
    ),
    # "set the default page size to 50", "raised the worker concurrency to 12", "changed the timeout from 30 s to
    # 60 s". After the version bump: "bumped fastapi to 0.115" is a version first.
    _rule(
        "setting-to",
        r"\b(?:set|raised|lowered|increased|decreased|reduced|changed|capped|limited|tuned|upped|bumped|dropped|cut)\s+"
        + _DET
        + r"(?P<setting>[\w`'.-]+(?:\s+[\w`'.-]+){0,5}?)\s+"
        + rf"(?:from\s+~?{_NUM}\s*{_UNIT}?\s+)?to\s+~?{_NUM}(?:\s*(?P<unit>{_UNIT})(?![\w/]))?(?![\w.]?\d|\w)",
        _same_setting,
        _setting_cue,
    ),
    # "the request timeout is now set to 60 s", "WORKER_CONCURRENCY was set to 12".
    _rule(
        "setting-is-set-to",
        r"\b"
        + _DET
        + r"(?P<setting>[\w`'.-]+(?:\s+[\w`'.-]+){0,2}?)\s+(?:is|was|has\s+been|are|were|got)\s+(?:now\s+)?set\s+to\s+"
        + rf"~?{_NUM}(?:\s*(?P<unit>{_UNIT})(?![\w/]))?(?![\w.]?\d|\w)",
        _same_setting,
        _setting_cue,
    ),
)


@functools.lru_cache(maxsize=8192)
def _cues(text: str) -> tuple[tuple[TechRule, re.Match[str]], ...]:
    """Every rule's cue found in `text`, read once per text: recall weighs each of its best hits against each
    other (apply_changes: 30 x 29 pairs), and searching a long message's text again for every pair was most of a
    recall's time on long technical banks (45 ms of 52 in the order step)."""
    return tuple((rule, match) for rule in TECH_RULES for match in rule.pattern.finditer(text) if rule.cue(match))


def technical_rules(text: str) -> tuple[str, ...]:
    """The names of the technical-change rules whose cue is in `text`."""
    return tuple(dict.fromkeys(rule.name for rule, _match in _cues(text)))


def technical_change(newer: str, older: str) -> str | None:
    """The name of the rule by which `newer` states a change of what `older` says, or None. Times and speakers are
    changes.replaces' to check."""
    for rule, match in _cues(newer):
        if rule.related(match, newer, older):
            return rule.name
    return None


__all__ = ["TECH_RULES", "TechRule", "technical_change", "technical_rules"]
