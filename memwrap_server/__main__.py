"""`python -m memwrap_server` / `memwrap serve`: the sidecar on uvicorn (default 127.0.0.1:8765).

Graceful shutdown is uvicorn's: on SIGTERM/SIGINT it stops accepting, lets in-flight requests (streams too)
finish for up to MEMWRAP_GRACEFUL_TIMEOUT seconds, then runs the app's shutdown (retains delivered, engine closed).
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from collections.abc import Sequence


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", help="interface to listen on (MEMWRAP_HOST, default 127.0.0.1)")
    parser.add_argument("--port", type=int, help="port (MEMWRAP_PORT, default 8765)")
    parser.add_argument("--log-level", help="uvicorn log level (MEMWRAP_LOG_LEVEL, default info)")


def _exit_normally(signum: int, frame: object) -> None:
    raise SystemExit(0)


def serve(
    *,
    host: str | None = None,
    port: int | None = None,
    log_level: str | None = None,
    home: str | None = None,
    database_url: str | None = None,
) -> int:
    # The engine reads MEMWRAP_HOME / MEMWRAP_DATABASE_URL itself; command-line values win over the environment.
    if home:
        os.environ["MEMWRAP_HOME"] = home
    if database_url:
        os.environ["MEMWRAP_DATABASE_URL"] = database_url
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the embedding model is packaged: never reach for a hub
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

    import uvicorn

    from memwrap import tracing
    from memwrap_server.app import create_app
    from memwrap_server.config import ServerSettings
    from memwrap_server.http_protocol import MemwrapHttpProtocol
    from memwrap_server.logs import ServerLogging

    tracing.trace_every_bank_in_background()  # the sidecar's exporter is the operator's: every bank's jobs

    # uvicorn shuts down gracefully on SIGTERM, then re-raises it with the handler it found installed. The
    # default one kills the process on the spot, so atexit (which stops the embedded PostgreSQL this process
    # started) would never run: found here, it exits like SIGINT does, through the interpreter's normal exit.
    signal.signal(signal.SIGTERM, _exit_normally)
    overrides = {k: v for k, v in {"host": host, "port": port, "log_level": log_level}.items() if v is not None}
    settings = ServerSettings(**overrides)  # type: ignore[arg-type]  # pydantic-settings validates each
    # Our logging first (plain lines, written off the event loop), so no library installs its own on the root.
    logs = ServerLogging(settings.log_level).install()
    try:
        uvicorn.run(
            create_app(settings),
            host=settings.host,
            port=settings.port,
            log_level=settings.log_level,
            log_config=None,  # uvicorn's loggers write through ours
            timeout_graceful_shutdown=int(settings.graceful_timeout),
            timeout_keep_alive=settings.keep_alive_timeout,
            # Our own /metrics counts requests; uvicorn's access log would print every call's path (bank ids).
            access_log=settings.log_level == "debug",
            http=MemwrapHttpProtocol,  # keeps an absolute-form request target for the Host check
        )
    finally:
        logs.stop()
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m memwrap_server", description="memwrap sidecar")
    add_arguments(parser)
    parser.add_argument("--home")
    parser.add_argument("--database-url")
    args = parser.parse_args(argv)
    return serve(
        host=args.host, port=args.port, log_level=args.log_level, home=args.home, database_url=args.database_url
    )


if __name__ == "__main__":
    sys.exit(main())
