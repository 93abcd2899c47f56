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
_NAME = r"`?(?P<{}>[\w][\w./+#-]*)`?"
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


@dataclass(frozen=True, slots=True)
class TechRule:
    """A technical change: its cue, and what an older statement must say to be the thing it changed."""

    name: str
    pattern: re.Pattern[str]
    related: Callable[[re.Match[str], str, str], bool]  # (match in the newer, newer text, older text)


def _words(text: str) -> set[str]:
    return {w.casefold()[:6] for w in _WORD.findall(text)} - {f[:6] for f in _FILLER}


def _mentions(name: str | None, text: str) -> bool:
    """Whether `text` names `name` as a word (case-insensitive; "Postgres" in "postgres is up")."""
    if not name:
        return False
    return re.search(rf"(?<![\w.]){re.escape(name)}(?![\w])", text, re.IGNORECASE) is not None


def _units(text: str) -> set[str]:
    return {_UNITS[m.group("unit").casefold()] for m in _MEASURE.finditer(text)}


def _same_measure(match: re.Match[str], newer: str, older: str) -> bool:
    """The older statement gives a number of the same unit, about the same thing (a word in common), or the newer
    one is a terse update ("now averaging 250 ms") that names nothing else."""
    unit = _UNITS[match.group("unit").casefold()]
    if unit not in _units(older):
        return False
    mine = _words(newer)
    return len(mine) <= 2 or bool(mine & _words(older))


def _names_old(match: re.Match[str], newer: str, older: str) -> bool:
    """The older statement names what was left ("SQLite" for "from SQLite to Postgres", "utils.py" renamed)."""
    return _mentions(match.group("old"), older)


def _same_tool_version(match: re.Match[str], newer: str, older: str) -> bool:
    """A version bump: the older statement names the tool, or gives a version and shares a word with the newer."""
    tool = match.groupdict().get("tool") or match.groupdict().get("tool2")
    if tool and tool.casefold() not in _FILLER and _mentions(tool, older):
        return True
    return re.search(r"(?<![\w.])v?\d+\.\d+", older) is not None and bool(_words(newer) & _words(older))


def _rule(name: str, pattern: str, related: Callable[[re.Match[str], str, str], bool]) -> TechRule:
    return TechRule(name, re.compile(pattern, re.IGNORECASE), related)


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
    # "we moved from SQLite to Postgres", "migrated the queue from Celery to RQ", "switched from npm to pnpm".
    _rule(
        "migrated-from-to",
        r"\b(?:moved|migrated|switched|ported|transitioned|changed|converted|went)\s+(?:\w+\s+){0,3}?from\s+"
        + _NAME.format("old")
        + r"\s+(?:over\s+)?to\s+"
        + _NAME.format("new"),
        _names_old,
    ),
    # "replaced Redux with Zustand", "swapped requests for httpx".
    _rule(
        "replaced-with",
        r"\b(?:replaced|swapped|swapped\s+out)\s+"
        + _NAME.format("old")
        + r"\s+(?:with|for|by)\s+"
        + _NAME.format("new"),
        _names_old,
    ),
    # "renamed utils.py to helpers.py", "renamed the `Job` class to `Task`".
    _rule(
        "renamed",
        r"\brenamed\s+(?:the\s+)?(?:\w+\s+){0,2}?"
        + _NAME.format("old")
        + r"\s+(?:to|as|into)\s+"
        + _NAME.format("new"),
        _names_old,
    ),
    # "`fetch_all` is now called `load_all`", "the service is now named billing-api".
    _rule(
        "now-called",
        _NAME.format("old")
        + r"\s+(?:is|was|has\s+been|got)\s+(?:now\s+)?(?:called|named|renamed(?:\s+to)?)\s+"
        + _NAME.format("new"),
        _names_old,
    ),
    # "upgraded to Python 3.12", "bumped fastapi to 0.115", "updated Node from 18 to 20".
    _rule(
        "version-bump",
        r"\b(?:upgraded|updated|bumped|moved|migrated|downgraded|pinned|switched)\s+(?:(?:the|our|my)\s+)?"
        r"(?:(?P<tool>[A-Za-z][\w.+-]*)\s+)?(?:from\s+v?\d+(?:\.\d+)*\s+)?to\s+(?:(?P<tool2>[A-Za-z][\w.+-]*)\s+)?"
        + _VERSION,
        _same_tool_version,
    ),
    # "we're now on Python 3.12", "now running Postgres 16".
    _rule(
        "now-on-version",
        r"\bnow\s+(?:on|running|using|at)\s+(?:version\s+)?(?:(?P<tool>[A-Za-z][\w.+-]*)\s+)?" + _VERSION,
        _same_tool_version,
    ),
)


@functools.lru_cache(maxsize=8192)
def _cues(text: str) -> tuple[tuple[TechRule, re.Match[str]], ...]:
    """Every rule's cue found in `text`, read once per text: recall weighs each of its best hits against each
    other (apply_changes: 30 x 29 pairs), and searching a long message's text again for every pair was most of a
    recall's time on long technical banks (45 ms of 52 in the order step)."""
    return tuple((rule, match) for rule in TECH_RULES for match in rule.pattern.finditer(text))


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
