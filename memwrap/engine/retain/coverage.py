"""Nothing lost in extraction, checkably: every informative sentence of a turn is carried by a fact, or kept raw.

A fact that cites a turn does not prove the turn is covered: a small model writes one fact about the job
change and drops the allergy said in the same breath. So each sentence of every extracted item is checked
against the facts the item's chunk gave (and the names the model linked as aliases):

* filler is skipped: a sentence with fewer than two content words ("Thanks!", "Sounds good."), and the
  assistant's questions (they ask, they tell nothing about anyone);
* its key terms must all be there: numbers, names (capitalised words inside a sentence), and CJK names inside a
  Latin sentence ("we call him 老张"): the details a paraphrase must not lose;
* and its content words must be: at least half of them appear in the facts (compared on their first five
  letters, so "allergic" finds "allergy"; Chinese by pairs of characters), or the sentence means what one fact
  says (cosine of their embeddings at least SIMILAR; not for Chinese, which the default embedding model does not
  read).

What fails is kept as a raw unit, in its speaker's words ("user: …"), recalled like any memory.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

import numpy as np

# Cosine (all-MiniLM-L6-v2) at which a sentence and a fact say the same thing in other words; the model's own value
# comes from memwrap/engine/embed/profiles.py (`uncovered(similar=…)`; 0.85 for multilingual-e5-small).
SIMILAR = 0.75
# Part of a sentence's content words the facts must contain for it to count as carried word for word.
LEXICAL = 0.5

_SENTENCE = re.compile(r"(?<=[.!?…])\s+|(?<=[。！？；])|\n+")
# Letters of alphabetic scripts (CJK excluded: Han is compared by character, below).
_CJK_RANGES = "\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af\uf900-\ufaff"
_LATIN = re.compile(rf"[^\W\d_{_CJK_RANGES}]+(?:['’][^\W\d_{_CJK_RANGES}]+)?", re.UNICODE)
_NUMBER = re.compile(r"\d+(?:[.,:]\d+)*")
_HAN = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]+")
_STOP = frozenset(
    """a about above after again against all also am an and any are as at be because been before being below between
    both but by can could did do does doing down during each few for from further had has have having he her here
    hers herself him himself his how i if in into is it its itself just let me more most my myself no nor not now of
    off on once only or other our ours out over own same she should so some such than that the their theirs them
    then there these they this those through to too under until up very was we were what when where which while who
    whom why will with would you your yours yourself yes yeah ok okay oh hi hey hello thanks thank please sure
    great good nice cool awesome glad welcome sorry well really right got get know think maybe like way much many
    lot bit thing things something anything everything one ones let's i'm i've i'll i'd you're you've it's that's
    there's don't doesn't didn't can't won't isn't aren't wasn't also still even though anyway actually user
    user's assistant""".split()
) | frozenset(  # time words: a fact says "next Tuesday" as a date, which dating.py checks on its own
    """today tomorrow yesterday tonight morning evening night ago last next this week weeks month months year years
    day days since monday tuesday wednesday thursday friday saturday sunday mondays tuesdays wednesdays thursdays
    fridays saturdays sundays january february march april may june july august september october november
    december""".split()
)
# What the memory defense put in place of a secret: not content a fact has to repeat.
_REDACTED = re.compile(r"\[REDACTED:[^\]]*\]")
_HAN_STOP = frozenset("我你他她它们的了是在有和就都也很吗呢吧啊这那个")


@dataclass
class Sentence:
    item_hash: str
    speaker: str
    text: str


def sentences(text: str) -> list[str]:
    return [s for s in (part.strip() for part in _SENTENCE.split(text)) if s]


def content_terms(sentence: str) -> tuple[set[str], set[str]]:
    """(content terms, key terms) of a sentence, lower-cased; Latin words compared on their first five letters."""
    terms: set[str] = set()
    keys: set[str] = set()
    sentence = _REDACTED.sub(" ", sentence)
    words = list(_LATIN.finditer(sentence))
    for match in words:
        word = match.group()
        low = word.casefold()
        if low in _STOP or len(low) < 3:
            continue
        terms.add(low[:5])
        if match.start() > 0 and word[0].isupper() and word != "I":  # a capital not opening the sentence
            keys.add(low[:5])
    for number in _NUMBER.findall(sentence):
        terms.add(number)
        keys.add(number)
    han_runs = _HAN.findall(sentence)
    mostly_latin = sum(len(m.group()) for m in words) > sum(len(r) for r in han_runs)
    for run in han_runs:
        if mostly_latin:  # a Chinese name inside an English sentence: it must survive as written
            terms.add(run)
            keys.add(run)
            continue
        # Chinese is compared by character pairs (most Chinese words are two characters): a fact that keeps
        # "下周三" and "出差" but drops "上海" has lost the place. Single characters would pass it.
        terms.update(_han_terms(run))
    return terms, keys


def _han_terms(run: str) -> set[str]:
    """The character pairs of a Han run that are not two function characters; a lone character by itself."""
    if len(run) == 1:
        return set() if run in _HAN_STOP else {run}
    return {run[i : i + 2] for i in range(len(run) - 1) if not (run[i] in _HAN_STOP and run[i + 1] in _HAN_STOP)}


def mostly_han(sentence: str) -> bool:
    han = sum(len(r) for r in _HAN.findall(sentence))
    return han > sum(len(m.group()) for m in _LATIN.finditer(sentence))


def _carried(term: str, haystack: str, words: set[str]) -> bool:
    if _HAN.fullmatch(term) or len(term) <= 2:
        return term in haystack
    return term in words or term in haystack


def lexically_covered(sentence: str, facts_text: str) -> tuple[bool, bool]:
    """(covered word for word, key terms all present) of one sentence against the facts' text."""
    terms, keys = content_terms(sentence)
    haystack = facts_text.casefold()
    words = {w.casefold()[:5] for w in _LATIN.findall(facts_text)} | set(_NUMBER.findall(facts_text))
    if not all(_carried(k, haystack, words) for k in keys):
        return False, False
    found = sum(1 for t in terms if _carried(t, haystack, words))
    return found >= LEXICAL * len(terms), True


def informative(sentence: str, role: str) -> bool:
    if role == "assistant" and sentence.rstrip().endswith(("?", "？")):
        return False
    terms, keys = content_terms(sentence)
    return len(terms) >= 2 or bool(keys)


Embed = Callable[[list[str]], Awaitable[np.ndarray]]


async def uncovered(
    turns: Sequence[tuple[str, str, str, str]], facts: dict[str, list[str]], embed: Embed, *, similar: float = SIMILAR
) -> dict[str, list[tuple[str, str]]]:
    """Per item: the (speaker, text) of its turns' sentences no fact carries, in order.

    `turns`: (item_hash, speaker, role, text) of every turn; `facts`: item_hash → the texts that may carry it
    (the facts of its chunks and the names the model linked).
    """
    pending: list[Sentence] = []
    for item_hash, speaker, role, text in turns:
        haystack = "\n".join(facts.get(item_hash, []))
        for sentence in sentences(text):
            if not informative(sentence, role):
                continue
            if not lexically_covered(sentence, haystack)[0]:
                pending.append(Sentence(item_hash, speaker, sentence))
    # A paraphrase may carry a sentence, but only one that kept its key terms (a missing detail is lost). Not a
    # Chinese one: the default embedding model is English-only, and any two Chinese sentences look alike to it.
    checkable = [
        s
        for s in pending
        if facts.get(s.item_hash) and not mostly_han(s.text) and _keys_present(s.text, facts[s.item_hash])
    ]
    close = await _similar(checkable, facts, embed, similar) if checkable else set()
    out: dict[str, list[tuple[str, str]]] = {}
    for unit in pending:
        if id(unit) not in close:
            out.setdefault(unit.item_hash, []).append((unit.speaker, unit.text))
    return out


def _keys_present(sentence: str, texts: list[str]) -> bool:
    return lexically_covered(sentence, "\n".join(texts))[1]


async def _similar(pending: list[Sentence], facts: dict[str, list[str]], embed: Embed, similar: float) -> set[int]:
    """ids of the sentences one of their item's facts says in other words."""
    fact_texts = list(dict.fromkeys(t for s in pending for t in facts[s.item_hash]))
    vectors: np.ndarray = np.asarray(await embed([s.text for s in pending] + fact_texts), dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    vectors = vectors / np.where(norms == 0, 1, norms)
    sentence_vectors, fact_vectors = vectors[: len(pending)], vectors[len(pending) :]
    index = {t: i for i, t in enumerate(fact_texts)}
    close: set[int] = set()
    for row, sentence in enumerate(pending):
        rows = [index[t] for t in facts[sentence.item_hash]]
        if rows and float(np.max(fact_vectors[rows] @ sentence_vectors[row])) >= similar:
            close.add(id(sentence))
    return close


def raw_lines(parts: list[tuple[str, str]]) -> list[str]:
    """Uncovered sentences as raw text, one line per run of one speaker ("user: … …")."""
    lines: list[tuple[str, list[str]]] = []
    for speaker, text in parts:
        if lines and lines[-1][0] == speaker:
            lines[-1][1].append(text)
        else:
            lines.append((speaker, [text]))
    return [f"{speaker}: {' '.join(texts)}" for speaker, texts in lines]


__all__ = ["content_terms", "informative", "lexically_covered", "raw_lines", "sentences", "uncovered"]
