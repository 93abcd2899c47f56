"""A bank's counts at a glance (the memory browser's bank list): memories by type, observations, mental models,
entities, jobs pending, last activity. Read-only; one query (memwrap/engine/bank_views.py)."""

from __future__ import annotations

from fastapi import APIRouter

from memwrap.engine import bank_views
from memwrap_server.deps import BankDep, PoolDep
from memwrap_server.schemas import ERRORS

router = APIRouter(prefix="/v1/banks/{bank_id}", tags=["banks"], responses=ERRORS)


@router.get("/stats", response_model=bank_views.BankStats, summary="A bank's counts and last activity",
            responses={404: ERRORS[422] | {"description": "No such bank"}})
async def bank_stats(bank_id: BankDep, pool: PoolDep) -> bank_views.BankStats:
    return await bank_views.bank_stats(pool, bank_id)
