"""Memory defense, the views the rules read: the text as a reader sees it, each character mapped to the original.

People and input methods write secrets in ways an ASCII rule does not see: a card number with tabs, NBSP,
thin or ideographic spaces, dots or mixed separators between its groups, fullwidth digits (what Chinese input
methods type), a token with a zero-width space inside, a key wrapped over two lines. The rules run on views:

* the normalised view: per character, NFKC (fullwidth and mathematical letters and digits, fullwidth
  punctuation), every decimal digit folded to ASCII, accents dropped from Latin letters, every dash to '-',
  middle dots and ideographic full stops to '.', invisible characters (zero-width and format characters,
  combining marks, fillers such as U+3164, U+2800) dropped, every Unicode space to ' ' and line break to '\\n';
  then every run of whitespace becomes one ' ' (one '\\n' when it holds a line break), and between two digits a
  run of separators becomes one: kept when it is a single '-' or '.', else ' ' (so "4111\\t1111 - 1111" reads
  "4111 1111 1111").
* the joined view: the normalised view with a line break between two token characters removed, for the rules
  whose matches are tokens (a key wrapped over two lines). `View.joins` says where a break was removed.

Every character of a view knows the span of the original it came from (`View.original`), so a finding on a
view redacts the original span, invisible characters inside it included: nothing readable is left.

Cost: ASCII text with single spaces and newlines (most chat turns) is its own view; only text that needs
changing pays for the map (C-level slices, plus a cached fold per distinct non-ASCII character).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field

from memwrap.invisible import INVISIBLE_RANGES

_INVISIBLE = frozenset(code for low, high in INVISIBLE_RANGES for code in range(low, high + 1))
_LINE_BREAKS = frozenset("\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029")
_MIDDLE_DOTS = frozenset("\u00b7\u2027\u2219\u22c5\u30fb\uff65")
_MINUS_SIGNS = frozenset("\u2212\u2796\ufe63\uff0d")
# Ideographic full stops (and their halfwidth and vertical forms, which NFKC leaves as "。"): a Chinese or Japanese
# input method types them where a domain or a version wants '.' ("user＠mail。com").
_FULL_STOPS = frozenset("\u3002\uff61\ufe12")


def _fold(char: str) -> str:
    """What one non-ASCII character reads as, for the rules (which are ASCII): '' when it is invisible."""
    code = ord(char)
    category = unicodedata.category(char)
    if code in _INVISIBLE or category in ("Cf", "Mn", "Me", "Cc"):
        return "\n" if char in _LINE_BREAKS else ""
    if char.isspace():
        return "\n" if char in _LINE_BREAKS else " "
    if category == "Pd" or char in _MINUS_SIGNS:
        return "-"
    if char in _MIDDLE_DOTS or char in _FULL_STOPS:
        return "."
    if category == "Nd":
        return str(unicodedata.decimal(char))
    compat = unicodedata.normalize("NFKC", char)
    if compat.isascii():
        return compat
    bare = "".join(c for c in unicodedata.normalize("NFKD", char) if not unicodedata.combining(c))
    if bare and bare.isascii():
        return bare  # a Latin letter with accents: "é" reads "e"
    return compat


class _FoldCache(dict[str, str]):
    def __missing__(self, char: str) -> str:
        folded = self[char] = _fold(char)
        return folded


_FOLDED = _FoldCache()
_NON_ASCII = re.compile(r"[^\x00-\x7f]+")
# What the whitespace and digit-separator step changes (anything else in ASCII text is left as it is):
# between two digits a run of separators or one line break; elsewhere a run of whitespace, or one
# tab / carriage return / form feed / vertical tab.
_RUNS = re.compile(r"(?<=[0-9])(?:[\s.\-]{2,}|\n)(?=[0-9])|\s{2,}|[\t\r\f\v]", re.ASCII)
# A line break between two characters a token or a URL may hold: a key wrapped over two lines, "https:" at a
# line's end. (Between two digits the normalised view wrote it as ' ', as for any separator of digit groups:
# `joined` looks at what it was.)
_TOKEN_CHAR = r"[A-Za-z0-9_+/=.:@?&%#~!$*,;\-]"  # what keys, tokens and URLs (their passwords too) are made of
_WRAP = re.compile(rf"(?<={_TOKEN_CHAR})\n(?={_TOKEN_CHAR})|(?<=[0-9]) (?=[0-9])")
_BREAK_CHARS = re.compile("[\n\r\v\f\x1c-\x1e\x85\u2028\u2029]")


@dataclass(frozen=True, slots=True)
class View:
    """A view of the original text; `starts`/`ends` give each view character's original span (None: the same)."""

    text: str
    starts: list[int] | None = None
    ends: list[int] | None = None
    joins: list[int] = field(default_factory=list)  # view offsets where a line break was removed

    def original(self, start: int, end: int) -> tuple[int, int]:
        """The span of the original text that the view's [start, end) came from."""
        if self.starts is None or self.ends is None:
            return start, end
        return self.starts[start], self.ends[end - 1]


# A piece of a substitution: the view span it replaces, the replacement, and for each replacement character the
# view span it came from (None: every character comes from the whole span).
Piece = tuple[int, int, str, list[tuple[int, int]] | None]


def substituted(view: View, pieces: list[Piece]) -> View:
    """`view` with each piece (sorted, disjoint) substituted; the map composed down to the original."""
    if not pieces:
        return view
    text, old_starts, old_ends = view.text, view.starts, view.ends

    def first(index: int) -> int:
        return index if old_starts is None else old_starts[index]

    def last(end: int) -> int:
        return end if old_ends is None else old_ends[end - 1]

    out: list[str] = []
    starts: list[int] = []
    ends: list[int] = []

    def keep(start: int, end: int) -> None:
        if start >= end:
            return
        out.append(text[start:end])
        if old_starts is None or old_ends is None:
            starts.extend(range(start, end))
            ends.extend(range(start + 1, end + 1))
        else:
            starts.extend(old_starts[start:end])
            ends.extend(old_ends[start:end])

    cursor = 0
    for start, end, replacement, spans in pieces:
        keep(cursor, start)
        out.append(replacement)
        if spans is None:
            starts.extend([first(start)] * len(replacement))
            ends.extend([last(end)] * len(replacement))
        else:
            for a, b in spans:
                starts.append(first(a))
                ends.append(last(b))
        cursor = end
    keep(cursor, len(text))
    return View("".join(out), starts, ends)


def edited(view: View, edits: list[tuple[int, int, str]]) -> View:
    """`view` with each (start, end, replacement) applied (sorted, disjoint): every replacement character comes
    from the whole span it replaces."""
    return substituted(view, [(start, end, replacement, None) for start, end, replacement in edits])


def normalised(text: str) -> View:
    """The normalised view of `text` (see the module docstring)."""
    view = View(text)
    if not text.isascii():
        folds = []
        for run in _NON_ASCII.finditer(text):
            for index in range(run.start(), run.end()):
                folded = _FOLDED[text[index]]
                if folded != text[index]:
                    folds.append((index, index + 1, folded))
        view = edited(view, folds)
    runs = []
    for run in _RUNS.finditer(view.text):
        value = run.group()
        between_digits = run.start() > 0 and view.text[run.start() - 1].isdigit()
        if between_digits and run.end() < len(view.text) and view.text[run.end()].isdigit():
            replacement = " "
        elif any(c in "\n\r\v\f" for c in value):
            replacement = "\n"
        else:
            replacement = " "
        if replacement != value:
            runs.append((run.start(), run.end(), replacement))
    return edited(view, runs)


def joined(view: View, original: str) -> View | None:
    """`view` (of `original`) with the line breaks inside what could be one token removed; None when there are
    none."""
    if "\n" not in view.text and (view.starts is None or not _BREAK_CHARS.search(original)):
        return None
    breaks = []
    for match in _WRAP.finditer(view.text):
        if match.group() == " " and not _BREAK_CHARS.search(original, *view.original(match.start(), match.end())):
            continue  # a space between digit groups, not a line break
        breaks.append((match.start(), match.end(), ""))
    if not breaks:
        return None
    out = edited(view, breaks)
    # Offsets in the joined text where a break was: the k-th removed break sits before its start minus k.
    return View(out.text, out.starts, out.ends, [start - k for k, (start, _, _) in enumerate(breaks)])
