"""Emitting an event: one delivery (and one 'webhook' job) per enabled subscription of the bank that asked for
it, written on the caller's connection, so inside the transaction of the change itself: the event exists if and
only if the change committed, and nothing is sent before it has.

A bank without subscriptions costs one indexed lookup per change. The body is built here, once per event and
form (with or without the memories' text), and stored: every attempt sends the same bytes, so the signature and
the idempotency key (the event id) stay valid across retries.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any
from uuid import UUID, uuid4

from memwrap.engine.jobs.queue import NOTIFY_CHANNEL
from memwrap.store.pg_types import Executor

KIND = "webhook"  # the job kind that delivers (delivery.py)
PRIORITY = 90  # before consolidation (100): a delivery is one short request
# The job's own ceiling. The delivery gives up after MEMWRAP_WEBHOOK_MAX_ATTEMPTS (at most this) attempts by
# itself, read when it runs (delivery.py); the job's count only stops a job whose worker keeps dying.
JOB_MAX_ATTEMPTS = 100

SUBSCRIBED = """
SELECT bool_or(include_text) AS with_text FROM webhook_subscriptions
WHERE bank_id = $1 AND enabled AND $2 = ANY(events)
"""

TEXTS = "SELECT id, text FROM memory_units WHERE bank_id = $1 AND id = ANY($2::uuid[])"

# One delivery per subscription that wants the event, and the job that carries it out.
ENQUEUE = """
WITH subs AS (
    SELECT id, include_text FROM webhook_subscriptions WHERE bank_id = $1 AND enabled AND $2 = ANY(events)
), delivery AS (
    INSERT INTO webhook_deliveries (bank_id, subscription_id, event_id, event, body)
    SELECT $1, s.id, $3, $2, CASE WHEN s.include_text THEN $4 ELSE $5 END FROM subs s
    RETURNING id
)
INSERT INTO jobs (kind, bank_id, payload, priority, max_attempts)
SELECT $7, $1, jsonb_build_object('delivery_id', d.id), $8, $6 FROM delivery d
RETURNING id
"""


async def emit(
    db: Executor,
    bank_id: str,
    event: str,
    memory_ids: Sequence[UUID] = (),
    *,
    data: Mapping[str, Any] | None = None,
    text: str | None = None,
) -> int:
    """Queue `event` of `bank_id` for each subscription that wants it; returns how many deliveries were queued.

    `memory_ids`: the memories it is about (with their text read here, in the caller's transaction, for the
    subscriptions that include text: call it before a delete); `data`: more fields of the payload's `data`;
    `text`: a text of the event's own for those subscriptions (a mental model's content)."""
    if not memory_ids and data is None and text is None:
        return 0  # nothing happened (a write that wrote nothing new)
    with_text = await db.fetchval(SUBSCRIBED, bank_id, event)
    if with_text is None:
        return 0
    ids = [str(i) for i in dict.fromkeys(memory_ids)]
    event_id = uuid4()
    envelope = {
        "id": str(event_id),
        "type": event,
        "bank_id": bank_id,
        "created_at": datetime.now(UTC).isoformat().replace("+00:00", "Z"),
    }
    bare = {"memory_ids": ids, **(data or {})}
    full = dict(bare)
    if with_text:
        if ids:
            texts = {str(r["id"]): r["text"] for r in await db.fetch(TEXTS, bank_id, ids)}
            full["memories"] = [{"id": i, "text": texts[i]} for i in ids if i in texts]
        if text is not None:
            full["content"] = text
    rows = await db.fetch(
        ENQUEUE,
        bank_id,
        event,
        event_id,
        _dumps({**envelope, "data": full}),
        _dumps({**envelope, "data": bare}),
        JOB_MAX_ATTEMPTS,
        KIND,
        PRIORITY,
    )
    if rows:
        await db.execute("SELECT pg_notify($1, $2)", NOTIFY_CHANNEL, KIND)
    return len(rows)


def _dumps(payload: Mapping[str, Any]) -> str:
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":"), default=str)
