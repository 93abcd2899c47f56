"""Which bank ids may be created: none that passes for another.

The syntax of a bank id (memwrap/validate.py: bank_id) admits any Unicode letter, so that 张伟 or
user:张伟 or müller are banks. That also admitted `bаnk-b` with a Cyrillic а beside the real `bank-b`: two
banks one cannot tell apart on a screen, in a log or in an allow-list pattern. A bank that does not exist yet
is therefore refused (InvalidBankIdError, 422) when its id

* is not in Unicode's compatibility normal form (NFKC): fullwidth ｂａｎｋ, ligatures, superscripts, math letters;
* mixes letters of several scripts beyond what one language writes (Unicode TR39's "highly restrictive"
  level): one script, or Latin with Han and Hiragana/Katakana (Japanese), Han and Bopomofo (Chinese), or Han
  and Hangul (Korean); digits and `. _ : @ + -` go with any script;
* is not ASCII but every character of it is ASCII or looks like an ASCII letter or digit (TR39's confusables:
  Cyrillic `раураl` reads as `paypal`, Greek `ΑΒΕ` as `ABE`).

Banks that exist already keep working under every verb and surface (a rule about names must not cut anyone
off their memories); only new ones are checked, where a bank comes into being. ASCII ids pay nothing.
"""

from __future__ import annotations

import functools
import unicodedata
from typing import Any

from memwrap.errors import InvalidBankIdError
from memwrap.store.pg_types import Executor

# Scripts that share every other's characters (digits, punctuation, combining marks).
_SHARED = {"COMMON", "INHERITED"}
# The mixtures one language writes (TR39 highly restrictive); Latin may join each.
_LANGUAGE_MIXES = ({"LATIN", "HAN", "HIRAGANA", "KATAKANA"}, {"LATIN", "HAN", "BOPOMOFO"}, {"LATIN", "HAN", "HANGUL"})


@functools.cache
def _data() -> tuple[Any, dict[str, str]]:
    """The script of each character and, for characters that look like an ASCII letter or digit, that
    character (Unicode's confusables, as packaged by confusable-homoglyphs); loaded on the first non-ASCII id."""
    from confusable_homoglyphs import categories, confusables

    ascii_like: dict[str, str] = {}
    for char, homoglyphs in confusables.confusables_data.items():
        if len(char) != 1 or char.isascii():
            continue
        for homoglyph in homoglyphs:
            if len(homoglyph["c"]) == 1 and homoglyph["c"].isascii() and homoglyph["c"].isalnum():
                ascii_like[char] = homoglyph["c"]
                break
    return categories, ascii_like


def lookalike(bank_id: str) -> str | None:
    """Why `bank_id` may not be created (it could pass for another id), or None."""
    if bank_id.isascii():
        return None
    normal = unicodedata.normalize("NFKC", bank_id)
    if normal != bank_id:
        return (
            f"Bank id {bank_id!r} uses compatibility forms of characters (fullwidth, ligatures, styled "
            f"letters) that read as {normal!r}; write it as {normal!r}."
        )
    categories, ascii_like = _data()
    scripts = {categories.alias(char) for char in bank_id} - _SHARED
    if len(scripts) > 1 and not any(scripts <= mix for mix in _LANGUAGE_MIXES):
        return (
            f"Bank id {bank_id!r} mixes letters of several scripts ({', '.join(sorted(s.title() for s in scripts))}), "
            "so it can pass for another id (a Cyrillic 'а' looks like a Latin 'a'); write it in one script "
            "(Latin may go with Chinese, Japanese or Korean)."
        )
    skeleton = "".join(char if char.isascii() else ascii_like.get(char, "") for char in bank_id)
    if len(skeleton) == len(bank_id):
        return (
            f"Bank id {bank_id!r} looks like the ASCII id {skeleton!r} (each of its letters has an ASCII "
            "look-alike); use the ASCII id, or letters that cannot be mistaken for it."
        )
    return None


async def admit(db: Executor, bank_id: str) -> None:
    """Before a bank may come into being: InvalidBankIdError if `bank_id` is a look-alike id and no such bank
    exists yet (an existing bank is used as it is)."""
    reason = lookalike(bank_id)
    if reason is not None and not await db.fetchval("SELECT true FROM banks WHERE bank_id = $1", bank_id):
        raise InvalidBankIdError(reason)
