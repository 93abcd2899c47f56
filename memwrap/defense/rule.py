"""Memory defense, rule machinery: what a rule is, how rules rank, and the regex building blocks.

The rule tables (`credentials`, `personal`) are built from these pieces; `policy.scan`
runs them. See `policy` for the design notes.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

# --------------------------------------------------------------------------------------------------
# Rule machinery
# --------------------------------------------------------------------------------------------------

# A refiner gets the whole text and a candidate span and returns the final span, or None to reject.
Refiner = Callable[[str, int, int], tuple[int, int] | None]

# Ranks: on overlap the higher rank wins (then the longer span).
_R_BLOCK = 100  # multi-line key material: always the outermost finding
_R_VENDOR = 90  # vendor tokens with a distinctive prefix or structure
_R_LABELLED = 80  # vendor secrets recognised by their label (aws_secret_access_key = ...)
_R_STRUCT = 75  # JWTs, URLs with credentials
_R_GENERIC = 70  # generic sk-..., Authorization headers
_R_ASSIGN = 60  # password=..., api_key: "..."
_R_CN_ID = 55  # checksum + birth date + region: more specific than a card number
_R_CHECKSUM = 50  # numbers that pass a checksum: cards, IBANs
_R_PII = 40  # SSN, e-mail
_R_CN_MOBILE = 35
_R_PHONE = 30


@dataclass(frozen=True, slots=True)
class _Rule:
    kind: str
    regex: re.Pattern[str]
    rank: int
    # Pre-check. If needles are given, at least one must occur in the text (in the lower-cased text
    # when `folded`), otherwise the regex cannot match and is skipped.
    needles: tuple[str, ...] = ()
    folded: bool = False
    min_digits: int = 0  # skip unless the text holds at least this many ASCII digits
    min_len: int = 0  # skip unless the text is at least this long
    refine: Refiner | None = None


def _rx(pattern: str, *, ignore_case: bool = False) -> re.Pattern[str]:
    flags = re.ASCII | (re.IGNORECASE if ignore_case else 0)
    return re.compile(pattern, flags)


# ASCII token boundaries. A token may follow CJK, punctuation, whitespace or '_' (FOO_KEY_ghp_...
# is rare, but an env-var dump glued with '=' or ':' is common), but never an ASCII letter/digit.
_B = r"(?<![A-Za-z0-9])"
_E = r"(?![A-Za-z0-9])"
_E_URLSAFE = r"(?![A-Za-z0-9_-])"  # for base64url alphabets, so a longer run is not cut short
_E_B64 = r"(?![A-Za-z0-9+/=])"  # for standard base64 alphabets

# Label/value glue for `name = value`, `"name": "value"`, `name: value`, `name => value`.
_ASSIGN = r"""["']?\s*(?:=>|:=|[:=])\s*"""

# The value part of a labelled assignment: double-quoted (may hold an apostrophe), single-quoted,
# or bare. Three group names because Python's `re` does not allow a name twice; `_secret_span`
# takes whichever one participated.
_QUOTED_OR_BARE = (
    r"""(?:"(?P<secret>[^"\r\n]{4,256})"|'(?P<single>[^'\r\n]{4,256})'"""
    r"""|(?P<bare>[^\s"',;&<>()\[\]{}]{4,256}))"""
)


def _secret_span(match: re.Match[str]) -> tuple[int, int]:
    """The span to redact: the `secret` / `single` / `bare` group when the rule has one, else the match."""
    groups = match.re.groupindex
    for name in ("secret", "single", "bare"):
        if name in groups and match.group(name) is not None:
            return match.span(name)
    return match.span()


def _accept_if(predicate: Callable[[str], bool]) -> Refiner:
    """Lift a predicate on the candidate string to a refiner that keeps or drops the span."""

    def refine(text: str, start: int, end: int) -> tuple[int, int] | None:
        return (start, end) if predicate(text[start:end]) else None

    return refine
