"""Consolidation with an LLM: new facts plus the related existing observations → creates, updates, deletes.

Related observations are found per new fact by the semantic and keyword arms, fused by interleaving: a
near-identical twin that only one arm ranks high is never cut (rank fusion could push it below the cut).
The model cites facts and observations by short ids (F1, O1): models copy those faithfully, UUIDs they mangle.
Its reply is validated by pydantic (llm.structured), then checked against what it was shown: unknown ids
are dropped, and a "create" that is a near-identical twin of an existing observation becomes an update of it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal
from uuid import UUID, uuid4

import numpy as np
from pydantic import BaseModel, Field

from memwrap.engine.banks.instructions import with_instructions
from memwrap.engine.embed.profiles import similarity_profile
from memwrap.engine.language.text import search_text
from memwrap.engine.learn.heuristic import Fact
from memwrap.engine.learn.observations import CreateOp, DeleteOp, EvidenceIn, Plan, UpdateOp
from memwrap.engine.learn.trend import trend
from memwrap.engine.llm.prompt_echo import EchoGuard
from memwrap.engine.recall import arms
from memwrap.engine.recall.arms import Filters
from memwrap.engine.recall.fusion import interleave
from memwrap.store.pg_types import Connection

if TYPE_CHECKING:
    from memwrap.engine.parts import EngineParts

log = logging.getLogger("memwrap.learn")

RELATED_PER_FACT = 5
RELATED_MAX = 30
ARM_LIMIT = 20
QUOTES_SHOWN = 3
# A created observation this close to an existing one in its scope is that one, restated.


class EvidenceRef(BaseModel):
    fact: str = Field(description="id of a new fact, e.g. F1")
    quote: str = Field("", description="a short verbatim excerpt of that fact")


class ObservationUpdate(BaseModel):
    observation: str = Field(description="id of an existing observation, e.g. O1")
    text: str = Field(description="its full text after the update (unchanged if the facts only add support)")
    change: Literal["refine", "contradict"] = "refine"
    reason: str = ""
    evidence: list[EvidenceRef] = Field(default_factory=list)


class ObservationCreate(BaseModel):
    text: str
    evidence: list[EvidenceRef] = Field(default_factory=list)


class ObservationDelete(BaseModel):
    observation: str
    reason: str = ""


class ConsolidationPlan(BaseModel):
    """Changes to the observations, justified by the new facts."""

    updates: list[ObservationUpdate] = Field(default_factory=list)
    creates: list[ObservationCreate] = Field(default_factory=list)
    deletes: list[ObservationDelete] = Field(default_factory=list)


SYSTEM = """You maintain observations: durable, evidence-backed knowledge about the user and their world, distilled \
from facts in long-term memory. You receive NEW FACTS and the EXISTING OBSERVATIONS most related to them.

Return changes to the observations:
- updates: when new facts restate, refine or change an existing observation. Cite the new facts that bear on it. \
change="refine" when they add support or detail; change="contradict" when they replace what it said (a changed \
preference, a move, a new job). After a contradiction write the text as the current state and what it replaced, \
with dates, in the form "Since <when> <the current state> (before that: <what it replaced>)". Give a short reason.
- creates: durable knowledge (preferences, habits, relationships, plans, recurring situations, stable facts) that \
no existing observation covers. One observation per distinct piece of knowledge; cite every new fact supporting it.
- deletes: an existing observation the new facts show to be wrong and that no update can fix.

Rules: never create a duplicate of an existing observation: update it instead. Cite facts by id (F1, F2, ...) and \
observations by id (O1, ...), nothing else. A quote is a short verbatim excerpt of the cited fact. Facts without \
durable knowledge (greetings, small talk, one-off chatter) are not cited. Write short, self-contained sentences \
in the language of the facts; say "the user" for the person whose memory this is."""

# The prompt shows its forms with <placeholders>: an observation that repeats the prompt is not knowledge.
ECHO = EchoGuard(SYSTEM)


@dataclass
class Related:
    id: UUID
    text: str
    proof_count: int
    trend: str
    last_evidence_at: datetime | None
    quotes: list[str]


RELATED_DETAILS = """
SELECT o.id, u.text, o.proof_count, o.last_evidence_at, o.scope,
       coalesce((SELECT array_agg(e.evidenced_at) FROM observation_evidence e
                 WHERE e.bank_id = o.bank_id AND e.observation_id = o.id AND e.stance = 'supports'), '{}') AS
                   supported_at,
       coalesce((SELECT array_agg(q.quote) FROM (
                    SELECT e.quote FROM observation_evidence e
                    WHERE e.bank_id = o.bank_id AND e.observation_id = o.id AND e.stance = 'supports'
                    ORDER BY e.evidenced_at DESC LIMIT $3) q), '{}') AS quotes
FROM observations o JOIN memory_units u ON u.bank_id = o.bank_id AND u.id = o.id
WHERE o.bank_id = $1 AND o.id = ANY($2::uuid[]) AND u.invalidated_at IS NULL
"""


def pick_related(per_fact: Sequence[dict[str, arms.Hits]], per_fact_limit: int = RELATED_PER_FACT) -> list[UUID]:
    """The first `per_fact_limit` of each fact's interleaved arm results, in order, without repeats."""
    chosen: list[UUID] = []
    for results in per_fact:
        for hit in interleave(results, {"semantic": 1.0, "keyword": 1.0})[:per_fact_limit]:
            if hit.id not in chosen:
                chosen.append(hit.id)
    return chosen


async def related_observations(
    conn: Connection,
    bank_id: str,
    facts: Sequence[Fact],
    vectors: dict[UUID, np.ndarray],
    scope: list[str],
    bank_size: int,
    now: datetime,
) -> list[Related]:
    """The existing observations of `scope` nearest to any of the facts, interleaved per fact."""
    filters = Filters(bank_id, ["observation"], scope or None)
    per_fact: list[dict[str, arms.Hits]] = []
    for fact in facts:
        results: dict[str, arms.Hits] = {}
        vector = vectors.get(fact.id)
        if vector is not None:
            results["semantic"] = await arms.semantic(conn, filters, vector, ARM_LIMIT, bank_size, 0.0)
        results["keyword"] = await arms.keyword(conn, filters, search_text(fact.text), ARM_LIMIT, bank_size)
        per_fact.append(results)
    chosen = pick_related(per_fact)
    if not chosen:
        return []
    rows = {r["id"]: r for r in await conn.fetch(RELATED_DETAILS, bank_id, chosen, QUOTES_SHOWN)}
    related = []
    for observation_id in chosen:
        row = rows.get(observation_id)
        if row is None or sorted(row["scope"]) != sorted(scope):
            continue  # another tag scope: its evidence must not mix with this one's
        related.append(
            Related(
                observation_id,
                row["text"],
                row["proof_count"],
                trend(list(row["supported_at"]), now),
                row["last_evidence_at"],
                list(row["quotes"]),
            )
        )
        if len(related) >= RELATED_MAX:
            break
    return related


def render_prompt(facts: Sequence[Fact], related: Sequence[Related]) -> str:
    lines = ["NEW FACTS"]
    for index, fact in enumerate(facts, start=1):
        lines.append(f"[F{index}] {fact.mentioned_at:%Y-%m-%d} {' '.join(fact.text.split())}")
    lines.append("")
    lines.append("EXISTING OBSERVATIONS")
    if not related:
        lines.append("(none)")
    for index, observation in enumerate(related, start=1):
        last = f", last evidence {observation.last_evidence_at:%Y-%m-%d}" if observation.last_evidence_at else ""
        lines.append(f"[O{index}] {observation.text} ({observation.proof_count} sources, {observation.trend}{last})")
        for quote in observation.quotes:
            lines.append(f'      evidence: "{" ".join(quote.split())[:160]}"')
    return "\n".join(lines) + "\n"


async def plan_batch(
    parts: EngineParts,
    llm: Any,
    conn: Connection,
    bank_id: str,
    facts: Sequence[Fact],
    vectors: dict[UUID, np.ndarray],
    scope: list[str],
    bank_size: int,
    now: datetime,
    instructions: str | None,
) -> tuple[Plan, Any]:
    """Ask the LLM about one batch of same-scope facts (`instructions`: the bank's extraction instructions).
    Returns the plan and the call's usage."""
    related = await related_observations(conn, bank_id, facts, vectors, scope, bank_size, now)
    system = with_instructions(SYSTEM, instructions, task="what is worth keeping as knowledge and what to leave out")
    reply, usage = await llm.structured(system, render_prompt(facts, related), ConsolidationPlan, role="consolidation")
    plan = await _to_plan(parts, conn, bank_id, reply, facts, related, scope, bank_size)
    return plan, usage


def _planned_updates(
    reply: ConsolidationPlan,
    observation_ids: dict[str, UUID],
    texts: dict[UUID, str],
    evidence: Callable[[Sequence[EvidenceRef]], list[EvidenceIn]],
) -> dict[UUID, UpdateOp]:
    """The reply's updates, by the observation they change: unknown observations and echoed prompt wording left
    out, the evidence of several updates of one observation merged."""
    updates: dict[UUID, UpdateOp] = {}
    for item in reply.updates:
        target = observation_ids.get(item.observation.strip().upper())
        if target is None:
            log.info("consolidation: the model updated an unknown observation %r; ignored", item.observation)
            continue
        text = item.text.strip()
        if text and ECHO.echoes(text):
            log.info("consolidation: an update repeats the prompt's wording (%r); its text is ignored", text[:80])
            text = ""
        op = updates.setdefault(target, UpdateOp(id=target, change=item.change, reason=item.reason))
        op.evidence.extend(e for e in evidence(item.evidence) if e.memory_id not in {x.memory_id for x in op.evidence})
        if text and text != texts[target]:
            op.text, op.change, op.reason = text, item.change, item.reason or op.reason
    return updates


async def _to_plan(
    parts: EngineParts,
    conn: Connection,
    bank_id: str,
    reply: ConsolidationPlan,
    facts: Sequence[Fact],
    related: Sequence[Related],
    scope: list[str],
    bank_size: int,
) -> Plan:
    fact_ids = {f"F{i}": fact.id for i, fact in enumerate(facts, start=1)}
    observation_ids = {f"O{i}": o.id for i, o in enumerate(related, start=1)}
    texts = {o.id: o.text for o in related}

    def evidence(refs: Sequence[EvidenceRef]) -> list[EvidenceIn]:
        seen: dict[UUID, EvidenceIn] = {}
        for ref in refs:
            memory_id = fact_ids.get(ref.fact.strip().upper())
            if memory_id is None:
                log.info("consolidation: the model cited an unknown fact %r; ignored", ref.fact)
            elif memory_id not in seen:
                seen[memory_id] = EvidenceIn(memory_id, ref.quote)
        return list(seen.values())

    plan = Plan()
    updates = _planned_updates(reply, observation_ids, texts, evidence)
    creates = [(c.text.strip(), evidence(c.evidence)) for c in reply.creates]
    for text, _ in creates:
        if ECHO.echoes(text):
            log.info("consolidation: a new observation repeats the prompt's wording (%r); dropped", text[:80])
    creates = [(text, ev) for text, ev in creates if text and ev and not ECHO.echoes(text)]
    vectors = await parts.embedder.embed([op.text for op in updates.values() if op.text] + [t for t, _ in creates])
    cursor = 0
    for op in updates.values():
        if op.text:
            op.embedding = vectors[cursor]
            cursor += 1
    twin_similarity = similarity_profile(parts.settings.embedding_model).twin
    for (text, ev), vector in zip(creates, vectors[cursor:], strict=True):
        twin = await _twin(conn, bank_id, vector, scope, bank_size, twin_similarity)
        if twin is not None:
            op = updates.setdefault(twin, UpdateOp(id=twin, reason="restated"))
            op.evidence.extend(e for e in ev if e.memory_id not in {x.memory_id for x in op.evidence})
            continue
        plan.creates.append(
            CreateOp(
                id=uuid4(), text=text, scope=scope, origin="llm", evidence=ev, embedding=vector, reason="new knowledge"
            )
        )
    plan.updates = list(updates.values())
    for removal in reply.deletes:
        target = observation_ids.get(removal.observation.strip().upper())
        if target is not None and target not in updates:
            plan.deletes.append(DeleteOp(target, removal.reason))
    return plan


async def _twin(
    conn: Connection, bank_id: str, vector: np.ndarray, scope: list[str], bank_size: int, similarity: float
) -> UUID | None:
    hits = await arms.semantic(conn, Filters(bank_id, ["observation"], scope or None), vector, 5, bank_size, similarity)
    if not hits:
        return None
    rows = await conn.fetch(
        "SELECT id, scope FROM observations WHERE bank_id = $1 AND id = ANY($2::uuid[])", bank_id, [h[0] for h in hits]
    )
    same_scope = {r["id"] for r in rows if sorted(r["scope"]) == sorted(scope)}
    return next((h[0] for h in hits if h[0] in same_scope), None)
