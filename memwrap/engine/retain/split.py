"""Split retained text into memory units of bounded size.

A chat turn usually fits in one unit and is kept whole. Longer text (pasted documents, transcripts) is
cut at sentence boundaries and the sentences are packed greedily, so each unit reads as coherent prose.
Units are slices of the whitespace-normalised input: no non-whitespace character is lost or reordered.

Fenced code (``` or ~~~) is cut only between lines: a period inside a line of code ("obj.save(). Then")
ends no sentence, and a line of code is never split unless that one line is longer than a unit. Where a
window holds code, a unit prefers to end where a block ends or starts (a fence, a blank line) when that
still fills a third of it: the explanation and its code snippet stay apart rather than cut mid-snippet.
"""

from __future__ import annotations

import re
import unicodedata

# Runs of whitespace that contain a line break: kept as one newline, or a blank line for paragraphs.
# The lookbehind and possessive quantifier make a long run of spaces without a newline cost linear
# time; plain `[^\S\n]*\n` would retry from every space in the run.
_LINE_BREAK_RE = re.compile(r"(?<![^\S\n])[^\S\n]*+\n\s*")
_HSPACE_RE = re.compile(r"[^\S\n]+")

# Sentence enders. CJK and full-width enders end a sentence on their own (Chinese puts no space after
# them); Latin ones only when followed by whitespace or the end, which protects "3.5", "a.m." inside a
# word and URLs. Closing quotes and brackets stay with the sentence they close. Each alternative
# starts only at the beginning of a run of enders and never backtracks into it, so "!!!!…x" is linear.
_CLOSERS = "\"'”’»)\\]」』】）〕》〉"
_BOUNDARY_RE = re.compile(
    rf"(?P<cjk>(?<![。！？；｡．!?])[!?]*+[。！？；｡．][。！？；｡．!?]*+[{_CLOSERS}]*+)"
    rf"|(?P<latin>(?<![.!?…])[.!?…]++[{_CLOSERS}]*+)(?=\s|\Z|[\u3400-\u9fff])"
    r"|(?P<newline>\n)"
)

# Words that end with a period without ending the sentence. Titles precede a name, and "e.g."-style
# abbreviations run on mid-sentence, so neither ever ends one.
_NEVER_FINAL = frozenset(
    "mr mrs ms mx dr prof sr jr st mt ft gen col capt lt sgt rev hon pres gov sen rep "
    "e.g eg i.e ie cf vs viz al approx dept est fig nos vol pp ca".split()
)
# These often end a sentence too ("…and so on, etc."); they end one only if a capital letter follows
# ("No. 5" and "a.m. tomorrow" run on).
_MAYBE_FINAL = frozenset(
    "no etc inc ltd co corp llc bros a.m p.m am pm u.s u.k u.n e.u "
    "jan feb mar apr jun jul aug sep sept oct nov dec".split()
)
_DOTTED_ACRONYM_RE = re.compile(r"(?:[A-Za-z]\.)+[A-Za-z]")
# How far back we look for the word before a period; longer "words" are never abbreviations.
_ABBREVIATION_WINDOW = 12

# A fence line of Markdown code: ``` or ~~~, with a language name or nothing after it.
_FENCE_RE = re.compile(r"^ ?(?:```|~~~)[^\n]*$", re.MULTILINE)
# Where a window holds code, a block boundary (a fence, a blank line) wins over a later line boundary when the
# unit it ends fills at least this share of max_chars.
_BLOCK_SHARE = 3

# Characters that must not start a hard-cut piece (combining marks are detected by unicodedata).
_JOINERS = frozenset("\u200d\ufe0e\ufe0f")


def split_units(text: str, max_chars: int = 1000) -> list[str]:
    """Split text into units of at most max_chars characters, preferring sentence boundaries.

    Whitespace is normalised first (spaces collapsed, line breaks and paragraph breaks kept) and a text
    that then fits is returned whole. Otherwise sentences are packed greedily; a sentence longer than
    max_chars is cut at the last space that fits, or at max_chars when there is none (e.g. Chinese).
    Never returns empty strings; an empty or all-whitespace text gives [].
    """
    if max_chars < 1:
        raise ValueError(f"max_chars must be at least 1, got {max_chars}")
    text = _normalise(text)
    units: list[str] = []
    pos, length = 0, len(text)
    code = code_spans(text) if length > max_chars else []
    while pos < length:
        if length - pos <= max_chars:
            units.append(text[pos:])
            break
        spans = [(a, b) for a, b in code if a < pos + max_chars and b > pos]
        end, pos_next = _code_unit_end(text, pos, max_chars, spans) if spans else _unit_end(text, pos, max_chars)
        units.append(text[pos:end])
        pos = pos_next
    return units


def _normalise(text: str) -> str:
    # Readable rather than flat: line structure carries meaning in lists, code and transcripts.
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = _LINE_BREAK_RE.sub(_line_break, text)
    return _HSPACE_RE.sub(" ", text).strip()


def _line_break(match: re.Match[str]) -> str:
    return "\n\n" if match.group().count("\n") > 1 else "\n"


def _unit_end(text: str, pos: int, max_chars: int) -> tuple[int, int]:
    """End of the unit starting at pos, and where the next unit starts.

    Greedy packing of sentences is the same as ending the unit at the last sentence boundary that
    fits, so we only judge candidates from the end of the window backwards: usually the first one
    qualifies, and a megabyte of short sentences costs one regex scan rather than a Python call each.
    """
    limit = pos + max_chars
    # endpos one past the limit lets an ender at the limit see its next character; a match that
    # reaches beyond the limit is then discarded below, so the artificial end of string never counts.
    candidates = list(_BOUNDARY_RE.finditer(text, pos, limit + 1))
    for match in reversed(candidates):
        end = _boundary(text, match)
        if end is not None and pos < end <= limit:
            return _trim_end(text, pos, end), _skip_whitespace(text, end)
    return _cut_point(text, pos, max_chars)


def code_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each fenced code block, fences included; an unclosed fence runs to the end."""
    fences = [m.span() for m in _FENCE_RE.finditer(text)]
    spans = []
    for opening, closing in zip(fences[::2], [*fences[1::2], (len(text), len(text))], strict=False):
        spans.append((opening[0], closing[1]))
    return spans


def _code_unit_end(text: str, pos: int, max_chars: int, spans: list[tuple[int, int]]) -> tuple[int, int]:
    """_unit_end for a window that holds code: inside a code block only a line break ends a unit; a block
    boundary (a fence's edge, a blank line outside code) is preferred when it fills a third of the unit."""
    limit = pos + max_chars

    def inside(at: int) -> bool:  # strictly within a block: its edges are block boundaries
        return any(a < at < b for a, b in spans)

    blocks = {a for a, _b in spans if pos < a <= limit} | {b for _a, b in spans if pos < b <= limit}
    lines: list[int] = []
    for match in _BOUNDARY_RE.finditer(text, pos, limit + 1):
        end = _boundary(text, match)
        if end is None or not pos < end <= limit:
            continue
        if match.lastgroup != "newline" and inside(end):
            continue  # a period or "?" inside a line of code ends nothing
        lines.append(end)
        if match.lastgroup == "newline" and text.startswith("\n\n", end) and not inside(end):
            blocks.add(end)  # a paragraph break in prose
    enough = pos + max(1, max_chars // _BLOCK_SHARE)
    for choice in (max((b for b in blocks if b >= enough), default=None), max(lines, default=None)):
        if choice is not None:
            cut = _trim_end(text, pos, choice)
            if cut > pos:
                return cut, _skip_whitespace(text, choice)
    return _cut_point(text, pos, max_chars)


def _boundary(text: str, match: re.Match[str]) -> int | None:
    """Position where the sentence ends for this candidate, or None if it does not end one."""
    if match.lastgroup == "newline":
        return match.start()
    if match.lastgroup == "cjk" or _ends_sentence(text, match):
        return match.end()
    return None


def _skip_whitespace(text: str, pos: int) -> int:
    # Normalised text has at most a space or two newlines between sentences, so this loop is short.
    while pos < len(text) and text[pos].isspace():
        pos += 1
    return pos


def _trim_end(text: str, start: int, end: int) -> int:
    # A paragraph break's second newline is a boundary whose first newline would end the unit.
    while end > start and text[end - 1].isspace():
        end -= 1
    return end


def _ends_sentence(text: str, match: re.Match[str]) -> bool:
    """Decide whether a Latin ender followed by whitespace really ends the sentence."""
    ender = match.group().rstrip(_CLOSERS)
    following = _next_char(text, match.end())
    if ender != "." and ender != "…" and ender != "...":
        return True  # "!" and "?" always end a sentence
    if ender != ".":
        return not following.islower()  # an ellipsis followed by lowercase is a pause, not an end
    word = _word_before(text, match.start())
    lowered = word.lower()
    if lowered in _NEVER_FINAL or (len(word) == 1 and word.isupper() and word != "I"):
        return False  # titles, "e.g.", and initials as in "J. K. Rowling"
    if lowered in _MAYBE_FINAL or _DOTTED_ACRONYM_RE.fullmatch(word):
        return following.isupper() or not following
    if word.isdigit() and len(word) <= 3 and _starts_line(text, match.start() - len(word)):
        return False  # a numbered list item: "1. Buy milk"
    return True


def _word_before(text: str, end: int) -> str:
    # Bounded look-back keeps this O(1) per candidate even in a megabyte with no spaces.
    window = text[max(0, end - _ABBREVIATION_WINDOW) : end]
    cut = max(window.rfind(" "), window.rfind("\n"))
    if cut < 0 and end > _ABBREVIATION_WINDOW:
        return ""  # the word is longer than any abbreviation
    return window[cut + 1 :].lstrip("\"'“‘([")


def _next_char(text: str, pos: int) -> str:
    following = text[pos : pos + 4].lstrip()
    return following[:1]


def _starts_line(text: str, pos: int) -> bool:
    return pos == 0 or text[pos - 1] == "\n"


def _cut_point(text: str, start: int, max_chars: int) -> tuple[int, int]:
    """Where to end a piece of an overlong sentence, and where the next piece starts."""
    limit = start + max_chars
    space = text.rfind(" ", start + 1, limit + 1)  # a space at `limit` still leaves max_chars before it
    if space > start:
        return space, space + 1
    # No space (Chinese, a long URL): cut at max_chars, but never between a character and its
    # combining mark or inside an emoji ZWJ sequence, unless the whole piece is such a cluster.
    cut = limit
    while cut > start + 1 and _inside_cluster(text, cut):
        cut -= 1
    return cut, cut


def _inside_cluster(text: str, pos: int) -> bool:
    """True if cutting before text[pos] would split a visible character (accent, ZWJ emoji, variant)."""
    return text[pos] in _JOINERS or text[pos - 1] == "\u200d" or unicodedata.combining(text[pos]) != 0
