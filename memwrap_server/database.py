"""Is the database there? A monitor that knows, so a request never waits to find out.

While the database is down every data route answers 503 `store_unavailable` at once (with Retry-After), `/health`
says `database: down` and `/ready` answers 503; the proxy keeps working without memory (it fails open). The
monitor probes with a connection of its own (`SELECT 1`, one-second timeout): every few seconds while the
database is up, twice a second while it is down, and at once when a request met a connection error. When the
database is back, the next probe says so and traffic flows again; the engine's pool replaces its dead
connections by itself. Nothing needs a restart.

The monitor's small pool also serves the server's own bookkeeping (the proxy's response → session map).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from typing import Any

import asyncpg

log = logging.getLogger("memwrap.server.database")

UP_INTERVAL = 2.0
DOWN_INTERVAL = 0.5
PROBE_TIMEOUT = 1.0


def is_connection_error(exc: BaseException) -> bool:
    """True for errors that say "the database cannot be reached", as opposed to "this request is wrong"."""
    return isinstance(
        exc,
        (
            OSError,  # refused, reset, unreachable; TimeoutError too
            asyncpg.PostgresConnectionError,  # SQLSTATE class 08
            asyncpg.exceptions.OperatorInterventionError,  # 57P: admin shutdown, crash shutdown, cannot connect now
            asyncpg.exceptions.ConnectionDoesNotExistError,  # the connection died mid-query
            asyncpg.exceptions.InternalClientError,
        ),
    ) or (isinstance(exc, asyncpg.InterfaceError) and "closed" in str(exc))


class DatabaseMonitor:
    def __init__(self, url_of: Callable[[], str | None]) -> None:
        self._url_of = url_of  # None: nothing to watch (an HTTP-backed memory)
        self.up = True
        self.checked_at: float | None = None
        self.last_error: str | None = None
        self.since = time.time()
        self.pool: asyncpg.Pool | None = None
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    @property
    def down(self) -> bool:
        return not self.up

    async def start(self) -> None:
        url = self._url_of()
        if url is None:
            return
        # min_size=0: nothing is opened until used, and a dead connection is simply replaced on the next acquire.
        self.pool = await asyncpg.create_pool(url, min_size=0, max_size=2, timeout=PROBE_TIMEOUT)
        self._task = asyncio.create_task(self._run(), name="memwrap-database-monitor")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        if self.pool is not None:
            pool, self.pool = self.pool, None
            with contextlib.suppress(Exception):
                await asyncio.wait_for(pool.close(), 5.0)

    def suspect(self, exc: BaseException) -> None:
        """A request met `exc`: if it is a connection error, the database is down until a probe says otherwise."""
        if is_connection_error(exc):
            self._set(False, exc)
            self._wake.set()

    async def probe(self) -> bool:
        if self.pool is None:
            return True
        try:
            async with asyncio.timeout(PROBE_TIMEOUT):
                await self.pool.fetchval("SELECT 1")
        except (asyncpg.PostgresError, asyncpg.InterfaceError, OSError, asyncio.TimeoutError) as exc:
            self._set(False, exc)
        else:
            self._set(True, None)
        self.checked_at = time.time()
        return self.up

    async def _run(self) -> None:
        while True:
            try:
                await self.probe()
            except Exception as exc:  # noqa: BLE001 - the monitor must outlive any surprise
                log.warning("database probe failed unexpectedly: %r", exc)
            self._wake.clear()
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._wake.wait(), UP_INTERVAL if self.up else DOWN_INTERVAL)

    def _set(self, up: bool, error: BaseException | None) -> None:
        if up != self.up:
            self.since = time.time()
            if up:
                log.warning("the database is reachable again; serving requests")
            else:
                log.warning("the database is unreachable (%s); data routes answer 503 until it is back",
                            _describe(error))
        self.up = up
        self.last_error = None if up else _describe(error)

    def report(self) -> dict[str, Any]:
        # The error itself (hosts, ports) stays in the server's log: /health answers anyone.
        return {"database": "up" if self.up else "down", "database_since": self.since}


def _describe(error: BaseException | None) -> str:
    if error is None:
        return "unknown error"
    return f"{type(error).__name__}: {error}"[:300]
