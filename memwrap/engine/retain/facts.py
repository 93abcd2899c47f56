"""Retain with an LLM: prepared (defended) items → fact units, and the transaction that writes them.

Retain writes an item's raw units first (recallable at once) and queues their extraction (a job);
`Extractor.translate` then turns the items into facts, which replace the raw units (reextract.py). It never
loses a turn: when the chunk an item belongs to fails (timeout, provider down, invalid output after repair and a
re-ask), the item keeps its raw units and its job is retried; and the sentences of an extracted item that no
fact carries are kept as raw units of their own (coverage.py). A fact is owned by the first item it came from
(its document_id, item_hash and mentioned_at); `metadata["source_ids"]` lists the document ids of every turn it
came from, `metadata["source_items"]` their item hashes.

No wall-clock deadline cancels an extraction: each request is bounded by the server's measured speed
(LLM.structured(background=True)), so a slow server's finished work is used, never thrown away.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from uuid import UUID, uuid4

import asyncpg
import numpy as np

from memwrap import tracing
from memwrap.config import Settings
from memwrap.defense.policy import apply_policy, redact
from memwrap.engine import webhooks
from memwrap.engine.banks import entity_types
from memwrap.engine.banks import settings as bank_settings
from memwrap.engine.embed.profiles import similarity_profile
from memwrap.engine.jobs.retry_policy import RetryPolicy
from memwrap.engine.language.entities import entity_key, extract_entities
from memwrap.engine.language.speakers import said_by
from memwrap.engine.language.text import search_text
from memwrap.engine.language.timeparse import extract_occurred
from memwrap.engine.llm.client import LLM, OutputTruncatedError, Usage
from memwrap.engine.llm.usage import charged_to
from memwrap.engine.retain.coverage import raw_lines, uncovered
from memwrap.engine.retain.extract import (
    Chunk,
    ChunkFacts,
    Fact,
    extract_chunk,
    merge_chunk_facts,
    plan_chunks,
    split_chunk,
)
from memwrap.engine.retain.name_links import link_names
from memwrap.engine.retain.prepare import PreparedItem, PreparedUnit, session_key
from memwrap.engine.retain.resolve import Alias, Embed, Resolution, resolve, write_aliases
from memwrap.engine.retain.write import unit_entities, write_items
from memwrap.store.pg_types import Connection

log = logging.getLogger("memwrap.extract")

# How many of a session's latest memories the first chunk sees as context (pronouns, "it", "there").
EARLIER_UNITS = 2
# A chunk whose reply is cut off at the output limit is halved at most this often (16 turns → 2).
MAX_HALVINGS = 3

EARLIER = """
SELECT session_key, text FROM (
    SELECT session_key, text, seq,
           row_number() OVER (PARTITION BY session_key ORDER BY seq DESC) AS recent
    FROM memory_units
    WHERE bank_id = $1 AND session_key = ANY($2::text[]) AND invalidated_at IS NULL
      AND NOT (item_hash = ANY($3::text[]))
) latest
WHERE recent <= $4
ORDER BY session_key, seq
"""

CAUSAL_LINKS = """
INSERT INTO memory_links (bank_id, from_id, to_id, kind, weight)
SELECT $1, x.f, x.t, 'causal', 1.0 FROM unnest($2::uuid[], $3::uuid[]) AS x(f, t)
WHERE EXISTS (SELECT 1 FROM memory_units m WHERE m.bank_id = $1 AND m.id = x.f)
  AND EXISTS (SELECT 1 FROM memory_units m WHERE m.bank_id = $1 AND m.id = x.t)
ON CONFLICT DO NOTHING
"""

# Items that became no fact at all (greetings, filler) are remembered too: retaining them again costs nothing.
RECORD_EMPTY = """
INSERT INTO retained_items (bank_id, item_hash, unit_ids)
SELECT $1, h, '{}'::uuid[] FROM unnest($2::text[]) AS h
ON CONFLICT (bank_id, item_hash) DO NOTHING
"""

# The job kind of "extract these raw items" (reextract.py runs it).
EXTRACT_JOB = "extract"

# One job for the items one transaction wrote raw. The retaining process claims it at once (its inline
# extraction); it is due on its own after $4 seconds, should that process die before it does.
QUEUE = """
INSERT INTO jobs (kind, bank_id, payload, max_attempts, run_after, priority)
VALUES ($5, $1, jsonb_build_object('item_hashes', to_jsonb($2::text[])), $3, now() + $4 * interval '1 second', 80)
"""

# Sentences of an extracted item that no fact carries (coverage.py) are kept raw, marked so.
UNCOVERED = "not carried by the facts extracted from this item"


@dataclass
class ExtractedItem(PreparedItem):
    """A prepared item after extraction: fact units, or its raw units and the error that kept it raw."""

    facts: bool = False  # units are extracted facts (else raw units)
    error: str | None = None  # extraction failed: the raw units stay, the item's job is retried
    pending: bool = False  # raw units written before extraction: queued, with the extraction under way
    links: list[tuple[UUID, UUID]] = field(default_factory=list)  # (cause, effect) fact ids
    aliases: list[Alias] = field(default_factory=list)


class Extractor:
    def __init__(self, llm: LLM, pool: asyncpg.Pool, embed: Embed, settings: Settings) -> None:
        self.llm = llm
        self.pool = pool
        self.embed = embed
        self.settings = settings
        self.similarity = similarity_profile(settings.embedding_model)  # the model's cosine thresholds

    async def translate(
        self, bank_id: str, items: Sequence[PreparedItem], *, now: datetime, policy: str
    ) -> list[ExtractedItem]:
        """Items in, items out (same order): each with fact units, no units (nothing worth keeping), or its
        raw units plus `error` when its extraction failed."""
        if not items:
            return []
        with charged_to(bank_id), tracing.span("extract", bank_id=bank_id, items=len(items)) as current:
            translated = await self._translate(bank_id, items, now=now, policy=policy, current=current)
            tracing.set_attributes(
                current,
                memories=sum(len(i.units) for i in translated if i.facts),
                items_failed=sum(1 for i in translated if i.error),
            )
            return translated

    async def _translate(
        self, bank_id: str, items: Sequence[PreparedItem], *, now: datetime, policy: str, current: Any
    ) -> list[ExtractedItem]:
        sessions = sorted({key for i in items if i.source and (key := session_key(i.source))})
        earlier = await self._earlier(bank_id, sessions, [i.item_hash for i in items])
        chunks = plan_chunks(
            list(items),
            now=now,
            max_turns=self.settings.extraction_turns_per_call,
            max_tokens=self.settings.extraction_tokens_per_call,
            earlier=earlier,
        )
        instructions = await bank_settings.extraction_instructions(self.pool, bank_id)
        types = await entity_types.read(self.pool, bank_id)
        outcomes = await asyncio.gather(*(self._extract(bank_id, chunk, instructions, types) for chunk in chunks))
        usage = sum((o.usage for o in outcomes if not isinstance(o, str)), Usage())
        tracing.set_attributes(
            current,
            chunks=len(chunks),
            llm_calls=usage.calls,
            prompt_tokens=usage.prompt_tokens,
            completion_tokens=usage.completion_tokens,
            cached_tokens=usage.cached_tokens,
        )
        failed: dict[str, str] = {}
        results: list[ChunkFacts] = []
        for chunk, outcome in zip(chunks, outcomes, strict=True):
            if isinstance(outcome, str):
                for item in chunk.items:
                    failed.setdefault(item.item_hash, outcome)
            else:
                results.append(outcome)
        # A fact survives only if every item it came from was extracted: a failed item is redone whole later.
        facts = [f for r in results for f in r.facts if not any(t.item.item_hash in failed for t in f.turns)]
        resolution = await resolve(
            self.pool,
            self.embed,
            bank_id,
            [f.entities for f in facts],
            [g for r in results for g in r.aliases],
            typo_cosine=self.similarity.typo_cosine,
        )
        out: dict[str, ExtractedItem] = {}
        for item in items:
            if item.item_hash in failed:
                out[item.item_hash] = ExtractedItem(
                    item.item_hash, list(item.units), item.source, error=failed[item.item_hash]
                )
            else:
                out[item.item_hash] = ExtractedItem(item.item_hash, [], item.source, facts=True)
        kinds = _kinds(results, resolution)
        for result in results:
            self._add_facts(result, out, resolution, policy, kinds)
        if instructions is None:
            # With the operator's instructions, what the model left out was left out on purpose ("ignore small
            # talk"): keeping those sentences raw would undo them. Without, an omission is the model's slip.
            await self._keep_uncovered(results, out, resolution)
        first = next((i for i in out.values() if i.facts), None)
        if first is not None:
            first.aliases = list(resolution.aliases)
        return [out[i.item_hash] for i in items]

    async def _extract(
        self, bank_id: str, chunk: Chunk, instructions: str | None, types: entity_types.Declared
    ) -> ChunkFacts | str:
        """One chunk; a failure comes back as its (redacted) reason, so the other chunks still count."""
        with tracing.span("extract.chunk", bank_id=bank_id, turns=len(chunk.turns)) as current:
            try:
                result = await self._extract_halving(chunk, instructions, types)
                tracing.set_attributes(
                    current,
                    facts=len(result.facts),
                    llm_calls=result.usage.calls,
                    prompt_tokens=result.usage.prompt_tokens,
                    completion_tokens=result.usage.completion_tokens,
                )
                return result
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - whatever went wrong, the turns are kept raw and retried
                reason = redact(f"{type(exc).__name__}: {exc}")[:1000]
                tracing.mark_error(current, f"extraction failed ({type(exc).__name__}); the turns stay raw")
        log.warning(
            "extraction of %d turn(s) in bank %s failed, kept raw for a retry: %s", len(chunk.turns), bank_id, reason
        )
        return reason

    async def _extract_halving(
        self, chunk: Chunk, instructions: str | None, types: entity_types.Declared, depth: int = 0
    ) -> ChunkFacts:
        """A reply cut off at the output limit would silently lose the turns after the cut: split and redo."""
        try:
            return await extract_chunk(
                self.llm,
                chunk,
                max_tokens=self.settings.extraction_output_tokens,
                instructions=instructions,
                types=types,
            )
        except OutputTruncatedError:
            halves = split_chunk(chunk) if depth < MAX_HALVINGS else None
            if halves is None:
                raise
            log.info("extraction reply was cut off; splitting %d turns in two", len(chunk.turns))
            first = await self._extract_halving(halves[0], instructions, types, depth + 1)
            second = await self._extract_halving(halves[1], instructions, types, depth + 1)
            return merge_chunk_facts(first, second, chunk)

    async def _keep_uncovered(
        self, results: list[ChunkFacts], out: dict[str, ExtractedItem], resolution: Resolution
    ) -> None:
        """The sentences of each extracted item that none of its chunk's facts carry become raw units of it."""
        carriers: dict[str, list[str]] = {}
        turns: list[tuple[str, str, str, str]] = []
        said: dict[str, datetime] = {}
        for result in results:
            texts = [f.text for f in result.facts] + [n for g in result.aliases for n in (g.name, *g.aliases)]
            for turn in result.chunk.turns:
                item = out.get(turn.item.item_hash)
                if item is None or not item.facts:
                    continue
                known = carriers.setdefault(item.item_hash, [])
                known.extend(t for t in texts if t not in known)
                turns.append((item.item_hash, turn.speaker, turn.role, turn.text))
                said.setdefault(item.item_hash, turn.said_at)
        if not turns:
            return
        missing = await uncovered(turns, carriers, self.embed, similar=self.similarity.coverage)
        for item_hash, parts in missing.items():
            owner = out[item_hash]
            for line in raw_lines(parts):
                owner.units.append(_raw_unit(owner, line, len(owner.units), said[item_hash], resolution))
            log.info("extraction: %d sentence(s) of an item no fact carries were kept raw", len(parts))

    async def _earlier(self, bank_id: str, sessions: list[str], exclude: list[str]) -> dict[str, list[str]]:
        if not sessions:
            return {}
        rows = await self.pool.fetch(EARLIER, bank_id, sessions, exclude, EARLIER_UNITS)
        earlier: dict[str, list[str]] = {}
        for row in rows:
            text = row["text"]
            earlier.setdefault(row["session_key"], []).append(text[:240] + ("…" if len(text) > 240 else ""))
        return earlier

    def _add_facts(
        self,
        result: ChunkFacts,
        out: dict[str, ExtractedItem],
        resolution: Resolution,
        policy: str,
        kinds: dict[str, str],
    ) -> None:
        units: dict[int, tuple[PreparedUnit, ExtractedItem]] = {}
        model = self.llm.model("extraction")
        for position, fact in enumerate(result.facts):
            if any(t.item.item_hash not in out or out[t.item.item_hash].error for t in fact.turns):
                continue
            owner = out[fact.turns[0].item.item_hash]
            unit = _fact_unit(fact, owner, len(owner.units), resolution, policy, model, kinds)
            owner.units.append(unit)
            units[position] = (unit, owner)
        for position, fact in enumerate(result.facts):
            if position not in units:
                continue
            effect, effect_owner = units[position]
            for cause_position in fact.caused_by:
                if cause_position in units:
                    cause, cause_owner = units[cause_position]
                    # On both owners: whichever is written last (they may fall in two write batches) links them.
                    effect_owner.links.append((cause.id, effect.id))
                    if cause_owner is not effect_owner:
                        cause_owner.links.append((cause.id, effect.id))


def _kinds(results: Sequence[ChunkFacts], resolution: Resolution) -> dict[str, str]:
    """{canonical entity key: declared type} of the batch: the type the model gave a name goes to the entity the
    name resolved to (an alias's type is its entity's); of two types for one entity, the first reply's wins."""
    kinds: dict[str, str] = {}
    for result in results:
        for name, kind in result.types.items():
            key = entity_key(name)
            if key:
                kinds.setdefault(resolution.names[key].key if key in resolution.names else key, kind)
    return kinds


def _fact_unit(
    fact: Fact,
    owner: ExtractedItem,
    part: int,
    resolution: Resolution,
    policy: str,
    model: str | None,
    kinds: dict[str, str],
) -> PreparedUnit:
    source = owner.source
    assert source is not None
    # The model only saw defended text, but a fact is new text: it passes the defense once more.
    text = apply_policy(fact.text, "redact").text if policy != "off" else fact.text
    items = list(dict.fromkeys(t.item.item_hash for t in fact.turns))
    document_ids = list(
        dict.fromkeys(t.item.source.document_id for t in fact.turns if t.item.source and t.item.source.document_id)
    )
    tags = list(dict.fromkeys(tag for t in fact.turns if t.item.source for tag in t.item.source.tags))
    metadata = dict(source.metadata)
    metadata.update(source_ids=document_ids, source_items=items, extracted_by=model)
    names = fact.entities or extract_entities(text)
    entities = resolution.entities(names)
    return PreparedUnit(
        id=uuid4(),
        text=text,
        fact_type=fact.fact_type,
        item_hash=owner.item_hash,
        document_id=source.document_id,
        session_key=session_key(source),
        part_index=part,
        context=source.context,
        metadata=metadata,
        tags=tags,
        mentioned_at=fact.turns[0].said_at,
        occurred=fact.occurred,
        entities=entities,
        entity_types={key: kinds[key] for key in entities if key in kinds},
        search_text=search_text(text),
        embed_text=text,
        # A fact must not outlive what it came from: the earliest expiry of its turns' items (None: never).
        expires_at=min(expiries) if (expiries := _expiries(fact)) else None,
    )


def _expiries(fact: Fact) -> list[datetime]:
    return [t.item.source.expires_at for t in fact.turns if t.item.source and t.item.source.expires_at]


def _raw_unit(owner: ExtractedItem, text: str, part: int, said_at: datetime, resolution: Resolution) -> PreparedUnit:
    source = owner.source
    assert source is not None
    metadata = {**source.metadata, "kept_raw": UNCOVERED}
    speaker, said = said_by(text, source.metadata)
    return PreparedUnit(
        id=uuid4(),
        text=text,
        fact_type="raw",
        item_hash=owner.item_hash,
        document_id=source.document_id,
        session_key=session_key(source),
        part_index=part,
        context=source.context,
        metadata=metadata,
        tags=list(source.tags),
        mentioned_at=said_at,
        occurred=extract_occurred(text, said_at),
        entities=resolution.entities(extract_entities(said)),
        search_text=search_text(text),
        embed_text=text,
        speaker=speaker,
        expires_at=source.expires_at,
    )


async def write_translated(
    conn: Connection,
    bank_id: str,
    items: Sequence[PreparedItem],
    vectors: np.ndarray,
    settings: Settings | None = None,
) -> dict[str, list[UUID]]:
    """write_items, plus what extraction adds, in the same transaction: causal links, learnt aliases, the
    record of items that became no fact, and the extraction job of the items written raw (`pending`; their
    extraction is about to start in this process), whose retries follow `settings`."""
    async with conn.transaction():
        result = await write_items(conn, bank_id, items, vectors, link=False, announce=False)
        extracted = [i for i in items if isinstance(i, ExtractedItem)]
        # Items a concurrent retain stored first were skipped by write_items: nothing of theirs is ours to add.
        ours = [i for i in extracted if result.get(i.item_hash) == [u.id for u in i.units]]
        empty = [i.item_hash for i in ours if not i.units]
        if empty:
            await conn.execute(RECORD_EMPTY, bank_id, empty)
        links = list(dict.fromkeys(link for i in ours for link in i.links))
        if links:
            await conn.execute(CAUSAL_LINKS, bank_id, [f for f, _ in links], [t for _, t in links])
        await write_aliases(conn, bank_id, [a for i in extracted for a in i.aliases])
        written = [u for i in items if result.get(i.item_hash) == [x.id for x in i.units] for u in i.units]
        await link_names(conn, bank_id, unit_entities(written))  # after the model's aliases: its word comes first
        pending = [i.item_hash for i in ours if i.pending]
        # Raw units waiting for their extraction are not announced: the facts that take their place will be.
        await webhooks.emit(conn, bank_id, "retained", [u.id for u in written if u.item_hash not in pending])
        if pending:
            if settings is None:
                raise ValueError("write_translated: items written raw need the settings of their extraction job")
            max_attempts = RetryPolicy.for_extraction(settings).max_attempts
            await conn.execute(QUEUE, bank_id, pending, max_attempts, settings.worker_lease_seconds, EXTRACT_JOB)
    return result
