"""The one retry policy of background work: how many attempts a job gets and how long it waits between them.

Every kind of job (consolidation, mental-model refreshes, extraction of raw turns, …) is retried the same way:
attempt n failed → queued again after base · 2^(n-1) seconds (capped, ±25% jitter so failures do not retry in
lockstep); the attempt that reaches `max_attempts` fails the job for good (status 'failed': dead, listed by
`jobs()`, kept until pruned). Kinds differ only in the numbers, declared here: work that waits on an LLM
provider (extraction, units whose consolidation failed) backs off for minutes, not seconds.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from memwrap.config import Settings

# Longest wait between two attempts of work that waits on a provider (an outage may last hours).
PROVIDER_BACKOFF_CAP_SECONDS = 6 * 3600.0

# Units whose consolidation failed for good: retried this often, this far apart, then left alone (they are still
# recalled as facts).
PARKED_UNITS_MAX_ATTEMPTS = 3
PARKED_UNITS_BACKOFF_SECONDS = 60.0


def backoff_seconds(attempt: int, base: float, cap: float, *, jitter: bool = True) -> float:
    """Exponential backoff: base, 2·base, 4·base, … up to cap; ±25% jitter."""
    delay = min(cap, base * (2 ** max(attempt - 1, 0)))
    return delay * random.uniform(0.75, 1.25) if jitter else delay


@dataclass(frozen=True)
class RetryPolicy:
    max_attempts: int
    base_seconds: float
    cap_seconds: float

    def delay(self, attempt: int, *, jitter: bool = True) -> float:
        """How long to wait after failed attempt number `attempt` (1-based)."""
        return backoff_seconds(attempt, self.base_seconds, self.cap_seconds, jitter=jitter)

    @classmethod
    def for_jobs(cls, settings: Settings) -> RetryPolicy:
        """Learning jobs: MEMWRAP_JOB_MAX_ATTEMPTS, MEMWRAP_JOB_BACKOFF_SECONDS, MEMWRAP_JOB_BACKOFF_CAP_SECONDS."""
        return cls(settings.job_max_attempts, settings.job_backoff_seconds, settings.job_backoff_cap_seconds)

    @classmethod
    def for_extraction(cls, settings: Settings) -> RetryPolicy:
        """Raw turns waiting for their facts: MEMWRAP_EXTRACTION_MAX_ATTEMPTS, MEMWRAP_EXTRACTION_RETRY_INTERVAL."""
        return cls(settings.extraction_max_attempts, settings.extraction_retry_interval, PROVIDER_BACKOFF_CAP_SECONDS)

    @classmethod
    def for_parked_units(cls, settings: Settings) -> RetryPolicy:
        """Units a consolidation job gave up on: a few slow retries of just those units."""
        del settings  # fixed numbers; the signature is the one every kind's policy has
        return cls(PARKED_UNITS_MAX_ATTEMPTS, PARKED_UNITS_BACKOFF_SECONDS, PROVIDER_BACKOFF_CAP_SECONDS)
