"""The store: migrations, the embedded server shared by processes, an external URL, the model guard."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import asyncpg
import pytest
from database import Database

from memwrap import EmbeddingModelMismatchError, Memory
from memwrap.store.embedded_pg import embedded_database_url

NOW = datetime(2026, 11, 30, tzinfo=UTC)


def test_second_process_attaches_to_the_running_server(memory: Memory, memwrap_home: Path, bank: str) -> None:
    memory.retain(bank, "Written by the first process.")
    script = (
        "import sys\n"
        "from memwrap import Memory\n"
        f"m = Memory(home={str(memwrap_home)!r})\n"
        f"m.retain({bank!r}, 'Written by the second process.')\n"
        f"print(len(m.list({bank!r})))\n"
        "m.close()\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "2"
    # The server is still up for us after the other process left.
    texts = {r.text for r in memory.list(bank)}
    assert texts == {"Written by the first process.", "Written by the second process."}


def test_external_database_url(memory: Memory, memwrap_home: Path, bank: str) -> None:
    url = embedded_database_url(memwrap_home / "pg")
    with Memory(database_url=url) as external:
        external.retain(bank, "Stored through a database URL.")
        assert external.recall(bank, "database URL", now=NOW).memories[0].text == "Stored through a database URL."
    assert memory.list(bank)[0].text == "Stored through a database URL."


def test_migrations_are_recorded_once(memory: Memory, memwrap_home: Path) -> None:
    memory.banks()  # make sure the engine is open
    url = embedded_database_url(memwrap_home / "pg")

    async def versions() -> list[int]:
        conn = await asyncpg.connect(url)
        try:
            return [r["version"] for r in await conn.fetch("SELECT version FROM schema_migrations ORDER BY version")]
        finally:
            await conn.close()

    import asyncio

    first = asyncio.run(versions())
    with Memory(home=memwrap_home) as again:
        again.banks()
    assert asyncio.run(versions()) == first and first[0] == 1


def test_other_embedding_model_is_a_clear_error(fresh_home: Path) -> None:
    home = fresh_home
    with Memory(home=home) as mem:
        mem.retain("b", "hello there")
    url = embedded_database_url(home / "pg")

    async def pretend_other_model() -> None:
        conn = await asyncpg.connect(url)
        await conn.execute("UPDATE store_meta SET value = 'some-other-model' WHERE key = 'embedding_model'")
        await conn.close()

    import asyncio

    asyncio.run(pretend_other_model())
    with Memory(home=home) as mem, pytest.raises(EmbeddingModelMismatchError, match="memwrap reembed"):
        mem.banks()
    # `memwrap reembed` puts it right, in place.
    with Memory(home=home) as mem:
        assert mem.reembed() == 1
    with Memory(home=home) as mem:
        assert mem.recall("b", "hello", now=NOW).memories[0].text == "hello there"


def test_bulk_retain_refreshes_planner_statistics(memory: Memory, db: Database, bank: str) -> None:
    """A bulk load runs ANALYZE in the background (once enough rows arrived), without waiting for autovacuum."""
    engine = memory._run(memory.aio._get_engine())
    stats = engine.store.planner_stats
    memory._run(stats.wait())
    runs_before = stats.runs
    n = stats.min_rows + 50
    memory.retain_many(bank, [f"Bulk note {i}: the user logged workout number {i}." for i in range(n)])
    memory._run(stats.wait())
    assert stats.runs >= runs_before + 1
    analyzed_rows = db.blocking.fetchval("SELECT reltuples FROM pg_class WHERE oid = 'memory_units'::regclass")
    assert analyzed_rows >= n  # the planner now knows the table holds at least this bank's rows


def test_planner_statistics_wait_for_enough_growth(db: Database) -> None:
    from memwrap.store.planner_stats import PlannerStats

    async def scenario() -> list[int]:
        async with db.pool() as pool:
            stats = PlannerStats(pool, min_rows=100, growth=0.5)
            seen = []
            stats.note_writes("b1", 60)
            stats.note_writes("b2", 30)  # 90 rows in all, 60 at most per bank: not yet
            await stats.wait()
            seen.append(stats.runs)
            stats.note_writes("b2", 20)  # 110 in all: the table grew enough
            await stats.wait()
            seen.append(stats.runs)
            stats.note_writes("b1", 99)  # the table now counts as >= 100 rows at the last ANALYZE: below both marks
            await stats.wait()
            seen.append(stats.runs)
            return seen

    runs = asyncio.run(scenario())
    assert runs[0] == 0 and runs[1] == 1
    table_rows = db.blocking.fetchval("SELECT reltuples FROM pg_class WHERE oid = 'memory_units'::regclass")
    # 99 more rows: another run only if 99 >= max(100, 0.5 * table rows), which never holds.
    assert runs[2] == 1, table_rows
