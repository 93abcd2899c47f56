"""Migration 0022: a store of the release before entity types (schema 21) opens with `entities.entity_type`, every
entity it held untyped, its other rows as they were, and the new index leading with bank_id. And the statements
entity types add (the recall filter, the listing by type, the typed upsert) are bounded by bank_id, as the
distribution rule wants of every statement (tests/test_distribution_rule.py's checker, run on them).

The old state is built for real: a database of its own on the test server, migrated up to version 21 by the store's
own migrations and filled as the old code wrote it; then the migrations of today run on it.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit
from uuid import uuid4

import asyncpg
import pytest
from test_distribution_rule import statement_problems, statements  # noqa: F401 - `statements` is a fixture

from memwrap import Memory
from memwrap.config import Settings, embedding_space
from memwrap.store.db import migrate
from memwrap.store.embedded_pg import embedded_database_url

BANK = "old-types"


@pytest.fixture
async def old_store(memory: Memory, memwrap_home: Path) -> AsyncIterator[tuple[str, int]]:
    """The URL of a new database holding the schema of migrations 0001-0021 only, and its vector size."""
    await asyncio.to_thread(memory.banks)  # the test server is up
    url = await asyncio.to_thread(embedded_database_url, memwrap_home / "pg")
    name = f"memwrap_v21_{uuid4().hex[:10]}"
    admin = await asyncpg.connect(url)
    try:
        await admin.execute(f'CREATE DATABASE "{name}"')
        dim = int(await admin.fetchval("SELECT value FROM store_meta WHERE key = 'embedding_dim'"))
        old_url = urlunsplit(urlsplit(url)._replace(path=f"/{name}"))
        await migrate(old_url, embedding_model=embedding_space(Settings().embedding_model), embedding_dim=dim, upto=21)
        yield old_url, dim
    finally:
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await admin.close()


async def test_an_old_store_gets_untyped_entities(old_store: tuple[str, int]) -> None:
    url, dim = old_store
    conn = await asyncpg.connect(url)
    try:
        columns = {
            r["column_name"]
            for r in await conn.fetch(
                "SELECT column_name FROM information_schema.columns WHERE table_name = 'entities'"
            )
        }
        assert "entity_type" not in columns  # the old schema indeed
        await conn.execute("INSERT INTO banks (bank_id) VALUES ($1)", BANK)
        ids = [uuid4(), uuid4()]
        await conn.execute(
            "INSERT INTO entities (bank_id, id, name, name_key, mention_count) VALUES ($1, $2, 'Priya', 'priya', 3),"
            " ($1, $3, 'billing-api', 'billing-api', 1)",
            BANK,
            *ids,
        )

        await migrate(url, embedding_model=embedding_space(Settings().embedding_model), embedding_dim=dim)

        rows = await conn.fetch(
            "SELECT id, name, mention_count, entity_type FROM entities WHERE bank_id = $1 ORDER BY name_key", BANK
        )
        assert [(r["name"], r["mention_count"], r["entity_type"]) for r in rows] == [
            ("billing-api", 1, None),
            ("Priya", 3, None),
        ]
        assert sorted(r["id"] for r in rows) == sorted(ids)
        assert await conn.fetchval("SELECT max(version) FROM schema_migrations") >= 22
        index = await conn.fetchval("SELECT indexdef FROM pg_indexes WHERE indexname = 'entities_type'")
        assert "(bank_id, lower(entity_type))" in index and "WHERE (entity_type IS NOT NULL)" in index
        # Applying the migrations again changes nothing (each statement is IF NOT EXISTS, each version recorded).
        await migrate(url, embedding_model=embedding_space(Settings().embedding_model), embedding_dim=dim)
        assert await conn.fetchval("SELECT count(*) FROM schema_migrations WHERE version = 22") == 1
    finally:
        await conn.close()


def test_entity_type_statements_are_bounded_by_bank(statements: tuple[Memory, list[str]], bank: str) -> None:
    memory, seen = statements
    memory.configure_bank(bank, entity_types=[{"name": "Service", "description": "a backend service"}])
    memory.retain(bank, "user: Priya restarted the billing-api in Frankfurt.")
    memory.recall(bank, "who restarted it?", filters={"entity_types": ["Service"]})
    memory.list(bank, filters={"entity_types": ["service"]})
    memory.entities(bank, entity_type="Service")
    assert any("fe.entity_type" in s for s in seen) and any("lower(e.entity_type)" in s for s in seen)
    assert statement_problems(memory, seen) == []
    memory.delete_bank(bank)
