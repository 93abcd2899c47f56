"""This server's retain spool over HTTP: what the proxy has queued on this machine's disk and not yet stored, and
the dead rows (turns whose delivery failed alone too often) with replay and purge — `memwrap spool` for the
memory browser's Jobs view.

The spool is per server home, not in the database: with several servers, each answers for its own. A key
limited to some banks sees and touches only those banks' rows. SQLite is read in a worker thread (never on
the event loop).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated

from fastapi import APIRouter, Query, Request
from pydantic import BaseModel, Field

from memwrap.wrappers import spool_admin
from memwrap.wrappers.core import backend_for
from memwrap_server.auth import ApiKey
from memwrap_server.deps import CallerDep, check_bank
from memwrap_server.schemas import ERRORS, BankId

router = APIRouter(prefix="/v1/spool", tags=["spool"], responses=ERRORS)


class SpoolSummary(BaseModel):
    waiting: int = Field(description="Turns queued for delivery")
    waiting_by_bank: dict[str, int]
    dead: int = Field(description="Turns whose delivery failed alone too often, kept for a person to look at")
    dead_by_bank: dict[str, int]


# A spool row's id: SQLite's rowid, a positive 64-bit integer (a larger number is a 422, not an overflow in SQLite).
# Bounded at 2**53 - 1, the largest integer a JSON number holds exactly: at 2**63 - 1 a reader of the document
# that compares as doubles (JavaScript, JSON Schema validators) took 2**63 + 191 for the maximum itself.
RowId = Annotated[int, Field(ge=1, le=2**53 - 1)]


class SpoolIds(BaseModel):
    ids: list[RowId] | None = Field(
        default=None, max_length=1000, description="Dead rows to act on; omitted: every dead row this key may see"
    )


class SpoolActed(BaseModel):
    count: int


def _path(request: Request) -> Path:
    return spool_admin.spool_path(request.app.state.memory.settings)


def _visible(key: ApiKey | None, by_bank: dict[str, int]) -> dict[str, int]:
    return {bank: n for bank, n in by_bank.items() if key is None or key.allows(bank)}


@router.get("", response_model=SpoolSummary, summary="Turns waiting in this server's spool, and dead ones")
async def summary(request: Request, key: CallerDep) -> SpoolSummary:
    counts = await asyncio.to_thread(spool_admin.counts, _path(request))
    waiting, dead = _visible(key, counts.waiting_by_bank), _visible(key, counts.dead_by_bank)
    return SpoolSummary(
        waiting=sum(waiting.values()), waiting_by_bank=waiting, dead=sum(dead.values()), dead_by_bank=dead
    )


@router.get(
    "/rows",
    response_model=list[spool_admin.SpoolRow],
    summary="The rows themselves (the start of each turn's text; dead rows with their last error)",
)
async def rows(
    request: Request,
    key: CallerDep,
    dead: bool = False,
    bank_id: Annotated[BankId | None, Query(max_length=128)] = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 100,
) -> list[spool_admin.SpoolRow]:
    if bank_id is not None:
        check_bank(key, bank_id)
    # A restricted key's rows are filtered after reading, so read past `limit` rows it may not see.
    found = await asyncio.to_thread(
        spool_admin.rows, _path(request), dead=dead, bank_id=bank_id, limit=limit if key is None or bank_id else 10_000
    )
    return [r for r in found if key is None or key.allows(r.bank_id)][:limit]


async def _dead_ids(request: Request, key: ApiKey | None, ids: list[int] | None) -> list[int] | None:
    """The dead rows a request may act on: those asked for (None: all), within the key's banks. Only a key
    limited to some banks needs the rows read to know whose they are."""
    if key is None or key.banks is None:
        return ids
    found = await asyncio.to_thread(spool_admin.rows, _path(request), dead=True, limit=1_000_000)
    wanted = set(ids) if ids is not None else None
    return [r.id for r in found if (wanted is None or r.id in wanted) and key.allows(r.bank_id)]


@router.post(
    "/dead/replay",
    response_model=SpoolActed,
    summary="Put dead rows back in the queue (attempts reset) and deliver them now",
)
async def replay_dead(request: Request, key: CallerDep, body: SpoolIds) -> SpoolActed:
    ids = await _dead_ids(request, key, body.ids)
    revived = await asyncio.to_thread(spool_admin.revive_dead, _path(request), ids) if ids != [] else 0
    if revived:
        backend_for(request.app.state.memory).retainer.flush(timeout=0)  # wake the delivery thread; does not wait
    return SpoolActed(count=revived)


@router.post("/dead/purge", response_model=SpoolActed, summary="Delete dead rows (they are turns nobody stored)")
async def purge_dead(request: Request, key: CallerDep, body: SpoolIds) -> SpoolActed:
    ids = await _dead_ids(request, key, body.ids)
    # An empty list acts on nothing (spool_admin reads None and [] alike as "every row").
    removed = await asyncio.to_thread(spool_admin.purge_dead, _path(request), ids) if ids != [] else 0
    return SpoolActed(count=removed)
