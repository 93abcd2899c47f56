"""Memories of one bank: retain (one or a batch), list with paging and filters, get, delete; and recall."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Annotated, Any, TypeAlias

from fastapi import APIRouter, Query, Request, status

from memwrap import validate
from memwrap.filters import filter_from_json, split_commas
from memwrap.models import MAX_PAGE, MAX_PAGE_OFFSET, MemoryType, Recall
from memwrap.verbs import VERBS
from memwrap_server.deps import BankDep, MemoryDep
from memwrap_server.schemas import ERRORS, MemoryPage, RetainBatch, RetainBody, RetainResult
from memwrap_server.verb_routes import add_verb_route, body_model

router = APIRouter(prefix="/v1/banks/{bank_id}", tags=["memories"], responses=ERRORS)
# POST /v1/recall is the verb's route (one bank or several, routes/recall.py); this one is its one-bank form.
if TYPE_CHECKING:
    BankRecallBody: TypeAlias = Any  # a pydantic model built at import from the declaration: recall's fields
else:
    BankRecallBody = body_model(VERBS["recall"], without=("bank_id",), name="BankRecallBody")


def _count(request: Request, name: str, amount: int = 1) -> None:
    request.app.state.metrics.count(name, amount)


@router.post(
    "/memories",
    response_model=RetainResult,
    status_code=status.HTTP_201_CREATED,
    summary="Retain one item (committed before the answer)",
)
async def retain(bank_id: BankDep, item: RetainBody, memory: MemoryDep, request: Request) -> RetainResult:
    ids = await memory.retain_many(bank_id, [item.model_dump()])
    _count(request, "retained_items")
    return RetainResult(ids=ids)


@router.post(
    "/memories/batch",
    response_model=RetainResult,
    status_code=status.HTTP_201_CREATED,
    summary="Retain many items in one call (committed before the answer)",
)
async def retain_batch(bank_id: BankDep, batch: RetainBatch, memory: MemoryDep, request: Request) -> RetainResult:
    ids = await memory.retain_many(bank_id, [item.model_dump() for item in batch.items])
    _count(request, "retained_items", len(batch.items))
    return RetainResult(ids=ids)


@router.get("/memories", response_model=MemoryPage, summary="List memories, oldest first")
async def list_memories(
    bank_id: BankDep,
    memory: MemoryDep,
    limit: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 100,
    offset: Annotated[int, Query(ge=0, le=MAX_PAGE_OFFSET)] = 0,
    types: Annotated[list[MemoryType] | None, Query(description="Only these types (repeatable)")] = None,
    tags: Annotated[
        list[str] | None, Query(description="Only memories with one of these tags (repeatable, or comma-separated)")
    ] = None,
    document_id: Annotated[str | None, Query(max_length=512)] = None,
    filters: Annotated[str | None, Query(max_length=4_000, description="JSON, as recall's `filters`.")] = None,
    type: Annotated[list[MemoryType] | None, Query(deprecated=True, description="Use `types`.")] = None,
    tag: Annotated[list[str] | None, Query(deprecated=True, description="Use `tags`.")] = None,
    include_expired: Annotated[bool, Query(description="Also memories whose expires_at has passed.")] = False,
    include_invalidated: Annotated[
        bool, Query(description="Also invalidated memories (invalidated_at says when).")
    ] = False,
) -> MemoryPage:
    if document_id is not None:
        document_id = validate.text_field(document_id, what="document_id", max_chars=512)
    where = filter_from_json(filters, what="filters") if filters is not None else None
    page = functools.partial(
        memory.list,
        bank_id,
        types=types or type,
        tags=split_commas(tags or tag),
        document_id=document_id,
        filters=where,
        include_expired=include_expired,
        include_invalidated=include_invalidated,
    )
    # One more than asked says whether there is a next page; at the longest page (the verb's bound), a second look.
    items = await page(limit=min(limit + 1, MAX_PAGE), offset=offset)
    more = len(items) > limit
    if len(items) == limit == MAX_PAGE and offset + limit <= MAX_PAGE_OFFSET:
        more = bool(await page(limit=1, offset=offset + limit))
    return MemoryPage(items=items[:limit], limit=limit, offset=offset, next_offset=offset + limit if more else None)


# A tagged or filtered purge (dry run by default); before /memories/{memory_id}, whose path it would match.
add_verb_route(router, VERBS["delete_memories"])
add_verb_route(router, VERBS["get"])
add_verb_route(router, VERBS["update"])
add_verb_route(router, VERBS["history"])
add_verb_route(router, VERBS["delete"])


@router.post(
    "/recall",
    response_model=Recall,
    summary="Recall from this bank (POST /v1/recall reads several)",
    description=VERBS["recall"].doc,
)
async def recall(
    bank_id: BankDep,
    body: BankRecallBody,
    memory: MemoryDep,
    request: Request,
) -> Recall:
    _count(request, "recalls")
    return await memory.recall(bank_id, **{k: getattr(body, k) for k in body.model_fields_set})
