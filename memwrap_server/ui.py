"""The memory browser at `/ui`: static files (memwrap_server/static/ui, shipped in the wheel) that call the
public REST API with the key the user enters once (kept in the tab's sessionStorage).

The files themselves hold no data, so they need no key (a browser cannot send one when it opens a page); every
piece of data comes from `/v1/...` with the key, under the same bank rules as any client. The pages set a strict
Content-Security-Policy: scripts and styles only from this server, nothing inline, so even a memory that slipped
past the page's escaping could not run code.
"""

from __future__ import annotations

import socket
import sys
import threading
import time
import webbrowser
from importlib import resources
from pathlib import Path

import httpx
from fastapi import APIRouter, HTTPException
from fastapi.responses import FileResponse, RedirectResponse

PREFIX = "/ui"


def default_port() -> int:
    """The sidecar's port when none is given: MEMWRAP_PORT, else 8765 (memwrap_server/config.py)."""
    from memwrap_server.config import ServerSettings

    return ServerSettings().port


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


def open_when_ready(url: str, timeout: float = 300.0) -> bool:
    """Open `url` in the default browser once the server answers /health (`memwrap ui`: the engine starts first)."""
    health = url.split("/ui/")[0] + "/health"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if httpx.get(health, timeout=1.0).status_code == 200:
                return webbrowser.open(url)
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    return False


def _serving_store(port: int) -> str | None:
    """The `store` a memwrap server on 127.0.0.1:`port` serves (its /health), or None: nothing there, or not
    memwrap."""
    try:
        body = httpx.get(f"http://127.0.0.1:{port}/health", timeout=2.0).json()
    except (httpx.HTTPError, ValueError):
        return None
    store = body.get("store") if isinstance(body, dict) else None
    return store if isinstance(store, str) else None


def _port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds: TIME_WAIT is no obstacle
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class PortInUseError(RuntimeError):
    """The port asked for with --port is taken by a program that is not memwrap serving this home."""


def choose(port: int | None, store: str) -> tuple[int, bool]:
    """(port, already served): a memwrap server on this store at the port asked for (or the default) is reused;
    a default port held by something else gives way to a free one; a port asked for that is taken is an error."""
    wanted = port or default_port()
    if _serving_store(wanted) == store:
        return wanted, True
    if _port_free(wanted):
        return wanted, False
    if port is not None:
        raise PortInUseError(
            f"Port {port} on 127.0.0.1 is in use by another program (not a memwrap server on this home): "
            "choose another with --port, or leave --port out to take a free one."
        )
    return _free_port(), False


def launch(
    *,
    port: int | None,
    home: str | None,
    database_url: str | None,
    log_level: str | None,
    open_browser: bool,
) -> int:
    """`memwrap ui`: the memory browser of this home, in the default browser. A memwrap server already serving
    the home (`memwrap serve`, another `memwrap ui`) is reused; otherwise the sidecar starts on 127.0.0.1, at
    the default port or, when that is taken, a free one."""
    from memwrap.config import load_settings
    from memwrap_server.__main__ import serve

    store = load_settings(home=home, database_url=database_url).store_fingerprint
    try:
        chosen, served = choose(port, store)
    except PortInUseError as exc:
        print(exc, file=sys.stderr)
        return 2
    url = f"http://127.0.0.1:{chosen}{PREFIX}/"
    if served:
        print(f"memory browser at {url} (the memwrap server already serving this home)", flush=True)
        if open_browser:
            webbrowser.open(url)
        return 0
    taken = "" if port or chosen == default_port() else f" (port {default_port()} is taken)"
    print(f"memory browser at {url}{taken} (Ctrl+C stops it)", flush=True)
    if open_browser:
        threading.Thread(target=open_when_ready, args=(url,), daemon=True).start()
    return serve(host="127.0.0.1", port=chosen, log_level=log_level, home=home, database_url=database_url)
