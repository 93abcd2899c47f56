"""A bank's webhook subscriptions: create (with a fresh secret, returned this once), list, change, delete.

A description is free text a caller may paste a token into: it is stored redacted (memwrap/defense). A URL is
stored whole (the receiver may need its query), and shown with its query hidden (urls.shown_url)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any
from uuid import UUID, uuid4

import asyncpg

from memwrap import validate
from memwrap.defense.policy import redact
from memwrap.engine.banks import ids as bank_ids
from memwrap.engine.webhooks.signing import new_secret
from memwrap.engine.webhooks.urls import shown_url
from memwrap.errors import ConflictError, InvalidInputError, WebhookNotFoundError
from memwrap.store.pg_types import Executor
from memwrap.webhook_models import WEBHOOK_EVENTS, WebhookSubscription

# Every event is sent once per subscription that wants it: the fan-out of one change stays small.
MAX_SUBSCRIPTIONS_PER_BANK = 25
MAX_DESCRIPTION_CHARS = 500

COLUMNS = "bank_id, id, url, events, include_text, enabled, description, created_at, updated_at"

INSERT = f"""
INSERT INTO webhook_subscriptions (bank_id, id, url, events, secret, include_text, enabled, description,
                                   allow_private)
SELECT $1, $2, $3, $4, $5, $6, $7, $8, $10
WHERE (SELECT count(*) FROM webhook_subscriptions WHERE bank_id = $1) < $9
RETURNING {COLUMNS}, secret
"""

UPDATE = f"""
UPDATE webhook_subscriptions
SET url = coalesce($3, url), events = coalesce($4, events), include_text = coalesce($5, include_text),
    enabled = coalesce($6, enabled), description = CASE WHEN $7 THEN $8 ELSE description END,
    allow_private = CASE WHEN $3::text IS NULL THEN allow_private ELSE $9 END, updated_at = now()
WHERE bank_id = $1 AND id = $2
RETURNING {COLUMNS}
"""


def check_events(events: Sequence[str] | str | None) -> list[str]:
    """The events asked for, in WEBHOOK_EVENTS' order; None or empty: all of them."""
    if events is None:
        return list(WEBHOOK_EVENTS)
    if isinstance(events, str):
        events = [events]
    unknown = sorted({e for e in events if e not in WEBHOOK_EVENTS}, key=str)
    if unknown:
        raise InvalidInputError(
            f"unknown webhook event(s) {', '.join(map(repr, unknown))}; the events are {', '.join(WEBHOOK_EVENTS)}."
        )
    return [e for e in WEBHOOK_EVENTS if e in events] or list(WEBHOOK_EVENTS)


def check_description(description: object) -> str | None:
    if description is None or (isinstance(description, str) and not description.strip()):
        return None
    return redact(validate.text_field(description, what="description", max_chars=MAX_DESCRIPTION_CHARS))


def webhook_id(value: UUID | str) -> UUID:
    try:
        return value if isinstance(value, UUID) else UUID(str(value))
    except ValueError:
        raise WebhookNotFoundError(
            f"{value!r} is not a webhook id (ids are UUIDs, as webhooks() lists them)."
        ) from None


def _subscription(row: asyncpg.Record, *, secret: bool = False) -> WebhookSubscription:
    fields: dict[str, Any] = {k: row[k] for k in COLUMNS.split(", ")}
    fields["url"] = shown_url(fields["url"])
    return WebhookSubscription(**fields, secret=row["secret"] if secret else None)


async def create(
    pool: asyncpg.Pool,
    bank_id: str,
    url: str,
    events: list[str],
    *,
    include_text: bool,
    enabled: bool,
    description: str | None,
    allow_private: bool,
) -> WebhookSubscription:
    """Create the bank if needed, then the subscription; its secret is in the result, and only there."""
    await bank_ids.admit(pool, bank_id)
    async with pool.acquire() as conn, conn.transaction():
        await conn.execute("INSERT INTO banks (bank_id) VALUES ($1) ON CONFLICT (bank_id) DO NOTHING", bank_id)
        # Two concurrent creates may not both pass the count: one lock per bank's subscriptions.
        await conn.execute("SELECT pg_advisory_xact_lock(hashtextextended('webhooks:' || $1, 0))", bank_id)
        row = await conn.fetchrow(
            INSERT,
            bank_id,
            uuid4(),
            url,
            events,
            new_secret(),
            include_text,
            enabled,
            description,
            MAX_SUBSCRIPTIONS_PER_BANK,
            allow_private,
        )
    if row is None:
        raise ConflictError(
            f"bank {bank_id!r} has {MAX_SUBSCRIPTIONS_PER_BANK} webhooks already, the most a bank may have; "
            "delete one first (or send one URL every event)."
        )
    return _subscription(row, secret=True)


async def list_subscriptions(db: Executor, bank_id: str) -> list[WebhookSubscription]:
    rows = await db.fetch(
        f"SELECT {COLUMNS} FROM webhook_subscriptions WHERE bank_id = $1 ORDER BY created_at", bank_id
    )
    return [_subscription(r) for r in rows]


async def update(db: Executor, bank_id: str, subscription_id: UUID, changes: Mapping[str, Any]) -> WebhookSubscription:
    """Change the fields in `changes` (url, events, include_text, enabled, description); the others stay. A new
    url comes with its allow_private (who set it decides)."""
    row = await db.fetchrow(
        UPDATE,
        bank_id,
        subscription_id,
        changes.get("url"),
        changes.get("events"),
        changes.get("include_text"),
        changes.get("enabled"),
        "description" in changes,
        changes.get("description"),
        changes.get("allow_private"),
    )
    if row is None:
        raise not_found(bank_id, subscription_id)
    return _subscription(row)


async def delete(db: Executor, bank_id: str, subscription_id: UUID) -> None:
    """Delete the subscription, its deliveries and their log (queued deliveries are skipped when they run)."""
    status = await db.execute(
        "DELETE FROM webhook_subscriptions WHERE bank_id = $1 AND id = $2", bank_id, subscription_id
    )
    if status.split()[-1] == "0":
        raise not_found(bank_id, subscription_id)


async def exists(db: Executor, bank_id: str, subscription_id: UUID) -> bool:
    return bool(
        await db.fetchval(
            "SELECT EXISTS (SELECT 1 FROM webhook_subscriptions WHERE bank_id = $1 AND id = $2)",
            bank_id,
            subscription_id,
        )
    )


def not_found(bank_id: str, subscription_id: UUID) -> WebhookNotFoundError:
    return WebhookNotFoundError(f"No webhook {subscription_id} in bank {bank_id!r} (`webhooks` lists them).")
