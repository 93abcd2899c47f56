"""Read-only views for the memory browser: what surrounds one memory (links, the observations citing it, its
invalidation), the bank's entities as a small graph, its sessions, and what the engine's LLM did for the bank
(llm_usage). Each route is its verb's, derived from the declaration (memwrap/verbs.py,
memwrap_server/verb_routes.py); the engine reads memwrap/engine/views/queries.py and memwrap/engine/llm/usage.py."""

from __future__ import annotations

from fastapi import APIRouter

from memwrap.verbs import VERBS
from memwrap_server.schemas import ERRORS
from memwrap_server.verb_routes import add_verb_route

router = APIRouter(prefix="/v1/banks/{bank_id}", tags=["browse"], responses=ERRORS)


def _not_found(what: str) -> dict[int | str, dict[str, object]]:
    return {404: ERRORS[422] | {"description": f"No such {what} in this bank"}}


add_verb_route(router, VERBS["memory_context"], responses=_not_found("memory"))
add_verb_route(router, VERBS["entities"])
add_verb_route(router, VERBS["entity_graph"], responses=_not_found("entity"))
add_verb_route(router, VERBS["llm_usage"])
add_verb_route(router, VERBS["sessions"])
