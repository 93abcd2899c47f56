"""A failure budget per API key: a key that keeps sending requests the server refuses is slowed down.

Why: refused requests are cheap one by one (about half a millisecond here), but a client in a tight loop of
them — a bug, a retry storm, a scanner holding a valid key — keeps the event loop busy for everyone: sixteen
such connections made /health nine times slower. Answering them faster does not help, since a faster answer
only means the next one arrives sooner. Holding them does: a request held on an `asyncio.sleep` costs no CPU.

Each key has a token bucket of `burst` refusals that refills at `rate` per second. A refusal (a 4xx other than
404, 409 and 429: those are answers a correct client gets too) takes one token; the bucket may go into debt.
While a key is in debt, each of its requests is held until the debt would be repaid — at most `max_wait`
seconds; when the debt is deeper than that, the request is held `max_wait` and then answered 429 with
Retry-After. A key in debt therefore gets through about `rate` refused requests per second however many
connections it opens, and a client that stops misbehaving is back to full speed within `burst / rate` seconds.
A correct client never notices: it would need `burst` refusals within moments to be held at all.

Only authenticated keys are budgeted: with keys off the server is bound to loopback and trusts its callers, and
a request with no valid key is refused before any work (the cheapest answer there is).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any

log = logging.getLogger("memwrap.server")

# Statuses a well-behaved client also meets (a memory that was deleted, a bank that already exists, this module's
# own answer): they say nothing about a client gone wrong.
NOT_CHARGED = frozenset({404, 409, 429})


def charged(status: int) -> bool:
    """Whether a response with this status spends the key's failure budget."""
    return 400 <= status < 500 and status not in NOT_CHARGED


@dataclass
class _Bucket:
    tokens: float
    updated: float
    waiting: int = 0  # requests being held now: each is a refusal to come, so the next one waits behind them
    held: bool = False  # whether the last admission had to wait: logged once per episode, not per request


@dataclass
class FailureBudget:
    """Per-key token buckets. `rate` 0 turns the budget off."""

    rate: float
    burst: int
    max_wait: float = 1.0
    clock: Callable[[], float] = time.monotonic
    # How the log names a key without revealing it (Auth.label: its place in MEMWRAP_API_KEYS); asked only when
    # a key starts being held, not on every request.
    label: Callable[[Any], str] = lambda key: "#?"  # given the keys this budget holds (the server's: ApiKey)
    _buckets: dict[Hashable, _Bucket] = field(default_factory=dict)

    @property
    def enabled(self) -> bool:
        return self.rate > 0

    def _bucket(self, key: Hashable) -> _Bucket:
        now = self.clock()
        bucket = self._buckets.get(key)
        if bucket is None:
            # Keys come from MEMWRAP_API_KEYS, so this dict holds at most one bucket per configured key.
            bucket = self._buckets[key] = _Bucket(float(self.burst), now)
        else:
            bucket.tokens = min(float(self.burst), bucket.tokens + (now - bucket.updated) * self.rate)
            bucket.updated = now
        return bucket

    def wait_needed(self, key: Hashable) -> float:
        """Seconds this key's next request must be held: until its debt, and one token for each request held
        before it, would be repaid (0: not in debt). Counting the held ones spaces them 1/rate apart instead of
        letting them all through together when the debt is repaid."""
        bucket = self._bucket(key)
        owed = bucket.waiting - bucket.tokens
        return 0.0 if bucket.tokens >= 0 and bucket.waiting == 0 else max(owed, 0.0) / self.rate

    async def admit(self, key: Hashable) -> float | None:
        """Hold the request while its key is in debt. None: go on. A number: answer 429 with that Retry-After."""
        if not self.enabled:
            return None
        wait = self.wait_needed(key)
        bucket = self._buckets[key]
        if wait <= 0:
            bucket.held = False
            return None
        if not bucket.held:
            bucket.held = True
            log.warning(
                "API key %s is over its failure budget (%g refused requests/s, burst %d): its requests are "
                "held until it recovers",
                self.label(key),
                self.rate,
                self.burst,
            )
        bucket.waiting += 1
        try:
            await asyncio.sleep(min(wait, self.max_wait))
        finally:
            bucket.waiting -= 1
        return None if wait <= self.max_wait else max(1.0, wait - self.max_wait)

    def charge(self, key: Hashable, status: int) -> None:
        if self.enabled and charged(status):
            self._bucket(key).tokens -= 1.0
