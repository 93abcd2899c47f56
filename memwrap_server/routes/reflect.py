"""Reflect (memwrap/engine/reflect): an answer from a bank's memory, with citations. Needs the engine's LLM
(MEMWRAP_LLM_* on the server); without one the answer is 409 `llm_not_configured`."""

from __future__ import annotations

from fastapi import APIRouter

from memwrap.verbs import VERBS
from memwrap_server.schemas import ERRORS
from memwrap_server.verb_routes import add_verb_route

router = APIRouter(prefix="/v1/banks/{bank_id}", tags=["reflect"], responses=ERRORS)
add_verb_route(
    router, VERBS["reflect"], responses={409: ERRORS[422] | {"description": "The server has no LLM for reflect"}}
)
