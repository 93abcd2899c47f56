"""A bank's webhooks: subscriptions and their delivery log. Each route is its verb's, derived from the declaration
(memwrap/verbs.py, memwrap_server/verb_routes.py); the engine runs memwrap/engine/webhooks."""

from __future__ import annotations

from fastapi import APIRouter

from memwrap.verbs import VERBS
from memwrap_server.schemas import ERRORS
from memwrap_server.verb_routes import add_verb_route

router = APIRouter(prefix="/v1/banks/{bank_id}", tags=["webhooks"], responses=ERRORS)

_NOT_FOUND = {404: ERRORS[422] | {"description": "No such webhook in this bank"}}

add_verb_route(
    router,
    VERBS["create_webhook"],
    responses={409: ERRORS[422] | {"description": "The bank has as many webhooks as a bank may have"}},
)
add_verb_route(router, VERBS["webhooks"])
add_verb_route(router, VERBS["update_webhook"], responses=_NOT_FOUND)
add_verb_route(router, VERBS["delete_webhook"], responses=_NOT_FOUND)
add_verb_route(router, VERBS["webhook_deliveries"], responses=_NOT_FOUND)
