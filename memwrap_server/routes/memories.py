"""Memories of one bank: retain (one or a batch), list with paging and filters, get, delete; and recall."""

from __future__ import annotations

from typing import Annotated
from uuid import UUID

from fastapi import APIRouter, Query, Request, Response, status

from memwrap.engine import validate
from memwrap.models import MemoryRecord, MemoryType, Recall
from memwrap_server.deps import BankDep, MemoryDep
from memwrap_server.schemas import ERRORS, MemoryPage, RecallBody, RetainBatch, RetainBody, RetainResult

router = APIRouter(prefix="/v1/banks/{bank_id}", tags=["memories"], responses=ERRORS)

# Past this, OFFSET scans are slow and PostgreSQL's bigint is not far: page with filters instead.
MAX_OFFSET = 10_000_000


def _count(request: Request, name: str, amount: int = 1) -> None:
    request.app.state.metrics.count(name, amount)


@router.post("/memories", response_model=RetainResult, status_code=status.HTTP_201_CREATED,
             summary="Retain one item (committed before the answer)")
async def retain(bank_id: BankDep, item: RetainBody, memory: MemoryDep, request: Request) -> RetainResult:
    ids = await memory.retain_many(bank_id, [item.model_dump()])
    _count(request, "retained_items")
    return RetainResult(ids=ids)


@router.post("/memories/batch", response_model=RetainResult, status_code=status.HTTP_201_CREATED,
             summary="Retain many items in one call (committed before the answer)")
async def retain_batch(bank_id: BankDep, batch: RetainBatch, memory: MemoryDep, request: Request) -> RetainResult:
    ids = await memory.retain_many(bank_id, [item.model_dump() for item in batch.items])
    _count(request, "retained_items", len(batch.items))
    return RetainResult(ids=ids)


@router.get("/memories", response_model=MemoryPage, summary="List memories, oldest first")
async def list_memories(
    bank_id: BankDep,
    memory: MemoryDep,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    offset: Annotated[int, Query(ge=0, le=MAX_OFFSET)] = 0,
    type: Annotated[list[MemoryType] | None, Query(description="Only these types (repeatable)")] = None,  # noqa: A002
    tag: Annotated[list[str] | None, Query(description="Only memories with one of these tags (repeatable)")] = None,
    document_id: Annotated[str | None, Query(max_length=512)] = None,
) -> MemoryPage:
    if document_id is not None:
        document_id = validate.text_field(document_id, what="document_id", max_chars=512)
    items = await memory.list(bank_id, limit=limit + 1, offset=offset, types=type, tags=tag, document_id=document_id)
    more = len(items) > limit
    return MemoryPage(items=items[:limit], limit=limit, offset=offset, next_offset=offset + limit if more else None)


@router.get("/memories/{memory_id}", response_model=MemoryRecord, summary="One memory",
            responses={404: ERRORS[422] | {"description": "No such memory in this bank"}})
async def get_memory(bank_id: BankDep, memory_id: UUID, memory: MemoryDep) -> MemoryRecord:
    return await memory.get(bank_id, memory_id)


@router.delete("/memories/{memory_id}", status_code=status.HTTP_204_NO_CONTENT, response_class=Response,
               summary="Forget one memory", responses={404: ERRORS[422] | {"description": "No such memory"}})
async def delete_memory(bank_id: BankDep, memory_id: UUID, memory: MemoryDep) -> Response:
    await memory.delete(bank_id, memory_id)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.post("/recall", response_model=Recall, summary="What matters for a query, rendered within a token budget")
async def recall(bank_id: BankDep, body: RecallBody, memory: MemoryDep, request: Request) -> Recall:
    _count(request, "recalls")
    return await memory.recall(
        bank_id, body.query, max_tokens=body.budget, now=body.now, types=body.types, tags=body.tags,
        model=body.model, neighbours=body.neighbours, prefer_observations=body.prefer_observations,
        explain=body.explain,
    )
