"""What a rule is: a regex, a resolver that turns its match into days, and a gate."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date

from memwrap.engine.recall.timeparse._calendar import _Period

_Resolver = Callable[[re.Match[str], date | None], _Period | None]


@dataclass(frozen=True, slots=True)
class _Rule:
    """One kind of expression: where it can be, and how it turns into days.

    `gate` is what the text must contain for the regex to be worth running at all: lower-case words
    for English rules (the pseudo-word _YEARISH_WORD for "has a 19xx/20xx number"), substrings for
    Chinese ones. Retain scans every turn, and most turns contain no date: the gates make those cheap.
    """

    pattern: re.Pattern[str]
    resolve: _Resolver
    gate: frozenset[str]
    chinese: bool = False
    vague: bool = False  # "recently": used only when nothing precise is there
