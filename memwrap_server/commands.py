"""The server's commands of the `memwrap` CLI — `serve`, `ui` (the memory browser's launcher) and `mcp` — declared to
it through the `memwrap.commands` entry point (pyproject.toml), so the core CLI never imports this package: it finds
`register` when it builds its parser (memwrap/cli/registry.py).

Light to import: the server's dependencies are the optional `server` extra (pyproject.toml), imported by each
command when it runs; without them a command says in one line what to install.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import logging
import socket
import sys
import threading
import time
import webbrowser
from collections.abc import Callable

import httpx

Configure = Callable[[argparse.ArgumentParser], None]
Run = Callable[[argparse.Namespace], int]
Register = Callable[[str, Configure, Run, str], None]

log = logging.getLogger("memwrap.mcp")


def register(add: Register) -> None:
    """The `memwrap.commands` entry point: memwrap_server's commands."""
    add("serve", configure_serve, cmd_serve, "run the sidecar: REST API, memory proxy, MCP (memwrap[server])")
    add("ui", configure_ui, cmd_ui, "browse the memory in a browser: the sidecar on 127.0.0.1, at /ui")
    add("mcp", configure_mcp, cmd_mcp, "MCP over stdio for one bank (for Claude Desktop and other clients)")


# The top-level modules of the optional `server` extra (pyproject.toml): `memwrap serve` and `ui` need them all.
SERVER_MODULES = ("fastapi", "uvicorn", "mcp", "prometheus_client", "fastapi_offline")


def missing_server_extra(command: str) -> int:
    """0 when the server extra is installed; else one line on stderr saying what to install, and exit code 2."""
    missing = [name for name in SERVER_MODULES if not _installed(name)]
    if not missing:
        return 0
    sys.stderr.write(
        f"memwrap {command} needs the server extra ({', '.join(missing)} not installed): "
        "pip install 'memwrap[server]'\n"
    )
    return 2


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a module blocked (None in sys.modules) or broken: not usable
        return False


def port_number(text: str) -> int:
    """A TCP port, 1-65535 (argparse names the value and the range when it is not)."""
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number: write e.g. 8765") from None
    if not 1 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{port} is not a port number (1-65535): write e.g. 8765")
    return port


# --- memwrap serve --------------------------------------------------------------------------------------------


def configure_serve(serve: argparse.ArgumentParser) -> None:
    serve.add_argument("--host", help="interface to listen on (MEMWRAP_HOST, default 127.0.0.1)")
    serve.add_argument("--port", type=port_number, metavar="N", help="port (MEMWRAP_PORT, default 8765)")
    serve.add_argument("--log-level", metavar="LEVEL", help="uvicorn log level (MEMWRAP_LOG_LEVEL, default info)")


def cmd_serve(args: argparse.Namespace) -> int:
    if missing := missing_server_extra("serve"):
        return missing
    from memwrap_server.__main__ import serve

    return serve(
        host=args.host, port=args.port, log_level=args.log_level, home=args.home, database_url=args.database_url
    )


# --- memwrap ui -----------------------------------------------------------------------------------------------


def configure_ui(ui: argparse.ArgumentParser) -> None:
    ui.add_argument(
        "--port", type=port_number, metavar="N", help="port (default 8765; taken by another program: a free one)"
    )
    ui.add_argument("--log-level", metavar="LEVEL", help="uvicorn log level (default info)")
    ui.add_argument("--no-browser", action="store_true", help="only print the address")


def cmd_ui(args: argparse.Namespace) -> int:
    """The memory browser of this home: a memwrap server already serving it, or the sidecar on 127.0.0.1."""
    if missing := missing_server_extra("ui"):
        return missing
    return launch(
        port=args.port,
        home=args.home,
        database_url=args.database_url,
        log_level=args.log_level,
        open_browser=not args.no_browser,
    )


def default_port() -> int:
    """The sidecar's port when none is given: MEMWRAP_PORT, else 8765 (memwrap_server/config.py)."""
    from memwrap_server.config import ServerSettings

    return ServerSettings().port


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
    from memwrap_server.ui import PREFIX

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


# --- memwrap mcp ---------------------------------------------------------------------------------------------


def configure_mcp(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--bank", required=True, help="the bank every tool of this process reads and writes")
    parser.add_argument("--url", help="a `memwrap serve` sidecar (MEMWRAP_URL; default: the embedded engine)")
    parser.add_argument(
        "--log-level",
        default="warning",
        choices=["debug", "info", "warning", "error"],
        metavar="LEVEL",
        help="log level of what goes to stderr: debug, info, warning (default) or error",
    )


def cmd_mcp(args: argparse.Namespace) -> int:
    from memwrap import validate
    from memwrap.errors import InvalidBankIdError

    logging.basicConfig(stream=sys.stderr, level=args.log_level.upper(), format="%(levelname)s %(name)s: %(message)s")
    try:
        bank = validate.bank_id(args.bank)
    except InvalidBankIdError as exc:
        sys.stderr.write(f"memwrap mcp: {exc}\n")
        return 2
    try:
        import mcp  # noqa: F401 - the server extra
    except ImportError:
        sys.stderr.write("memwrap mcp needs the server extra: pip install 'memwrap[server]'\n")
        return 2
    from memwrap.config import load_settings
    from memwrap_server.mcp_stdio import serve_stdio

    url = args.url or load_settings(home=args.home, database_url=args.database_url).url or None
    log.info("MCP over stdio for bank %r (%s)", bank, url or "embedded engine")
    try:
        asyncio.run(serve_stdio(bank, url=url, home=args.home, database_url=args.database_url))
    except KeyboardInterrupt:
        pass
    return 0
