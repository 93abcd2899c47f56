"""Memory defense: find secrets and personal identifiers before anything is stored.

Runs first in retain, in every mode, so that no raw secret reaches the database, the spool, an
LLM prompt or a log line. Pure Python and regexes, no I/O.

Design notes
------------
* Every rule is a precompiled regex plus, where the shape alone is not enough, a `refine` check
  (Luhn, mod-97, GB 11643, a real birth date, a decodable Discord user id ...). Only
  high-confidence shapes are listed; a secret scanner that cries wolf gets switched off.
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
table. What a rule is lives in `defense_rule`, the validators in `defense_checks`, and the rules
themselves in `defense_credentials` (keys, tokens, credentials) and `defense_personal` (cards,
SSNs, IBANs, e-mail, IDs, phones).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from memwrap.engine.retain.defense_credentials import (
    _ASSIGNMENT_RULES,
    _CLOUD_RULES,
    _DEV_PLATFORM_RULES,
    _LLM_VENDOR_RULES,
    _MESSAGING_PAYMENT_RULES,
    _STRUCTURED_RULES,
)
from memwrap.engine.retain.defense_personal import _PERSONAL_DATA_RULES
from memwrap.engine.retain.defense_rule import _Rule, _secret_span

__all__ = ["ITEM_TEXT_FIELDS", "KINDS", "DefenseResult", "Finding", "Policy", "apply_policy", "map_strings", "redact",
           "redact_item", "scan"]

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

_ASCII_DIGITS = "0123456789"


def _digit_count(text: str) -> int:
    # Ten C-level str.count calls beat a Python loop or a regex findall on short texts.
    return sum(text.count(d) for d in _ASCII_DIGITS)


# --------------------------------------------------------------------------------------------------
# Public API
# --------------------------------------------------------------------------------------------------


def scan(text: str) -> list[Finding]:
    """All secrets in `text`, non-overlapping, in text order. On overlap the most specific kind
    wins, then the longest span."""
    if not text:
        return []
    length = len(text)
    lowered = text.lower()
    digits = _digit_count(text)
    candidates: list[tuple[int, int, int, str]] = []  # (rank, start, end, kind)
    for rule in _RULES:
        if length < rule.min_len or digits < rule.min_digits:
            continue
        if rule.needles:
            haystack = lowered if rule.folded else text
            if not any(needle in haystack for needle in rule.needles):
                continue
        for match in rule.regex.finditer(text):
            span: tuple[int, int] | None = _secret_span(match)
            if rule.refine is not None:
                span = rule.refine(text, *span)
            if span is not None and span[1] > span[0]:
                candidates.append((rule.rank, span[0], span[1], rule.kind))
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
            out[key] = map_strings(out[key], redact)
    return out
