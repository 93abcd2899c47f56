"""The OpenAPI document's "not blank" pattern and the engine's check say the same of every character.

`validate.text_field` refuses text that is white space (Python's sense, wider than ECMA-262's `\\s`) or control
characters only; the document declares `openapi_rules.NONBLANK` on those fields. A request the document allows must
not be refused, and one it forbids must not be accepted (schemathesis checks both in tests/test_server_fuzz.py, by
sampling; this checks every code point of the planes the two could disagree on).
"""

from __future__ import annotations

import re

import pytest

from memwrap import validate
from memwrap.errors import InvalidContentError
from memwrap_server.openapi_rules import NONBLANK


def _engine_accepts(text: str) -> bool:
    try:
        validate.text_field(text, what="tag", max_chars=100)
    except InvalidContentError:
        return False
    return True


def test_the_pattern_and_the_engine_agree_on_every_single_character() -> None:
    pattern = re.compile(NONBLANK)
    disagree = [
        hex(code)
        for code in [*range(0x0000, 0x3100), *range(0xFE00, 0x10000)]
        if not 0xD800 <= code <= 0xDFFF and code != 0  # a NUL or lone surrogate is refused for its own reason
        if bool(pattern.search(chr(code))) != _engine_accepts(chr(code))
    ]
    assert disagree == []


@pytest.mark.parametrize("text", ["\x1d", "\x01\x02", " \x1f\t", "\x0b\x85"])
def test_control_characters_alone_are_nothing_to_store(text: str) -> None:
    with pytest.raises(InvalidContentError, match="nothing to remember"):
        validate.text_field(text, what="tag", max_chars=100)


def test_control_characters_inside_text_are_blanked_and_the_text_kept() -> None:
    assert validate.text_field("a\x01b", what="tag", max_chars=100) == "a b"


def test_the_pattern_reads_the_same_in_ecma_262_and_python() -> None:
    # \s, \w, \d, \b differ between ECMA-262 (what a client or schemathesis reads) and Python's re (what the check
    # above ran): \x1c-\x1f and \x85 are white space to Python only, \ufeff to ECMA-262 only. Explicit code points
    # mean the same in both.
    assert not re.search(r"\\[sSwWdDbB]", NONBLANK)


def test_an_optional_context_of_control_characters_is_dropped_not_refused() -> None:
    # retain's and reflect's `context` may be blank (the document does not require a visible character there)
    [item] = validate.retain_items([{"content": "kept", "context": "\x14"}])
    assert item.context is None and item.content == "kept"


def test_an_entity_search_of_control_characters_is_no_filter() -> None:
    from memwrap.engine.views.verbs import _search

    assert _search("\x08\x15") is None and _search("  ") is None and _search("pg") == "pg"
