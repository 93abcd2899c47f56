"""The embedded PostgreSQL's memory settings come from the machine (memwrap/store/pg_tuning.py)."""

from __future__ import annotations

from pathlib import Path

from memwrap import Memory
from memwrap.store.pg_tuning import CONF_FILE, INCLUDE_LINE, machine_settings, write_settings

GB = 1024**3


def test_settings_follow_the_machine() -> None:
    small = machine_settings(total_ram=2 * GB, cores=1)
    big = machine_settings(total_ram=64 * GB, cores=16)
    assert small == {
        "shared_buffers": "256MB",
        "effective_cache_size": "1024MB",
        "work_mem": "8MB",
        "maintenance_work_mem": "128MB",
        "max_parallel_maintenance_workers": "0",
    }
    assert big["shared_buffers"] == "4096MB" and big["maintenance_work_mem"] == "2048MB"  # capped
    assert big["effective_cache_size"] == "32768MB" and big["max_parallel_maintenance_workers"] == "4"


def test_written_once_and_included(tmp_path: Path) -> None:
    assert write_settings(tmp_path) is False  # no data directory yet: nothing to write into
    (tmp_path / "postgresql.conf").write_text("max_connections = 100\n")
    assert write_settings(tmp_path, {"work_mem": "16MB"}) is True
    assert write_settings(tmp_path, {"work_mem": "16MB"}) is False  # unchanged: no reload needed
    assert (tmp_path / "postgresql.conf").read_text().count(INCLUDE_LINE) == 1
    assert (tmp_path / CONF_FILE).read_text() == "work_mem = '16MB'\n"


def test_the_embedded_server_runs_with_them(memory: Memory) -> None:
    memory.banks()
    engine = memory._run(memory.aio._get_engine())
    expected = machine_settings()
    units = {"kB": 1024, "8kB": 8192, "MB": 1024**2}
    for name in ("work_mem", "maintenance_work_mem", "effective_cache_size"):
        row = memory._run(engine.store.pool.fetchrow("SELECT setting, unit FROM pg_settings WHERE name = $1", name))
        assert int(row["setting"]) * units[row["unit"]] == int(expected[name].removesuffix("MB")) * 1024**2


def test_cached_pages_survive_a_restart(tmp_path: Path) -> None:
    """autoprewarm is loaded from the second start on (shared_preload_libraries needs a start, and a new data
    directory gets its settings after initdb), and it dumps the cached blocks at shutdown."""
    from memwrap.store.embedded_pg import stop_embedded_server

    with Memory(home=tmp_path) as memory:
        memory.retain("warm", "A first memory, so there is something to cache.")
        pgdata = memory.settings.pgdata
    stop_embedded_server(pgdata)  # as at the end of a script: the next one starts the server again
    with Memory(home=tmp_path) as memory:
        engine = memory._run(memory.aio._get_engine())
        loaded = memory._run(engine.store.pool.fetchval("SHOW shared_preload_libraries"))
        assert "pg_prewarm" in loaded
        assert memory.recall("warm", "first memory").memories
    stop_embedded_server(pgdata)
    assert (pgdata / "autoprewarm.blocks").exists()
