"""Entity resolution per bank: the names a model extracted → the bank's canonical entities, aliases learnt once.

For every name, in this order:
1. an alias learnt before (老张 → 张伟), else the entity with exactly that key;
2. names the model grouped as one entity ({"name": "张伟", "aliases": ["Zhang Wei", "老张"]}) join the group's
   existing entity, or the group's name when none exists; each other member becomes an alias ('llm');
3. a name still unknown is compared with the bank's entities that share trigrams with it (pg_trgm index on
   entities.name_key), by co-occurrence (the candidate already appears in memories together with the other
   entities of this fact) and by the embedding similarity of the names. Only near-certain matches merge, and
   only with shared company: a spelling variant ("Carolin" / "Caroline") or a shorter form of the name
   ("Alice" / "Alice Smith"). A merge is remembered as an alias ('similar').
Anything else is a new entity. Existing entities are never merged with each other here.

Embeddings only veto. The packaged MiniLM scores misspellings low ("carolin"/"caroline" 0.44, no better than
"paris"/"parish" 0.29) and gives every unknown CJK name the same vector ("老张"/"张伟" 1.0), so names with
CJK characters are never merged by similarity at all: for them only the model's aliases count.
"""

from __future__ import annotations

import difflib
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from memwrap.engine.language.entities import entity_key, is_entity_name
from memwrap.engine.language.text import has_cjk
from memwrap.engine.retain.extract_reply import EntityNames
from memwrap.store.pg_types import Connection, Executor

# Thresholds for merging an unknown name into an existing entity (see the module docstring).
TYPO_RATIO = 0.85  # difflib ratio of the keys
TYPO_MIN_CHARS = 5  # "anna"/"hanna" are two names, not a typo
# A veto: below it the names mean different things. all-MiniLM-L6-v2's; the model's own value comes from
# memwrap/engine/embed/profiles.py (0.45 for multilingual-e5-small; short forms: 0.60 for both).
TYPO_COSINE = 0.35
SHORT_FORM_COSINE = 0.60
CANDIDATES_PER_NAME = 3

KNOWN = """
SELECT k AS key, e.name_key, e.name
FROM unnest($2::text[]) AS k
CROSS JOIN LATERAL (
    (SELECT e.name_key, e.name, 0 AS pref
     FROM entity_aliases a JOIN entities e ON e.bank_id = a.bank_id AND e.id = a.entity_id
     WHERE a.bank_id = $1 AND a.alias_key = k)
    UNION ALL
    (SELECT e.name_key, e.name, 1 FROM entities e WHERE e.bank_id = $1 AND e.name_key = k)
    ORDER BY pref
    LIMIT 1
) e
"""

# `%` is pg_trgm's similarity operator (default threshold 0.3): it is what lets the trigram index answer.
SIMILAR = """
SELECT k AS key, c.name_key, c.name, c.sim
FROM unnest($2::text[]) AS k
CROSS JOIN LATERAL (
    SELECT e.name_key, e.name, similarity(e.name_key, k) AS sim
    FROM entities e
    WHERE e.bank_id = $1 AND e.name_key % k AND e.name_key <> k
    ORDER BY sim DESC
    LIMIT $3
) c
"""

# Pairs (candidate, other entity) that already appear in one memory together.
COMPANY = """
SELECT DISTINCT e1.name_key AS candidate, e2.name_key AS other
FROM entities e1
JOIN unit_entities u1 ON u1.bank_id = e1.bank_id AND u1.entity_id = e1.id
JOIN unit_entities u2 ON u2.bank_id = u1.bank_id AND u2.unit_id = u1.unit_id AND u2.entity_id <> u1.entity_id
JOIN entities e2 ON e2.bank_id = u2.bank_id AND e2.id = u2.entity_id
WHERE e1.bank_id = $1 AND e1.name_key = ANY($2::text[]) AND e2.name_key = ANY($3::text[])
"""

ENSURE_ENTITIES = """
INSERT INTO entities (bank_id, id, name, name_key)
SELECT $1, gen_random_uuid(), t.name, t.name_key FROM unnest($2::text[], $3::text[]) AS t(name_key, name)
ORDER BY t.name_key
ON CONFLICT (bank_id, name_key) DO NOTHING
"""

INSERT_ALIASES = """
INSERT INTO entity_aliases (bank_id, alias_key, alias, entity_id, source)
SELECT $1, t.alias_key, t.alias, e.id, t.source
FROM unnest($2::text[], $3::text[], $4::text[], $5::text[]) AS t(alias_key, alias, canonical_key, source)
JOIN entities e ON e.bank_id = $1 AND e.name_key = t.canonical_key
ON CONFLICT (bank_id, alias_key) DO NOTHING
"""

Embed = Callable[[Sequence[str]], Awaitable[np.ndarray]]


@dataclass(frozen=True)
class Canonical:
    key: str
    name: str


@dataclass(frozen=True)
class Alias:
    alias_key: str
    alias: str
    canonical: Canonical
    source: str  # 'llm' | 'similar'


@dataclass
class Resolution:
    names: dict[str, Canonical] = field(default_factory=dict)  # entity_key(surface name) → canonical
    aliases: list[Alias] = field(default_factory=list)

    def entities(self, names: Sequence[str]) -> dict[str, str]:
        """A fact's entity names → {canonical key: canonical name}, as PreparedUnit.entities wants them."""
        out: dict[str, str] = {}
        for name in names:
            key = entity_key(name)
            if not is_entity_name(name):
                continue
            canonical = self.names.get(key, Canonical(key, name))
            out.setdefault(canonical.key, canonical.name)
        return out


async def resolve(
    conn: Executor,
    embed: Embed,
    bank_id: str,
    mentions: Sequence[Sequence[str]],
    groups: Sequence[EntityNames],
    *,
    typo_cosine: float = TYPO_COSINE,
) -> Resolution:
    """Resolve the entity names of a batch of facts (`mentions`: one list of names per fact)."""
    surfaces: dict[str, str] = {}
    for name in [n for names in mentions for n in names] + [n for g in groups for n in (g.name, *g.aliases)]:
        if is_entity_name(name):
            surfaces.setdefault(entity_key(name), name)
    resolution = Resolution()
    if not surfaces:
        return resolution
    rows = await conn.fetch(KNOWN, bank_id, sorted(surfaces))
    known = {r["key"]: Canonical(r["name_key"], r["name"]) for r in rows}
    resolution.names.update(known)

    for group in groups:
        members = [(entity_key(n), n) for n in (group.name, *group.aliases) if is_entity_name(n)]
        if not members:
            continue
        existing = [known[k] for k, _ in members if k in known]
        canonical = existing[0] if existing else Canonical(*members[0])
        for key, name in members:
            if key in known or key == canonical.key:
                resolution.names.setdefault(key, canonical)
                continue
            resolution.names[key] = canonical
            resolution.aliases.append(Alias(key, name, canonical, "llm"))

    unknown = [k for k in surfaces if k not in resolution.names and not has_cjk(k)]
    if unknown:
        await _resolve_similar(conn, embed, bank_id, unknown, surfaces, mentions, resolution, typo_cosine)
    for key, name in surfaces.items():
        resolution.names.setdefault(key, Canonical(key, name))
    return resolution


async def _resolve_similar(
    conn: Executor,
    embed: Embed,
    bank_id: str,
    unknown: list[str],
    surfaces: dict[str, str],
    mentions: Sequence[Sequence[str]],
    resolution: Resolution,
    typo_cosine: float = TYPO_COSINE,
) -> None:
    rows = await conn.fetch(SIMILAR, bank_id, unknown, CANDIDATES_PER_NAME)
    if not rows:
        return
    # The entities each unknown name is mentioned with, by canonical key, for the co-occurrence test.
    company: dict[str, set[str]] = {}
    for names in mentions:
        keys = {entity_key(n) for n in names} - {""}
        for key in keys:
            company.setdefault(key, set()).update(resolution.names.get(k, Canonical(k, k)).key for k in keys - {key})
    candidates = sorted({r["name_key"] for r in rows})
    others = sorted({k for ks in company.values() for k in ks})
    together = (
        {(r["candidate"], r["other"]) for r in await conn.fetch(COMPANY, bank_id, candidates, others)}
        if others
        else set()
    )
    texts = sorted({*unknown, *candidates})
    vectors = await embed(texts)
    index = {t: i for i, t in enumerate(texts)}
    best: dict[str, tuple[float, Canonical]] = {}
    for row in rows:
        key, candidate = row["key"], row["name_key"]
        cosine = float(np.dot(vectors[index[key]], vectors[index[candidate]]))
        shared_company = any((candidate, other) in together for other in company.get(key, ()))
        if _same_entity(key, candidate, cosine, shared_company, typo_cosine):
            score = cosine + float(row["sim"])
            if key not in best or score > best[key][0]:
                best[key] = (score, Canonical(candidate, row["name"]))
    for key, (_, canonical) in best.items():
        resolution.names[key] = canonical
        resolution.aliases.append(Alias(key, surfaces[key], canonical, "similar"))


def _same_entity(
    key: str, candidate: str, cosine: float, shared_company: bool, typo_cosine: float = TYPO_COSINE
) -> bool:
    if not shared_company or has_cjk(candidate):
        return False
    if (
        min(len(key), len(candidate)) >= TYPO_MIN_CHARS
        and cosine >= typo_cosine
        and difflib.SequenceMatcher(None, key, candidate).ratio() >= TYPO_RATIO
    ):
        return True  # a spelling variant
    short, long = sorted((key.split(), candidate.split()), key=len)
    is_short_form = len(short) < len(long) and all(word in long for word in short)
    return is_short_form and cosine >= SHORT_FORM_COSINE


async def write_aliases(conn: Connection, bank_id: str, aliases: Sequence[Alias]) -> None:
    """Remember aliases (inside the retain transaction). The canonical entity is created if it is new."""
    if not aliases:
        return
    canon = {a.canonical.key: a.canonical.name for a in aliases}
    keys = sorted(canon)
    await conn.execute(ENSURE_ENTITIES, bank_id, keys, [canon[k] for k in keys])
    await conn.execute(
        INSERT_ALIASES,
        bank_id,
        [a.alias_key for a in aliases],
        [a.alias for a in aliases],
        [a.canonical.key for a in aliases],
        [a.source for a in aliases],
    )
