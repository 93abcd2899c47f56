"""Signing a webhook request: HMAC-SHA256 over "timestamp.body" with the subscription's secret.

The receiver recomputes it from the raw body and the `Memwrap-Timestamp` header and compares in constant time
(the recipe, in a few lines of plain Python, is in docs/webhooks.md; `verify` below is the same recipe). The
timestamp inside the signed text lets a receiver refuse a request replayed long after it was signed.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time

SECRET_PREFIX = "whsec_"
# Headers of every request (their values: signature_headers).
EVENT_ID_HEADER = "Memwrap-Event-Id"  # the idempotency key: the same on every attempt of one event
EVENT_HEADER = "Memwrap-Event"
TIMESTAMP_HEADER = "Memwrap-Timestamp"  # seconds since the epoch, when this attempt was signed
SIGNATURE_HEADER = "Memwrap-Signature"  # "v1=<hex>"; more than one "v1=" (space-separated) may come one day
DEFAULT_TOLERANCE_SECONDS = 300


def new_secret() -> str:
    """A fresh signing secret: 32 random bytes, URL-safe."""
    return SECRET_PREFIX + secrets.token_urlsafe(32)


def signature(secret: str, timestamp: int, body: str | bytes) -> str:
    """The hex HMAC-SHA256 of "{timestamp}.{body}" under the secret (the secret's text, as UTF-8, is the key)."""
    raw = body.encode() if isinstance(body, str) else body
    return hmac.new(secret.encode(), f"{timestamp}.".encode() + raw, hashlib.sha256).hexdigest()


def signature_headers(secret: str, event_id: str, event: str, body: str, *, now: float | None = None) -> dict[str, str]:
    """The headers of one attempt: signed at `now` (default: the current time)."""
    timestamp = int(time.time() if now is None else now)
    return {
        "Content-Type": "application/json",
        EVENT_ID_HEADER: event_id,
        EVENT_HEADER: event,
        TIMESTAMP_HEADER: str(timestamp),
        SIGNATURE_HEADER: f"v1={signature(secret, timestamp, body)}",
    }


def verify(
    secret: str,
    body: bytes,
    timestamp: str,
    signature_header: str,
    *,
    tolerance: float = DEFAULT_TOLERANCE_SECONDS,
    now: float | None = None,
) -> bool:
    """True when one of the header's v1 signatures is the body's under `secret` and the timestamp is within
    `tolerance` seconds of `now` (for Python receivers; docs/webhooks.md shows it without memwrap)."""
    try:
        signed_at = int(timestamp)
    except ValueError:
        return False
    if abs((time.time() if now is None else now) - signed_at) > tolerance:
        return False
    expected = signature(secret, signed_at, body)
    given = [part[3:] for part in signature_header.split() if part.startswith("v1=")]
    return any(hmac.compare_digest(expected, g) for g in given)
