"""Read-only views for the memory browser: what surrounds one memory (links, the observations citing it, its
invalidation) and the bank's entities as a small graph (memwrap/engine/bank_views.py)."""

from __future__ import annotations

from typing import Annotated
from uuid import UUID

from fastapi import APIRouter, Query

from memwrap.engine import bank_views
from memwrap_server.deps import BankDep, PoolDep
from memwrap_server.errors import ApiError
from memwrap_server.schemas import ERRORS, Text

router = APIRouter(prefix="/v1/banks/{bank_id}", tags=["browse"], responses=ERRORS)


@router.get("/memories/{memory_id}/context", response_model=bank_views.MemoryContext,
            responses={404: ERRORS[422] | {"description": "No such memory in this bank"}},
            summary="What surrounds a memory: entities, links, observations citing it, invalidation")
async def memory_context(bank_id: BankDep, memory_id: UUID, pool: PoolDep) -> bank_views.MemoryContext:
    return await bank_views.memory_context(pool, bank_id, memory_id)


@router.get("/entities", response_model=list[bank_views.EntitySummary],
            summary="The bank's entities, most mentioned first (search: part of a name or alias)")
async def entities(
    bank_id: BankDep,
    pool: PoolDep,
    search: Annotated[Text | None, Query(max_length=200)] = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
    offset: Annotated[int, Query(ge=0, le=1_000_000)] = 0,
) -> list[bank_views.EntitySummary]:
    return await bank_views.entities(pool, bank_id, search=search, limit=limit, offset=offset)


@router.get("/entities/{entity_id}/graph", response_model=bank_views.EntityGraph,
            responses={404: ERRORS[422] | {"description": "No such entity in this bank"}},
            summary="An entity, its neighbours (co-mentions, links) and its latest memories")
async def entity_graph(
    bank_id: BankDep,
    entity_id: UUID,
    pool: PoolDep,
    neighbours: Annotated[int, Query(ge=1, le=50)] = 15,
) -> bank_views.EntityGraph:
    graph = await bank_views.entity_graph(pool, bank_id, entity_id, neighbours=neighbours)
    if graph is None:
        raise ApiError(404, "entity_not_found", f"No entity {entity_id} in bank {bank_id!r}.")
    return graph
