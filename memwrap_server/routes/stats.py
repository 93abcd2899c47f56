"""A bank's counts at a glance (the memory browser's bank list): the `bank_stats` verb's route, derived from its
declaration (memwrap/verbs.py, memwrap_server/verb_routes.py)."""

from __future__ import annotations

from fastapi import APIRouter

from memwrap.verbs import VERBS
from memwrap_server.schemas import ERRORS
from memwrap_server.verb_routes import add_verb_route

router = APIRouter(prefix="/v1/banks/{bank_id}", tags=["banks"], responses=ERRORS)

add_verb_route(router, VERBS["bank_stats"], responses={404: ERRORS[422] | {"description": "No such bank"}})
