"""The declared verbs of a bank's webhooks: its events POSTed, signed, to URLs.

A section of `MemoryVerbs` (memwrap/verbs.py, which says how declarations work).
"""

from __future__ import annotations

import builtins

from memwrap.declare import Route, verb
from memwrap.verb_types import (
    BANK,
    DeliveriesLimit,
    VerbSection,
    WebhookEvents,
    WebhookId,
)
from memwrap.webhook_models import (
    DeliveryStatus,
    WebhookDelivery,
    WebhookSubscription,
)


class WebhookVerbs(VerbSection):
    """A bank's webhook subscriptions and their delivery log (memwrap/engine/webhooks)."""

    # --- webhooks: a bank's events POSTed, signed, to URLs (memwrap/engine/webhooks, docs/webhooks.md) -----------

    @verb(Route("POST", f"{BANK}/webhooks", status=201), cli="webhook-add")
    async def create_webhook(
        self,
        bank_id: str,
        url: str,
        *,
        events: WebhookEvents = None,
        include_text: bool = True,
        enabled: bool = True,
        description: str | None = None,
    ) -> WebhookSubscription:
        """Send the bank's events to `url` (http or https); the result holds the signing secret, shown this once.

        `events`: any of retained, updated, invalidated, deleted, observation.changed, mental_model.refreshed
        (None: all); `include_text`: the memories' text is in the payload (False: their ids only). Each request
        is signed with HMAC-SHA256 over "timestamp.body" (docs/webhooks.md shows how to check it)."""
        ...

    @verb(Route("GET", f"{BANK}/webhooks"), cli=True)
    async def webhooks(self, bank_id: str) -> builtins.list[WebhookSubscription]:
        """The bank's webhook subscriptions, oldest first (their secrets are never shown again)."""
        ...

    @verb(Route("PATCH", f"{BANK}/webhooks/{{webhook_id}}"), cli="webhook-update")
    async def update_webhook(
        self,
        bank_id: str,
        webhook_id: WebhookId,
        *,
        url: str | None = None,
        events: WebhookEvents = None,
        include_text: bool | None = None,
        enabled: bool | None = None,
        description: str | None = None,
    ) -> WebhookSubscription:
        """Change a webhook subscription: what is given changes, None leaves it (`enabled=False` pauses it:
        its queued deliveries are skipped)."""
        ...

    @verb(Route("DELETE", f"{BANK}/webhooks/{{webhook_id}}", status=204), cli="webhook-remove")
    async def delete_webhook(self, bank_id: str, webhook_id: WebhookId) -> None:
        """Delete a webhook subscription and its delivery log (WebhookNotFoundError if the bank has none such)."""
        ...

    @verb(Route("GET", f"{BANK}/webhook-deliveries"), cli="webhook-deliveries")
    async def webhook_deliveries(
        self,
        bank_id: str,
        *,
        webhook_id: WebhookId | None = None,
        status: DeliveryStatus | None = None,
        limit: DeliveriesLimit = 50,
    ) -> builtins.list[WebhookDelivery]:
        """The delivery log, newest first: each event sent to a subscription, with every attempt.

        Each delivery: its event and payload, its idempotency key (`event_id`), where it stands (pending,
        delivered, failed, skipped) and its attempts (status code or error, duration, time). `webhook_id`: one
        subscription's only; `status`: only those."""
        ...
