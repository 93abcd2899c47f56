"""Observations in the store: applying a consolidation plan, keeping evidence, history and counts honest.

An observation is a memory unit of type 'observation' (so the recall arms find it like any memory) with a
side row in `observations`, its evidence in `observation_evidence` and every version in `observation_history`.
`proof_count` counts independent sources: evidence from the same document (or the same retained item, for
memories without a document id) counts once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal
from uuid import UUID

import asyncpg
import numpy as np

from memwrap.engine import webhooks
from memwrap.engine.language.change_cue import change_cue
from memwrap.engine.language.text import search_text
from memwrap.store.bank_lock import lock_bank
from memwrap.store.pg_types import Connection, Executor

QUOTE_CHARS = 300


@dataclass
class EvidenceIn:
    memory_id: UUID
    quote: str = ""
    # 'superseded': a statement the observation records as replaced (an earlier state, kept as history)
    stance: Literal["supports", "superseded"] = "supports"


@dataclass
class CreateOp:
    id: UUID
    text: str
    scope: list[str]
    origin: Literal["heuristic", "llm"]
    evidence: list[EvidenceIn]
    embedding: np.ndarray | None  # None: the representative's vector (it uses the representative's words)
    representative_id: UUID | None = None
    reason: str = ""
    # Embed the text itself rather than take the representative's vector (which carries the turn before it)
    own_vector: bool = False


@dataclass
class UpdateOp:
    id: UUID
    evidence: list[EvidenceIn] = field(default_factory=list)
    text: str | None = None  # None: evidence only, the text stays
    embedding: np.ndarray | None = None
    change: Literal["refine", "contradict"] = "refine"
    reason: str = ""
    origin: Literal["heuristic", "llm"] = "llm"
    representative_id: UUID | None = None  # whose words (and vector) the new text is, when it is a memory's


@dataclass
class DeleteOp:
    id: UUID
    reason: str


@dataclass
class Plan:
    creates: list[CreateOp] = field(default_factory=list)
    updates: list[UpdateOp] = field(default_factory=list)
    deletes: list[DeleteOp] = field(default_factory=list)


@dataclass
class Applied:
    created: list[UUID] = field(default_factory=list)
    updated: list[UUID] = field(default_factory=list)
    deleted: list[UUID] = field(default_factory=list)
    evidence_added: int = 0
    scopes: set[tuple[str, ...]] = field(default_factory=set)

    @property
    def touched(self) -> list[UUID]:
        return self.created + self.updated + self.deleted


def source_key(document_id: str | None, item_hash: str) -> str:
    """What makes two pieces of evidence independent: different documents (or different retained items)."""
    return f"doc:{document_id}" if document_id else f"item:{item_hash}"


# --- SQL ---------------------------------------------------------------------------------------------------

EVIDENCE_SOURCES = """
SELECT id, text, mentioned_at, document_id, item_hash
FROM memory_units
WHERE bank_id = $1 AND id = ANY($2::uuid[]) AND fact_type <> 'observation'
"""

INSERT_UNIT = """
INSERT INTO memory_units (bank_id, id, text, fact_type, metadata, tags, item_hash, mentioned_at, embedding, search_tsv,
                          change_cue)
VALUES ($1, $2, $3, 'observation', $4, $5, 'observation:' || $2::uuid::text, $6,
        coalesce($7, (SELECT r.embedding FROM memory_units r WHERE r.bank_id = $1 AND r.id = $9)),
        to_tsvector('english', $8), $10)
"""

INSERT_OBSERVATION = """
INSERT INTO observations (bank_id, id, scope, origin, representative_id) VALUES ($1, $2, $3, $4, $5)
"""

# Evidence added again takes the stance given now (a superseded statement restated supports again); its first
# quote stays.
ADD_EVIDENCE = """
INSERT INTO observation_evidence (bank_id, observation_id, memory_id, quote, evidenced_at, source_key, stance)
SELECT $1, $2, t.memory_id, t.quote, t.at, t.source, t.stance
FROM unnest($3::uuid[], $4::text[], $5::timestamptz[], $6::text[], $7::text[]) AS t(memory_id, quote, at, source,
  stance)
ON CONFLICT (bank_id, observation_id, memory_id) DO UPDATE SET stance = EXCLUDED.stance
"""

# The observation is linked to the entities of its evidence, so the graph arm reaches it too. Each new link is
# a mention (deleting a memory takes one mention off each of its entities, observations included).
LINK_ENTITIES = """
WITH linked AS (
    INSERT INTO unit_entities (bank_id, unit_id, entity_id)
    SELECT DISTINCT $1, $2::uuid, ue.entity_id
    FROM unit_entities ue WHERE ue.bank_id = $1 AND ue.unit_id = ANY($3::uuid[])
    ON CONFLICT DO NOTHING
    RETURNING entity_id
)
UPDATE entities e SET mention_count = e.mention_count + 1 FROM linked l WHERE e.bank_id = $1 AND e.id = l.entity_id
"""

REFRESH_STATS = """
WITH stats AS (
    SELECT o.id,
           count(DISTINCT e.source_key) FILTER (WHERE e.stance = 'supports' AND m.invalidated_at IS NULL) AS proofs,
           count(e.memory_id) FILTER (WHERE m.invalidated_at IS NULL) AS entries,
           min(e.evidenced_at) FILTER (WHERE e.stance = 'supports' AND m.invalidated_at IS NULL) AS first_at,
           max(e.evidenced_at) FILTER (WHERE e.stance = 'supports' AND m.invalidated_at IS NULL) AS last_at
    FROM observations o
    LEFT JOIN observation_evidence e ON e.bank_id = o.bank_id AND e.observation_id = o.id
    LEFT JOIN memory_units m ON m.bank_id = e.bank_id AND m.id = e.memory_id
    WHERE o.bank_id = $1 AND o.id = ANY($2::uuid[])
    GROUP BY o.id
), updated AS (
    UPDATE observations o
    SET proof_count = s.proofs, evidence_count = s.entries, first_evidence_at = s.first_at,
        last_evidence_at = s.last_at, updated_at = now()
    FROM stats s
    WHERE o.bank_id = $1 AND o.id = s.id
    RETURNING o.id, o.proof_count, o.evidence_count, o.first_evidence_at, o.last_evidence_at
), dated AS (
    -- The unit carries the evidence's time span, so the temporal arm and the renderer date it right.
    UPDATE memory_units u
    SET occurred_start = d.first_evidence_at, occurred_end = d.last_evidence_at,
        mentioned_at = coalesce(d.last_evidence_at, u.mentioned_at)
    FROM updated d
    WHERE u.bank_id = $1 AND u.id = d.id
)
SELECT id, proof_count, evidence_count FROM updated
"""

SUPPORTING_IDS = """
SELECT e.memory_id FROM observation_evidence e
JOIN memory_units m ON m.bank_id = e.bank_id AND m.id = e.memory_id
WHERE e.bank_id = $1 AND e.observation_id = $2 AND e.stance = 'supports' AND m.invalidated_at IS NULL
ORDER BY e.evidenced_at, e.memory_id
"""

INSERT_HISTORY = """
INSERT INTO observation_history (bank_id, observation_id, version, text, action, reason, proof_count, evidence_ids,
  valid_from)
SELECT $1, o.id, o.version, u.text, $3, $4, o.proof_count, $5::uuid[], $6
FROM observations o JOIN memory_units u ON u.bank_id = o.bank_id AND u.id = o.id
WHERE o.bank_id = $1 AND o.id = $2
"""

LOCK_OBSERVATIONS = """
SELECT o.id, o.version, o.origin, o.scope, u.text, u.invalidated_at
FROM observations o JOIN memory_units u ON u.bank_id = o.bank_id AND u.id = o.id
WHERE o.bank_id = $1 AND o.id = ANY($2::uuid[])
ORDER BY o.id
FOR UPDATE OF o
"""


# --- applying a plan ---------------------------------------------------------------------------------------


async def apply_plan(conn: Connection, bank_id: str, plan: Plan) -> Applied:
    """Write a plan's creates, updates and deletes. Call inside a transaction (the caller's, with its bookkeeping)."""
    applied = Applied()
    wanted = {e.memory_id for op in plan.creates for e in op.evidence}
    wanted |= {e.memory_id for op in plan.updates for e in op.evidence}
    sources = {r["id"]: r for r in await conn.fetch(EVIDENCE_SOURCES, bank_id, list(wanted))} if wanted else {}
    existing = (
        {
            r["id"]: r
            for r in await conn.fetch(
                LOCK_OBSERVATIONS, bank_id, [op.id for op in plan.updates] + [op.id for op in plan.deletes]
            )
        }
        if plan.updates or plan.deletes
        else {}
    )
    # The bank's row before any entity (store/bank_lock.py): each create bumps memory_count and then links the
    # next one's entities; a retain between them held those entities and waited for the bank row (issue 37).
    # After the observation rows above: forgetting's revise locks observations, then the bank (remove_observation).
    await lock_bank(conn, bank_id)

    for create in plan.creates:
        await _apply_create(conn, bank_id, create, sources, applied)

    for update in plan.updates:
        current = existing.get(update.id)
        if current is None or current["invalidated_at"] is not None:
            continue  # removed or invalidated while the plan was being made
        await _apply_update(conn, bank_id, update, current, sources, applied)

    for delete in plan.deletes:
        current = existing.get(delete.id)
        if current is None or current["invalidated_at"] is not None:
            continue
        await invalidate_observation(conn, bank_id, delete.id, delete.reason or "contradicted by newer facts")
        applied.deleted.append(delete.id)
        applied.scopes.add(tuple(current["scope"]))
    return applied


async def _apply_create(
    conn: Connection, bank_id: str, create: CreateOp, sources: dict[UUID, asyncpg.Record], applied: Applied
) -> None:
    """A new observation: its unit row and observation row, evidence, entity links, counts and first version."""
    evidence = [e for e in create.evidence if e.memory_id in sources]  # a source deleted meanwhile is dropped
    if not evidence:
        return
    first = min(sources[e.memory_id]["mentioned_at"] for e in evidence)
    await conn.execute(
        INSERT_UNIT,
        bank_id,
        create.id,
        create.text,
        {"origin": create.origin},
        sorted(create.scope),
        first,
        create.embedding,
        search_text(create.text),
        create.representative_id,
        change_cue(create.text, None),  # an observation has no speaker
    )
    await conn.execute(
        INSERT_OBSERVATION, bank_id, create.id, sorted(create.scope), create.origin, create.representative_id
    )
    await _add_evidence(conn, bank_id, create.id, evidence, sources)
    await conn.execute(LINK_ENTITIES, bank_id, create.id, [e.memory_id for e in evidence])
    await conn.execute("UPDATE banks SET memory_count = memory_count + 1 WHERE bank_id = $1", bank_id)
    await refresh_stats(conn, bank_id, [create.id])
    await record_version(conn, bank_id, create.id, "created", create.reason, valid_from=first, bump=False)
    applied.created.append(create.id)
    applied.evidence_added += len(evidence)
    applied.scopes.add(tuple(sorted(create.scope)))


async def _apply_update(
    conn: Connection,
    bank_id: str,
    update: UpdateOp,
    current: asyncpg.Record,
    sources: dict[UUID, asyncpg.Record],
    applied: Applied,
) -> None:
    """An observation changed: a contradiction supersedes its support, new evidence is added, and a new text is a
    new version."""
    evidence = [e for e in update.evidence if e.memory_id in sources]
    if update.change == "contradict":
        await conn.execute(
            "UPDATE observation_evidence SET stance = 'superseded' "
            "WHERE bank_id = $1 AND observation_id = $2 AND stance = 'supports'",
            bank_id,
            update.id,
        )
    if evidence:
        await _add_evidence(conn, bank_id, update.id, evidence, sources)
        await conn.execute(LINK_ENTITIES, bank_id, update.id, [e.memory_id for e in evidence])
    await refresh_stats(conn, bank_id, [update.id])
    new_text = update.text.strip() if update.text else None
    if new_text and new_text != current["text"]:
        await set_text(
            conn,
            bank_id,
            update.id,
            new_text,
            update.embedding,
            origin=update.origin,
            representative_id=update.representative_id,
        )
        since = min((sources[e.memory_id]["mentioned_at"] for e in evidence), default=None)
        action = "contradicted" if update.change == "contradict" else "refined"
        await record_version(conn, bank_id, update.id, action, update.reason, valid_from=since)
    applied.updated.append(update.id)
    applied.evidence_added += len(evidence)
    applied.scopes.add(tuple(current["scope"]))


async def _add_evidence(
    conn: Connection,
    bank_id: str,
    observation_id: UUID,
    evidence: Sequence[EvidenceIn],
    sources: dict[UUID, asyncpg.Record],
) -> None:
    rows = [sources[e.memory_id] for e in evidence]
    quotes = [_quote(e.quote, r["text"]) for e, r in zip(evidence, rows, strict=True)]
    await conn.execute(
        ADD_EVIDENCE,
        bank_id,
        observation_id,
        [e.memory_id for e in evidence],
        quotes,
        [r["mentioned_at"] for r in rows],
        [source_key(r["document_id"], r["item_hash"]) for r in rows],
        [e.stance for e in evidence],
    )


def _quote(quote: str, text: str) -> str:
    """The model's quote when it really is in the source; otherwise the source's own words."""
    quote = (quote or "").strip()
    if quote and quote.lower() in text.lower():
        return quote[:QUOTE_CHARS]
    return text[:QUOTE_CHARS]


async def refresh_stats(conn: Connection, bank_id: str, ids: Sequence[UUID]) -> dict[UUID, tuple[int, int]]:
    """Recount proof and evidence from the evidence table. Returns id → (proof_count, evidence_count)."""
    if not ids:
        return {}
    rows = await conn.fetch(REFRESH_STATS, bank_id, list(ids))
    return {r["id"]: (r["proof_count"], r["evidence_count"]) for r in rows}


async def set_text(
    conn: Connection,
    bank_id: str,
    observation_id: UUID,
    text: str,
    embedding: np.ndarray | None,
    *,
    origin: str,
    representative_id: UUID | None = None,
) -> None:
    # Without a vector of its own the text takes its representative's (the memory whose words it now is).
    await conn.execute(
        "UPDATE memory_units SET text = $3, search_tsv = to_tsvector('english', $4), "
        "embedding = coalesce($5, (SELECT r.embedding FROM memory_units r WHERE r.bank_id = $1 AND r.id = $7), "
        "embedding), metadata = metadata || jsonb_build_object('origin', $6::text) "
        "WHERE bank_id = $1 AND id = $2",
        bank_id,
        observation_id,
        text,
        search_text(text),
        embedding,
        origin,
        representative_id,
    )
    await conn.execute(
        "UPDATE observations SET origin = $3, representative_id = $4, updated_at = now() WHERE bank_id = $1 AND id = "
        "$2",
        bank_id,
        observation_id,
        origin,
        representative_id,
    )


async def record_version(
    conn: Connection,
    bank_id: str,
    observation_id: UUID,
    action: str,
    reason: str,
    *,
    valid_from: datetime | None = None,
    bump: bool = True,
) -> None:
    """Append the observation's current state to its history (a new version, unless it is the first)."""
    if bump:
        await conn.execute(
            "UPDATE observations SET version = version + 1 WHERE bank_id = $1 AND id = $2", bank_id, observation_id
        )
    evidence_ids = [r["memory_id"] for r in await conn.fetch(SUPPORTING_IDS, bank_id, observation_id)]
    await conn.execute(INSERT_HISTORY, bank_id, observation_id, action, reason, evidence_ids, valid_from)
    await webhooks.emit(
        conn, bank_id, "observation.changed", [observation_id], data={"action": action, "reason": reason}
    )


async def invalidate_observation(
    conn: Connection, bank_id: str, observation_id: UUID, reason: str, *, caused_by: UUID | None = None
) -> None:
    """Hide it from recall, reversibly (restore brings it back); the history says why."""
    await conn.execute(
        "UPDATE memory_units SET invalidated_at = now() WHERE bank_id = $1 AND id = $2 AND invalidated_at IS NULL",
        bank_id,
        observation_id,
    )
    await conn.execute(
        "INSERT INTO invalidations (bank_id, unit_id, reason, caused_by) VALUES ($1, $2, $3, $4) "
        "ON CONFLICT (bank_id, unit_id) DO UPDATE SET reason = EXCLUDED.reason, caused_by = EXCLUDED.caused_by, "
        "invalidated_at = now()",
        bank_id,
        observation_id,
        reason,
        caused_by,
    )
    await record_version(conn, bank_id, observation_id, "invalidated", reason)


async def remove_observation(conn: Connection, bank_id: str, observation_id: UUID) -> bool:
    """Delete it for good (its evidence, history and links go with it)."""
    await lock_bank(conn, bank_id)  # before its entities (store/bank_lock.py)
    await conn.execute(
        "UPDATE entities SET mention_count = greatest(mention_count - 1, 0) WHERE bank_id = $1 AND id IN "
        "(SELECT entity_id FROM unit_entities WHERE bank_id = $1 AND unit_id = $2)",
        bank_id,
        observation_id,
    )
    status = await conn.execute(
        "DELETE FROM memory_units WHERE bank_id = $1 AND id = $2 AND fact_type = 'observation'", bank_id, observation_id
    )
    if status == "DELETE 1":
        await conn.execute("UPDATE banks SET memory_count = greatest(memory_count - 1, 0) WHERE bank_id = $1", bank_id)
        return True
    return False


async def observations_citing(conn: Executor, bank_id: str, memory_ids: Sequence[UUID]) -> list[UUID]:
    rows = await conn.fetch(
        "SELECT DISTINCT observation_id FROM observation_evidence WHERE bank_id = $1 AND memory_id = ANY($2::uuid[])",
        bank_id,
        list(memory_ids),
    )
    return [r["observation_id"] for r in rows]
