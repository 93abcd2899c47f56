"""Memory defense: find secrets and personal identifiers before anything is stored.

Runs first in retain, in every mode, so that no raw secret reaches the database, the spool, an
LLM prompt or a log line. Pure Python and regexes, no I/O.

Design notes
------------
* Every rule is a precompiled regex plus, where the shape alone is not enough, a `refine` check
  (Luhn, mod-97, GB 11643, a real birth date, a decodable Discord user id ...). Only
  high-confidence shapes are listed; a secret scanner that cries wolf gets switched off.
* The rules read a normalised view of the text (view.py): NFKC, invisible characters dropped, every
  Unicode space and separator between digit groups folded, fullwidth digits folded; the token rules also read
  a view where a line break inside a token is gone. Each view maps back to the original, and the original
  span is what gets redacted, so a card written with NBSP or dots, or a token with a zero-width space inside,
  leaves nothing readable.
* Token boundaries are ASCII: a key glued to CJK text ("密钥是sk-proj-…谢谢") is still found, but
  nothing matches in the middle of a longer run of ASCII letters and digits. Python's `\\b` is
  Unicode-aware and would treat 是 as a word character, so the rules use explicit look-arounds
  and every regex is compiled with `re.ASCII`.
* Rules overlap (a Stripe key is also a `password=` value). Each rule has a rank; the most specific
  rank wins, then the longest span, so the reported kind is the most informative one and the
  findings never overlap.
* Speed: each rule names cheap "needles" (literal substrings) or a minimum digit count. A rule's
  regex only runs when the text could possibly contain a match, so an ordinary 30-word chat turn
  costs a handful of `in` checks and a few regex searches.
* A `Finding` records the kind and the span, never the secret itself, so findings can be logged.

Layout: this module is the public API (`scan`, `apply_policy`, `redact`) over the combined rule
table. What a rule is lives in `rule`, the validators in `checks`, and the rules
themselves in `credentials` (keys, tokens, credentials) and `personal` (cards,
SSNs, IBANs, e-mail, IDs, phones).
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable, Mapping
from dataclasses import replace
from functools import partial
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from memwrap.defense.credentials import (
    _ASSIGNMENT_RULES,
    _CLOUD_RULES,
    _DEV_PLATFORM_RULES,
    _LLM_VENDOR_RULES,
    _MESSAGING_PAYMENT_RULES,
    _STRUCTURED_RULES,
)
from memwrap.defense.decode import card_view, decoded, markup_view, skeleton_view
from memwrap.defense.personal import _PERSONAL_DATA_RULES
from memwrap.defense.rule import _R_ASSIGN, _R_BLOCK, _R_GENERIC, _Rule, _secret_span
from memwrap.defense.view import View, joined, normalised
from memwrap.errors import SecretBlockedError

__all__ = [
    "ITEM_TEXT_FIELDS",
    "KINDS",
    "DefenseResult",
    "Finding",
    "Policy",
    "apply_policy",
    "defend",
    "map_strings",
    "map_values",
    "redact",
    "redact_item",
    "scan",
]

Policy = Literal["redact", "block", "off"]
_POLICIES: frozenset[str] = frozenset({"redact", "block", "off"})


class Finding(BaseModel):
    """One detected secret: what kind and where. The secret itself is deliberately not kept."""

    model_config = ConfigDict(frozen=True)

    kind: str
    start: int
    end: int


class DefenseResult(BaseModel):
    """The text to store (redacted or untouched), what was found, and whether storing is refused."""

    text: str
    findings: list[Finding]
    blocked: bool


# Every rule, in the order `scan` runs them (on a full tie in rank and length, the earlier rule wins).
_RULES: tuple[_Rule, ...] = (
    _STRUCTURED_RULES
    + _LLM_VENDOR_RULES
    + _CLOUD_RULES
    + _DEV_PLATFORM_RULES
    + _MESSAGING_PAYMENT_RULES
    + _ASSIGNMENT_RULES
    + _PERSONAL_DATA_RULES
)

KINDS: frozenset[str] = frozenset(rule.kind for rule in _RULES)


def _unanchored(rule: _Rule) -> _Rule:
    """The rule without the look-behind that keeps a token from starting inside a longer run: in the joined view
    a token may start right after the end of the line before (which is how it was written), and a match there
    counts only when it crosses a removed line break."""
    pattern = re.sub(r"^\(\?<![^)]*\)", "", rule.regex.pattern, count=1)
    return replace(rule, regex=re.compile(pattern, rule.regex.flags))


# The rules whose matches are single tokens (keys, tokens, JWTs, credentials in URLs): they also read the joined
# view, where a line break inside a token is gone. Key blocks span lines by themselves; the personal-data and
# assignment rules read prose, where a line break is a line break.
_TOKEN_RULES: tuple[_Rule, ...] = tuple(_unanchored(rule) for rule in _RULES if _R_GENERIC <= rule.rank < _R_BLOCK)

# The views of decode.py read with these: the card view with the card rule alone; the skeleton view (homoglyphs)
# with the rules for keys, tokens and labelled secrets; the markup view with the token rules, anchored.
_CARD_RULES: tuple[_Rule, ...] = tuple(rule for rule in _RULES if rule.kind == "credit_card")
_WORD_RULES: tuple[_Rule, ...] = tuple(rule for rule in _RULES if rule.rank >= _R_ASSIGN)
_ANCHORED_TOKEN_RULES: tuple[_Rule, ...] = tuple(rule for rule in _RULES if _R_GENERIC <= rule.rank < _R_BLOCK)

_ASCII_DIGITS = "0123456789"


def _digit_count(text: str) -> int:
    # Ten C-level str.count calls beat a Python loop or a regex findall on short texts.
    return sum(text.count(d) for d in _ASCII_DIGITS)


# --------------------------------------------------------------------------------------------------
# Public API
# --------------------------------------------------------------------------------------------------


def scan(text: str) -> list[Finding]:
    """All secrets in `text`, non-overlapping, in text order, with spans of `text` itself. On overlap the most
    specific kind wins, then the longest span.

    The rules read the normalised view (view.py: NFKC, invisible characters dropped, any separator
    between digit groups), and the token rules also the joined view (a key wrapped over two lines)."""
    if not text:
        return []
    view = normalised(text)
    digits = _digit_count(view.text)
    candidates = _candidates(view, _RULES, digits=digits)
    wrapped = joined(view, text)
    if wrapped is not None:
        # Only what crosses a removed line break is new; the rest the normalised view found already.
        candidates += _candidates(wrapped, _TOKEN_RULES, crossing=True)
    candidates += _encoded_candidates(text, view, digits)
    if not candidates:
        return []
    # Most specific first, then longest, then leftmost; keep what does not overlap a better one.
    # `taken` stays sorted and disjoint, so one bisect finds the only neighbours that could
    # overlap (a log dump can hold thousands of findings; no quadratic pass).
    candidates.sort(key=lambda c: (-c[0], c[1] - c[2], c[1]))
    starts: list[int] = []
    taken: list[tuple[int, int, str]] = []
    for _rank, start, end, kind in candidates:
        at = bisect_right(starts, start)
        if at > 0 and taken[at - 1][1] > start:
            continue  # the finding to the left reaches into this one
        if at < len(taken) and taken[at][0] < end:
            continue  # this one reaches into the finding to the right
        starts.insert(at, start)
        taken.insert(at, (start, end, kind))
    return [Finding(kind=kind, start=start, end=end) for start, end, kind in taken]


def _encoded_candidates(text: str, view: View, digits: int) -> list[tuple[int, int, int, str]]:
    """What the decoded, card, skeleton and markup views (decode.py) find, as spans of the original text."""
    found: list[tuple[int, int, int, str]] = []
    for base in (view, decoded(text)):
        if base is None:
            continue
        if base is not view:
            found += _candidates(base, _RULES)
        cards = card_view(base, digits if base is view else _digit_count(base.text))
        if cards is not None:
            found += _candidates(cards, _CARD_RULES)
    skeleton = skeleton_view(view)
    if skeleton is not None:
        found += _candidates(skeleton, _WORD_RULES)
    markup = markup_view(text)
    if markup is not None:
        found += _candidates(markup, _ANCHORED_TOKEN_RULES, crossing=True)
    return found


def _candidates(
    view: View, rules: tuple[_Rule, ...], *, crossing: bool = False, digits: int | None = None
) -> list[tuple[int, int, int, str]]:
    """(rank, start, end, kind) of every rule match on `view`, as spans of the original text. `crossing`: only
    matches that cross a line break the view removed."""
    text = view.text
    length = len(text)
    lowered = text.lower()
    if digits is None:
        digits = _digit_count(text)
    found: list[tuple[int, int, int, str]] = []
    for rule in rules:
        if length < rule.min_len or digits < rule.min_digits:
            continue
        if rule.needles:
            haystack = lowered if rule.folded else text
            if not any(needle in haystack for needle in rule.needles):
                continue
        position = 0
        while (match := rule.regex.search(text, position)) is not None:
            position = match.end() if match.end() > match.start() else match.start() + 1
            start, end = _secret_span(match)
            span = (start, end) if rule.refine is None else rule.refine(text, start, end)
            if span is None or span[1] <= span[0]:
                # Rejected: a shorter match may start inside it ("doc 22 4443 4929 1750 6780": not a card from
                # "22", a card from "4443"), so look again from the next character.
                position = match.start() + 1
                continue
            if crossing:
                at = bisect_right(view.joins, span[0])
                if at == len(view.joins) or view.joins[at] >= span[1]:
                    continue
            start, end = view.original(*span)
            found.append((rule.rank, start, end, rule.kind))
    return found


def apply_policy(text: str, policy: Policy = "redact") -> DefenseResult:
    """Apply a bank's memory-defense policy to one piece of text.

    redact: each finding is replaced by "[REDACTED:kind]"; findings keep the original offsets.
    block:  text unchanged; blocked=True when anything was found (the caller refuses to store).
    off:    text unchanged, nothing scanned.
    """
    if policy not in _POLICIES:
        raise ValueError(f"unknown memory-defense policy {policy!r}; use 'redact', 'block' or 'off'")
    if policy == "off":
        return DefenseResult(text=text, findings=[], blocked=False)
    findings = scan(text)
    if policy == "block":
        return DefenseResult(text=text, findings=findings, blocked=bool(findings))
    if not findings:
        return DefenseResult(text=text, findings=[], blocked=False)
    pieces: list[str] = []
    cursor = 0
    for finding in findings:
        pieces.append(text[cursor : finding.start])
        pieces.append(f"[REDACTED:{finding.kind}]")
        cursor = finding.end
    pieces.append(text[cursor:])
    return DefenseResult(text="".join(pieces), findings=findings, blocked=False)


def redact(text: str) -> str:
    """`text` with every secret replaced by "[REDACTED:kind]"; safe to use on log lines."""
    return apply_policy(text, "redact").text


# The string fields of a retain item, besides tags and metadata: everything of an item that gets stored.
ITEM_TEXT_FIELDS = ("content", "context", "document_id")


def map_strings(value: Any, change: Callable[[str], str]) -> Any:
    """`value` (a JSON-like structure) with `change` applied to every string in it, mapping keys included."""
    if isinstance(value, str):
        return change(value)
    if isinstance(value, Mapping):
        return {(change(k) if isinstance(k, str) else k): map_strings(v, change) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [map_strings(v, change) for v in value]
    return value


# A number this large may be a card, an account or an ID number written as a JSON number ({"card":
# 4111111111111111}): it is scanned as the digits it is written with. Smaller ones (ages, counts, prices, years,
# timestamps in seconds: under 10**8 is before 1973) hold nothing the rules look for.
_SCANNED_NUMBER = 10**8


def map_values(value: Any, change: Callable[[str], str]) -> Any:
    """`value` (a JSON-like structure) with `change` applied to every string in it, mapping keys included, and to
    every large number as its digits: a number `change` alters becomes the string it returns (a redacted card
    number is no number any more)."""
    if isinstance(value, str):
        return change(value)
    if isinstance(value, (int, float)) and not isinstance(value, bool) and abs(value) >= _SCANNED_NUMBER:
        written = str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)
        changed = change(written)
        return value if changed == written else changed
    if isinstance(value, Mapping):
        return {(change(k) if isinstance(k, str) else k): map_values(v, change) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [map_values(v, change) for v in value]
    return value


def redact_item(item: Mapping[str, Any]) -> dict[str, Any]:
    """A retain item (as a plain dict) with every secret redacted in every field that would be stored:
    content, context, document_id, tags and metadata (keys and values, at any depth). For copies of items
    that are written somewhere before the engine sees them (the wrappers' on-disk spool)."""
    out = dict(item)
    for key in ITEM_TEXT_FIELDS:
        if isinstance(out.get(key), str):
            out[key] = redact(out[key])
    for key in ("tags", "metadata"):
        if out.get(key):
            out[key] = map_values(out[key], redact)
    return out


def defend(fields: Mapping[str, Any], policy: str) -> dict[str, Any]:
    """`fields` (name -> a string or a JSON-like value) with the memory-defense `policy` applied to every string
    in them, mapping keys included, and to every large number (map_values): what every writer runs on what a
    person or an agent wrote before storing it (retain items, update, invalidation reasons, mental models, bank
    directives).

    Raises SecretBlockedError under 'block', naming the kinds and the fields (never the secret)."""
    kinds: dict[str, set[str]] = {}

    def one(text: str, where: str) -> str:
        result = apply_policy(text, policy)  # type: ignore[arg-type]  # a DefensePolicy, checked by callers
        if result.findings:
            kinds.setdefault(where, set()).update(f.kind for f in result.findings)
        return result.text

    out = {name: map_values(value, partial(one, where=name)) for name, value in fields.items()}
    if policy == "block" and kinds:
        found = "; ".join(f"{where}: {', '.join(sorted(k))}" for where, k in sorted(kinds.items()))
        raise SecretBlockedError(
            f"Not stored: the request holds what looks like a secret ({found}) and this bank's memory-defense "
            "policy is 'block'. Remove it, or set the policy to 'redact'."
        )
    return out
