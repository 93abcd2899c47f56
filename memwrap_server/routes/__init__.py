"""REST routes, one module per resource; `app.py` includes every router in ROUTERS.

Learning (jobs, observations, mental models, invalidate) is included when the engine has those verbs; reflect
(reflect.py) the same way, when `AsyncMemory.reflect` exists.
"""

from __future__ import annotations

from fastapi import APIRouter

from memwrap.api import AsyncMemory
from memwrap_server.routes import banks, memories, system

ROUTERS: list[APIRouter] = [system.router, banks.router, memories.router]

if all(hasattr(AsyncMemory, verb) for verb in ("jobs", "observations", "mental_models", "invalidate")):
    from memwrap_server.routes import learning

    ROUTERS.append(learning.router)

if hasattr(AsyncMemory, "reflect"):
    from memwrap_server.routes import reflect

    ROUTERS.append(reflect.router)
