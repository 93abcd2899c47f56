"""Which bank an LLM call is for, so its tokens are counted against that bank (table llm_usage).

The code that starts work for a bank (extraction of its items, a job of its queue, a reflect on it) runs it
inside `charged_to(bank_id)`; `LLM` reads `charged_bank()` after each successful request and hands the usage to
its sink (the engine's, which adds it to the bank's counters for the day and the call's purpose). A context
variable, so concurrent work for different banks (asyncio tasks copy the context they start in) never mixes.

The counters themselves (table llm_usage, migration 0014): one row per bank, day (UTC) and purpose, added to after
every successful request (`record`, the engine's sink), and read back as a bank's totals and days (`read`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Iterator
from contextvars import ContextVar
from datetime import date, timedelta

import asyncpg

from memwrap.engine.llm.types import Usage
from memwrap.models import LLMUsage, LLMUsageCount, LLMUsageDay

# (bank_id, purpose — the LLM role —, the usage of one request)
UsageSink = Callable[[str, str, Usage], Awaitable[None]]

_BANK: ContextVar[str | None] = ContextVar("memwrap_llm_usage_bank", default=None)


@contextlib.contextmanager
def charged_to(bank_id: str | None) -> Iterator[None]:
    """LLM requests made inside (and in tasks started inside) count against `bank_id`."""
    token = _BANK.set(bank_id)
    try:
        yield
    finally:
        _BANK.reset(token)


def charged_bank() -> str | None:
    return _BANK.get()


# A bank that does not exist (a reflect on a name nobody retained into) has nothing to count against: no row.
RECORD = """
INSERT INTO llm_usage AS u (bank_id, day, purpose, requests, input_tokens, output_tokens, cached_input_tokens)
SELECT $1, (now() AT TIME ZONE 'UTC')::date, $2, $3, $4, $5, $6
WHERE EXISTS (SELECT 1 FROM banks WHERE bank_id = $1)
ON CONFLICT (bank_id, day, purpose) DO UPDATE SET
  requests = u.requests + EXCLUDED.requests,
  input_tokens = u.input_tokens + EXCLUDED.input_tokens,
  output_tokens = u.output_tokens + EXCLUDED.output_tokens,
  cached_input_tokens = u.cached_input_tokens + EXCLUDED.cached_input_tokens
"""

READ = """
SELECT day, purpose, requests, input_tokens, output_tokens, cached_input_tokens
FROM llm_usage WHERE bank_id = $1 AND day >= $2
ORDER BY day DESC, purpose
"""

TODAY = "SELECT (now() AT TIME ZONE 'UTC')::date"

ACQUIRE_SECONDS = 10.0

# The purposes in the order people read them (the engine's LLM roles); others (none today) sort after.
PURPOSES = ("extraction", "consolidation", "reflect")


async def record(
    pool: asyncpg.Pool,
    bank_id: str,
    purpose: str,
    *,
    requests: int,
    input_tokens: int,
    output_tokens: int,
    cached_input_tokens: int,
) -> None:
    # A bounded wait for a connection: a caller holding the pool's last connections while it waits on the LLM
    # must not wait on its own counter (the LLM client logs a count it could not write, and goes on).
    async with pool.acquire(timeout=ACQUIRE_SECONDS) as conn:
        await conn.execute(RECORD, bank_id, purpose, requests, input_tokens, output_tokens, cached_input_tokens)


async def read(pool: asyncpg.Pool, bank_id: str, days: int) -> LLMUsage:
    """The last `days` days (today included) of the bank's counters."""
    async with pool.acquire() as conn:
        today: date = await conn.fetchval(TODAY)
        since = today - timedelta(days=days - 1)
        rows = await conn.fetch(READ, bank_id, since)
    per_day = [LLMUsageDay(**dict(row)) for row in rows]
    sums: dict[str, LLMUsageCount] = {}
    for row in per_day:
        into = sums.setdefault(row.purpose, LLMUsageCount(purpose=row.purpose))
        into.requests += row.requests
        into.input_tokens += row.input_tokens
        into.output_tokens += row.output_tokens
        into.cached_input_tokens += row.cached_input_tokens
    order = {name: i for i, name in enumerate(PURPOSES)}
    by_purpose = sorted(sums.values(), key=lambda c: (order.get(c.purpose, len(order)), c.purpose))
    total = LLMUsageCount(
        purpose="all",
        requests=sum(c.requests for c in by_purpose),
        input_tokens=sum(c.input_tokens for c in by_purpose),
        output_tokens=sum(c.output_tokens for c in by_purpose),
        cached_input_tokens=sum(c.cached_input_tokens for c in by_purpose),
    )
    return LLMUsage(bank_id=bank_id, since=since, by_purpose=by_purpose, total=total, days=per_day)
