"""`/docs` (Swagger UI) and `/redoc` with their scripts served by this server, so they work offline.

FastAPI's own pages load Swagger UI and ReDoc from a CDN: without network they are blank. The assets come from
the `fastapi-offline` package (a packaged copy of swagger-ui-dist and redoc), served under /docs/assets/, which
needs no key (library files, no data); the pages and /openapi.json stay behind the key like every other route.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from fastapi import APIRouter, HTTPException, Request
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.responses import FileResponse, HTMLResponse

ASSETS_PREFIX = "/docs/assets/"
ASSETS = {"swagger-ui-bundle.js", "swagger-ui.css", "redoc.standalone.js", "favicon.png"}

# The pages may load nothing from elsewhere: ReDoc's sidebar links an image on its vendor's CDN, and this keeps
# the browser from asking for it (the pages' own start-up scripts are inline, hence 'unsafe-inline').
CSP = ("default-src 'self'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; "
       "img-src 'self' data:; font-src 'self' data:; worker-src 'self' blob:; connect-src 'self'; frame-ancestors 'none'")

router = APIRouter(include_in_schema=False)


def _offline(page: HTMLResponse) -> HTMLResponse:
    page.headers["Content-Security-Policy"] = CSP
    return page


def assets_dir() -> Path:
    return Path(str(resources.files("fastapi_offline") / "static"))


@router.get("/docs")
async def swagger_ui(request: Request) -> HTMLResponse:
    return _offline(get_swagger_ui_html(
        openapi_url=request.app.openapi_url, title=f"{request.app.title} — API",
        swagger_js_url=ASSETS_PREFIX + "swagger-ui-bundle.js", swagger_css_url=ASSETS_PREFIX + "swagger-ui.css",
        swagger_favicon_url=ASSETS_PREFIX + "favicon.png",
        # No badge from the public validator service: nothing leaves this machine.
        swagger_ui_parameters={"validatorUrl": None, "persistAuthorization": True},
    ))


@router.get("/redoc")
async def redoc(request: Request) -> HTMLResponse:
    return _offline(get_redoc_html(openapi_url=request.app.openapi_url, title=f"{request.app.title} — API",
                                   redoc_js_url=ASSETS_PREFIX + "redoc.standalone.js",
                                   redoc_favicon_url=ASSETS_PREFIX + "favicon.png", with_google_fonts=False))


@router.get(ASSETS_PREFIX + "{name}")
async def asset(name: str) -> FileResponse:
    if name not in ASSETS:
        raise HTTPException(404)
    return FileResponse(assets_dir() / name, headers={"Cache-Control": "public, max-age=86400"})
