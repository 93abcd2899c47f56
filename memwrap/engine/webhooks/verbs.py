"""The webhook verbs as the engine runs them (declared in memwrap/verbs.py; `Engine` inherits them): each checks
its arguments at the boundary and runs subscriptions.py or delivery.py."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any
from uuid import UUID

from memwrap import validate
from memwrap.engine.webhooks import delivery, subscriptions
from memwrap.engine.webhooks.urls import (
    caller_is_scoped,
    check_public,
    check_url,
    private_allowed_for_caller,
)
from memwrap.errors import InvalidInputError
from memwrap.webhook_models import DELIVERY_STATUSES, MAX_DELIVERIES_PAGE, WebhookDelivery, WebhookSubscription

if TYPE_CHECKING:
    from memwrap.config import Settings
    from memwrap.store.db import Store


class WebhookVerbs:
    store: Store
    settings: Settings

    async def create_webhook(
        self,
        bank_id: str,
        url: str,
        *,
        events: Sequence[str] | str | None = None,
        include_text: bool = True,
        enabled: bool = True,
        description: str | None = None,
    ) -> WebhookSubscription:
        """Subscribe `url` to the bank's events; the result holds the signing secret, shown this once."""
        bank_id = validate.bank_id(bank_id)
        checked = await self._webhook_url(url)
        return await subscriptions.create(
            self.store.pool,
            bank_id,
            checked,
            subscriptions.check_events(events),
            include_text=_flag(include_text, "include_text"),
            enabled=_flag(enabled, "enabled"),
            description=subscriptions.check_description(description),
            allow_private=private_allowed_for_caller(self.settings),
        )

    async def webhooks(self, bank_id: str) -> list[WebhookSubscription]:
        """The bank's subscriptions, oldest first (without their secrets)."""
        return await subscriptions.list_subscriptions(self.store.pool, validate.bank_id(bank_id))

    async def update_webhook(
        self,
        bank_id: str,
        webhook_id: UUID | str,
        *,
        url: str | None = None,
        events: Sequence[str] | str | None = None,
        include_text: bool | None = None,
        enabled: bool | None = None,
        description: str | None = None,
    ) -> WebhookSubscription:
        """Change what is given (None: unchanged; an empty description removes it)."""
        bank_id, subscription_id = validate.bank_id(bank_id), subscriptions.webhook_id(webhook_id)
        changes: dict[str, Any] = {}
        if url is not None:
            changes["url"] = await self._webhook_url(url)
            changes["allow_private"] = private_allowed_for_caller(self.settings)
        if events is not None:
            changes["events"] = subscriptions.check_events(events)
        if include_text is not None:
            changes["include_text"] = _flag(include_text, "include_text")
        if enabled is not None:
            changes["enabled"] = _flag(enabled, "enabled")
        if description is not None:
            changes["description"] = subscriptions.check_description(description)
        return await subscriptions.update(self.store.pool, bank_id, subscription_id, changes)

    async def delete_webhook(self, bank_id: str, webhook_id: UUID | str) -> None:
        """Delete a subscription with its delivery log."""
        bank_id, subscription_id = validate.bank_id(bank_id), subscriptions.webhook_id(webhook_id)
        await subscriptions.delete(self.store.pool, bank_id, subscription_id)

    async def webhook_deliveries(
        self,
        bank_id: str,
        *,
        webhook_id: UUID | str | None = None,
        status: str | None = None,
        limit: int = 50,
    ) -> list[WebhookDelivery]:
        """The bank's deliveries, newest first, with every attempt (status code or error, duration, time)."""
        bank_id = validate.bank_id(bank_id)
        subscription_id = subscriptions.webhook_id(webhook_id) if webhook_id is not None else None
        if subscription_id is not None and not await subscriptions.exists(self.store.pool, bank_id, subscription_id):
            raise subscriptions.not_found(bank_id, subscription_id)
        if status is not None and status not in DELIVERY_STATUSES:
            raise InvalidInputError(f"status must be one of {', '.join(DELIVERY_STATUSES)}, not {status!r}.")
        found = await delivery.deliveries(
            self.store.pool,
            bank_id,
            subscription_id=subscription_id,
            status=status,
            limit=validate.bounded(limit, what="limit", low=1, high=MAX_DELIVERIES_PAGE),
        )
        # A bank-scoped key sees what became of each attempt as a failure class, not the receiver's status,
        # error or timing: the log must not be an oracle of the server's network.
        return [delivery.as_classes(d) for d in found] if caller_is_scoped() else found

    async def _webhook_url(self, url: object) -> str:
        checked = check_url(url)
        if not private_allowed_for_caller(self.settings):
            await check_public(checked)
        return checked


def _flag(value: object, what: str) -> bool:
    if not isinstance(value, bool):
        raise InvalidInputError(f"{what} must be true or false, not {value!r}.")
    return value
