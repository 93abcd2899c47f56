"""The multilingual retrieval set (set.json): one user's memories in Chinese, English, Spanish and code-switched
Chinese/English, and questions that ask for one memory each in other words.

Categories: `zh` (a Chinese memory, a Chinese paraphrase), `cross` (question and memory in different languages:
zh/en/es in every direction), `es` (Spanish paraphrase) and `mixed` (code-switched memories, questions in either
language, including names written in the other script: 张伟 / Zhang Wei). A paraphrase shares no content word
with its memory (`shared_words` is empty for every question; tests/test_multilingual.py checks it).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from memwrap.engine.language.text import ZH_STOPWORDS, search_text

SET_FILE = Path(__file__).resolve().parent / "set.json"
CATEGORIES: tuple[str, ...] = ("zh", "cross", "es", "mixed")

# Function words of the Latin-script languages in the set; everything else is a content word.
_LATIN_STOPWORDS = frozenset(
    """
    a an the and or but if of to in on at by for with from as is are was were be been am do does did have has had
    i me my mine you your he him his she her it its we us our they them their this that these those what when where
    who whom which why how can could will would should may might must not no now than then there here so too very
    all any some each every one two about into over after before up down out off again once just also only
    el la los las un una unos unas y o pero si de del al a en con por para como que qué es son era fue ser estar
    estoy está están tengo tiene mi mis tu tus su sus me te se le lo nos yo él ella cuál cuáles quién dónde cuándo
    cómo muy más ya no sí esta este esa ese
    """.split()
)
_LATIN_WORD = re.compile(r"[a-záéíóúñü]+(?:'[a-z]+)?")
_SUFFIXES = ("ing", "ed", "es", "s", "ly")


@dataclass(frozen=True)
class Memory:
    id: str
    text: str


@dataclass(frozen=True)
class Question:
    id: str
    category: str
    text: str
    evidence: tuple[str, ...]


@dataclass(frozen=True)
class MultilingualSet:
    memories: list[Memory]
    questions: list[Question]

    def memory(self, memory_id: str) -> Memory:
        return next(m for m in self.memories if m.id == memory_id)


def load_set(path: Path = SET_FILE) -> MultilingualSet:
    raw = json.loads(path.read_text(encoding="utf-8"))
    memories = [Memory(m["id"], m["text"]) for m in raw["memories"]]
    questions = [Question(q["id"], q["category"], q["text"], tuple(q["evidence"])) for q in raw["questions"]]
    return MultilingualSet(memories, questions)


def _stem(word: str) -> str:
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def content_words(text: str) -> set[str]:
    """Han words as the keyword arm indexes them (jieba, dictionary sub-words, no stopwords) and stemmed Latin
    words other than function words."""
    words = {w for w in search_text(text).split() if w and not w.isascii() and w not in ZH_STOPWORDS}
    for word in _LATIN_WORD.findall(text.lower()):
        if word not in _LATIN_STOPWORDS and len(word) > 1:
            words.add(_stem(word.replace("'s", "")))
    return words


def shared_words(question: Question, data: MultilingualSet) -> set[str]:
    """Content words a question has in common with its evidence."""
    return set().union(*(content_words(question.text) & content_words(data.memory(e).text) for e in question.evidence))
