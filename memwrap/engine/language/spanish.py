"""Spanish words for the keyword arm (issue 38): Snowball's Spanish stems beside the words themselves.

Stored text and questions reach PostgreSQL's `english` text-search configuration (one tsvector column for every
language), whose stemmer leaves Spanish inflections apart: "hermano" / "hermanos" / "hermana", "vivo" / "vive".
For text that reads as Spanish, `spanish_terms` gives the Spanish Snowball stem of each content word whose stem
differs from its English one ("herman" for all three); `search_text` appends them on both sides, so a question
and a memory meet on the stem. English text gets nothing added.
"""

from __future__ import annotations

import functools
import re
from typing import Any

# Marks only Spanish (of the languages memwrap's users write) puts in ordinary text.
_MARKS = re.compile("[ñÑ¿¡áíóúÁÍÓÚ]")
_WORD = re.compile(r"[^\W\d_]+")
# Frequent Spanish function words that are no English words ("no", "me", "son", "con" are left out): two of them
# make a text Spanish, as does one of Spanish's own marks. With "no" and "me" in the list, 14 of the 584 English
# MemoryBank distractor turns read as Spanish; without them none, and 12 of the set's 13 Spanish memories do.
SPANISH_WORDS = frozenset(
    """
    el la los las un una unos unas del al de en y que mi mis tu tus su sus es está están por para
    se lo le les ya muy pero como yo te nos este esta esto ese esa eso cuando donde porque también
    cómo dónde qué quién quiénes cuándo cuál cuáles cuánto cuántos más
    """.split()
)
_SPANISH_AT = 2
_MIN_CHARS = 4  # "vez", "mar": short words stem to themselves or to noise


@functools.cache
def _stemmers() -> tuple[Any, Any]:
    import snowballstemmer  # a small pure-Python package; imported on first Spanish text

    return snowballstemmer.stemmer("spanish"), snowballstemmer.stemmer("english")


def looks_spanish(text: str) -> bool:
    words = [w.lower() for w in _WORD.findall(text)]
    known = sum(1 for w in words if w in SPANISH_WORDS)
    return known >= _SPANISH_AT or _MARKS.search(text) is not None


def spanish_terms(text: str) -> str:
    """The Spanish stems to index beside `text` ("" when it does not read as Spanish)."""
    if not _MARKS.search(text) and not any(w.lower() in SPANISH_WORDS for w in _WORD.findall(text)):
        return ""  # the common case (English, Chinese): no word list built
    if not looks_spanish(text):
        return ""
    spanish, english = _stemmers()
    terms: list[str] = []
    for word in _WORD.findall(text.lower()):
        if len(word) < _MIN_CHARS or word in SPANISH_WORDS or not word.isascii() and not _latin(word):
            continue
        stem = spanish.stemWord(word)
        if stem != word and stem != english.stemWord(word) and stem not in terms:
            terms.append(stem)
    return " ".join(terms)


def _latin(word: str) -> bool:
    return all("a" <= c <= "z" or "\u00c0" <= c <= "\u024f" for c in word)
