"""The other names of the entities a question mentions: 张伟 for "Zhang Wei", Zhang Wei and 张伟 for 老张.

An entity's names are its own and its aliases (entity_aliases: said by an extraction model, or found by
resolution — spelling variants, romanisations, familiar forms; memwrap/engine/retain/name_links.py). A name that is
an alias of an entity, and entities whose own name is one of that entity's aliases, are the same entity here. The
keyword arm searches for every name of the question's entities, the graph arm starts from all of them, so a question
in one script reaches memories that name the entity in another.
"""

from __future__ import annotations

from memwrap.store.pg_types import Executor

RELATED = """
WITH asked AS (SELECT unnest($2::text[]) AS k),
named AS (
    SELECT e.id FROM asked JOIN entities e ON e.bank_id = $1 AND e.name_key = asked.k
    UNION
    SELECT a.entity_id FROM asked JOIN entity_aliases a ON a.bank_id = $1 AND a.alias_key = asked.k
),
same AS (
    SELECT id FROM named
    UNION
    SELECT e.id
    FROM named
    JOIN entity_aliases a ON a.bank_id = $1 AND a.entity_id = named.id
    JOIN entities e ON e.bank_id = $1 AND e.name_key = a.alias_key
)
SELECT e.name, e.name_key FROM same JOIN entities e ON e.bank_id = $1 AND e.id = same.id
WHERE e.name_key <> ALL($2::text[])
ORDER BY e.mention_count DESC, e.name_key
LIMIT $3
"""

# More names than this add noise to the keyword query, not recall.
MAX_RELATED = 12


async def related_names(conn: Executor, bank_id: str, keys: list[str]) -> list[tuple[str, str]]:
    """(name, key) of the entities that are the same as those `keys` name, other than the keys themselves."""
    if not keys:
        return []
    rows = await conn.fetch(RELATED, bank_id, keys, MAX_RELATED)
    return [(r["name"], r["name_key"]) for r in rows]
