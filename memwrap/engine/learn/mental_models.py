"""Mental models: a named standing question per bank, answered from observations and facts, kept fresh.

Reading one is a single indexed SELECT (UNIQUE (bank_id, name)): the content is precomputed in the background.
A model goes stale when consolidation touches its tag scope or a memory it drew on changes; a refresh job is
then queued (debounced, so a burst of changes is one refresh), and `refresh_every` adds a schedule.

Content comes from a generator, a seam: reflect can install its own (`Engine.learning.mental_model_generator`).
The default asks the engine's LLM to answer the question from a recall of observations and facts; with no LLM
it is that recall itself — the memory lines that best answer the question, observations first, within
max_tokens — which is what an LLM would have been shown.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast
from uuid import UUID, uuid4

import asyncpg
from pydantic import BaseModel, Field

from memwrap.defense.policy import redact
from memwrap.engine import webhooks
from memwrap.engine.banks import ids as bank_ids
from memwrap.engine.jobs import queue as jobs
from memwrap.engine.jobs.queue import JobContext
from memwrap.engine.learn.learning_llm import consolidation_llm
from memwrap.engine.recall.pack import render_line
from memwrap.errors import ConflictError, InvalidInputError, MemoryNotFoundError
from memwrap.models import (
    MAX_REFRESH_EVERY_SECONDS,
    MIN_REFRESH_EVERY_SECONDS,
    MentalModel,
    MentalModelVersion,
)
from memwrap.store.pg_types import Connection, Executor
from memwrap.tokens import encoding_for_model

if TYPE_CHECKING:
    from memwrap.engine.parts import EngineParts

log = logging.getLogger("memwrap.learn")

KIND = "refresh_mental_model"
MAX_NAME_CHARS = 200
# How much the LLM generator may read, relative to the answer's budget.
READ_FACTOR = 4
READ_CAP_TOKENS = 6000

COLUMNS = """id, bank_id, name, question, tags, max_tokens, refresh_every, content, version, status, generator,
             source_ids, stale_since, stale_reason, last_error, refreshed_at, created_at"""

# The one query a read costs. $2: the names it may be stored under (stored_names), the first preferred.
GET = f"""SELECT {COLUMNS} FROM mental_models WHERE bank_id = $1 AND name = ANY($2::text[])
ORDER BY array_position($2::text[], name) LIMIT 1"""

INSERT = f"""
INSERT INTO mental_models (bank_id, id, name, question, tags, max_tokens, refresh_every)
VALUES ($1, $2, $3, $4, $5, $6, $7)
ON CONFLICT (bank_id, name) DO NOTHING
RETURNING {COLUMNS}
"""

# Stale when its tag scope overlaps what changed (an untagged model covers the whole bank), or it drew on a
# memory that changed. dirty_seq lets a refresh that raced a newer change know it is not fresh.
MARK_STALE = """
UPDATE mental_models
SET status = CASE WHEN status = 'pending' THEN 'pending' ELSE 'stale' END,
    stale_since = coalesce(stale_since, now()), stale_reason = $4, dirty_seq = dirty_seq + 1, updated_at = now()
WHERE bank_id = $1 AND (tags = '{}' OR tags && $2::text[] OR source_ids && $3::uuid[])
RETURNING id
"""


@dataclass
class Generated:
    content: str
    source_ids: list[UUID] = field(default_factory=list)
    generator: str = "recall"


Generator = Callable[[Any, MentalModel], Awaitable[Generated]]


def _model(row: asyncpg.Record) -> MentalModel:
    return MentalModel(**{**dict(row), "tags": list(row["tags"]), "source_ids": list(row["source_ids"])})


def _check_name(name: object) -> str:
    if not isinstance(name, str) or not name.strip() or len(name) > MAX_NAME_CHARS or "\x00" in name:
        raise InvalidInputError(f"A mental model's name is 1-{MAX_NAME_CHARS} characters of text, not {name!r}.")
    # The name is one segment of the model's URL (/v1/banks/{bank}/mental-models/{name}): a "/" (even sent as
    # %2F, which servers decode before routing) or a dot segment, which clients normalise away, could be
    # created but never read, refreshed or deleted over HTTP.
    if "/" in name or name.strip() in (".", ".."):
        raise InvalidInputError(
            f"A mental model's name cannot contain '/' or be '.' or '..' (it is a segment of the model's URL): "
            f"{name!r}. Use another separator, e.g. {name.replace('/', '-')!r}."
        )
    return name.strip()


def check_refresh_every(value: object) -> float | None:
    """A schedule in seconds within the declared bounds (memwrap/models/), or None (refresh only on change)."""
    if value is None:
        return None
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not MIN_REFRESH_EVERY_SECONDS <= value <= MAX_REFRESH_EVERY_SECONDS
    ):
        raise InvalidInputError(
            f"refresh_every is a number of seconds from {MIN_REFRESH_EVERY_SECONDS:g} to "
            f"{MAX_REFRESH_EVERY_SECONDS:g} (a year), or None to refresh only on change; got {value!r}."
        )
    return float(value)


# --- reading and writing -----------------------------------------------------------------------------------


async def create(
    parts: EngineParts,
    bank_id: str,
    name: str,
    question: str,
    *,
    tags: Sequence[str] | None,
    max_tokens: int,
    refresh_every: float | None,
) -> MentalModel:
    name = _check_name(name)
    refresh_every = check_refresh_every(refresh_every)
    pool: asyncpg.Pool = parts.pool
    await bank_ids.admit(pool, bank_id)
    async with pool.acquire() as conn, conn.transaction():
        await conn.execute("INSERT INTO banks (bank_id) VALUES ($1) ON CONFLICT (bank_id) DO NOTHING", bank_id)
        row = await conn.fetchrow(
            INSERT, bank_id, uuid4(), name, question, sorted(set(tags or [])), max_tokens, refresh_every
        )
        if row is None:
            raise ConflictError(
                f"Bank {bank_id!r} already has a mental model named {name!r}; delete it first or pick another name."
            )
        await enqueue_refresh(conn, parts.settings, bank_id, row["id"], delay=0.0)
    return _model(row)


def stored_names(name: str) -> list[str]:
    """The names a model asked for as `name` may be stored under: as written, or redacted (a name goes through the
    bank's memory defense at creation, so the name a secret was redacted from still finds its model)."""
    redacted = redact(name) if isinstance(name, str) else name
    return [name] if redacted == name else [name, redacted]


def _not_found(bank_id: str, name: str) -> MemoryNotFoundError:
    return MemoryNotFoundError(f"No mental model {redact(name)!r} in bank {bank_id!r}.")  # never echo a secret


async def get(db: Executor, bank_id: str, name: str) -> MentalModel:
    row = await db.fetchrow(GET, bank_id, stored_names(name))
    if row is None:
        raise _not_found(bank_id, name)
    return _model(row)


async def list_models(db: asyncpg.Pool, bank_id: str) -> list[MentalModel]:
    rows = await db.fetch(f"SELECT {COLUMNS} FROM mental_models WHERE bank_id = $1 ORDER BY name", bank_id)
    return [_model(r) for r in rows]


async def history(db: asyncpg.Pool, bank_id: str, name: str) -> list[MentalModelVersion]:
    model = await get(db, bank_id, name)
    rows = await db.fetch(
        "SELECT version, content, generator, source_ids, reason, generated_at FROM mental_model_versions "
        "WHERE bank_id = $1 AND model_id = $2 ORDER BY version",
        bank_id,
        model.id,
    )
    return [MentalModelVersion(**{**dict(r), "source_ids": list(r["source_ids"])}) for r in rows]


async def delete(db: asyncpg.Pool, bank_id: str, name: str) -> None:
    status = await db.execute(
        "DELETE FROM mental_models WHERE bank_id = $1 AND id = (SELECT id FROM mental_models WHERE bank_id = $1"
        " AND name = ANY($2::text[]) ORDER BY array_position($2::text[], name) LIMIT 1)",
        bank_id,
        stored_names(name),
    )
    if status != "DELETE 1":
        raise _not_found(bank_id, name)


# --- staleness and refresh jobs ----------------------------------------------------------------------------


async def enqueue_refresh(
    db: Executor, settings: Any, bank_id: str, model_id: UUID, *, delay: float | None = None
) -> None:
    await jobs.enqueue(
        db,
        KIND,
        bank_id=bank_id,
        payload={"model_id": str(model_id)},
        delay=settings.mental_model_refresh_delay_seconds if delay is None else delay,
        dedupe_key=f"{KIND}:{model_id}",
        serial_key=f"{KIND}:{model_id}",
        max_attempts=settings.job_max_attempts,
        priority=120,
    )


async def mark_stale_for_scopes(
    conn: Connection,
    settings: Any,
    bank_id: str,
    scopes: Iterable[tuple[str, ...]],
    *,
    reason: str,
    touched: Sequence[UUID] = (),
) -> list[UUID]:
    # An untagged model (it recalls the whole bank) sees every change; a tagged one those sharing a tag with it
    # (its recall filters by "any of its tags"). Untagged changes reach untagged models only.
    scoped = list(scopes)
    if not scoped and not touched:
        return []
    tags = sorted({t for scope in scoped for t in scope})
    rows = await conn.fetch(MARK_STALE, bank_id, tags, list(touched), reason)
    ids = [r["id"] for r in rows]
    for model_id in ids:
        await enqueue_refresh(conn, settings, bank_id, model_id)
    return ids


async def mark_stale_for_sources(
    conn: Connection, settings: Any, bank_id: str, memory_ids: Sequence[UUID], *, reason: str
) -> list[UUID]:
    """Models that drew on any of these memories (deleted, invalidated, restored, rewritten)."""
    if not memory_ids:
        return []
    rows = await conn.fetch(
        """
        UPDATE mental_models
        SET status = CASE WHEN status = 'pending' THEN 'pending' ELSE 'stale' END,
            stale_since = coalesce(stale_since, now()), stale_reason = $3, dirty_seq = dirty_seq + 1, updated_at = now()
        WHERE bank_id = $1 AND source_ids && $2::uuid[]
        RETURNING id
        """,
        bank_id,
        list(memory_ids),
        reason,
    )
    ids = [r["id"] for r in rows]
    for model_id in ids:
        await enqueue_refresh(conn, settings, bank_id, model_id)
    return ids


async def forget_sources(conn: Connection, bank_id: str, memory_ids: Sequence[UUID], texts: Sequence[str]) -> None:
    """Deleting a memory deletes the versions that drew on it or quote it (an observation in its words, say):
    forgetting means forgetting. The current content stays until the refresh the stale mark queued."""
    await conn.execute(
        """
        DELETE FROM mental_model_versions v
        WHERE v.bank_id = $1
          AND (v.source_ids && $2::uuid[] OR EXISTS (SELECT 1 FROM unnest($3::text[]) AS t WHERE strpos(v.content, t) >
            0))
        """,
        bank_id,
        list(memory_ids),
        [t for t in texts if len(t.strip()) >= 4],  # "OK" would match everything
    )


async def run_job(ctx: JobContext) -> dict[str, Any]:
    model_id = UUID(str(ctx.job.payload["model_id"]))
    model = await refresh(ctx.parts, ctx.job.bank_id or "", model_id=model_id, reason="background refresh")
    if model is None:
        return {"skipped": "the mental model no longer exists"}
    return {"version": model.version, "status": model.status}


async def refresh(
    parts: EngineParts, bank_id: str, *, model_id: UUID | None = None, name: str | None = None, reason: str = "refresh"
) -> MentalModel | None:
    """Generate the content now and store it (a new version when it changed). None if the model is gone."""
    pool: asyncpg.Pool = parts.pool
    row = await pool.fetchrow(
        f"SELECT {COLUMNS}, dirty_seq FROM mental_models WHERE bank_id = $1 AND (id = $2 OR name = ANY($3::text[]))"
        " ORDER BY array_position($3::text[], name) NULLS LAST LIMIT 1",
        bank_id,
        model_id,
        stored_names(name) if name is not None else None,
    )
    if row is None:
        return None
    model, dirty_at_start = _model(row), row["dirty_seq"]
    generate: Generator = parts.learning().mental_model_generator or default_generator
    try:
        generated = await generate(parts, model)
    except Exception as exc:
        await pool.execute(
            "UPDATE mental_models SET last_error = $3, status = CASE WHEN version = 0 THEN 'failed' ELSE status END "
            "WHERE bank_id = $1 AND id = $2",
            bank_id,
            model.id,
            f"{type(exc).__name__}: {exc}"[:1000],
        )
        raise
    async with pool.acquire() as conn, conn.transaction():
        current = await conn.fetchrow(
            "SELECT content, version, source_ids, dirty_seq FROM mental_models "
            "WHERE bank_id = $1 AND id = $2 FOR UPDATE",
            bank_id,
            model.id,
        )
        if current is None:
            return None
        version = current["version"]
        if generated.content != current["content"]:
            version += 1
            await conn.execute(
                "INSERT INTO mental_model_versions (bank_id, model_id, version, content, generator, source_ids, "
                "reason) "
                "VALUES ($1, $2, $3, $4, $5, $6, $7)",
                bank_id,
                model.id,
                version,
                generated.content,
                generated.generator,
                generated.source_ids,
                reason,
            )
        # A change that arrived while we generated keeps it stale; its own refresh job is already queued.
        fresh = current["dirty_seq"] == dirty_at_start
        row = await conn.fetchrow(
            f"""
            UPDATE mental_models
            SET content = $3, source_ids = $4, generator = $5, version = $6, refreshed_at = now(), updated_at = now(),
                last_error = NULL, status = CASE WHEN $7 THEN 'fresh' ELSE 'stale' END,
                stale_since = CASE WHEN $7 THEN NULL ELSE stale_since END,
                stale_reason = CASE WHEN $7 THEN NULL ELSE stale_reason END
            WHERE bank_id = $1 AND id = $2
            RETURNING {COLUMNS}
            """,
            bank_id,
            model.id,
            generated.content,
            generated.source_ids,
            generated.generator,
            version,
            fresh,
        )
        await webhooks.emit(conn, bank_id, "mental_model.refreshed", data=_event(row, reason), text=generated.content)
    return _model(cast(asyncpg.Record, row))  # not None: the row was locked FOR UPDATE above


def _event(row: asyncpg.Record | None, reason: str) -> dict[str, Any]:
    """What a mental_model.refreshed event says of the model (its content goes only to subscriptions with text)."""
    assert row is not None  # the row was locked FOR UPDATE
    return {
        "mental_model_id": str(row["id"]),
        "name": row["name"],
        "version": row["version"],
        "status": row["status"],
        "reason": reason,
    }


# --- the default generator ---------------------------------------------------------------------------------


class MentalModelDraft(BaseModel):
    content: str = Field(description="the answer to the standing question")
    sources: list[str] = Field(default_factory=list, description="ids of the memories used, e.g. M1")


SYSTEM = """You keep a standing answer to a question about a user, from their long-term memory. Write the \
answer from the memories given: observations (consolidated, with evidence) first, facts for detail. State what \
memory does not say instead of guessing; when memories disagree, the newer wins, and say what changed. Be concise: \
the answer must fit the given number of tokens. List the ids (M1, M2, ...) of the memories you used."""


async def default_generator(parts: EngineParts, model: MentalModel) -> Generated:
    llm = consolidation_llm(parts)
    budget = model.max_answer_tokens if llm is None else min(model.max_answer_tokens * READ_FACTOR, READ_CAP_TOKENS)
    recall = await parts.recall(
        model.bank_id,
        model.question,
        token_budget=max(budget, 64),
        tags=model.tags or None,
        neighbours=False,
        prefer_observations=True,
    )
    memories = recall.memories
    if llm is None:
        # The recalled lines themselves (without the dated header, so the content only changes with memory).
        return Generated("".join(render_line(m) for m in memories), [m.id for m in memories], "recall")
    listing = "\n".join(f"[M{i}] {render_line(m).removeprefix('- ').strip()}" for i, m in enumerate(memories, 1))
    user = (
        f"QUESTION: {model.question}\nANSWER BUDGET: {model.max_answer_tokens} tokens\n\n"
        f"MEMORIES\n{listing or '(none)'}\n"
    )
    draft, _usage = await llm.structured(SYSTEM, user, MentalModelDraft, role="consolidation")
    ids = {f"M{i}": m.id for i, m in enumerate(memories, 1)}
    used = [ids[s.strip().upper()] for s in draft.sources if s.strip().upper() in ids]
    return Generated(_cut(draft.content.strip(), model.max_answer_tokens), used or [m.id for m in memories], "llm")


def _cut(text: str, max_tokens: int) -> str:
    encoding = encoding_for_model(None)
    tokens = encoding.encode(text, disallowed_special=())
    return text if len(tokens) <= max_tokens else encoding.decode(tokens[:max_tokens])
