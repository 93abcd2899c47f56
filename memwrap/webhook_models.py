"""What the webhook verbs take and return: a bank's subscriptions, their deliveries and each delivery's attempts
(how they are sent: memwrap/engine/webhooks; the receiver's side: docs/webhooks.md)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal, get_args
from uuid import UUID

from pydantic import BaseModel, Field

# Every event a subscription can ask for, in the order they happen to a memory.
WebhookEvent = Literal["retained", "updated", "invalidated", "deleted", "observation.changed", "mental_model.refreshed"]
WEBHOOK_EVENTS: tuple[str, ...] = get_args(WebhookEvent)
DeliveryStatus = Literal["pending", "delivered", "failed", "skipped"]
DELIVERY_STATUSES: tuple[str, ...] = get_args(DeliveryStatus)
MAX_DELIVERIES_PAGE = 500  # the most deliveries one read of the log returns


class WebhookSubscription(BaseModel):
    """Where a bank's events are POSTed. `secret` is only ever returned by `create_webhook`: keep it, it is what
    the receiver checks each request's signature with (docs/webhooks.md)."""

    id: UUID
    bank_id: str
    url: str
    events: list[str]
    include_text: bool = True  # the memories' text is in the payload (False: ids only)
    enabled: bool = True
    description: str | None = None
    secret: str | None = None
    created_at: datetime
    updated_at: datetime


class WebhookAttempt(BaseModel):
    """One POST of a delivery: the receiver's status code, or the class of failure when there was no answer
    (refused_address, timeout, connect_error; redirect_not_followed beside a 3xx). A bank-scoped API key reads
    the class only (an answer's too: http_4xx, http_5xx), without status code or duration."""

    attempt: int
    status_code: int | None = None
    error: str | None = None
    duration_ms: float | None = None
    started_at: datetime


class WebhookDelivery(BaseModel):
    """One event sent (or being sent) to one subscription, with every attempt, oldest first."""

    id: int
    bank_id: str
    subscription_id: UUID
    event_id: UUID  # the idempotency key: the same on every attempt (header Memwrap-Event-Id)
    event: str
    status: DeliveryStatus
    attempts: int
    last_status: int | None = None
    last_error: str | None = None
    created_at: datetime
    finished_at: datetime | None = None
    payload: dict[str, Any] = Field(default_factory=dict)  # the JSON body sent (the same bytes on every attempt)
    log: list[WebhookAttempt] = Field(default_factory=list)
