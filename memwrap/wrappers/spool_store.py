"""The retain spool's SQLite file: its rows, transactions, owners and leases (the worker is in spool.py).

One file per home (MEMWRAP_HOME/spool/retains.sqlite3), shared by every process on it. A row belongs to the
process that wrote it (its owner, "host|pid|nonce") while that process renews its lease; rows of an owner that
died are freed for the next process. `dead` holds rows that failed alone too often (see spool_admin.py).

Fork: SQLite connections must not cross a fork. Every statement runs under one process-wide lock; before a fork
it is taken and every connection is closed (reopened on next use), so a child inherits none.

Nothing secret reaches the disk: rows are redacted (defense/policy.py, every field) before they are
written, unless the memory-defense policy is "off", and the file is its owner's alone (0600, folder 0700).
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import threading
import time
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memwrap import lifecycle
from memwrap.defense.policy import redact_item
from memwrap.private_files import private_dir, private_file

SPOOL_FILE = "retains.sqlite3"  # under MEMWRAP_HOME/spool
LEASE_SECONDS = 30.0  # a live owner renews well within this; a silent one loses its rows after it

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


class HomeLoopEnded(ConnectionError):
    """An async memory's event loop has ended (a script's `asyncio.run` returned): its rows wait in the spool for
    exit or the next process. The usual end of a short async script, not yet a failure worth a warning."""


@dataclass
class Row:
    id: int
    bank_id: str
    item: dict[str, Any]
    attempts: int


# Every statement on any spool connection of this process runs under this lock (see the module docstring: fork).
_guard = threading.RLock()
_spools: weakref.WeakSet[Spool] = weakref.WeakSet()


class Spool:
    """The SQLite file, through one connection. `synchronous`: FULL fsyncs every commit (the worker threads);
    NORMAL commits to the file without fsync (callers: fast, and safe from a process crash)."""

    def __init__(
        self,
        path: Path | str,
        owner: str,
        *,
        synchronous: str = "FULL",
        busy_timeout: float = 30.0,
        redact: bool = True,
    ) -> None:
        self.in_memory = path == ":memory:"  # the fallback when no file can be written: one connection, shared
        if not self.in_memory:
            private_dir(Path(path).parent)
            private_file(path)
        self.path = path
        self.owner = owner
        self.redact = redact
        self.synchronous = synchronous
        self.busy_timeout = busy_timeout
        self._db: sqlite3.Connection | None = None
        with _guard:
            self.db.executescript(_SCHEMA)
        _spools.add(self)

    @property
    def db(self) -> sqlite3.Connection:
        """The connection, (re)opened on use: a fork closes it (an in-memory spool cannot be reopened: it stays)."""
        if self._db is None:
            db = sqlite3.connect(
                str(self.path), timeout=self.busy_timeout, isolation_level=None, check_same_thread=False
            )
            db.execute("PRAGMA journal_mode=WAL")
            db.execute(f"PRAGMA synchronous={self.synchronous}")
            if self.synchronous != "FULL":
                # Callers never checkpoint (it fsyncs): the worker threads' connections do.
                db.execute("PRAGMA wal_autocheckpoint=0")
            self._db = db
        return self._db

    def put(self, bank_id: str, item: dict[str, Any]) -> int:
        """One row, committed at once (the caller's path)."""
        return self.add([(bank_id, item)])[0]

    def sync(self) -> None:
        """Make every committed row crash-proof: a FULL commit fsyncs the log, earlier commits included."""
        with self._tx():
            self.db.execute("UPDATE spool SET lease = ? WHERE owner = ?", (time.time() + LEASE_SECONDS, self.owner))

    def adopt_orphans(self) -> None:
        """Free the rows of owners on this host whose process is gone (a crash, a SIGKILL)."""
        host = socket.gethostname()
        with self._tx():
            for (owner,) in self.db.execute("SELECT DISTINCT owner FROM spool WHERE owner IS NOT NULL").fetchall():
                if owner != self.owner and _dead_local_owner(owner, host):
                    self.db.execute("UPDATE spool SET owner = NULL WHERE owner = ?", (owner,))

    def last_id(self) -> int:
        with _guard:
            return int(self.db.execute("SELECT coalesce(max(id), 0) FROM spool").fetchone()[0])

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
        self.sync()
        self.adopt_orphans()

    def release(self) -> None:
        with self._tx():
            self.db.execute("UPDATE spool SET owner = NULL, lease = 0 WHERE owner = ?", (self.owner,))

    def close(self) -> None:
        with _guard:
            if self._db is not None and not self.in_memory:
                self._db.close()
                self._db = None
        _spools.discard(self)

    def _tx(self) -> _Transaction:
        return _Transaction(self)


class _Transaction:
    """BEGIN IMMEDIATE ... COMMIT: takes the write lock up front so two processes never interleave a claim."""

    def __init__(self, spool: Spool) -> None:
        self.spool = spool

    def __enter__(self) -> None:
        _guard.acquire()
        try:
            self.spool.db.execute("BEGIN IMMEDIATE")
        except BaseException:
            _guard.release()
            raise

    def __exit__(self, exc_type: object, *rest: object) -> None:
        try:
            self.spool.db.execute("ROLLBACK" if exc_type else "COMMIT")
        finally:
            _guard.release()


def _close_before_fork() -> None:
    _guard.acquire()
    for spool in list(_spools):
        if spool._db is not None and not spool.in_memory:
            spool._db.close()
            spool._db = None


def _after_fork_in_parent() -> None:
    _guard.release()


def _after_fork_in_child() -> None:
    global _guard, _spools
    _guard = threading.RLock()
    lifecycle.keep_inherited(*_spools)
    _spools = weakref.WeakSet()


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


os.register_at_fork(
    before=_close_before_fork, after_in_parent=_after_fork_in_parent, after_in_child=_after_fork_in_child
)
