"""Memory defense, decoded views: the text as a decoder reads it, each character mapped back to the original.

A secret pasted from a URL, a web page, a log or a JSON dump arrives encoded: `ghp%5F…` and `alice%40example.com`
(percent-encoding), `ghp&#95;…` and `4111&nbsp;1111…` (HTML character references), `\\u0067hp_…` and `\\x67hp_…`
(backslash escapes, UTF-8 bytes too), `https:\\/\\/hooks.slack.com\\/…` (JSON's escaped slash), base64 and
base64url (`T1BFTkFJX0FQSV9LRVk9c2stcHJvai0…`, `data:text/plain;base64,…`). The rules read these views too:

* the decoded view: each decoder in turn (percent, HTML, escapes, base64), twice (base64 of a percent-encoded
  key), then normalised as any text is (view.py). A base64 run is decoded only when it decodes to text (valid
  UTF-8, printable), so a hash or a random id is left alone, and nothing of it is redacted unless its decoded
  text holds a finding: then only the base64 characters that carry the secret's bytes go (each decoded
  character maps to the base64 characters its bits came from).
* the card view: digit groups with any short separator between them (`/ _ , : ; | •`) read with a space, for
  the card rule only (Luhn, issuer range and printed grouping stay its guard).
* the skeleton view: each non-ASCII character that Unicode's confusables (UTS #39) give an ASCII letter, digit,
  '_' or '-' as prototype is that character (`ghр_` with a Cyrillic р reads `ghp_`, `раssword` reads
  `password`), for the rules of keys, tokens and labelled secrets.
* the markup view: HTML tags and comments removed, and the quote marks of an e-mail reply after a line break
  (`ghp_<b>abc</b>def`, `ghp_abc\\n> def`); findings count only where something removed sat inside them.

Every view maps each of its characters to the span of the original it came from (View.original), so a finding
on any view redacts the original span: the encoded form of the secret.

Cost: each view is built only when a cheap check says it could differ from the text (a '%', '&', '\\', '<'
in it, a run of 16 base64 characters, 13 digits with such a separator, a non-ASCII character), so an
ordinary chat turn pays a few `in` checks and one regex search.
"""

from __future__ import annotations

import base64
import binascii
import codecs
import functools
import html.entities
import re

from memwrap.defense.view import Piece, View, edited, normalised, substituted


def compose(outer: View, inner: View) -> View:
    """`inner` (a view of `outer.text`) mapped down to what `outer` maps to."""
    if inner.starts is None or inner.ends is None:
        return outer
    if outer.starts is None or outer.ends is None:
        return inner
    o_starts, o_ends = outer.starts, outer.ends
    return View(inner.text, [o_starts[i] for i in inner.starts], [o_ends[j - 1] for j in inner.ends], inner.joins)


def _utf8(groups: list[tuple[int, int, int]]) -> tuple[str, list[tuple[int, int]]]:
    """Bytes (each with the view span it was written as) decoded as UTF-8; each character with the span of its
    bytes. Invalid bytes read as U+FFFD."""
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    chars: list[str] = []
    spans: list[tuple[int, int]] = []
    pending = -1
    for start, end, byte in groups:
        if pending < 0:
            pending = start
        emitted = decoder.decode(bytes((byte,)))
        for char in emitted:
            chars.append(char)
            spans.append((pending, end))
        if emitted:
            pending = -1
    for char in decoder.decode(b"", final=True):
        chars.append(char)
        spans.append((pending, groups[-1][1]))
    return "".join(chars), spans


_PERCENT = re.compile(r"(?:%[0-9A-Fa-f]{2})+")


def _percent(text: str) -> list[Piece]:
    if "%" not in text:
        return []
    pieces: list[Piece] = []
    for run in _PERCENT.finditer(text):
        at = run.start()
        groups = [(i, i + 3, int(text[i + 1 : i + 3], 16)) for i in range(at, run.end(), 3)]
        decoded, spans = _utf8(groups)
        pieces.append((at, run.end(), decoded, spans))
    return pieces


_ENTITY = re.compile(r"&(?:#([0-9]{1,7})|#[xX]([0-9A-Fa-f]{1,6})|([A-Za-z][A-Za-z0-9]{1,31}));?")


def _char(code: int) -> str:
    return chr(code) if 0 < code <= 0x10FFFF and not 0xD800 <= code <= 0xDFFF else "\ufffd"


def _entities(text: str) -> list[Piece]:
    if "&" not in text:
        return []
    pieces: list[Piece] = []
    for match in _ENTITY.finditer(text):
        decimal, hexadecimal, name = match.groups()
        if decimal is not None:
            value = _char(int(decimal))
        elif hexadecimal is not None:
            value = _char(int(hexadecimal, 16))
        else:
            closed = match.group().endswith(";")
            found = html.entities.html5.get(name + ";" if closed else name)
            if found is None:
                continue
            value = found
        pieces.append((match.start(), match.end(), value, None))
    return pieces


_HEX_BYTES = re.compile(r"(?:\\x[0-9A-Fa-f]{2})+")
_UNICODE_ESCAPE = re.compile(r"\\u\{([0-9A-Fa-f]{1,6})\}|\\u([0-9A-Fa-f]{4})|\\U([0-9A-Fa-f]{8})|\\/")


def _escapes(text: str) -> list[Piece]:
    if "\\" not in text:
        return []
    pieces: list[Piece] = []
    for run in _HEX_BYTES.finditer(text):
        at = run.start()
        groups = [(i, i + 4, int(text[i + 2 : i + 4], 16)) for i in range(at, run.end(), 4)]
        decoded, spans = _utf8(groups)
        pieces.append((at, run.end(), decoded, spans))
    codes: list[tuple[int, int, int]] = []
    for match in _UNICODE_ESCAPE.finditer(text):
        braced, four, eight = match.groups()
        value = braced or four or eight
        codes.append((match.start(), match.end(), ord("/") if value is None else int(value, 16)))
    index = 0
    while index < len(codes):
        start, end, code = codes[index]
        # A surrogate pair written as two escapes is one character.
        if 0xD800 <= code <= 0xDBFF and index + 1 < len(codes):
            next_start, next_end, low = codes[index + 1]
            if next_start == end and 0xDC00 <= low <= 0xDFFF:
                pieces.append((start, next_end, chr(0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)), None))
                index += 2
                continue
        pieces.append((start, end, _char(code), None))
        index += 1
    return sorted(pieces)


# A run of base64 or base64url characters long enough to hold a secret (16 characters: 12 bytes).
_BASE64_RUN = re.compile(r"(?<![A-Za-z0-9+/_=-])[A-Za-z0-9+/_-]{16,}={0,2}")
_B64_STANDARD = frozenset("+/")
_B64_URLSAFE = frozenset("-_")


def _long_word(text: str) -> bool:
    """A word of 16 characters or more: the run regex tries every position, and most turns hold none."""
    return len(text) >= 16 and max(map(len, text.split()), default=0) >= 16


def _base64(text: str) -> list[Piece]:
    if not _long_word(text):
        return []
    pieces: list[Piece] = []
    for run in _BASE64_RUN.finditer(text):
        body = run.group().rstrip("=")
        chars = set(body)
        if chars & _B64_STANDARD and chars & _B64_URLSAFE:
            continue  # a path or an identifier, not one alphabet
        if body.islower() or body.isupper() or body.isdigit():
            continue  # base64 of text mixes cases
        if len(body) % 4 == 1:
            body = body[:-1]
        try:
            raw = base64.b64decode(
                body + "=" * (-len(body) % 4), altchars=b"-_" if chars & _B64_URLSAFE else None, validate=True
            )
        except (binascii.Error, ValueError):
            continue
        decoded = _textual(raw)
        if decoded is None:
            continue
        at = run.start()
        spans: list[tuple[int, int]] = []
        offset = 0
        for char in decoded:
            size = len(char.encode("utf-8"))
            # Byte k holds bits 8k..8k+7: base64 characters 8k//6 through (8k+7)//6 carry them.
            spans.append((at + (8 * offset) // 6, at + (8 * (offset + size) - 1) // 6 + 1))
            offset += size
        pieces.append((at, at + len(body), decoded, spans))
    return pieces


def _textual(raw: bytes) -> str | None:
    """`raw` as text when it is text (valid UTF-8, a character cut at the end aside; printable), else None."""
    try:
        decoded = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        if error.start < len(raw) - 3:
            return None
        decoded = raw[: error.start].decode("utf-8")
    if len(decoded) < 8 or not all(c.isprintable() or c in "\t\n\r" for c in decoded):
        return None
    return decoded


_DECODERS = (_percent, _entities, _escapes, _base64)
_ROUNDS = 2


def decoded(text: str) -> View | None:
    """The decoded view of `text`, normalised; None when no decoder changes anything."""
    if "%" not in text and "&" not in text and "\\" not in text and not _long_word(text):
        return None
    view = View(text)
    changed = False
    for _ in range(_ROUNDS):
        before = changed
        for decoder in _DECODERS:
            pieces = decoder(view.text)
            if pieces:
                view = substituted(view, pieces)
                changed = True
        if changed == before:
            break
    if not changed:
        return None
    return compose(view, normalised(view.text))


# Digit groups joined by a separator the normalised view leaves (it reads spaces, dashes and dots already).
_CARD_SEPARATOR = re.compile(r"(?<=[0-9]) ?[/_,:;|\\•‣◦∙⁄*#~+] ?(?=[0-9])")


def card_view(view: View, digits: int) -> View | None:
    """`view` with any short separator between two digits read as ' ', for the card rule; None when there is
    none (or too few digits for a card)."""
    if digits < 13:
        return None
    edits = [(m.start(), m.end(), " ") for m in _CARD_SEPARATOR.finditer(view.text)]
    return edited(view, edits) if edits else None


@functools.cache
def _ascii_like() -> dict[str, str]:
    """Each non-ASCII character whose confusable prototype (UTS #39, as confusable-homoglyphs packages it) is an
    ASCII letter, digit, '_' or '-'. Loaded on the first text with a non-ASCII character left after NFKC."""
    from confusable_homoglyphs import confusables

    out: dict[str, str] = {}
    for char, homoglyphs in confusables.confusables_data.items():
        if len(char) != 1 or char.isascii():
            continue
        for homoglyph in homoglyphs:
            target = homoglyph["c"]
            if len(target) == 1 and target.isascii() and (target.isalnum() or target in "_-"):
                # UTS #39 reads I and l as one prototype, l: a capital (Cyrillic І, Greek Ι) is an I.
                out[char] = "I" if target == "l" and char.isupper() else target
                break
    return out


_NON_ASCII = re.compile(r"[^\x00-\x7f]")


def skeleton_view(view: View) -> View | None:
    """`view` with each non-ASCII character read as the ASCII character it passes for; None when there is none."""
    if view.text.isascii():
        return None
    table = _ascii_like()
    edits = []
    for match in _NON_ASCII.finditer(view.text):
        target = table.get(match.group())
        if target is not None:
            edits.append((match.start(), match.end(), target))
    if not edits:
        return None
    return edited(view, edits)


_MARKUP = re.compile(r"<!--.{0,200}?-->|</?[A-Za-z][A-Za-z0-9]{0,15}(?:\s[^<>]{0,200})?/?>|\n[ \t]*(?:>[ \t]?)+", re.S)


def markup_view(text: str) -> View | None:
    """`text` without HTML tags and comments, nor the quote marks after a line break (and the break), normalised;
    `joins` marks where something was removed. None when there is nothing to remove."""
    if "<" not in text and "\n" not in text:
        return None
    removed = [(m.start(), m.end(), "") for m in _MARKUP.finditer(text)]
    if not removed:
        return None
    stripped = edited(View(text), removed)
    gone = 0
    joins = []
    for start, end, _ in removed:
        joins.append(start - gone)
        gone += end - start
    inner = normalised(stripped.text)
    view = compose(stripped, inner)
    return View(view.text, view.starts, view.ends, _remap(joins, inner))


def _remap(joins: list[int], inner: View) -> list[int]:
    """Positions in the outer text → positions in `inner` (a view of it): the first inner character at or after."""
    if inner.starts is None:
        return joins
    out = []
    at = 0
    for position in joins:
        while at < len(inner.starts) and inner.starts[at] < position:
            at += 1
        out.append(at)
    return out
