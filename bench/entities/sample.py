"""The labelled sample of names (en.tsv, zh.tsv beside this file) and how an extractor is scored on it.

Each line is a chat message and its gold names. A name matches when entity_key() of a predicted entity equals
that of the gold name or of one of its alternative spellings ("Dr. Patel | Patel"). Optional names ("?Spanish")
count neither way. Precision is over predicted entities, recall over gold names; both are micro-averaged over
the split.

The split is fixed by a hash of each text, so adding a line never moves another one between dev and held-out.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from memwrap.engine.language.entities import entity_key

HERE = Path(__file__).resolve().parent
LANGUAGES = ("en", "zh")
SPLITS = ("dev", "heldout")


@dataclass(frozen=True)
class Example:
    text: str
    lang: str
    names: tuple[frozenset[str], ...]  # each gold name as the keys of its accepted spellings
    optional: frozenset[str]  # keys that are neither required nor counted against
    line: int

    @property
    def split(self) -> str:
        return split_of(self.text)


@dataclass
class Score:
    true_positives: int = 0
    false_positives: int = 0
    false_negatives: int = 0
    errors: list[tuple[Example, list[str], list[str]]] = field(default_factory=list)  # example, wrong, missed

    @property
    def precision(self) -> float:
        found = self.true_positives + self.false_positives
        return self.true_positives / found if found else 1.0

    @property
    def recall(self) -> float:
        wanted = self.true_positives + self.false_negatives
        return self.true_positives / wanted if wanted else 1.0

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else 0.0


def split_of(text: str) -> str:
    return SPLITS[hashlib.sha1(text.encode()).digest()[0] % 2]


def load(lang: str) -> list[Example]:
    examples = []
    for number, line in enumerate((HERE / f"{lang}.tsv").read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        text, _, gold = line.partition("\t")
        names, optional = [], set()
        for name in filter(None, (part.strip() for part in gold.split(";"))):
            if name.startswith("?"):
                optional.add(entity_key(name[1:]))
            else:
                names.append(frozenset(entity_key(spelling) for spelling in name.split("|")))
        examples.append(Example(text.replace("\\n", "\n"), lang, tuple(names), frozenset(optional), number))
    return examples


def examples(split: str | None = None, langs: Iterable[str] = LANGUAGES) -> list[Example]:
    """The sample's examples of `langs`, of one split or (split None) all of them."""
    return [e for lang in langs for e in load(lang) if split is None or e.split == split]


def score(extract: Callable[[str], list[str]], sample: Iterable[Example]) -> Score:
    result = Score()
    for example in sample:
        predicted = list(dict.fromkeys(entity_key(name) for name in extract(example.text)))
        matched: set[str] = set()
        for spellings in example.names:
            hit = next((key for key in predicted if key in spellings and key not in matched), None)
            if hit is None:
                result.false_negatives += 1
            else:
                result.true_positives += 1
                matched.add(hit)
        wrong = [key for key in predicted if key not in matched and key not in example.optional]
        result.false_positives += len(wrong)
        missed = [min(s, key=len) for s in example.names if not s & matched]
        if wrong or missed:
            result.errors.append((example, wrong, missed))
    return result
