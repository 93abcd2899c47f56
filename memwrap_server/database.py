"""Is the database there? A monitor that knows, so a request never waits to find out.

While the database is down every data route answers 503 `store_unavailable` at once (with Retry-After), `/health`
says `database: down` and `/ready` answers 503; the proxy keeps working without memory (it fails open).

The monitor probes with a connection of its own (`SELECT 1`) every second (twice a second while the database is
down, and at once when a request met a connection error), and the probe has a deadline
(MEMWRAP_DATABASE_PROBE_TIMEOUT, 2 s): a database that refuses connections is noticed at once, and one that
accepts them but does not answer (a frozen host, a stopped process, a full disk) within the deadline. The
requests that were already waiting on it when it stopped answering are answered 503 then too (the Gate watches
`down_signal`), instead of hanging until TCP gives up. When the database answers again, the next probe says so
and traffic flows again; the engine's pool replaces its dead connections by itself. Nothing needs a restart.

The monitor's small pool serves the server's own bookkeeping (the proxy's response → session map); the probe
never borrows from it, so a pool busy with a frozen query cannot hold the probe up.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from typing import Any

import asyncpg

from memwrap.store.pg_types import Connection

log = logging.getLogger("memwrap.server.database")

UP_INTERVAL = 1.0
DOWN_INTERVAL = 0.5
PROBE_TIMEOUT = 2.0


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
    def __init__(self, url_of: Callable[[], str | None], *, probe_timeout: float = PROBE_TIMEOUT) -> None:
        self._url_of = url_of  # None: nothing to watch (an HTTP-backed memory)
        self.probe_timeout = probe_timeout
        self.up = True
        self.checked_at: float | None = None
        self.last_error: str | None = None
        self.since = time.time()
        self.pool: asyncpg.Pool | None = None
        self._url: str | None = None
        self._conn: Connection | None = None
        self._signal: asyncio.Future[None] | None = None
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    @property
    def down(self) -> bool:
        return not self.up

    @property
    def watching(self) -> bool:
        """False for an HTTP-backed memory: there is no database here to watch."""
        return self._url is not None

    @property
    def down_signal(self) -> asyncio.Future[None]:
        """A future that completes when the database is next found down (at once if it is down now)."""
        if self._signal is None or (self._signal.done() and self.up):
            self._signal = asyncio.get_running_loop().create_future()
            if self.down:
                self._signal.set_result(None)
        return self._signal

    async def start(self) -> None:
        self._url = self._url_of()
        if self._url is None:
            return
        # min_size=0: nothing is opened until used, and a dead connection is simply replaced on the next acquire.
        self.pool = await asyncpg.create_pool(
            self._url, min_size=0, max_size=2, timeout=self.probe_timeout, command_timeout=30.0
        )
        self._task = asyncio.create_task(self._run(), name="memwrap-database-monitor")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        self._drop_probe_connection()
        if self.pool is not None:
            pool, self.pool = self.pool, None
            try:
                await asyncio.wait_for(pool.close(), 5.0)
            except Exception:  # noqa: BLE001 - a frozen database: cut the connections instead
                pool.terminate()

    def suspect(self, exc: BaseException) -> None:
        """A request met `exc`: if it is a connection error, the database is down until a probe says otherwise."""
        if is_connection_error(exc):
            self._set(False, exc)
            self._wake.set()

    async def probe(self) -> bool:
        """One `SELECT 1` under the deadline. A connection the server closed since the last probe (an idle
        timeout, a restart) is replaced once within the same deadline before the database counts as down."""
        if self._url is None:
            return True
        try:
            async with asyncio.timeout(self.probe_timeout):
                try:
                    await self._select_one()
                except (asyncpg.PostgresError, asyncpg.InterfaceError, OSError) as exc:
                    if isinstance(exc, TimeoutError) or self._conn is None:
                        raise
                    self._drop_probe_connection()  # a stale connection: try a fresh one before judging
                    await self._select_one()
        except (asyncpg.PostgresError, asyncpg.InterfaceError, OSError, TimeoutError) as exc:
            self._drop_probe_connection()
            if isinstance(exc, TimeoutError):
                exc = TimeoutError(f"no answer to a probe within {self.probe_timeout:g} s")
            self._set(False, exc)
        else:
            self._set(True, None)
        self.checked_at = time.time()
        return self.up

    async def _select_one(self) -> None:
        if self._conn is None or self._conn.is_closed():
            assert self._url is not None
            # command_timeout bounds the CancelRequest asyncpg sends when a probe is cut off by the deadline.
            self._conn = await asyncpg.connect(
                self._url, timeout=self.probe_timeout, command_timeout=self.probe_timeout
            )
        await self._conn.fetchval("SELECT 1")

    def _drop_probe_connection(self) -> None:
        """Close without a goodbye: a frozen server would never answer one."""
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.terminate()

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
                log.warning(
                    "the database is unreachable (%s); data routes answer 503 until it is back", _describe(error)
                )
        self.up = up
        self.last_error = None if up else _describe(error)
        if not up and self._signal is not None and not self._signal.done():
            self._signal.set_result(None)

    def report(self) -> dict[str, Any]:
        # The error itself (hosts, ports) stays in the server's log: /health answers anyone.
        return {"database": "up" if self.up else "down", "database_since": self.since}


def _describe(error: BaseException | None) -> str:
    if error is None:
        return "unknown error"
    return f"{type(error).__name__}: {error}"[:300]
