"""The Chinese names a bank has seen, as words of its keyword index: jieba's dictionary does not know them.

jieba segments a personal name it does not know by context, so the same name is cut differently from one
sentence to the next: 浩宇 is "浩 宇" in 浩宇住在上海 but "和浩宇" in 我和浩宇去吃饭, and 志明 is "志 明说" in
志明说明天开会 (8 of 14 common given names, each in 7 everyday sentences, came out cut two ways). A keyword search
for 浩宇 then misses the memory where jieba glued it to 和.

So every name of the bank's entities and aliases written in Han characters (two to eight of them) is a word of its
own, wherever it occurs, in addition to jieba's segmentation: on the way in (a memory's search text gets the names
it contains), on the way out (a question's names become keyword terms and entity keys), and for memories stored
before a name was first seen (their index gets it when it is, `backfill`). Additive, so jieba's own words keep
matching as before. Banks and questions without Han characters pay nothing.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Protocol

from memwrap.store.pg_types import Connection, Executor

_HAN_NAME = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]{2,8}")
_HAN_RUN = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]+")
HAN_NAME_SQL = "^[\u3400-\u9fff\uf900-\ufaff]{2,8}$"

# The bank's Han names that occur in a text ($2): entities' own names and their aliases.
NAMES_IN_TEXT = f"""
SELECT name FROM entities WHERE bank_id = $1 AND strpos($2, name) > 0 AND name ~ '{HAN_NAME_SQL}'
UNION
SELECT alias FROM entity_aliases WHERE bank_id = $1 AND strpos($2, alias) > 0 AND alias ~ '{HAN_NAME_SQL}'
"""

KNOWN_NAMES = """
SELECT name FROM entities WHERE bank_id = $1 AND name = ANY($2::text[])
UNION
SELECT alias FROM entity_aliases WHERE bank_id = $1 AND alias = ANY($2::text[])
"""

# Memories stored before a name was first seen: the name joins their index (a lexeme without a position, which
# the keyword arm's matching does not need).
BACKFILL = """
UPDATE memory_units SET search_tsv = search_tsv || array_to_tsvector(ARRAY[$2::text])
WHERE bank_id = $1 AND strpos(text, $2) > 0 AND NOT search_tsv @@ plainto_tsquery('simple', $2)
"""


def has_han(text: str) -> bool:
    return _HAN_RUN.search(text) is not None


def han_names(names: Iterable[str]) -> set[str]:
    """The names that are written in Han characters only (2-8 of them): the ones jieba may cut."""
    return {n.strip() for n in names if _HAN_NAME.fullmatch(n.strip())}


def with_names(search_text: str, names: Iterable[str]) -> str:
    """A memory's or a question's search text with each of `names` as a word of its own (once)."""
    have = set(search_text.split())
    extra = sorted(n for n in names if n not in have)
    return f"{search_text} {' '.join(extra)}" if extra else search_text


async def names_in(conn: Executor, bank_id: str, text: str) -> set[str]:
    """The bank's Han names that occur in `text` (nothing to look up when it has no Han character)."""
    if not has_han(text):
        return set()
    return {r["name"] for r in await conn.fetch(NAMES_IN_TEXT, bank_id, text)}


async def new_names(conn: Connection, bank_id: str, names: set[str]) -> set[str]:
    """Which of `names` the bank has not seen yet (call before writing them)."""
    if not names:
        return set()
    return names - {r["name"] for r in await conn.fetch(KNOWN_NAMES, bank_id, sorted(names))}


async def backfill(conn: Connection, bank_id: str, names: Iterable[str]) -> None:
    """Give memories stored before these names were seen the names as words (one scan of the bank per name)."""
    for name in sorted(names):
        await conn.execute(BACKFILL, bank_id, name)


class NamedUnit(Protocol):
    """What naming reads and writes of a unit about to be stored (retain's PreparedUnit): the bank's names are
    below retain, so they see a unit through this."""

    search_text: str

    @property
    def text(self) -> str: ...

    @property
    def entities(self) -> Mapping[str, str]: ...


async def add_name_words(conn: Connection, bank_id: str, units: Sequence[NamedUnit]) -> set[str]:
    """Before `units` are written: give each the bank's names (and its own entities' names) it contains as words.
    Returns the names the bank sees for the first time: `backfill` them once the units' entities are written."""
    texts = "\n".join(u.text for u in units)
    if not has_han(texts):
        return set()
    own = han_names(name for u in units for name in u.entities.values())
    fresh = await new_names(conn, bank_id, own)
    known = await names_in(conn, bank_id, texts) | own
    for unit in units:
        unit.search_text = with_names(unit.search_text, (n for n in known if n in unit.text))
    return fresh
