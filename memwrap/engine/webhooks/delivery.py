"""Delivering: the 'webhook' job POSTs one delivery's body, signed, and logs the attempt; and the log's reading.

An attempt is a success on any 2xx. No answer (connection refused, a timeout, a broken connection), 408, 429 and
5xx are worth another try: the attempt raises, and the queue retries it after a backoff (retry_policy below:
MEMWRAP_WEBHOOK_BACKOFF_SECONDS doubled per attempt up to MEMWRAP_WEBHOOK_BACKOFF_CAP_SECONDS, with jitter) until
MEMWRAP_WEBHOOK_MAX_ATTEMPTS attempts were made; then the delivery is 'failed'. Any other answer (a 3xx:
redirects are not followed; a 4xx) is final: 'failed' at once, since sending the same bytes again would get the
same answer. Every attempt is a row of webhook_attempts, whatever came of it.

A delivery is only ever sent to the subscription it was written for, in the bank it was written in: the job, the
delivery and the subscription must all name the same bank.

What an attempt's log keeps of a failure is its class: refused_address, timeout, connect_error or
redirect_not_followed (and the status code of an answer); never the exception's text, which may name the
addresses a host resolved to. A bank-scoped key reads even less (as_classes): no status code, no timing.
A failed attempt is one warning line per subscription per FAILURE_LOG_SECONDS (the others at debug, with the
traceback), so one bank's dead receivers cannot flood the log.

Fairness: the queue serves banks in turn and caps a bank's running deliveries (in_flight_per_bank, the
worker's JobKind), so another bank's dead receivers delay a delivery by about one timeout at most.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

import asyncpg
import httpx

from memwrap.config import Settings
from memwrap.engine.jobs.queue import JobContext
from memwrap.engine.jobs.retry_policy import RetryPolicy
from memwrap.engine.webhooks.addresses import BlockedAddressError, guarded_transport
from memwrap.engine.webhooks.signing import signature_headers
from memwrap.engine.webhooks.urls import private_allowed_for_delivery
from memwrap.store.pg_types import Executor
from memwrap.webhook_models import WebhookAttempt, WebhookDelivery

log = logging.getLogger("memwrap.webhooks")

USER_AGENT = "memwrap-webhooks/1"
MAX_ERROR_CHARS = 500
# Finished deliveries (delivered, failed, skipped) stay in the log this long; reconciliation's deep pass prunes them.
KEEP_FINISHED_DELIVERIES_SECONDS = 30 * 86400.0
# One warning line per subscription this often at most; the failures between are counted into the next one.
FAILURE_LOG_SECONDS = 60.0
_last_logged: dict[str, tuple[float, int]] = {}  # subscription id -> (when it was last logged, failures since)

LOAD = """
SELECT d.id, d.event_id, d.event, d.body, d.status, d.attempts, d.subscription_id, s.url, s.secret, s.enabled,
       s.allow_private
FROM webhook_deliveries d
JOIN webhook_subscriptions s ON s.bank_id = d.bank_id AND s.id = d.subscription_id
WHERE d.id = $1 AND d.bank_id = $2
"""

RECORD_ATTEMPT = """
INSERT INTO webhook_attempts (bank_id, delivery_id, attempt, status_code, error, duration_ms, started_at)
VALUES ($7, $1, $2, $3, $4, $5, $6)
ON CONFLICT (bank_id, delivery_id, attempt) DO UPDATE
SET status_code = EXCLUDED.status_code, error = EXCLUDED.error, duration_ms = EXCLUDED.duration_ms,
    started_at = EXCLUDED.started_at
"""

SET_STATUS = """
UPDATE webhook_deliveries
SET attempts = $2, last_status = $3, last_error = $4, status = $5,
    finished_at = CASE WHEN $5 = 'pending' THEN NULL ELSE now() END
WHERE bank_id = $6 AND id = $1
"""


class WebhookAttemptError(Exception):
    """An attempt that is worth repeating failed (the queue retries the job after its backoff)."""

    logged = True  # said once, here (log_failure): the queue logs it at debug only


def in_flight_per_bank(settings: Settings) -> int:
    """The most deliveries one bank may have in flight over every worker (MEMWRAP_WEBHOOK_MAX_IN_FLIGHT_PER_BANK)."""
    return settings.webhook_max_in_flight_per_bank


def retry_policy(settings: Settings) -> RetryPolicy:
    """The waits between attempts (the number of attempts is the delivery's own count, checked in run_job)."""
    return RetryPolicy(
        settings.webhook_max_attempts, settings.webhook_backoff_seconds, settings.webhook_backoff_cap_seconds
    )


@dataclass(frozen=True)
class Outcome:
    status_code: int | None
    error: str | None
    duration_ms: float
    started_at: datetime
    final: bool = False  # no answer, and none would come of trying again (a blocked address)

    @property
    def delivered(self) -> bool:
        return self.status_code is not None and 200 <= self.status_code < 300

    @property
    def retryable(self) -> bool:
        code = self.status_code
        return not self.final and (code is None or code in (408, 429) or code >= 500)


async def run_job(ctx: JobContext) -> dict[str, Any]:
    """One attempt of one delivery (the job's payload names it)."""
    settings = ctx.parts.settings
    pool: asyncpg.Pool = ctx.parts.pool
    delivery_id = int(ctx.job.payload["delivery_id"])
    bank_id = ctx.job.bank_id
    row = await pool.fetchrow(LOAD, delivery_id, bank_id)
    if row is None:
        return {"skipped": "the subscription or the delivery was deleted"}
    if row["status"] != "pending":
        return {"skipped": f"the delivery is {row['status']} already"}
    if not row["enabled"]:
        await pool.execute(
            SET_STATUS, delivery_id, row["attempts"], None, "the subscription is disabled", "skipped", bank_id
        )
        return {"skipped": "the subscription is disabled"}
    attempt = row["attempts"] + 1
    outcome = await post(
        row["url"],
        row["secret"],
        str(row["event_id"]),
        row["event"],
        row["body"],
        settings,
        private_allowed=private_allowed_for_delivery(settings, row["allow_private"]),
    )
    if outcome.delivered:
        status = "delivered"
    elif outcome.retryable and attempt < min(settings.webhook_max_attempts, ctx.job.max_attempts):
        status = "pending"
    else:
        status = "failed"
    async with pool.acquire() as conn, conn.transaction():
        await conn.execute(
            RECORD_ATTEMPT,
            delivery_id,
            attempt,
            outcome.status_code,
            outcome.error,
            outcome.duration_ms,
            outcome.started_at,
            bank_id,
        )
        await conn.execute(SET_STATUS, delivery_id, attempt, outcome.status_code, outcome.error, status, bank_id)
    if not outcome.delivered:
        log_failure(bank_id or "", str(row["subscription_id"]), delivery_id, attempt, outcome, status)
    if status == "pending":
        raise WebhookAttemptError(outcome.error or f"the receiver answered {outcome.status_code}")
    return {"delivery_id": delivery_id, "status": status, "attempts": attempt, "status_code": outcome.status_code}


async def post(
    url: str,
    secret: str,
    event_id: str,
    event: str,
    body: str,
    settings: Settings,
    *,
    private_allowed: bool | None = None,
) -> Outcome:
    """POST the body once, signed now; the receiver's status code, or the class of what kept it from answering.
    Unless private addresses are allowed, the connection is made through addresses.GuardedBackend: the address
    it connects to is the one it checked."""
    if private_allowed is None:
        private_allowed = private_allowed_for_delivery(settings, None)
    started_at = datetime.now(UTC)
    start = time.perf_counter()
    status_code: int | None = None
    error: str | None = None
    final = False
    failure: BaseException | None = None
    try:
        headers = {**signature_headers(secret, event_id, event, body), "User-Agent": USER_AGENT}
        timeout = settings.webhook_timeout_seconds
        async with (
            httpx.AsyncClient(
                timeout=timeout, follow_redirects=False, transport=None if private_allowed else guarded_transport()
            ) as client,
            client.stream("POST", url, content=body.encode(), headers=headers) as response,
        ):
            status_code = response.status_code  # the answer's body is never read: it is the receiver's business
            if 300 <= status_code < 400:
                error = "redirect_not_followed"
    except BlockedAddressError as exc:
        error, final, failure = BlockedAddressError.failure_class, True, exc
    except httpx.TimeoutException as exc:
        error, failure = "timeout", exc
    except (httpx.HTTPError, OSError) as exc:
        error, failure = "connect_error", exc
    duration_ms = round((time.perf_counter() - start) * 1000, 1)
    if failure is not None:
        log.debug("webhook attempt to a subscription failed (%s)", error, exc_info=failure)
    return Outcome(status_code, error[:MAX_ERROR_CHARS] if error else None, duration_ms, started_at, final)


def log_failure(
    bank_id: str, subscription_id: str, delivery_id: int, attempt: int, outcome: Outcome, status: str
) -> None:
    """One warning line per subscription per FAILURE_LOG_SECONDS; the failures in between at debug, counted."""
    what = outcome.error or f"http_{(outcome.status_code or 0) // 100}xx"
    now = time.monotonic()
    last, since = _last_logged.get(subscription_id, (float("-inf"), 0))
    if now - last < FAILURE_LOG_SECONDS:
        _last_logged[subscription_id] = (last, since + 1)
        log.debug(
            "webhook %s of bank %r: delivery %s attempt %s failed: %s",
            subscription_id,
            bank_id,
            delivery_id,
            attempt,
            what,
        )
        return
    if len(_last_logged) > 100_000:  # a bound on what a long-running process remembers
        _last_logged.clear()
    _last_logged[subscription_id] = (now, 0)
    log.warning(
        "webhook %s of bank %r: delivery %s attempt %s failed: %s (%s)%s",
        subscription_id,
        bank_id,
        delivery_id,
        attempt,
        what,
        "will retry" if status == "pending" else "gave up" if status == "failed" else status,
        f"; {since} more failure(s) of this webhook since the last line" if since else "",
    )


def as_classes(found: WebhookDelivery) -> WebhookDelivery:
    """A delivery as a bank-scoped key sees it: each attempt's failure class, no status code, no timing."""

    def cls(code: int | None, error: str | None) -> str | None:
        if error:
            return error
        return f"http_{code // 100}xx" if code is not None and not 200 <= code < 300 else None

    log_ = [
        WebhookAttempt(attempt=a.attempt, error=cls(a.status_code, a.error), duration_ms=None, started_at=a.started_at)
        for a in found.log
    ]
    return found.model_copy(
        update={"last_status": None, "last_error": cls(found.last_status, found.last_error), "log": log_}
    )


DELIVERIES = """
SELECT d.id, d.bank_id, d.subscription_id, d.event_id, d.event, d.status, d.attempts, d.last_status, d.last_error,
       d.created_at, d.finished_at, d.body,
       coalesce(jsonb_agg(jsonb_build_object(
           'attempt', a.attempt, 'status_code', a.status_code, 'error', a.error, 'duration_ms', a.duration_ms,
           'started_at', a.started_at) ORDER BY a.attempt) FILTER (WHERE a.attempt IS NOT NULL), '[]'::jsonb) AS log
FROM webhook_deliveries d
LEFT JOIN webhook_attempts a ON a.bank_id = d.bank_id AND a.delivery_id = d.id
WHERE d.bank_id = $1 AND ($2::uuid IS NULL OR d.subscription_id = $2) AND ($3::text IS NULL OR d.status = $3)
GROUP BY d.bank_id, d.id
ORDER BY d.id DESC
LIMIT $4
"""


async def deliveries(
    db: Executor, bank_id: str, *, subscription_id: UUID | None, status: str | None, limit: int
) -> list[WebhookDelivery]:
    """The bank's deliveries, newest first, each with its attempts (oldest first) and the payload sent."""
    rows = await db.fetch(DELIVERIES, bank_id, subscription_id, status, limit)
    return [
        WebhookDelivery(**{k: v for k, v in dict(r).items() if k != "body"}, payload=json.loads(r["body"]))
        for r in rows
    ]


async def prune(db: Executor, *, older_than_seconds: float = KEEP_FINISHED_DELIVERIES_SECONDS) -> int:
    """Forget finished deliveries (and their attempts) after a while; returns how many."""
    status = await db.execute(
        "DELETE FROM webhook_deliveries WHERE status <> 'pending' AND finished_at < now() - $1 * interval '1 second'",
        older_than_seconds,
    )
    return int(status.split()[-1])
