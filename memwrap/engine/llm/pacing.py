"""Pacing calls to an LLM server that may be slow or small: how fast it is, and how many calls it takes at once.

* `SpeedMeter` learns a server's speed from the calls it answers (prompt and generation tokens per second; the
  llama.cpp server reports both in `timings`, otherwise the whole call's rate stands for both). Background work
  (extraction) bounds each request by that speed instead of by a fixed number of seconds: a 1.5B model on two
  shared cores generating ~7 tokens/s needs minutes for a reply that a hosted model writes in seconds, and a
  fixed timeout would throw that finished work away and ask again.
* `AdaptiveLimit` is the number of requests in flight: additive increase while calls succeed, halved when the
  server shows it is overloaded (timeouts, 429, 5xx, dropped connections), never below one nor above the
  configured maximum. A local server with two slots settles at two; a hosted API climbs to the maximum.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

# Weight of the newest observation in the moving averages: a server's speed changes when others share its cores.
EWMA = 0.3
# A background request may take this many times its expected time before it is given up.
SLACK = 3.0
# Overhead of one request (connection, template, scheduling) added to the expected time.
OVERHEAD_SECONDS = 2.0


@dataclass
class Speed:
    prompt_per_second: float
    generation_per_second: float
    samples: int


class SpeedMeter:
    """Moving averages of one server's prompt and generation speed (tokens per second)."""

    def __init__(self) -> None:
        self._prompt: float | None = None
        self._generation: float | None = None
        self.samples = 0

    def record(
        self,
        prompt_tokens: int,
        completion_tokens: int,
        seconds: float,
        *,
        prompt_per_second: float | None = None,
        generation_per_second: float | None = None,
    ) -> None:
        """One answered call. The server's own timings win; else the call's overall rate stands for both."""
        if seconds <= 0 or (prompt_tokens + completion_tokens) <= 0:
            return
        overall = (prompt_tokens + completion_tokens) / seconds
        generation = generation_per_second or (completion_tokens / seconds if completion_tokens else None)
        prompt = prompt_per_second or overall
        if generation:
            self._generation = generation if self._generation is None else _mix(self._generation, generation)
        self._prompt = prompt if self._prompt is None else _mix(self._prompt, prompt)
        self.samples += 1

    @property
    def speed(self) -> Speed | None:
        if self._generation is None or self._prompt is None:
            return None
        return Speed(self._prompt, self._generation, self.samples)

    def expected_seconds(self, prompt_tokens: int, max_tokens: int) -> float | None:
        """How long a call of this size takes at the measured speed (None before the first measurement)."""
        speed = self.speed
        if speed is None:
            return None
        return OVERHEAD_SECONDS + prompt_tokens / speed.prompt_per_second + max_tokens / speed.generation_per_second

    def background_timeout(self, prompt_tokens: int, max_tokens: int, *, floor: float, ceiling: float) -> float:
        """A background request's timeout: SLACK times its expected time, within [floor, ceiling]; the ceiling
        until the server's speed is known."""
        expected = self.expected_seconds(prompt_tokens, max_tokens)
        if expected is None:
            return ceiling
        return min(ceiling, max(floor, SLACK * expected))


def _mix(old: float, new: float) -> float:
    return (1 - EWMA) * old + EWMA * new


class AdaptiveLimit:
    """Requests in flight: AIMD between 1 and `maximum`. Bound to the event loop that first uses it."""

    def __init__(self, maximum: int, *, start: int | None = None) -> None:
        self.maximum = max(1, maximum)
        self.limit = max(1, min(self.maximum, start or self.maximum))
        self.in_flight = 0
        self._successes = 0
        self._condition: asyncio.Condition | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def _cond(self) -> asyncio.Condition:
        loop = asyncio.get_running_loop()
        if self._condition is None or self._loop is not loop:
            self._condition, self._loop, self.in_flight = asyncio.Condition(), loop, 0
        return self._condition

    @asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        condition = self._cond()
        async with condition:
            await condition.wait_for(lambda: self.in_flight < self.limit)
            self.in_flight += 1
        try:
            yield
        finally:
            async with condition:
                self.in_flight -= 1
                condition.notify_all()

    def succeeded(self) -> None:
        """One more call answered: after `limit` successes in a row the limit grows by one."""
        self._successes += 1
        if self._successes >= self.limit and self.limit < self.maximum:
            self.limit += 1
            self._successes = 0
            self._wake()

    def overloaded(self) -> None:
        """The server showed it has too much to do: halve the limit (the calls in flight finish as they are)."""
        self._successes = 0
        self.limit = max(1, self.limit // 2)

    def _wake(self) -> None:
        condition = self._condition
        if condition is None or self._loop is None or self._loop.is_closed():
            return

        async def notify() -> None:
            async with condition:
                condition.notify_all()

        try:
            if asyncio.get_running_loop() is self._loop:
                self._loop.create_task(notify())
        except RuntimeError:
            pass


__all__ = ["AdaptiveLimit", "Speed", "SpeedMeter"]
