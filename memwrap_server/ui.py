"""The memory browser at `/ui`: static files (memwrap_server/static/ui, shipped in the wheel) that call the
public REST API with the key the user enters once (kept in the tab's sessionStorage).

The files themselves hold no data, so they need no key (a browser cannot send one when it opens a page); every
piece of data comes from `/v1/...` with the key, under the same bank rules as any client. The pages set a strict
Content-Security-Policy: scripts and styles only from this server, nothing inline, so even a memory that slipped
past the page's escaping could not run code. `memwrap ui`, which opens it, is memwrap_server/commands.py.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from fastapi import APIRouter, HTTPException
from fastapi.responses import FileResponse, RedirectResponse

PREFIX = "/ui"


CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "font-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}

router = APIRouter(include_in_schema=False)


def static_dir() -> Path:
    return Path(str(resources.files("memwrap_server") / "static" / "ui"))


@router.get(PREFIX)
async def ui_root() -> RedirectResponse:
    return RedirectResponse(PREFIX + "/")


@router.get(PREFIX + "/{name:path}")
async def ui_file(name: str) -> FileResponse:
    root = static_dir().resolve()
    try:
        path = (root / (name or "index.html")).resolve()
        found = path.is_relative_to(root) and path.is_file()
    except (ValueError, OSError):  # a NUL in the name (/ui/a%00b), a name too long for the file system
        found = False
    if not found:
        raise HTTPException(404)
    return FileResponse(path, headers=HEADERS)
