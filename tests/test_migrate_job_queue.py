"""Migration 0007: a store of an older release, with raw turns waiting in `extraction_queue` and units waiting out
`unit_learning.retry_after`, opens with that work as rows of the one job queue, which the engine then runs.

The old state is built for real: a database of its own on the test server, migrated up to version 6 by the
store's own migrations, filled with rows the old code wrote; then the current engine opens it.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit
from uuid import UUID, uuid4

import asyncpg
import pytest
from extract_support import fact, make_engine, reply, units
from fakes.llm_server import FakeLLMServer

from memwrap import Memory
from memwrap.config import Settings, embedding_space
from memwrap.store.db import migrate
from memwrap.store.embedded_pg import embedded_database_url

BANK = "old-bank"
WHEN = datetime(2026, 5, 4, 18, 30, tzinfo=UTC)
DUE = "user: I moved the nightly backup of the billing database to 3 am."
PARKED = "user: My sister lives in Lisbon."
FACT = "The user moved the nightly backup of the billing database to 3 am."


@pytest.fixture
async def old_store(memory: Memory, memwrap_home: Path) -> AsyncIterator[str]:
    """The URL of a new database holding the schema of migrations 0001-0006 only."""
    await asyncio.to_thread(memory.banks)  # the test server is up, its store says the model's dimension
    url = await asyncio.to_thread(embedded_database_url, memwrap_home / "pg")
    name = f"memwrap_v6_{uuid4().hex[:10]}"
    admin = await asyncpg.connect(url)
    try:
        await admin.execute(f'CREATE DATABASE "{name}"')
        model = embedding_space(Settings().embedding_model)
        dim = int(await admin.fetchval("SELECT value FROM store_meta WHERE key = 'embedding_dim'"))
        parts = urlsplit(url)
        old_url = urlunsplit(parts._replace(path=f"/{name}"))
        await migrate(old_url, embedding_model=model, embedding_dim=dim, upto=6)
        yield old_url
    finally:
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await admin.close()


async def write_old_state(url: str) -> dict[str, object]:
    """What the old code left behind: two raw items in extraction_queue (one due, one parked after its attempts),
    three consolidated-or-not units (one waiting out its backoff, one given up on, one done)."""
    conn = await asyncpg.connect(url)
    try:
        await conn.execute("INSERT INTO banks (bank_id, memory_count) VALUES ($1, 5)", BANK)
        due_at = datetime.now(UTC) - timedelta(minutes=5)
        retry_at = datetime.now(UTC) + timedelta(hours=1)
        raw = {"due-item": (uuid4(), DUE), "parked-item": (uuid4(), PARKED)}
        for item_hash, (unit_id, text) in raw.items():
            await conn.execute(
                "INSERT INTO memory_units (bank_id, id, text, fact_type, document_id, item_hash, mentioned_at,"
                " search_tsv) VALUES ($1, $2, $3, 'raw', $4, $5, $6, to_tsvector('simple', $3))",
                BANK,
                unit_id,
                text,
                f"doc:{item_hash}",
                item_hash,
                WHEN,
            )
            await conn.execute(
                "INSERT INTO retained_items (bank_id, item_hash, unit_ids) VALUES ($1, $2, $3)",
                BANK,
                item_hash,
                [unit_id],
            )
        await conn.execute(
            "INSERT INTO extraction_queue (bank_id, item_hash, attempts, last_error, next_attempt_at) VALUES"
            " ($1, 'due-item', 2, 'LLMUnavailableError: upstream down', $2),"
            " ($1, 'parked-item', 8, 'LLMOutputError: not JSON', NULL)",
            BANK,
            due_at,
        )
        learnt = {"waiting": uuid4(), "given-up": uuid4(), "done": uuid4()}
        for name, unit_id in learnt.items():
            await conn.execute(
                "INSERT INTO memory_units (bank_id, id, text, fact_type, item_hash, mentioned_at, search_tsv)"
                " VALUES ($1, $2, $3, 'world', $3, $4, to_tsvector('simple', $3))",
                BANK,
                unit_id,
                f"The {name} fact.",
                WHEN,
            )
        await conn.execute(
            "INSERT INTO unit_learning (bank_id, unit_id, status, attempts, retry_after, error) VALUES"
            " ($1, $2, 'failed', 1, $5, 'LLMUnavailableError: overloaded'),"
            " ($1, $3, 'failed', 3, $5, 'LLMUnavailableError: overloaded'),"
            " ($1, $4, 'done', 0, NULL, NULL)",
            BANK,
            learnt["waiting"],
            learnt["given-up"],
            learnt["done"],
            retry_at,
        )
        return {"raw": raw, "learnt": learnt, "due_at": due_at, "retry_at": retry_at}
    finally:
        await conn.close()


async def test_an_old_store_opens_with_its_waiting_work_as_jobs(
    old_store: str, memwrap_home: Path, fake: FakeLLMServer
) -> None:
    old = await write_old_state(old_store)
    engine = await make_engine(memwrap_home, fake, database_url=old_store)
    try:
        pool = engine.store.pool
        assert await pool.fetchval("SELECT max(version) FROM schema_migrations") >= 7
        assert await pool.fetchval("SELECT to_regclass('extraction_queue')") is None
        columns = {
            r["column_name"]
            for r in await pool.fetch(
                "SELECT column_name FROM information_schema.columns WHERE table_name = 'unit_learning'"
            )
        }
        assert "retry_after" not in columns and "attempts" not in columns

        extract = {j.payload["item_hashes"][0]: j for j in await engine.jobs(BANK, kind="extract")}
        due, parked = extract["due-item"], extract["parked-item"]
        assert (due.status, due.attempts, due.last_error) == ("queued", 2, "LLMUnavailableError: upstream down")
        assert due.run_after == old["due_at"] and due.max_attempts == 8
        assert (parked.status, parked.attempts) == ("failed", 8) and parked.finished_at is not None

        [waiting] = await engine.jobs(BANK, kind="consolidate_parked")
        learnt: dict[str, UUID] = old["learnt"]  # type: ignore[assignment]  # the fixture's dict of ids
        assert waiting.payload["unit_ids"] == [str(learnt["waiting"])]  # the given-up unit gets no job
        assert waiting.status == "queued" and waiting.run_after == old["retry_at"] and waiting.max_attempts == 2
        assert await pool.fetchval("SELECT serial_key FROM jobs WHERE id = $1", waiting.id) == f"consolidate:{BANK}"

        # The migrated jobs run: the due item becomes its fact (keeping the raw unit's id); the dead one stays raw.
        fake.script([reply([fact(FACT, "world", [1], ["billing database"])])])
        assert await engine.reextractor.run_once(bank_id=BANK) == 1  # type: ignore[union-attr]  # set here
        raw: dict[str, tuple[UUID, str]] = old["raw"]  # type: ignore[assignment]  # the fixture's dict of rows
        rows = {r["text"]: r for r in await units(engine, BANK) if r["item_hash"] in raw}
        assert rows[FACT]["id"] == raw["due-item"][0] and rows[FACT]["fact_type"] == "world"
        assert rows[PARKED]["fact_type"] == "raw"
        assert [j.status for j in await engine.jobs(BANK, kind="extract")] == ["failed", "done"]
        assert len(fake.requests) == 1
    finally:
        await engine.close()
