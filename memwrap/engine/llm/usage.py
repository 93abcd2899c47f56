"""Which bank an LLM call is for, so its tokens are counted against that bank (table llm_usage).

The code that starts work for a bank (extraction of its items, a job of its queue, a reflect on it) runs it
inside `charged_to(bank_id)`; `LLM` reads `charged_bank()` after each successful request and hands the usage to
its sink (the engine's, which adds it to the bank's counters for the day and the call's purpose). A context
variable, so concurrent work for different banks (asyncio tasks copy the context they start in) never mixes.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Iterator
from contextvars import ContextVar

from memwrap.engine.llm.types import Usage

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
