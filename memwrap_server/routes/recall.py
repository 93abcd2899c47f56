"""POST /v1/recall: the recall verb's route, for one bank or several read as one (`bank_id` in the body).

The caller's key must allow every bank named; one it may not use is a 403 for the whole recall (nothing is read).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeAlias

from fastapi import APIRouter, Request

from memwrap import validate
from memwrap.models import Recall
from memwrap.verbs import VERBS
from memwrap_server.deps import CallerDep, MemoryDep, check_bank
from memwrap_server.schemas import ERRORS
from memwrap_server.verb_routes import body_model

router = APIRouter(tags=["memories"], responses=ERRORS)
if TYPE_CHECKING:
    RecallBody: TypeAlias = Any  # a pydantic model built at import from the declaration: its fields are the verb's
else:
    RecallBody = body_model(VERBS["recall"])


@router.post("/v1/recall", response_model=Recall, summary=VERBS["recall"].summary, description=VERBS["recall"].doc)
async def recall(
    body: RecallBody,
    memory: MemoryDep,
    key: CallerDep,
    request: Request,
) -> Recall:
    banks = [body.bank_id] if isinstance(body.bank_id, str) else list(body.bank_id)
    for bank in banks:
        check_bank(key, validate.bank_id(bank))
    request.app.state.metrics.count("recalls", 1)
    return await memory.recall(**{k: getattr(body, k) for k in body.model_fields_set})
