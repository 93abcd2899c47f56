"""Learning (memwrap/engine/learn): jobs, observations, mental models, invalidate/restore of one bank.

Every route here is derived from its verb's declaration (memwrap/verbs.py, memwrap_server/verb_routes.py).
"""

from __future__ import annotations

from fastapi import APIRouter

from memwrap.verbs import VERBS
from memwrap_server.schemas import ERRORS
from memwrap_server.verb_routes import add_verb_route

router = APIRouter(prefix="/v1/banks/{bank_id}", tags=["learning"], responses=ERRORS)

LEARNING_VERBS = (
    "jobs",
    "consolidate",
    "observations",
    "get_observation",
    "observation_history",
    "mental_models",
    "create_mental_model",
    "get_mental_model",
    "mental_model_history",
    "refresh_mental_model",
    "delete_mental_model",
    "invalidate",
    "restore",
)
_TAKEN = {409: ERRORS[422] | {"description": "The bank has a mental model of that name already"}}
for _name in LEARNING_VERBS:
    add_verb_route(router, VERBS[_name], **({"responses": _TAKEN} if _name == "create_mental_model" else {}))
