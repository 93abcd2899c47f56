"""What the memory proxy adds to the wrappers' core for a server: turns that are stored, never dropped, and a
response → session map that is per bank and survives a restart.

`ProxyMemwrap` is the wrappers' `Memwrap` (one handle for the whole server) with three changes:
  * every turn is made storable before it is queued (validate.storable_items: NUL removed, a turn over the
    content limit split into parts), so traffic the engine would refuse is stored, not dropped;
  * a turn carries the marks the proxy set for it (`turn_marks`: e.g. `unseen` when the caller hung up before
    the answer reached it);
  * `previous_response_id` is resolved per bank, from the database (memwrap/store/response_sessions.py): the
    proxy looks the id up before the call begins, and every new response id is written after it ends.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
from collections import OrderedDict
from typing import Any

from memwrap import validate
from memwrap.defense.policy import redact
from memwrap.store import response_sessions
from memwrap.wrappers.core import Memwrap
from memwrap_server.database import DatabaseMonitor

log = logging.getLogger("memwrap.server.proxy")

# Metadata the proxy adds to the turn being finished in this task (set around Call.finish).
turn_marks: contextvars.ContextVar[dict[str, Any] | None] = contextvars.ContextVar("memwrap_turn_marks", default=None)

LOOKUP_TIMEOUT = 0.5  # the map is a nicety: a slow database must not hold the call up
CACHE_SIZE = 10_000


class ProxyMemwrap(Memwrap):
    def __init__(self, *args: Any, database: DatabaseMonitor, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.database = database
        self._known: OrderedDict[tuple[str, str], tuple[str, int]] = OrderedDict()
        self._writes: set[asyncio.Task[None]] = set()

    # -- turns --------------------------------------------------------------------------------------------------

    def enqueue(self, bank: str, item: dict[str, Any]) -> None:
        marks = turn_marks.get()
        if marks:
            item = {**item, "metadata": {**item.get("metadata", {}), **marks}}
        for part in validate.storable_items(item):
            super().enqueue(bank, part)

    # -- previous_response_id -------------------------------------------------------------------------------

    async def load_response(self, bank: str, response_id: str) -> None:
        """Look `response_id` up in `bank`'s map (database) so that the call about to begin finds it."""
        if (bank, response_id) in self._known or self.database.pool is None or self.database.down:
            return
        try:
            async with asyncio.timeout(LOOKUP_TIMEOUT):
                found = await response_sessions.lookup(self.database.pool, bank, response_id)
        except Exception as exc:  # noqa: BLE001 - without the map the turn starts a session of its own
            log.warning("response-session lookup failed (%s); the turn gets a session of its own", type(exc).__name__)
            return
        if found is not None:
            self._cache(bank, response_id, found)

    def session_of_response(self, bank: str, response_id: str) -> tuple[str, int] | None:
        with self._lock:
            return self._known.get((bank, response_id))

    def remember_response(self, bank: str, response_id: str, session: str, next_turn: int) -> None:
        session = redact(session)
        self._cache(bank, response_id, (session, next_turn))
        if self.database.pool is None:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return  # only ever called on the server's loop; anywhere else there is no database to write to
        self.background(self._save(bank, response_id, session, next_turn), loop)

    def background(self, work: Any, loop: asyncio.AbstractEventLoop | None = None) -> None:
        """Run `work` on the server's loop, held until it ends (the loop keeps only weak references to tasks)."""
        task = (loop or asyncio.get_running_loop()).create_task(work)
        self._writes.add(task)
        task.add_done_callback(self._writes.discard)

    async def _save(self, bank: str, response_id: str, session: str, next_turn: int) -> None:
        try:
            assert self.database.pool is not None
            await response_sessions.save(self.database.pool, bank, response_id, session, next_turn)
        except Exception as exc:  # noqa: BLE001 - the next turn then starts a session of its own; nothing else
            log.warning("could not store the session of a response (%s)", type(exc).__name__)

    async def expire_responses(self) -> None:
        if self.database.pool is None:
            return
        try:
            await response_sessions.expire(self.database.pool)
        except Exception as exc:  # noqa: BLE001 - expiry is housekeeping: any failure is logged, not raised
            log.warning("could not expire old response sessions (%s)", type(exc).__name__)

    async def drain(self, timeout: float = 5.0) -> None:
        """Wait for map writes in flight (shutdown)."""
        if self._writes:
            await asyncio.wait(list(self._writes), timeout=timeout)

    def _cache(self, bank: str, response_id: str, value: tuple[str, int]) -> None:
        with self._lock:
            self._known[(bank, response_id)] = value
            self._known.move_to_end((bank, response_id))
            while len(self._known) > CACHE_SIZE:
                self._known.popitem(last=False)
