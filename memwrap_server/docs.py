"""`/docs` (Swagger UI) and `/redoc` with their scripts served by this server, so they work offline.

FastAPI's own pages load Swagger UI and ReDoc from a CDN: without network they are blank. The assets come from
the `fastapi-offline` package (a packaged copy of swagger-ui-dist and redoc), served under /docs/assets/, which
needs no key (library files, no data), and neither do the pages and /openapi.json (the API's description, the
same for every server of this version: a browser opening /docs could not send a key). The document declares
how to send a key when the server has keys, so "Authorize" on /docs takes one for the calls made from there.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any

from fastapi import APIRouter, FastAPI, HTTPException, Request
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.responses import FileResponse, HTMLResponse

from memwrap_server.auth import PROXY_PATHS, PUBLIC_PATHS

ASSETS_PREFIX = "/docs/assets/"
ASSETS = {"swagger-ui-bundle.js", "swagger-ui.css", "redoc.standalone.js", "favicon.png"}

# The pages may load nothing from elsewhere: ReDoc's sidebar links an image on its vendor's CDN, and this keeps
# the browser from asking for it (the pages' own start-up scripts are inline, hence 'unsafe-inline').
CSP = (
    "default-src 'self'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; font-src 'self' data:; worker-src 'self' blob:; connect-src 'self'; frame-ancestors 'none'"
)

router = APIRouter(include_in_schema=False)


def _offline(page: HTMLResponse) -> HTMLResponse:
    page.headers["Content-Security-Policy"] = CSP
    return page


def assets_dir() -> Path:
    return Path(str(resources.files("fastapi_offline") / "static"))


@router.get("/docs")
async def swagger_ui(request: Request) -> HTMLResponse:
    return _offline(
        get_swagger_ui_html(
            openapi_url=request.app.openapi_url,
            title=f"{request.app.title} — API",
            swagger_js_url=ASSETS_PREFIX + "swagger-ui-bundle.js",
            swagger_css_url=ASSETS_PREFIX + "swagger-ui.css",
            swagger_favicon_url=ASSETS_PREFIX + "favicon.png",
            # No badge from the public validator service: nothing leaves this machine.
            swagger_ui_parameters={"validatorUrl": None, "persistAuthorization": True},
        )
    )


@router.get("/redoc")
async def redoc(request: Request) -> HTMLResponse:
    return _offline(
        get_redoc_html(
            openapi_url=request.app.openapi_url,
            title=f"{request.app.title} — API",
            redoc_js_url=ASSETS_PREFIX + "redoc.standalone.js",
            redoc_favicon_url=ASSETS_PREFIX + "favicon.png",
            with_google_fonts=False,
        )
    )


@router.get(ASSETS_PREFIX + "{name}")
async def asset(name: str) -> FileResponse:
    if name not in ASSETS:
        raise HTTPException(404)
    return FileResponse(assets_dir() / name, headers={"Cache-Control": "public, max-age=86400"})


def declare_security(app: FastAPI, *, keys_set: bool) -> None:
    """With API keys, the OpenAPI document says how to send one (Swagger UI's "Authorize" and generated clients
    read it): a bearer token or X-Memwrap-Key on the REST routes, X-Memwrap-Key alone on the proxy's, none on
    /health and /ready. Without keys it declares none: none is asked for."""
    if not keys_set:
        return
    build = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is not None:
            return app.openapi_schema
        schema = build()
        schema.setdefault("components", {})["securitySchemes"] = {
            "bearer": {"type": "http", "scheme": "bearer", "description": "A key of MEMWRAP_API_KEYS."},
            "memwrapKey": {
                "type": "apiKey",
                "in": "header",
                "name": "X-Memwrap-Key",
                "description": "A key of MEMWRAP_API_KEYS (the proxy routes take only this header: "
                "their Authorization belongs to the upstream LLM).",
            },
        }
        schema["security"] = [{"bearer": []}, {"memwrapKey": []}]
        for path, operations in schema.get("paths", {}).items():
            for operation in operations.values():
                if path in PUBLIC_PATHS:
                    operation["security"] = []
                elif path in PROXY_PATHS:
                    operation["security"] = [{"memwrapKey": []}]
        app.openapi_schema = schema
        return schema

    app.openapi = openapi  # type: ignore[method-assign]  # FastAPI's documented way to extend it
