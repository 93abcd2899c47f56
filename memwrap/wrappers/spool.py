"""A durable, ordered queue of retains between the app and the engine.

Every retain the wrappers make goes through here: the caller only appends to an in-memory queue (so the
response is never delayed); a worker thread writes the queue to SQLite (WAL, synchronous=FULL: fsync'd at
each commit, batched), then delivers rows in id order and deletes them once the engine has them. When the
engine is down, rows wait on disk and are retried with backoff; after a crash, the next process that opens the
same spool takes over rows whose owner is dead (or whose lease ran out) and replays them in order.

Delivery is at-least-once; the wrappers give every item a stable `document_id`, so a replay after a crash
between "engine stored it" and "row deleted" is recognised by the engine instead of stored twice.

Nothing secret reaches the disk: rows are redacted (engine/retain/defense.py, every field) before they are
written, unless the memory-defense policy is "off", and the file is its owner's alone (0600, folder 0700).
"""

from __future__ import annotations

import atexit
import concurrent.futures
import json
import logging
import os
import socket
import sqlite3
import threading
import time
import uuid
import weakref
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memwrap.config import load_settings
from memwrap.engine.retain.defense import redact_item
from memwrap.errors import ClosedError, InvalidInputError, StoreError
from memwrap.private_files import private_dir, private_file

log = logging.getLogger("memwrap.wrappers")

LEASE_SECONDS = 30.0  # a live owner renews well within this; a silent one loses its rows after it
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

_SCHEMA = """
CREATE TABLE IF NOT EXISTS spool (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    bank_id TEXT NOT NULL,
    item TEXT NOT NULL,
    created REAL NOT NULL,
    owner TEXT,
    lease REAL NOT NULL DEFAULT 0,
    attempts INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS dead (
    id INTEGER PRIMARY KEY,
    bank_id TEXT NOT NULL,
    item TEXT NOT NULL,
    created REAL NOT NULL,
    error TEXT
);
"""


@dataclass
class Row:
    id: int
    bank_id: str
    item: dict[str, Any]
    attempts: int


class Spool:
    """The SQLite file. Used from one thread (the worker's)."""

    def __init__(self, path: Path | str, owner: str, *, redact: bool = True) -> None:
        self.in_memory = path == ":memory:"  # the fallback when no file can be written: one connection, shared
        if not self.in_memory:
            private_dir(Path(path).parent)
            private_file(path)
        self.path = path
        self.owner = owner
        self.redact = redact
        self.lock = threading.RLock()
        self.db = sqlite3.connect(str(path), timeout=30, isolation_level=None, check_same_thread=not self.in_memory)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=FULL")  # fsync on every commit: what is spooled survives a crash
        self.db.executescript(_SCHEMA)

    def add(self, rows: Sequence[tuple[str, dict[str, Any]]]) -> list[int]:
        now = time.time()
        ids = []
        with self._tx():
            for bank_id, item in rows:
                if self.redact:
                    item = redact_item(item)
                cur = self.db.execute(
                    "INSERT INTO spool (bank_id, item, created, owner, lease) VALUES (?, ?, ?, ?, ?)",
                    (bank_id, json.dumps(item, ensure_ascii=False, default=str), now, self.owner, now + LEASE_SECONDS),
                )
                ids.append(int(cur.lastrowid or 0))
        return ids

    def claim(self, limit: int) -> list[Row]:
        """Rows this owner may deliver, oldest first: its own, unowned ones, and ones whose lease ran out."""
        now = time.time()
        with self._tx():
            found = self.db.execute(
                "SELECT id, bank_id, item, attempts FROM spool WHERE owner = ? OR owner IS NULL OR lease < ?"
                " ORDER BY id LIMIT ?",
                (self.owner, now, limit),
            ).fetchall()
            if found:
                self.db.executemany(
                    "UPDATE spool SET owner = ?, lease = ? WHERE id = ?",
                    [(self.owner, now + LEASE_SECONDS, r[0]) for r in found],
                )
        return [Row(r[0], r[1], json.loads(r[2]), r[3]) for r in found]

    def delete(self, ids: Sequence[int]) -> None:
        with self._tx():
            self.db.executemany("DELETE FROM spool WHERE id = ?", [(i,) for i in ids])

    def failed(self, ids: Sequence[int]) -> None:
        with self._tx():
            self.db.executemany("UPDATE spool SET attempts = attempts + 1 WHERE id = ?", [(i,) for i in ids])

    def bury(self, row: Row, error: str) -> None:
        with self._tx():
            self.db.execute(
                "INSERT OR REPLACE INTO dead (id, bank_id, item, created, error) VALUES (?, ?, ?, ?, ?)",
                (row.id, row.bank_id, json.dumps(row.item, default=str), time.time(), error),
            )
            self.db.execute("DELETE FROM spool WHERE id = ?", (row.id,))

    def renew(self) -> None:
        """Extend this owner's lease, and free rows of owners on this host whose process is gone."""
        host = socket.gethostname()
        with self._tx():
            self.db.execute("UPDATE spool SET lease = ? WHERE owner = ?", (time.time() + LEASE_SECONDS, self.owner))
            for (owner,) in self.db.execute("SELECT DISTINCT owner FROM spool WHERE owner IS NOT NULL").fetchall():
                if owner != self.owner and _dead_local_owner(owner, host):
                    self.db.execute("UPDATE spool SET owner = NULL WHERE owner = ?", (owner,))

    def release(self) -> None:
        with self._tx():
            self.db.execute("UPDATE spool SET owner = NULL, lease = 0 WHERE owner = ?", (self.owner,))

    def close(self) -> None:
        self.db.close()

    def _tx(self) -> _Transaction:
        return _Transaction(self.db, self.lock)


class _Transaction:
    """BEGIN IMMEDIATE ... COMMIT: takes the write lock up front so two processes never interleave a claim."""

    def __init__(self, db: sqlite3.Connection, lock: threading.RLock) -> None:
        self.db = db
        self.lock = lock  # only contended in the in-memory fallback, where both threads share the connection

    def __enter__(self) -> None:
        self.lock.acquire()
        self.db.execute("BEGIN IMMEDIATE")

    def __exit__(self, exc_type: object, *rest: object) -> None:
        try:
            self.db.execute("ROLLBACK" if exc_type else "COMMIT")
        finally:
            self.lock.release()


def _dead_local_owner(owner: str, host: str) -> bool:
    """True when `owner` ("host|pid|nonce") is a process on this host that no longer exists."""
    parts = owner.split("|")
    if len(parts) != 3 or parts[0] != host or not parts[1].isdigit():
        return False
    try:
        os.kill(int(parts[1]), 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # alive, owned by another user
        return False
    return False


@dataclass
class RetainStats:
    queued: int = 0  # retains handed to the spool by this process
    spooled: int = 0  # of those, written to disk
    delivered: int = 0  # rows the engine accepted (including replays of other runs' rows)
    replayed: int = 0  # of those, rows another (dead) run had spooled
    rejected: int = 0  # rows the engine refused as invalid (logged, dropped)
    buried: int = 0  # rows moved to the `dead` table after MAX_ATTEMPTS failures
    failures: int = 0  # failed delivery attempts (engine unavailable)
    last_error: str | None = None
    pending: int = field(default=0)


class Retainer:
    """The worker: in-memory queue -> spool -> engine, in order, in a daemon thread."""

    def __init__(
        self,
        path: Path,
        deliver: Deliver,
        *,
        batch_size: int = 64,
        name: str = "memwrap-retain",
        reachable: Callable[[], bool] = lambda: True,
        max_attempts: int = MAX_ATTEMPTS,
        max_backoff: float = MAX_BACKOFF,
        defense_policy: str | None = None,
    ) -> None:
        self.path: Path | str = Path(path)
        # Rows are redacted before they touch the disk unless the policy (MEMWRAP_DEFENSE_POLICY) is "off";
        # under "block" the engine then stores the redacted turn instead of refusing the raw one.
        self.redact = (defense_policy or load_settings().defense_policy) != "off"
        self.max_attempts = max_attempts
        self.max_backoff = max_backoff
        self.deliver = deliver
        self.reachable = reachable  # False once the memory is closed: waiting for delivery is then pointless
        self.batch_size = batch_size
        self.owner = f"{socket.gethostname()}|{os.getpid()}|{uuid.uuid4().hex[:8]}"
        self.stats = RetainStats()
        self._queue: deque[tuple[str, dict[str, Any]]] = deque()
        self._own: set[int] = set()
        self._resolved = 0
        self._cond = threading.Condition()
        self._wake = threading.Event()
        self._stop = False
        self._error: BaseException | None = None
        self._deliver_wake = threading.Event()
        self._retry = threading.Event()
        self._shared: Spool | None = None
        self._deliverer = threading.Thread(target=self._deliver_loop, name=f"{name}-deliver", daemon=True)
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()
        _live.add(self)

    # -- caller side ------------------------------------------------------------------------------------------

    def put(self, bank_id: str, item: dict[str, Any]) -> None:
        """Queue one retain. O(1), never blocks on I/O."""
        with self._cond:
            if self._stop:
                raise RuntimeError("this retainer was closed")
            self._queue.append((bank_id, item))
            self.stats.queued += 1
            self.stats.pending = self.stats.queued - self._resolved
        self._wake.set()

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until everything queued so far was delivered (or refused). False on timeout: rows stay spooled."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            target = self.stats.queued
            self._wake.set()
            self._deliver_wake.set()
            self._retry.set()  # cut a backoff short: the caller is waiting now
            while self._resolved < target:
                remaining = None if deadline is None else deadline - time.monotonic()
                if (remaining is not None and remaining <= 0) or not self._thread.is_alive() or not self.reachable():
                    return False
                self._cond.wait(remaining if remaining is None else min(remaining, 0.5))
            return True

    def wait_spooled(self, timeout: float | None = None) -> bool:
        """Wait until everything queued so far is on disk (durable), delivered or not."""
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
        """Deliver what can be delivered within `timeout`, then stop; what is left stays on disk for later."""
        delivered = self.flush(timeout) if self._thread.is_alive() else False
        with self._cond:
            self._stop = True
        self._wake.set()
        self._deliver_wake.set()
        self._retry.set()
        self._thread.join(timeout=max(timeout, 1.0))
        _live.discard(self)
        return delivered

    # -- worker side -----------------------------------------------------------------------------------------

    def _run(self) -> None:
        """Writer: queue -> disk, promptly, whatever the engine does (a hung delivery must not delay fsync)."""
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
            while True:
                self._deliver_wake.clear()
                self._retry.clear()
                outcome = self._deliver_some(spool)
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
            if spool is not self._shared:
                spool.close()

    def _write(self, spool: Spool) -> None:
        with self._cond:
            batch = list(self._queue)
            self._queue.clear()
        if not batch:
            return
        ids = spool.add(batch)
        with self._cond:
            self._own.update(ids)
            self.stats.spooled += len(ids)
            self._cond.notify_all()
        self._deliver_wake.set()

    def _deliver_some(self, spool: Spool) -> str:
        """Deliver one claim's worth of rows. Returns "idle", "more" (call again) or "failed" (back off)."""
        rows = spool.claim(self.batch_size * 4)
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
        except TRANSIENT as exc:  # the engine is down or slow: keep everything, try again later
            self._failed(spool, group, exc, poison_suspect=False)
            return "failed"
        except Exception as exc:  # noqa: BLE001 - anything else may be one bad row: find it, keep the rest going
            if len(group) == 1:
                self._failed(spool, group, exc, poison_suspect=True)
                return "failed"
        else:
            self._resolve(spool, group)
            return "ok"
        for row in group:  # one at a time, to isolate the row the engine refuses
            if self._deliver_group(spool, [row]) == "failed":
                return "failed"
        return "ok"

    def _failed(self, spool: Spool, rows: list[Row], exc: BaseException, *, poison_suspect: bool) -> None:
        with self._cond:
            self.stats.failures += 1
            self.stats.last_error = f"{type(exc).__name__}: {exc}"
            failures = self.stats.failures
        if failures in (1, 10, 100) or failures % 1000 == 0:
            log.warning("memwrap: retain delivery failed (%s); %d item(s) wait in the spool", exc, self.pending)
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
                if row.id in self._own:
                    self._own.discard(row.id)
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


@atexit.register
def _flush_at_exit() -> None:
    # Best effort: a few seconds to deliver; whatever is left is already on disk and is replayed next run.
    budget = float(os.environ.get("MEMWRAP_EXIT_FLUSH_SECONDS", "5"))
    deadline = time.monotonic() + budget
    for retainer in list(_live):
        retainer.close(timeout=max(0.0, deadline - time.monotonic()))
