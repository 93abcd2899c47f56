"""Cross-script and familiar names of one entity, learnt as aliases without an LLM: 张伟 / Zhang Wei / 老张.

When retain writes entities, two kinds of alias rows are added (entity_aliases, source 'similar'; the first
writer of an alias key keeps it):

- romanised: a Han name of two to four characters gets its pinyin spellings as aliases ("zhang wei",
  "wei zhang" and "zhangwei" for 张伟; "beijing" for 北京), so a mention of Zhang Wei (and an LLM-extracted one,
  through resolution) meets 张伟;
- familiar: 老张 / 小张 (老 or 小 before a surname) becomes an alias of the one full name with that surname the bank
  knows — in Han (张伟) or romanised (Zhang Wei, Wei Zhang) — once there is exactly one; with two candidates it
  stays unlinked, since 老张 could be either.

Recall follows these aliases both ways (memwrap/engine/recall/names.py), for the keyword and the graph arms.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping

from memwrap.engine.language.entities import ZH_COMPOUND_SURNAMES, ZH_FAMILIAR_PREFIXES, ZH_SURNAMES
from memwrap.engine.language.text import HAN_RUN_RE, ZH_STOPWORDS
from memwrap.store.pg_types import Connection

SOURCE = "similar"  # entity_aliases.source: found by resolution (not said by a model)

INSERT_ALIASES = """
INSERT INTO entity_aliases (bank_id, alias_key, alias, entity_id, source)
SELECT $1, t.alias_key, t.alias, e.id, $5
FROM unnest($2::text[], $3::text[], $4::text[]) AS t(alias_key, alias, target_key)
JOIN entities e ON e.bank_id = $1 AND e.name_key = t.target_key
WHERE t.alias_key <> t.target_key
  -- never the reverse of a link already made (张伟 → 老张 learnt from a model: 老张 → 张伟 would make a cycle)
  AND NOT EXISTS (
      SELECT 1 FROM entity_aliases back JOIN entities s ON s.bank_id = back.bank_id AND s.id = back.entity_id
      WHERE back.bank_id = $1 AND back.alias_key = t.target_key AND s.name_key = t.alias_key)
ON CONFLICT (bank_id, alias_key) DO NOTHING
"""

# Full names that may be the one a familiar name means: Han names starting with the surname, and (through their
# romanised aliases or their own key) Latin names with the romanised surname first or last.
FULL_NAME_CANDIDATES = """
SELECT DISTINCT coalesce(target.name_key, e.name_key) AS name_key
FROM entities e
LEFT JOIN entity_aliases a ON a.bank_id = e.bank_id AND a.alias_key = e.name_key
LEFT JOIN entities target ON target.bank_id = a.bank_id AND target.id = a.entity_id
WHERE e.bank_id = $1
  AND e.name_key <> ALL($4::text[])
  AND (
    (e.name_key LIKE $2 || '%' AND char_length(e.name_key) BETWEEN char_length($2) + 1 AND char_length($2) + 3)
    OR e.name_key LIKE $3 || ' %' OR e.name_key LIKE '% ' || $3
  )
  AND e.name_key !~ ' .* '
LIMIT 3
"""

FAMILIAR_FORMS = "SELECT name_key FROM entities WHERE bank_id = $1 AND name_key = ANY($2::text[])"


@functools.lru_cache(maxsize=1)
def _pinyin():
    from pypinyin import lazy_pinyin  # imported on first use: most text is not Chinese

    return lazy_pinyin


def _syllables(han: str) -> list[str]:
    return [s.lower() for s in _pinyin()(han)]


def split_surname(name: str) -> tuple[str, str] | None:
    """(surname, given name) of a Han personal name, or None."""
    for surname in (name[:2], name[:1]):
        given = name[len(surname) :]
        if (surname in ZH_COMPOUND_SURNAMES or surname in ZH_SURNAMES) and 1 <= len(given) <= 2:
            return None if given in ZH_STOPWORDS else (surname, given)
    return None


def romanised_keys(name: str) -> list[str]:
    """Entity keys a Latin-script text would give the same name: 张伟 → ["zhang wei", "wei zhang", "zhangwei"]."""
    if not 2 <= len(name) <= 4 or HAN_RUN_RE.fullmatch(name) is None:
        return []
    keys: list[str] = []
    parts = split_surname(name)
    if parts is not None:
        surname, given = ("".join(_syllables(p)) for p in parts)
        keys += [f"{surname} {given}", f"{given} {surname}"]
    keys.append("".join(_syllables(name)))
    return [k for k in dict.fromkeys(keys) if k.isascii() and k.replace(" ", "").isalpha()]


def familiar_surname(name: str) -> str | None:
    """The surname in 老张 / 小张 / 老欧阳, or None."""
    if (
        len(name) >= 2
        and name[0] in ZH_FAMILIAR_PREFIXES
        and (name[1:] in ZH_SURNAMES or name[1:] in ZH_COMPOUND_SURNAMES)
    ):
        return name[1:]
    return None


async def link_names(conn: Connection, bank_id: str, entities: Mapping[str, str]) -> None:
    """Add the romanised and familiar aliases of the entities just written ({key: name}), inside the write."""
    romanised = [
        (alias, alias.title(), key)
        for key, name in entities.items()
        if familiar_surname(name) is None
        for alias in romanised_keys(name)
    ]
    if romanised:  # first: a familiar name's candidates below are counted through them
        await _insert(conn, bank_id, romanised)
    aliases: list[tuple[str, str, str]] = []  # (alias key, alias, target entity key)
    familiar: dict[str, str] = {}  # familiar form key -> surname, for the forms that may need a target
    new_surnames: set[str] = set()  # surnames of full names just written: their familiar forms may now resolve
    for key, name in entities.items():
        surname = familiar_surname(name)
        if surname is not None:
            familiar[key] = surname
        elif (parts := split_surname(name)) is not None:
            new_surnames.add(parts[0])
    if new_surnames:
        forms = [prefix + s for s in sorted(new_surnames) for prefix in sorted(ZH_FAMILIAR_PREFIXES)]
        for row in await conn.fetch(FAMILIAR_FORMS, bank_id, forms):
            familiar.setdefault(row["name_key"], row["name_key"][1:])
    for key, surname in familiar.items():
        spelled = "".join(_syllables(surname))
        forms = [prefix + surname for prefix in sorted(ZH_FAMILIAR_PREFIXES)]
        rows = await conn.fetch(FULL_NAME_CANDIDATES, bank_id, surname, spelled, forms)
        targets = {r["name_key"] for r in rows}
        if len(targets) == 1:
            aliases.append((key, entities.get(key, key), targets.pop()))
    if aliases:
        await _insert(conn, bank_id, aliases)


async def _insert(conn: Connection, bank_id: str, aliases: Iterable[tuple[str, str, str]]) -> None:
    rows = list({a[0]: a for a in aliases}.values())
    await conn.execute(
        INSERT_ALIASES, bank_id, [r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows], SOURCE
    )


__all__ = ["familiar_surname", "link_names", "romanised_keys", "split_surname"]
