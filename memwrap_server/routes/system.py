"""/health (no key needed) and /metrics (Prometheus text format)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import Response

import memwrap
from memwrap_server.schemas import Health

router = APIRouter(tags=["system"])


@router.get("/health", response_model=Health, summary="Liveness: the process is up and its engine is open")
async def health(request: Request) -> Health:
    engine = "postgres" if request.app.state.memory.settings.database_url else "embedded"
    return Health(status="ok", version=memwrap.__version__, engine=engine)


@router.get("/metrics", summary="Prometheus metrics", response_class=Response,
            responses={200: {"content": {"text/plain": {}}}})
async def metrics(request: Request) -> Response:
    body, content_type = request.app.state.metrics.render()
    return Response(body, media_type=content_type)
