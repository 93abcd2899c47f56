"""REST routes, one module per resource; `app.py` includes every router in ROUTERS.

Every router is registered unconditionally: a verb the engine renamed must fail loudly (at import or in the
drift test, tests/test_verb_drift.py, which checks every route against the OpenAPI document), never silently drop
its route.
"""

from __future__ import annotations

from fastapi import APIRouter

from memwrap_server.routes import (
    banks,
    browse,
    learning,
    memories,
    recall,
    reflect,
    spool,
    stats,
    system,
    transfer,
    webhooks,
)

ROUTERS: list[APIRouter] = [
    system.router,
    banks.router,
    memories.router,
    recall.router,
    learning.router,
    reflect.router,
    transfer.router,
    stats.router,
    browse.router,
    spool.router,
    webhooks.router,
]
