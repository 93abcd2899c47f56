"""The fence around a memory block, and what keeps memory text from forging it.

A block is `<memwrap_memories>` … `</memwrap_memories>`, and what is between the tags is data, never
instructions. A memory is whatever someone once said, so its text could carry a close tag followed by
"SYSTEM OVERRIDE: …" and end the fence early. `neutralise` rewrites anything in memory text that a reader
(human or model) could take for one of the tags, and it is applied to every memory line the renderer writes
(engine/recall/pack.py; block/format.py writes the frame), so the rendered block holds exactly one open and one
close tag: its own.

"Could take for" is matched by skeleton, per letter of the tag's name: each letter is a class of every
character that reads as it (fence_classes.py, generated from Unicode's confusables (UTS #39), compatibility
decompositions and character names by fence_generate.py): Cyrillic о and м, Greek ρ and ε, small capitals,
fullwidth and mathematical letters, circled and squared letters, 0 and 1 for o and i, "rn" for m, "vv" for w,
the letter spelled as a Unicode tag character (U+E0000 block). Between the letters may sit any "gap":
whitespace, invisible characters (zero-width, format characters, combining marks, fillers such as U+3164,
U+115F, U+FFA0, U+2800), every dash and connector (for the underscore, or none: `mem_wrap`), dots.

A `<` (or a look-alike) before the tag's first word is a tag whatever follows it (`</memwrap‗memories>`,
`</memwrap>`): the prefix and the rest of the tag up to its '>' are replaced. Every horizontal stroke is a gap
(‗ ˍ ▁ ⎽ ⎯ ー ｰ ...), and HTML comments are read through (`</memwrap<!-- x -->_memories>`).

Invisible characters and tag characters are also stripped from the memory text the block shows: what a model
may read but a person cannot see has no place in it (the joiners and variation selectors of emoji and of
non-Latin scripts stay where they join non-ASCII characters).

Cost: most lines are ASCII; they are checked with a few C-level string passes (lower, translate, `in`), and
only a line that spells the name goes through the regex. Other lines run the compiled regex once.
"""

from __future__ import annotations

import functools
import re

from memwrap.block.fence_classes import CLASSES, GAP
from memwrap.invisible import INVISIBLE_RANGES

OPEN_TAG = "<memwrap_memories>"
CLOSE_TAG = "</memwrap_memories>"
# What a forged tag becomes: no angle brackets and not the tag's name, so nothing reads it as the fence.
REPLACEMENT = "[memory fence removed]"
NAME = "memwrapmemories"


def _letter(letter: str) -> str:
    one = f"[{CLASSES[letter]}]"
    if letter == "m":  # "rn" reads as m
        return f"(?:{one}|[{CLASSES['r']}][{GAP}]*?[{CLASSES['n']}])"
    if letter == "w":  # and "vv" as w
        return f"(?:{one}|[{CLASSES['v']}][{GAP}]*?[{CLASSES['v']}])"
    return one


# Stripped from the block's memory text: every invisible character, except the joiners and emoji variation
# selectors where they do their job between non-Latin characters (👩‍💻, ❤️, Persian and Indic text).
_JOINERS = "\u200c\u200d\ufe0e\ufe0f"
_HIDDEN = re.compile(
    "["
    + "".join(
        re.escape(chr(c))
        for a, b in INVISIBLE_RANGES
        for c in range(a, b + 1)
        if chr(c) not in _JOINERS and not 0xE0000 <= c <= 0xE0FFF
    )
    + "\U000e0000-\U000e0fff]"
    "|(?<![^\\x00-\\x7f])[\ufe0e\ufe0f]|(?<![^\\x00-\\x7f])[\u200c\u200d]|[\u200c\u200d](?![^\\x00-\\x7f])"
)
# Lazy gaps: a character may be both a gap and a letter (a tag character, say), and the name ends at its first
# possible last letter, not at an "s" further on.
_NAME_RX = re.compile(f"[{GAP}]*?".join(_letter(c) for c in NAME))
# `<memwrap`, `</memwrap` (look-alikes too) with anything after it: a reader takes `</memwrap‗memories>` or
# `</memwrap>` for the fence whatever the separator, so the prefix alone is a tag.
_PREFIX_RX = re.compile(
    f"[{CLASSES['<']}][{GAP}]*?(?:[{CLASSES['/']}][{GAP}]*?)?" + f"[{GAP}]*?".join(_letter(c) for c in "memwrap")
)
# What follows the prefix up to the tag's end: the rest of a name and a '>' (look-alike too) on the same line.
_PREFIX_REST = re.compile(f"[^\\s{CLASSES['<']}{CLASSES['>']}]{{0,48}}(?:[{GAP}]*?[{CLASSES['>']}])?")
# An HTML comment is invisible where markup is rendered: `</memwrap<!-- x -->_memories>` reads as the tag.
_COMMENT = re.compile(r"<!--.*?-->", re.S)
_GAP_CHAR = re.compile(f"[{GAP}]")
_LESS = re.compile(f"[{CLASSES['<']}]")
_GREATER = re.compile(f"[{CLASSES['>']}]")
_SLASH = re.compile(f"[{CLASSES['/']}]")

# ASCII lines: fold the letter variants (0 for o, 1 for i ...), drop what may sit between letters, then look
# for the name's first word. Equivalent to the classes on ASCII text, so no ASCII forgery gets past it.
# (bytes.translate: a 256-byte table in C, several times faster than str.translate with deletions.)
_ASCII_FOLD = bytes.maketrans(b"01|!l345@$", b"oiiiieasas")
_ASCII_GAP = b" \t\n\r\f\v\x1c\x1d\x1e\x1f_-.:*~+"


@functools.cache
def _hidden_candidates() -> frozenset[str]:
    """What _HIDDEN may remove (every match lies in INVISIBLE_RANGES): a text holding none of these is left as it is,
    after a set test instead of the regex's scan. Built on first use (4 ms), not at import."""
    return frozenset(chr(c) for a, b in INVISIBLE_RANGES for c in range(a, b + 1))


# Other text: the same fold for every character the classes name. A gap is dropped, a letter becomes the letter it
# reads as; a character that reads as two letters, or as a letter and a gap, becomes AMBIGUOUS, and a text holding
# one goes to the regex. Any other character stays as it is and, like in the regex, breaks the name.
AMBIGUOUS = "\x00"
_CLASS_ITEM = re.compile(r"\\x[0-9a-fA-F]{2}|\\u[0-9a-fA-F]{4}|\\U[0-9a-fA-F]{8}|\\.|.")


def _class_chars(body: str) -> set[str]:
    """The characters of a regex class body as fence_classes.py writes them (escapes, literals, a-b ranges)."""
    items = _CLASS_ITEM.findall(body)
    chars = [item.encode().decode("unicode_escape") if item.startswith("\\") else item for item in items]
    out: set[str] = set()
    i = 0
    while i < len(items):
        if i + 2 < len(items) and items[i + 1] == "-":
            out.update(chr(c) for c in range(ord(chars[i]), ord(chars[i + 2]) + 1))
            i += 3
        else:
            out.add(chars[i])
            i += 1
    return out


@functools.cache
def _fold_table() -> dict[int, str | None]:
    """str.translate's table of the fold (built on the first text that is not ASCII: ~15 ms)."""
    letters: dict[str, set[str]] = {}
    for letter, body in CLASSES.items():
        if letter.isalpha():
            for char in _class_chars(body):
                letters.setdefault(char, set()).add(letter)
    gaps = _class_chars(GAP)
    table: dict[int, str | None] = {ord(char): None for char in gaps}
    for char, reads_as in letters.items():
        table[ord(char)] = AMBIGUOUS if len(reads_as) > 1 or char in gaps else next(iter(reads_as))
    return table


def _may_hold_tag(text: str) -> bool:
    """Whether the regexes could find a tag in `text`: False only when they cannot (a test for speed: a line
    that is not ASCII took the regexes 0.5-3.5 µs a character, this fold ~0.03)."""
    if text.isascii():
        squeezed = text.encode("ascii").lower().translate(_ASCII_FOLD, _ASCII_GAP)
        return b"memwrap" in squeezed.replace(b"rn", b"m").replace(b"vv", b"w")
    folded = text.translate(_fold_table())
    return AMBIGUOUS in folded or "memwrap" in folded.replace("rn", "m").replace("vv", "w")


def _skip_gap_back(text: str, index: int) -> int:
    while index > 0 and _GAP_CHAR.match(text, index - 1):
        index -= 1
    return index


def _skip_gap(text: str, index: int) -> int:
    while index < len(text) and _GAP_CHAR.match(text, index):
        index += 1
    return index


def _widen(text: str, start: int, end: int) -> tuple[int, int]:
    """The name's span widened to the brackets and slash around it ("<", "</", "/>", ">"), look-alikes too."""
    at = _skip_gap_back(text, start)
    if at > 0 and _SLASH.match(text, at - 1):
        start = at = at - 1
        at = _skip_gap_back(text, at)
    if at > 0 and _LESS.match(text, at - 1):
        start = at - 1
    at = _skip_gap(text, end)
    if at < len(text) and _SLASH.match(text, at):
        end = at = at + 1
        at = _skip_gap(text, at)
    if at < len(text) and _GREATER.match(text, at):
        end = at + 1
    return start, end


def find_tags(text: str) -> list[tuple[int, int]]:
    """Spans of `text` that a reader could take for a memory-block tag (exact or look-alike, HTML comments read
    through), in order and disjoint."""
    if "<!--" in text and _COMMENT.search(text):
        kept: list[int] = []  # the original index of each character left when the comments are gone
        cursor = 0
        for comment in _COMMENT.finditer(text):
            kept.extend(range(cursor, comment.start()))
            cursor = comment.end()
        kept.extend(range(cursor, len(text)))
        stripped = "".join(text[i] for i in kept)
        # A tag's span runs over the comments inside it.
        return _merged([(kept[start], kept[end - 1] + 1) for start, end in _find(stripped)])
    return _find(text)


def _find(text: str) -> list[tuple[int, int]]:
    if not text or not _may_hold_tag(text):
        return []
    spans = [_widen(text, *m.span()) for m in _NAME_RX.finditer(text)]
    for match in _PREFIX_RX.finditer(text):
        rest = _PREFIX_REST.match(text, match.end())
        spans.append((match.start(), rest.end() if rest else match.end()))
    return _merged(spans)


def _merged(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if out and start < out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((start, end))
    return out


def neutralise(text: str) -> str:
    """`text` with everything that could read as a memory-block tag replaced by REPLACEMENT, and invisible
    characters (zero-width, format and tag characters, fillers) removed."""
    spans = find_tags(text)
    if spans:
        pieces: list[str] = []
        cursor = 0
        for start, end in spans:
            if start < cursor:
                start = cursor
            pieces.append(text[cursor:start])
            pieces.append(REPLACEMENT)
            cursor = end
        pieces.append(text[cursor:])
        text = "".join(pieces)
    if not text.isascii() and not _hidden_candidates().isdisjoint(text):
        text = _HIDDEN.sub("", text)
    return text
