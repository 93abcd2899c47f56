"""The fence around a memory block, and what keeps memory text from forging it.

A block is `<memwrap_memories>` … `</memwrap_memories>`, and what is between the tags is data, never
instructions. A memory is whatever someone once said, so its text could carry a close tag followed by
"SYSTEM OVERRIDE: …" and end the fence early. `neutralise` rewrites anything in memory text that a reader
(human or model) could take for one of the tags: exact, in any case, with spaces or zero-width characters
inside, with other brackets or slashes, or spelt with look-alike letters (Cyrillic о, Greek ρ, fullwidth
ｍ, "rn" for m …). It is applied to every memory line the renderer writes (engine/recall/pack.py), so the
rendered block holds exactly one open and one close tag: its own.

Matching runs on a "skeleton" of the text, built character by character so that a match maps back to the
original span: NFKD with combining marks dropped, format characters (zero-width joiners, soft hyphens)
dropped, a table of confusable letters folded to their Latin twin, then casefolded.
"""

from __future__ import annotations

import functools
import re
import unicodedata

OPEN_TAG = "<memwrap_memories>"
CLOSE_TAG = "</memwrap_memories>"
# What a forged tag becomes: no angle brackets and not the tag's name, so nothing reads it as the fence.
REPLACEMENT = "[memory fence removed]"

# Letters that render like the Latin letters of "memwrap_memories" (Unicode confusables, the ones that matter
# for this name), and punctuation that renders like < > / _.
_CONFUSABLES: dict[str, str] = {
    # a
    "\u0430": "a", "\u0251": "a", "\u03b1": "a", "\u0410": "a", "\u0391": "a",
    # e
    "\u0435": "e", "\u04bd": "e", "\u212e": "e", "\u0415": "e", "\u0395": "e", "\u0259": "e", "\u01dd": "e",
    # i
    "\u0456": "i", "\u0131": "i", "\u0269": "i", "\u03b9": "i", "\u04cf": "i", "\u0406": "i", "\u0399": "i",
    "\u2170": "i", "\u1fbe": "i",
    # m
    "\u043c": "m", "\u041c": "m", "\u039c": "m", "\u217f": "m", "\u0271": "m",
    # o
    "\u043e": "o", "\u03bf": "o", "\u0585": "o", "\u1d0f": "o", "\u041e": "o", "\u039f": "o", "\u03c3": "o",
    "\u2134": "o", "\u0ce6": "o", "\u0d66": "o",
    # p
    "\u0440": "p", "\u03c1": "p", "\u2374": "p", "\u0420": "p", "\u03a1": "p", "\u01bf": "p",
    # r
    "\u0433": "r", "\u1d26": "r", "\uab47": "r", "\u027c": "r",
    # s
    "\u0455": "s", "\ua731": "s", "\u0405": "s", "\u01bd": "s",
    # w
    "\u051d": "w", "\u0461": "w", "\u1d21": "w", "\u051c": "w", "\u0460": "w", "\u03c9": "w", "\u026f": "w",
    # < > / _
    "\u2039": "<", "\u3008": "<", "\u27e8": "<", "\u2329": "<", "\u1438": "<", "\u02c2": "<", "\u00ab": "<",
    "\u300a": "<", "\u276e": "<", "\u29fc": "<",
    "\u203a": ">", "\u3009": ">", "\u27e9": ">", "\u232a": ">", "\u1433": ">", "\u02c3": ">", "\u00bb": ">",
    "\u300b": ">", "\u276f": ">", "\u29fd": ">",
    "\u2044": "/", "\u2215": "/", "\u29f8": "/", "\u2571": "/", "\u30ce": "/", "\u3033": "/",
    "\u2017": "_", "\u02cd": "_", "\u2381": "_", "\u268a": "_",
}

# The tag's name with any separator (or none) between its words, and "rn"/"vv" for m/w; then, around it,
# whatever a reader could take for the brackets and the slash of a tag.
_NAME = r"(?:m|rn)\s*e\s*(?:m|rn)\s*(?:w|vv)\s*r\s*a\s*p[\s_\-.·:]*(?:m|rn)\s*e\s*(?:m|rn)\s*o\s*r\s*i\s*e\s*s"
_TAG = re.compile(r"(?:<\s*)?(?:/\s*)?" + _NAME + r"(?:\s*/)?(?:\s*>)?")


@functools.cache
def _fold_table() -> dict[int, str | None]:
    """str.translate table: confusables to their Latin twin; invisible characters (format characters such
    as zero-width joiners, combining marks, the invisible "tag" characters) removed. Built once, on first use."""
    table: dict[int, str | None] = {}
    for plane_end in (0x10000, 0x20000):
        for code in range(plane_end - 0x10000, plane_end):
            if unicodedata.category(chr(code)) in ("Cf", "Mn", "Me"):
                table[code] = None
    for code in range(0xE0000, 0xE1000):  # tags and variation selectors supplement
        table[code] = None
    table.update({ord(k): v for k, v in _CONFUSABLES.items()})
    return table


def _fold(text: str) -> str:
    return unicodedata.normalize("NFKD", text).translate(_fold_table()).casefold()


def _aligned_skeleton(text: str) -> tuple[str, list[int]]:
    """The folded text, and for each of its characters the index of the original character it came from."""
    chars: list[str] = []
    origin: list[int] = []
    for index, char in enumerate(text):
        folded = char.lower() if char.isascii() else _fold(char)
        chars.append(folded)
        origin.extend([index] * len(folded))
    return "".join(chars), origin


def find_tags(text: str) -> list[tuple[int, int]]:
    """Spans of `text` that a reader could take for a memory-block tag (exact or look-alike), in order."""
    if not text:
        return []
    # The common case costs a few C-level passes: fold the whole text, squeeze out the spaces, look for the
    # first word of the name. Only text that has it goes through the regex and the aligned skeleton.
    folded = text.lower() if text.isascii() else _fold(text)
    squeezed = "".join(folded.split()).replace("rn", "m").replace("vv", "w")
    if "memwrap" not in squeezed or not _TAG.search(folded):
        return []
    skeleton, origin = _aligned_skeleton(text)
    return [(origin[m.start()], origin[m.end() - 1] + 1) for m in _TAG.finditer(skeleton)]


def neutralise(text: str) -> str:
    """`text` with everything that could read as a memory-block tag replaced by REPLACEMENT."""
    spans = find_tags(text)
    if not spans:
        return text
    pieces: list[str] = []
    cursor = 0
    for start, end in spans:
        if start < cursor:
            continue
        pieces.append(text[cursor:start])
        pieces.append(REPLACEMENT)
        cursor = end
    pieces.append(text[cursor:])
    return "".join(pieces)
