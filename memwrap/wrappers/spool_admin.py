"""What waits in a home's retain spool, and what to do with it: the functions behind `memwrap spool`.

    memwrap spool                     counts: rows waiting (per bank; held by a running process or not), dead rows
    memwrap spool list [--dead]       the rows themselves (bank, age, attempts or error, the start of the text)
    memwrap spool replay [--dead]     deliver what waits now; --dead first puts dead rows back in the queue
    memwrap spool purge --dead        delete the dead rows (read them first: they are exchanges nobody stored)

A row is *dead* when delivering it alone failed MAX_ATTEMPTS times while the engine was up (a poisonous row):
it is kept, out of the way of the others, until someone looks at it. Replaying puts it back at its old place
in the order (its id), with its attempts reset.
"""

from __future__ import annotations

import json
import os
import socket
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from memwrap.wrappers.core import _release, backend_for
from memwrap.wrappers.spool_store import SPOOL_FILE, Spool, _dead_local_owner, _guard

OWNER = f"{socket.gethostname()}|{os.getpid()}|spool-cli"


class SpoolCounts(BaseModel):
    path: str
    waiting: int
    held_by_running: int  # of those, rows a live process is delivering (or will deliver) itself
    waiting_by_bank: dict[str, int]
    oldest_waiting: datetime | None
    dead: int
    dead_by_bank: dict[str, int]


class SpoolRow(BaseModel):
    id: int
    bank_id: str
    created: datetime
    document_id: str | None
    text: str  # the start of the retained content
    attempts: int | None = None  # waiting rows: failed deliveries so far (the engine refusing this very row)
    error: str | None = None  # dead rows: the last error
    owner: str | None = None


def spool_path(settings: Any) -> Path:
    return Path(settings.spool_dir) / SPOOL_FILE


def _open(path: Path) -> Spool:
    return Spool(path, OWNER)


def _held(owner: str | None, lease: float, now: float, host: str) -> bool:
    return owner is not None and lease >= now and not _dead_local_owner(owner, host)


def counts(path: Path) -> SpoolCounts:
    spool = _open(path)
    try:
        with _guard:
            waiting = spool.db.execute("SELECT bank_id, owner, lease, created FROM spool").fetchall()
            dead = spool.db.execute("SELECT bank_id, count(*) FROM dead GROUP BY bank_id").fetchall()
    finally:
        spool.close()
    now, host = time.time(), socket.gethostname()
    by_bank: dict[str, int] = {}
    for bank_id, *_ in waiting:
        by_bank[bank_id] = by_bank.get(bank_id, 0) + 1
    oldest = min((r[3] for r in waiting), default=None)
    return SpoolCounts(
        path=str(path),
        waiting=len(waiting),
        held_by_running=sum(_held(owner, lease, now, host) for _, owner, lease, _ in waiting),
        waiting_by_bank=by_bank,
        oldest_waiting=datetime.fromtimestamp(oldest, UTC) if oldest is not None else None,
        dead=sum(n for _, n in dead),
        dead_by_bank={bank_id: n for bank_id, n in dead},
    )


def rows(path: Path, *, dead: bool = False, bank_id: str | None = None, limit: int = 50) -> list[SpoolRow]:
    columns = "id, bank_id, item, created, error, NULL" if dead else "id, bank_id, item, created, attempts, owner"
    sql = f"SELECT {columns} FROM {'dead' if dead else 'spool'}"
    args: list[Any] = []
    if bank_id:
        sql += " WHERE bank_id = ?"
        args.append(bank_id)
    sql += " ORDER BY id LIMIT ?"
    args.append(limit)
    spool = _open(path)
    try:
        with _guard:
            found = spool.db.execute(sql, args).fetchall()
    finally:
        spool.close()
    out = []
    for row_id, bank, raw, created, extra, owner in found:
        item = _item(raw)
        out.append(
            SpoolRow(
                id=row_id,
                bank_id=bank,
                created=datetime.fromtimestamp(created, UTC),
                document_id=item.get("document_id"),
                text=str(item.get("content", ""))[:120],
                attempts=None if dead else extra,
                error=extra if dead else None,
                owner=owner,
            )
        )
    return out


def _item(raw: str) -> dict[str, Any]:
    try:
        value = json.loads(raw)
    except ValueError:
        return {"content": raw}
    return value if isinstance(value, dict) else {"content": str(value)}


def revive_dead(path: Path, ids: list[int] | None = None) -> int:
    """Dead rows back in the queue, at their old place in the order, attempts reset. Returns how many."""
    where, args = _which(ids)
    spool = _open(path)
    try:
        with spool._tx():
            moved = spool.db.execute(
                "INSERT OR IGNORE INTO spool (id, bank_id, item, created, owner, lease, attempts)"
                f" SELECT id, bank_id, item, created, NULL, 0, 0 FROM dead{where}",
                args,
            ).rowcount
            spool.db.execute(f"DELETE FROM dead{where}", args)
    finally:
        spool.close()
    return int(moved)


def purge_dead(path: Path, ids: list[int] | None = None) -> int:
    where, args = _which(ids)
    spool = _open(path)
    try:
        with spool._tx():
            removed = spool.db.execute(f"DELETE FROM dead{where}", args).rowcount
    finally:
        spool.close()
    return int(removed)


def _which(ids: list[int] | None) -> tuple[str, list[int]]:
    if not ids:
        return "", []
    return f" WHERE id IN ({', '.join('?' for _ in ids)})", list(ids)


class ReplayResult(BaseModel):
    delivered: int
    rejected: int  # refused by the engine as invalid (dropped, logged)
    buried: int  # failed alone MAX_ATTEMPTS times: moved to `dead`
    complete: bool  # nothing this process may deliver is left
    last_error: str | None
    still_waiting: int
    held_by_running: int


def replay(memory: Any, path: Path, *, timeout: float = 60.0) -> ReplayResult:
    """Deliver every row no running process holds, through `memory`, within `timeout`."""
    retainer = backend_for(memory).retainer
    try:
        complete = retainer.flush(timeout, give_up_on_failure=True)
    finally:
        _release(memory, timeout=1.0)
    stats = retainer.stats
    left = counts(path)
    return ReplayResult(
        delivered=stats.delivered,
        rejected=stats.rejected,
        buried=stats.buried,
        complete=complete,
        last_error=stats.last_error,
        still_waiting=left.waiting,
        held_by_running=left.held_by_running,
    )
