"""A durable, ordered queue of retains between the app and the engine.

Every retain the wrappers make goes through here. The caller writes its row to SQLite before the wrapped call
returns (WAL, one short transaction, ~0.1 ms: committed to the file, so a process killed right after the call
returned loses nothing); a worker thread then makes it crash-proof (a synchronous=FULL commit fsyncs the log)
and a second one delivers rows in id order and deletes them once the engine has them. When the engine is down,
rows wait on disk and are retried with backoff; the next process that opens the same spool takes over rows
whose owner is dead (or whose lease ran out), delivers them first and lets its first calls wait for that
(memwrap/wrappers/backend.py), so what one process said is recalled by the next.

At exit (memwrap/lifecycle.py) each retainer delivers what it can within MEMWRAP_EXIT_TIMEOUT while the engine
still runs, and stops at the first failure: the rest stays in the spool. Failures during shutdown never count
against a row. `memwrap spool` shows, replays and purges the file (memwrap/wrappers/spool_admin.py).

The SQLite file itself (rows, owners, leases, fork safety) is in spool_store.py.

Delivery is at-least-once; the wrappers give every item a stable `document_id`, so a replay after a crash
between "engine stored it" and "row deleted" is recognised by the engine instead of stored twice.
"""

from __future__ import annotations

import concurrent.futures
import logging
import os
import socket
import sqlite3
import threading
import time
import uuid
import weakref
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memwrap import lifecycle
from memwrap.config import load_settings
from memwrap.errors import ClosedError, InvalidInputError, StoreError
from memwrap.wrappers.spool_store import LEASE_SECONDS, SPOOL_FILE, HomeLoopEnded, Row, Spool

__all__ = ["LEASE_SECONDS", "SPOOL_FILE", "Retainer", "RetainStats", "Row", "Spool", "close_all"]

log = logging.getLogger("memwrap.wrappers")

MAX_ATTEMPTS = 10  # a row failing alone this often (engine up) goes to `dead`: kept, but no longer blocking
# Failures that say "engine unavailable", not "this row is bad": they never count against a row.
TRANSIENT: tuple[type[BaseException], ...] = (
    StoreError,
    ClosedError,
    OSError,  # includes ConnectionError and TimeoutError
    concurrent.futures.TimeoutError,
    concurrent.futures.CancelledError,
)
MAX_BACKOFF = 30.0

Deliver = Callable[[str, list[dict[str, Any]]], None]


@dataclass
class RetainStats:
    queued: int = 0  # retains handed to the spool by this process
    spooled: int = 0  # of those, on disk and fsync'd (each was in the file, safe from a process crash, at once)
    delivered: int = 0  # rows the engine accepted (including replays of other runs' rows)
    replayed: int = 0  # of those, rows another (dead) run had spooled
    rejected: int = 0  # rows the engine refused as invalid (logged, dropped)
    buried: int = 0  # rows moved to the `dead` table after MAX_ATTEMPTS failures
    failures: int = 0  # failed delivery attempts (engine unavailable)
    last_error: str | None = None
    pending: int = field(default=0)


class Retainer:
    """The worker: caller -> spool -> engine, in order. Two daemon threads: a writer (fsync, leases, and the rows
    a caller could not write itself) and a deliverer."""

    def __init__(
        self,
        path: Path,
        deliver: Deliver,
        *,
        batch_size: int = 64,
        name: str = "memwrap-retain",
        reachable: Callable[[], bool] = lambda: True,
        engine_down: Callable[[], bool] = lambda: False,
        max_attempts: int = MAX_ATTEMPTS,
        max_backoff: float = MAX_BACKOFF,
        defense_policy: str | None = None,
        exit_timeout: float = 5.0,
    ) -> None:
        self.path: Path | str = Path(path)
        self.max_attempts = max_attempts
        self.max_backoff = max_backoff
        # Rows are redacted before they touch the disk unless the policy (MEMWRAP_DEFENSE_POLICY) is "off";
        # under "block" the engine then stores the redacted turn instead of refusing the raw one.
        self.redact = (defense_policy or load_settings().defense_policy) != "off"
        self.deliver = deliver
        self.reachable = reachable  # False once the memory is closed: waiting for delivery is then pointless
        self.engine_down = engine_down  # True while the engine is known to fail: exit does not wait for it
        self.exit_timeout = exit_timeout
        self.batch_size = batch_size
        self.owner = f"{socket.gethostname()}|{os.getpid()}|{uuid.uuid4().hex[:8]}"
        self.stats = RetainStats()
        # Set once the rows earlier processes left are delivered (or delivery failed): first calls wait for it.
        self.caught_up = threading.Event()
        self._queue: deque[tuple[str, dict[str, Any]]] = deque()  # rows a caller could not write (fallback)
        self._own: dict[int, str] = {}  # this process's rows not yet delivered: id -> bank (read-your-writes)
        self._resolved = 0
        self._unsynced = 0  # rows callers committed that no FULL commit has fsync'd yet
        self._passes = 0  # deliverer claims so far...
        self._floor: int | None = None  # ...and the oldest claimable row the last one found (None: none left)
        self._backlog_mark = 0  # the newest row already in the spool when this retainer began
        self._cond = threading.Condition()
        self._wake = threading.Event()
        self._stop = False
        self._error: BaseException | None = None
        self._deliver_wake = threading.Event()
        self._retry = threading.Event()
        self._shared: Spool | None = None
        self._callers: Spool | None = None
        self._callers_lock = threading.Lock()
        self._deliverer = threading.Thread(target=self._deliver_loop, name=f"{name}-deliver", daemon=True)
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        if lifecycle.exiting():  # a retain reported during exit (a library's own exit hook): spooled, not delivered
            self._stop = True
            self.caught_up.set()
            return
        self._thread.start()
        _live.add(self)

    # -- caller side ------------------------------------------------------------------------------------------

    def put(self, bank_id: str, item: dict[str, Any]) -> None:
        """Write one retain to the spool before returning (one short transaction); never raises.

        Also after `close()`: the row then waits in the spool for the next process.
        """
        with self._cond:
            self.stats.queued += 1
            self.stats.pending = self.stats.queued - self._resolved
            # The id joins _own under the same lock the deliverer needs to count it: no delivery is miscounted.
            row_id = self._write_now(bank_id, item)
            if row_id is None:
                self._queue.append((bank_id, item))
            else:
                self._own[row_id] = bank_id
                self._unsynced += 1
        self._wake.set()
        self._deliver_wake.set()

    def _write_now(self, bank_id: str, item: dict[str, Any]) -> int | None:
        if self._error is not None:  # the spool file cannot be written: the writer keeps rows in memory
            return None
        try:
            return self._callers_spool().put(bank_id, item)
        except (sqlite3.Error, OSError) as exc:  # busy or unwritable: the writer thread tries again
            log.debug("memwrap: spool write deferred to the writer thread: %s", exc)
            return None

    def _callers_spool(self) -> Spool:
        """The connection callers write through (any thread; commits without fsync, see the module docstring)."""
        with self._callers_lock:
            if self._callers is None:
                self._callers = Spool(self.path, self.owner, synchronous="NORMAL", busy_timeout=2.0, redact=self.redact)
            return self._callers

    def flush(self, timeout: float | None = None, *, give_up_on_failure: bool = False) -> bool:
        """Wait until every retain queued so far was delivered (or refused), and the rows earlier processes left
        in the spool too. False on timeout (rows stay spooled); with `give_up_on_failure`, also at the first
        failed delivery attempt."""
        mark = self._spool_mark()
        with self._cond:
            target = self.stats.queued
            passes = self._passes
            self._retry.set()  # cut a backoff short: the caller is waiting now

            def done() -> bool:
                caught_up = self._floor is None or self._floor > mark
                return self._resolved >= target and self._passes > passes and caught_up

            return self._wait(done, timeout, give_up_on_failure=give_up_on_failure)

    def _wait(self, done: Callable[[], bool], timeout: float | None, *, give_up_on_failure: bool) -> bool:
        """Wait (holding `_cond`) until `done()`: False on timeout, when the worker or the memory is gone, and with
        `give_up_on_failure` at the first failed delivery attempt from now."""
        deadline = None if timeout is None else time.monotonic() + timeout
        failures = self.stats.failures
        self._wake.set()
        self._deliver_wake.set()
        while not done():
            remaining = None if deadline is None else deadline - time.monotonic()
            if (remaining is not None and remaining <= 0) or not self._thread.is_alive() or not self.reachable():
                return False
            if give_up_on_failure and self.stats.failures > failures:
                return False
            self._cond.wait(remaining if remaining is None else min(remaining, 0.5))
        return True

    def pending_for(self, bank_id: str) -> bool:
        """This process has retains for `bank_id` not yet delivered."""
        with self._cond:  # the deliverer changes both while we look
            return self._has_pending(bank_id)

    def wait_delivered(self, bank_id: str, timeout: float) -> bool:
        """Read-your-writes: wait, at most `timeout`, until every retain for `bank_id` this process queued so far
        is delivered (or refused), so that a recall right after sees the exchange before it. False when it is
        not (the engine is slow or down: the recall then goes on without waiting longer)."""
        if self.engine_down():  # the delivery would wait for a backoff: not worth waiting for
            return False
        with self._cond:
            # Every row of the bank still pending, those written since included: a row the writer thread moves
            # from the fallback queue into the file gets a new id, which a snapshot of ids would miss.
            return self._wait(lambda: not self._has_pending(bank_id), timeout, give_up_on_failure=True)

    def _has_pending(self, bank_id: str) -> bool:
        return bank_id in self._own.values() or any(bank == bank_id for bank, _ in self._queue)

    def _spool_mark(self) -> int:
        """The newest row in the spool now (0 when the file cannot be read: then only this process's rows)."""
        if self._error is not None:
            return 0
        try:
            return self._callers_spool().last_id()
        except (sqlite3.Error, OSError):
            return 0

    def wait_spooled(self, timeout: float | None = None) -> bool:
        """Wait until everything queued so far is on disk and fsync'd (durable across a crash), delivered or not."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            target = self.stats.queued
            self._wake.set()
            while self.stats.spooled < target:
                remaining = None if deadline is None else deadline - time.monotonic()
                if (remaining is not None and remaining <= 0) or not self._thread.is_alive():
                    return False
                self._cond.wait(remaining if remaining is None else min(remaining, 0.5))
            return True

    @property
    def pending(self) -> int:
        return self.stats.queued - self._resolved

    def close(self, timeout: float = 5.0) -> bool:
        """Deliver what can be delivered within `timeout` (stopping at the first failure), then stop; what is
        left stays on disk for later."""
        delivered = False
        if self._thread.is_alive() and self.reachable() and not self.engine_down():
            delivered = self.flush(timeout, give_up_on_failure=True)
        with self._cond:
            self._stop = True
        self._wake.set()
        self._deliver_wake.set()
        self._retry.set()
        self._thread.join(timeout=max(0.05, min(timeout, 1.0)))
        _live.discard(self)
        return delivered

    # -- worker side -----------------------------------------------------------------------------------------

    def _run(self) -> None:
        """Writer: fsync what callers wrote, write what they could not, renew the lease."""
        try:
            spool = Spool(self.path, self.owner, redact=self.redact)
        except (sqlite3.Error, OSError) as exc:
            # Still deliver, through the same code, but from memory: durability is lost, retains are not.
            log.error("memwrap: cannot open the retain spool at %s (%s); retains are not crash-safe", self.path, exc)
            self._error = exc
            self.path = ":memory:"
            spool = self._shared = Spool(self.path, self.owner, redact=self.redact)
        self._deliverer.start()
        next_renew = 0.0
        try:
            while True:
                self._wake.clear()
                self._write(spool)
                self._sync(spool)
                if time.monotonic() >= next_renew:
                    spool.renew()
                    next_renew = time.monotonic() + LEASE_SECONDS / 6
                with self._cond:
                    stopping = self._stop and not self._queue
                if stopping:
                    break
                self._wake.wait(1.0)
        except sqlite3.Error as exc:
            log.error("memwrap: the retain spool failed: %s", exc)
            self._error = exc
        finally:
            self._deliver_wake.set()
            self._deliverer.join(timeout=60)
            try:
                spool.release()  # what is left is free for the next process at once
            except sqlite3.Error:
                pass
            spool.close()
            with self._cond:
                self._cond.notify_all()

    def _deliver_loop(self) -> None:
        """Deliverer: disk -> engine, in id order, with backoff while the engine is unavailable.

        New rows wake it only when idle: during a backoff only flush()/close() (`_retry`) cut the wait short,
        so a busy app does not turn a down engine into a retry storm.
        """
        spool = self._shared or Spool(self.path, self.owner, redact=self.redact)
        backoff = min(0.5, self.max_backoff)
        try:
            spool.adopt_orphans()  # rows of processes that died: delivered first, before this process's own
            self._backlog_mark = spool.last_id()
            while True:
                self._deliver_wake.clear()
                self._retry.clear()
                outcome = self._deliver_some(spool)
                if outcome == "failed" or self._floor is None or self._floor > self._backlog_mark:
                    self.caught_up.set()  # done, or the engine fails: first calls must not wait for it
                with self._cond:
                    stopping = self._stop
                if stopping and outcome != "more":
                    break
                if outcome == "more":
                    if stopping:
                        break
                    continue
                if outcome == "failed":
                    self._retry.wait(backoff)
                    backoff = min(backoff * 2, self.max_backoff)
                    continue
                backoff = min(0.5, self.max_backoff)
                self._deliver_wake.wait(1.0)
        except sqlite3.Error as exc:
            log.error("memwrap: the retain spool failed: %s", exc)
        finally:
            self.caught_up.set()
            if spool is not self._shared:
                spool.close()

    def _write(self, spool: Spool) -> None:
        """Rows a caller could not write itself (the file was busy): in order, fsync'd."""
        with self._cond:
            if not self._queue:
                return
            batch = list(self._queue)
            self._queue.clear()
            ids = spool.add(batch)  # under the lock: see put()
            self._own.update(zip(ids, (bank for bank, _item in batch), strict=True))
            self.stats.spooled += len(ids)
            self._cond.notify_all()
        self._deliver_wake.set()

    def _sync(self, spool: Spool) -> None:
        with self._cond:
            count = self._unsynced
        if not count:
            return
        spool.sync()
        with self._cond:
            self._unsynced -= count
            self.stats.spooled += count
            self._cond.notify_all()

    def _deliver_some(self, spool: Spool) -> str:
        """Deliver one claim's worth of rows. Returns "idle", "more" (call again) or "failed" (back off)."""
        rows = spool.claim(self.batch_size * 4)
        with self._cond:
            self._passes += 1
            self._floor = rows[0].id if rows else None
            self._cond.notify_all()
        if not rows:
            return "idle"
        for group in _groups(rows, self.batch_size):
            if self._deliver_group(spool, group) == "failed":
                return "failed"
        return "more"

    def _deliver_group(self, spool: Spool, group: list[Row]) -> str:
        try:
            self.deliver(group[0].bank_id, [r.item for r in group])
        except InvalidInputError as exc:
            if len(group) == 1:
                self._resolve(spool, group, rejected=True, error=exc)
                return "ok"
        except Exception as exc:  # noqa: BLE001 - sorted below: the engine is down, or one row is bad
            if self._transient(exc):  # keep everything, try again later
                self._failed(spool, group, exc, poison_suspect=False)
                return "failed"
            if len(group) == 1:  # anything else may be one bad row: find it, keep the rest going
                self._failed(spool, group, exc, poison_suspect=True)
                return "failed"
        else:
            self._resolve(spool, group)
            return "ok"
        for row in group:  # one at a time, to isolate the row the engine refuses
            if self._deliver_group(spool, [row]) == "failed":
                return "failed"
        return "ok"

    def _transient(self, exc: BaseException) -> bool:
        """The engine is unavailable (or going away), as opposed to "this row is bad"."""
        if isinstance(exc, TRANSIENT) or lifecycle.exiting() or self._stop:
            return True
        # Executors and event loops refuse work once the interpreter shuts down: not the row's fault.
        return isinstance(exc, RuntimeError) and ("shutdown" in str(exc) or "is closed" in str(exc))

    def _failed(self, spool: Spool, rows: list[Row], exc: BaseException, *, poison_suspect: bool) -> None:
        with self._cond:
            self.stats.failures += 1
            self.stats.last_error = f"{type(exc).__name__}: {exc}"
            failures = self.stats.failures
            self._cond.notify_all()
        # An async script's loop ending a moment before its exit is not worth a line on stderr: warn only if it
        # lasts until the first retry (0.5 s later, by when a short script is already in its exit).
        first = 2 if isinstance(exc, HomeLoopEnded) else 1
        if (failures in (first, 10, 100) or failures % 1000 == 0) and not lifecycle.exiting():
            log.warning(
                "memwrap: retain delivery failed (%s); %d item(s) wait in the spool",
                self.stats.last_error,
                self.pending,
            )
        if not poison_suspect:
            return
        spool.failed([r.id for r in rows])
        for row in rows:
            if row.attempts + 1 >= self.max_attempts:
                log.error(
                    "memwrap: a retain failed %d times (%s); moved to the spool's `dead` table", row.attempts + 1, exc
                )
                spool.bury(row, self.stats.last_error or "")
                self._count([row], "buried")

    def _resolve(
        self, spool: Spool, rows: list[Row], *, rejected: bool = False, error: BaseException | None = None
    ) -> None:
        spool.delete([r.id for r in rows])
        if rejected:
            log.warning("memwrap: the engine refused a retain (%s); it was dropped", error)
        self._count(rows, "rejected" if rejected else "delivered")

    def _count(self, rows: list[Row], what: str) -> None:
        with self._cond:
            setattr(self.stats, what, getattr(self.stats, what) + len(rows))
            for row in rows:
                if self._own.pop(row.id, None) is not None:
                    self._resolved += 1
                elif what == "delivered":
                    self.stats.replayed += 1
            self.stats.pending = self.stats.queued - self._resolved
            self._cond.notify_all()


def _groups(rows: list[Row], size: int) -> list[list[Row]]:
    """Consecutive rows of one bank, at most `size` each: one retain_many call per group keeps the order."""
    groups: list[list[Row]] = []
    for row in rows:
        if groups and groups[-1][0].bank_id == row.bank_id and len(groups[-1]) < size:
            groups[-1].append(row)
        else:
            groups.append([row])
    return groups


_live: weakref.WeakSet[Retainer] = weakref.WeakSet()


def close_all(timeout: float | None = None) -> None:
    """Close every retainer of this process, sharing one deadline (exit: RETAINS phase)."""
    retainers = list(_live)
    if not retainers:
        return
    budget = max(r.exit_timeout for r in retainers) if timeout is None else timeout
    deadline = time.monotonic() + budget
    for retainer in retainers:  # wake every deliverer first: they work side by side while we wait in turn
        retainer._retry.set()
        retainer._deliver_wake.set()
    for retainer in retainers:
        retainer.close(timeout=max(0.0, deadline - time.monotonic()))


def _after_fork_in_child() -> None:
    lifecycle.keep_inherited(*_live)  # the parent's retainers: their threads are not in this process
    _live.clear()


lifecycle.at_exit(lifecycle.RETAINS, close_all)
os.register_at_fork(after_in_child=_after_fork_in_child)
