"""Consolidation without an LLM: near-duplicate facts become one observation that cites all of them, and a
statement of change records the change.

Two facts are near-duplicates when their embeddings' cosine is at least `observation_threshold` (default 0.92),
they are in the same bank and tag scope (exactly the same tags), they agree on negation and numbers —
MiniLM puts "I am vegetarian" and "I am not vegetarian" at 0.94, and "my flight is on May 3" and "… May 4" at
0.97 — and they share most of their words: a raw turn's vector carries the turn before it (retain embeds
context), so two turns of one session can be near in vector and say different things. A new fact joins the
observation of its nearest near-duplicate; near-duplicates that belong to no observation yet start one. The
observation uses the words of its earliest fact (it is a restatement, so any of them would do; the earliest keeps
the text stable as evidence accumulates).

A fact that states a change of earlier facts (language/changes.py: "Actually I switched to VS Code" after "I use
Neovim") is never their support. When one of them is evidence of an observation, the observation is contradicted:
its supporting evidence becomes 'superseded' and its text the new statement (its history keeps the old one); when
none is, a new observation records the change: the old statements superseded, the new one supporting.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from uuid import UUID, uuid4

import asyncpg
import numpy as np

from memwrap.engine.language.changes import Statement, replaces, states_change, topic_terms
from memwrap.engine.learn.observations import CreateOp, EvidenceIn, Plan, UpdateOp
from memwrap.engine.recall.arms import EXACT_SCAN_MAX
from memwrap.store.pg_types import Connection
from memwrap.store.vector_index import indexed_distance, vector_dim

NEIGHBOURS = 10

_NEGATION = re.compile(
    r"\b(?:not|no|never|none|nobody|nothing|neither|nor|without|cannot)\b|n['’]t\b|[不没沒未别別非无無]", re.IGNORECASE
)
_NUMBER = re.compile(r"\d+(?:[.,:]\d+)*")


@dataclass
class Fact:
    """A unit as consolidation sees it."""

    id: UUID
    seq: int
    text: str
    tags: list[str]
    mentioned_at: datetime
    document_id: str | None
    item_hash: str
    speaker: str | None = None

    @classmethod
    def from_row(cls, row: asyncpg.Record) -> Fact:
        """From a row of the queries that read units for consolidation (id, seq, text, tags, …, speaker)."""
        return cls(
            row["id"],
            row["seq"],
            row["text"],
            list(row["tags"]),
            row["mentioned_at"],
            row["document_id"],
            row["item_hash"],
            row["speaker"],
        )

    @property
    def statement(self) -> Statement:
        return Statement(self.text, self.speaker, self.mentioned_at)


@dataclass
class Neighbour:
    id: UUID
    seq: int
    text: str
    mentioned_at: datetime
    similarity: float


def _signature(text: str) -> tuple[bool, frozenset[str]]:
    return bool(_NEGATION.search(text)), frozenset(_NUMBER.findall(text))


def compatible(a: str, b: str) -> bool:
    """Same polarity and the same numbers: cosine alone cannot tell "I do" from "I don't"."""
    return _signature(a) == _signature(b)


def restates(a: str, b: str) -> bool:
    """Whether two statements share most of their words (at least half of the shorter one's content words): a
    restatement does, two turns near only through the context their vectors carry do not."""
    words_a, words_b = topic_terms(a)[0], topic_terms(b)[0]
    if not words_a or not words_b:
        return not words_a and not words_b
    return len(words_a & words_b) * 2 >= min(len(words_a), len(words_b))


# Big banks: each new fact's nearest units through the HNSW index (filtered by bank and exact tag scope).
NEAREST_INDEXED = """
SELECT b.id AS unit_id, nn.id, nn.seq, nn.text, nn.mentioned_at, nn.similarity
FROM memory_units b
CROSS JOIN LATERAL (
    SELECT m.id, m.seq, m.text, m.mentioned_at, 1 - (m.embedding <=> b.embedding) AS similarity
    FROM memory_units m
    WHERE m.bank_id = b.bank_id AND m.id <> b.id AND m.fact_type <> 'observation'
      AND m.invalidated_at IS NULL AND (m.expires_at IS NULL OR m.expires_at > now())
      AND m.tags @> b.tags AND m.tags <@ b.tags
    ORDER BY {order}
    LIMIT $3
) nn
WHERE b.bank_id = $1 AND b.id = ANY($2::uuid[]) AND b.embedding IS NOT NULL AND nn.similarity >= $4
ORDER BY nn.similarity DESC, nn.id
"""

# Small banks: every candidate's vector at once, compared in numpy (an exact scan per fact in SQL is quadratic
# work for the database: 3,000 facts took 20 s that way, under a second this way).
CANDIDATES = """
SELECT id, seq, text, mentioned_at, tags, embedding FROM memory_units
WHERE bank_id = $1 AND fact_type <> 'observation' AND invalidated_at IS NULL AND embedding IS NOT NULL
  AND (expires_at IS NULL OR expires_at > now())
"""


def _array(vector: object) -> np.ndarray:
    # pgvector's codec hands back its Vector type
    to_numpy = getattr(vector, "to_numpy", None)
    return np.asarray(to_numpy() if to_numpy else vector, dtype=np.float32)


async def _nearest(
    conn: Connection, bank_id: str, facts: Sequence[Fact], threshold: float, bank_size: int
) -> dict[UUID, list[Neighbour]]:
    """Each fact's near-duplicates (same exact tag scope, cosine >= threshold), best first, at most NEIGHBOURS."""
    found: dict[UUID, list[Neighbour]] = {}
    if bank_size > EXACT_SCAN_MAX:
        order = indexed_distance("m.embedding", "b.embedding", await vector_dim(conn))
        rows = await conn.fetch(
            NEAREST_INDEXED.format(order=order), bank_id, [f.id for f in facts], NEIGHBOURS, threshold
        )
        for r in rows:
            found.setdefault(r["unit_id"], []).append(
                Neighbour(r["id"], r["seq"], r["text"], r["mentioned_at"], float(r["similarity"]))
            )
        return found
    rows = await conn.fetch(CANDIDATES, bank_id)
    if not rows:
        return found
    index = {r["id"]: i for i, r in enumerate(rows)}
    matrix = np.stack([_array(r["embedding"]) for r in rows])
    scopes = [frozenset(r["tags"]) for r in rows]
    mine = [f for f in facts if f.id in index]
    if not mine:
        return found
    # Stored vectors are unit length: the dot product is the cosine.
    similarity = matrix[[index[f.id] for f in mine]] @ matrix.T
    for fact, row in zip(mine, similarity, strict=True):
        scope = frozenset(fact.tags)
        hits = [int(j) for j in np.flatnonzero(row >= threshold) if rows[j]["id"] != fact.id and scopes[j] == scope]
        hits.sort(key=lambda j: -row[j])
        found[fact.id] = [
            Neighbour(rows[j]["id"], rows[j]["seq"], rows[j]["text"], rows[j]["mentioned_at"], float(row[j]))
            for j in hits[:NEIGHBOURS]
        ]
    return found


MEMBERSHIP = """
SELECT e.memory_id, e.observation_id
FROM observation_evidence e JOIN memory_units o ON o.bank_id = e.bank_id AND o.id = e.observation_id
WHERE e.bank_id = $1 AND e.memory_id = ANY($2::uuid[]) AND e.stance = 'supports' AND o.invalidated_at IS NULL
ORDER BY e.added_at
"""


# Earlier statements a statement of change may replace: its nearest older memories of the same tag scope (which
# of them it replaces, language/changes.py decides from their words).
CHANGE_CANDIDATES = """
SELECT m.id, m.seq, m.text, m.mentioned_at, m.speaker, m.document_id, m.item_hash, m.tags
FROM memory_units m, (SELECT embedding, tags, mentioned_at FROM memory_units WHERE bank_id = $1 AND id = $2) b
WHERE m.bank_id = $1 AND m.id <> $2 AND m.fact_type <> 'observation' AND m.invalidated_at IS NULL
  AND m.mentioned_at < b.mentioned_at AND m.tags @> b.tags AND m.tags <@ b.tags AND m.embedding IS NOT NULL
ORDER BY m.embedding <=> b.embedding, m.id
LIMIT $3
"""
CHANGE_NEIGHBOURS = 20


async def _replaced(conn: Connection, bank_id: str, facts: Sequence[Fact]) -> dict[UUID, list[Fact]]:
    """For each fact that states a change, the earlier facts it replaces (language/changes.replaces)."""
    found: dict[UUID, list[Fact]] = {}
    for fact in facts:
        if not states_change(fact.text):
            continue
        rows = await conn.fetch(CHANGE_CANDIDATES, bank_id, fact.id, CHANGE_NEIGHBOURS)
        older = [Fact.from_row(r) for r in rows]
        replaced = [o for o in older if replaces(fact.statement, o.statement)]
        if replaced:
            found[fact.id] = replaced
    return found


async def plan_batch(
    conn: Connection, bank_id: str, facts: Sequence[Fact], *, threshold: float, bank_size: int
) -> Plan:
    if not facts:
        return Plan()
    texts = {f.id: f.text for f in facts}
    neighbours = {
        fact_id: [n for n in near if compatible(texts[fact_id], n.text) and restates(texts[fact_id], n.text)]
        for fact_id, near in (await _nearest(conn, bank_id, facts, threshold, bank_size)).items()
    }
    changes = await _replaced(conn, bank_id, facts)
    involved = (
        {f.id for f in facts}
        | {n.id for ns in neighbours.values() for n in ns}
        | {o.id for olds in changes.values() for o in olds}
    )
    member_of: dict[UUID, UUID] = {}
    for r in await conn.fetch(MEMBERSHIP, bank_id, list(involved)):
        member_of.setdefault(r["memory_id"], r["observation_id"])

    plan = Plan()
    creates: dict[UUID, CreateOp] = {}
    updates: dict[UUID, UpdateOp] = {}
    for fact in sorted(facts, key=lambda f: f.seq):
        if fact.id in member_of:
            continue  # already evidence (a re-run, or pulled in by an earlier fact of this batch)
        if fact.id in changes:
            _record_change(fact, changes[fact.id], member_of, creates, updates)
            continue
        near = sorted(neighbours.get(fact.id, []), key=lambda n: -n.similarity)
        joined = next((member_of[n.id] for n in near if n.id in member_of), None)
        if joined is not None:
            member_of[fact.id] = joined
            if joined in creates:
                creates[joined].evidence.append(EvidenceIn(fact.id))
            else:
                updates.setdefault(joined, UpdateOp(id=joined, reason="restated")).evidence.append(EvidenceIn(fact.id))
            continue
        if not near:
            continue  # nothing like it yet: it stays a fact of its own
        members = [(fact.mentioned_at, fact.seq, fact.id, fact.text)] + [
            (n.mentioned_at, n.seq, n.id, n.text) for n in near
        ]
        members.sort()
        _, _, representative, text = members[0]
        observation_id = uuid4()
        creates[observation_id] = CreateOp(
            id=observation_id,
            text=text,
            scope=sorted(set(fact.tags)),
            origin="heuristic",
            evidence=[EvidenceIn(m[2]) for m in members],
            embedding=None,
            representative_id=representative,
            reason=f"{len(members)} near-duplicate statements",
        )
        for m in members:
            member_of[m[2]] = observation_id
    plan.creates = list(creates.values())
    plan.updates = list(updates.values())
    return plan


def _record_change(
    fact: Fact,
    replaced: list[Fact],
    member_of: dict[UUID, UUID],
    creates: dict[UUID, CreateOp],
    updates: dict[UUID, UpdateOp],
) -> None:
    """`fact` replaces `replaced`: each observation they support is contradicted (its text becomes the fact's), or,
    when none is, a new observation records the change (the old statements superseded, the new one supporting)."""
    reason = f"changed: {len(replaced)} earlier statement(s) replaced by a newer one"
    observations = list(dict.fromkeys(member_of[o.id] for o in replaced if o.id in member_of))
    for observation_id in observations:
        if observation_id in creates:  # started in this batch: it begins with the change already made
            create = creates[observation_id]
            for evidence in create.evidence:
                evidence.stance = "superseded"
            create.evidence.append(EvidenceIn(fact.id))
            create.text, create.representative_id, create.reason = fact.text, fact.id, reason
            create.own_vector = True
        else:
            update = updates.setdefault(observation_id, UpdateOp(id=observation_id))
            update.evidence.append(EvidenceIn(fact.id))
            update.text, update.change, update.origin = fact.text, "contradict", "heuristic"
            update.representative_id, update.reason = fact.id, reason
        member_of[fact.id] = observation_id
    if observations:
        return
    observation_id = uuid4()
    creates[observation_id] = CreateOp(
        id=observation_id,
        text=fact.text,
        scope=sorted(set(fact.tags)),
        origin="heuristic",
        evidence=[*(EvidenceIn(o.id, stance="superseded") for o in replaced), EvidenceIn(fact.id)],
        embedding=None,
        representative_id=fact.id,
        reason=reason,
        own_vector=True,
    )
    for member in (*replaced, fact):
        member_of[member.id] = observation_id
