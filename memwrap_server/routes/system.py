"""/health and /ready (no key needed), /metrics (Prometheus text format).

/health is liveness: the process answers, and says whether its database does (`database: up|down`, status
`degraded` while it is down); it stays 200 while a restart of the process would not bring the database back. The
exception is the embedded database when it stopped and this process could not start it again (every attempt
failed: memwrap/store/embedded_pg.py): then /health answers 503, status `down`, so that a supervisor or a
liveness probe restarts the process, which starts the database anew.
/ready is readiness: 200 while the database is reachable, 503 while it is not (take the instance out of a
load balancer's rotation; it comes back by itself).
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response

import memwrap
from memwrap_server.schemas import ERRORS, Health

router = APIRouter(tags=["system"])


def _health(request: Request) -> tuple[dict[str, Any], bool]:
    """The body of /health and /ready as a plain dict (no model validation per call: it is probed constantly)."""
    state = request.app.state
    report = state.database.report()
    up = report["database"] == "up"
    failed = not up and state.store_failure() is not None
    body = {
        "status": "ok" if up else "down" if failed else "degraded",
        "version": memwrap.__version__,
        "engine": "postgres" if state.memory.settings.database_url else "embedded",
        **report,
        "store": state.store_fingerprint,
    }
    return body, up


@router.get(
    "/health",
    response_model=Health,
    responses={503: {"model": Health, "description": "The embedded database stopped and could not be started again"}},
    summary="Liveness, and whether the database is reachable",
)
async def health(request: Request) -> Response:
    body, _ = _health(request)
    if body["status"] == "down":
        return JSONResponse(body, status_code=503)
    return JSONResponse(body)


@router.get(
    "/ready",
    response_model=Health,
    responses={503: {"model": Health, "description": "Database down"}},
    summary="Readiness: 200 while the database is reachable, 503 while it is not",
)
async def ready(request: Request) -> Response:
    body, up = _health(request)
    return JSONResponse(body, status_code=200 if up else 503, headers=None if up else {"Retry-After": "1"})


@router.get(
    "/metrics",
    summary="Prometheus metrics",
    response_class=Response,
    responses={200: {"content": {"text/plain": {}}}, 401: ERRORS[401]},
)
async def metrics(request: Request) -> Response:
    body, content_type = request.app.state.metrics.render()
    return Response(body, media_type=content_type)
