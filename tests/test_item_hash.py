"""An item's identity (item_hash) cannot undo redaction, and retain and import stay idempotent, old stores included.

The hash is computed over the item after the memory defense: hashing the right guess of a redacted card number
finds nothing. A store of the release before (schema v9) holds unkeyed hashes of the original items: migration
0011 rewrites them (and every copy: retained items, observation evidence, queued jobs) as HMAC-SHA256 under a key
of the store, and retaining or importing such an item again still finds it. The old state is built for real:
a database of its own migrated to version 9 by the store's own migrations, with the rows the old code wrote.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit
from uuid import uuid4

import asyncpg
import pytest

from memwrap import Memory
from memwrap.config import Settings, embedding_space
from memwrap.engine.engine import Engine
from memwrap.store.db import migrate
from memwrap.store.embedded_pg import embedded_database_url

CARD = "4539 1488 0343 6467"  # Visa test number: valid Luhn
WHEN = datetime(2026, 3, 1, 9, 30, tzinfo=UTC)


def old_hash(document_id: str | None, content: str, timestamp: datetime | None = None) -> str:
    """item_hash as the release before computed it: SHA-256 of the item as written, unkeyed."""
    when = "" if document_id else (timestamp.isoformat() if timestamp else "")
    return hashlib.sha256("\x1f".join([document_id or "", when, content]).encode()).hexdigest()


def test_the_exported_hash_does_not_confirm_the_redacted_secret(memory: Memory, bank: str, tmp_path: Path) -> None:
    content = f"My card is {CARD}, expiry 04/29."
    ids = memory.retain(bank, content, document_id="wallet:1")
    assert memory.retain(bank, content, document_id="wallet:1") == ids  # the same item again: the same memory
    memory.export_bank(bank, tmp_path / "bank.jsonl", include_embeddings=False)
    records = [json.loads(line) for line in (tmp_path / "bank.jsonl").read_text().splitlines()]
    [stored] = [r for r in records if r["record"] == "memory"]
    assert CARD not in json.dumps(records) and stored["text"] == "My card is [REDACTED:credit_card], expiry 04/29."
    # An attacker who guesses the card right (BIN + Luhn leave about 10^9 candidates) hashes it the old way: no match.
    assert stored["item_hash"] != old_hash("wallet:1", content)
    assert stored["item_hash"] not in {old_hash("wallet:1", content.replace(CARD, CARD.replace(" ", s))) for s in " -"}
    # What it is: the hash of what was stored.
    assert stored["item_hash"] == old_hash("wallet:1", stored["text"])


def test_import_then_retain_finds_the_same_item_in_another_bank(memory: Memory, bank: str, tmp_path: Path) -> None:
    """The hash needs no key of the store, so an exported bank keeps its identities wherever it is imported."""
    content = f"Alice's phone is +44 20 7946 0958 and her card {CARD}."
    ids = memory.retain(bank, content, document_id="contact:alice")
    memory.export_bank(bank, tmp_path / "bank.jsonl")
    copy = f"{bank}-copy"
    try:
        assert memory.import_bank(copy, tmp_path / "bank.jsonl").written["memory"] == 1
        assert memory.retain(copy, content, document_id="contact:alice") == ids
        assert len(memory.list(copy)) == 1
    finally:
        memory.delete_bank(copy)


@pytest.fixture
async def old_store(memory: Memory, memwrap_home: Path) -> AsyncIterator[str]:
    """The URL of a new database holding the schema of migrations 0001-0009 only."""
    await asyncio.to_thread(memory.banks)  # the test server is up
    url = await asyncio.to_thread(embedded_database_url, memwrap_home / "pg")
    name = f"memwrap_v9_{uuid4().hex[:10]}"
    admin = await asyncpg.connect(url)
    try:
        await admin.execute(f'CREATE DATABASE "{name}"')
        dim = int(await admin.fetchval("SELECT value FROM store_meta WHERE key = 'embedding_dim'"))
        old_url = urlunsplit(urlsplit(url)._replace(path=f"/{name}"))
        await migrate(old_url, embedding_model=embedding_space(Settings().embedding_model), embedding_dim=dim, upto=9)
        yield old_url
    finally:
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await admin.close()


BANK = "old-bank"
OLD_CONTENT = f"user: my card is {CARD}"


async def write_old_state(url: str, dim: int) -> dict[str, object]:
    """What the release before left: a retained item with a redacted card (its hash of the original), a fact the
    item's observation cites by that hash, and an extraction job queued for it."""
    hashed = old_hash("chat:7", OLD_CONTENT)
    unit, observation = uuid4(), uuid4()
    conn = await asyncpg.connect(url)
    try:
        await conn.execute("INSERT INTO banks (bank_id, memory_count) VALUES ($1, 1)", BANK)
        await conn.execute(
            "INSERT INTO memory_units (bank_id, id, text, fact_type, document_id, item_hash, mentioned_at, embedding,"
            " search_tsv) VALUES ($1, $2, 'user: my card is [REDACTED:credit_card]', 'raw', 'chat:7', $3, $4,"
            f" array_fill(0.1, ARRAY[{dim}])::vector, to_tsvector('simple', 'card'))",
            BANK,
            unit,
            hashed,
            WHEN,
        )
        await conn.execute(
            "INSERT INTO retained_items (bank_id, item_hash, unit_ids) VALUES ($1, $2, $3)", BANK, hashed, [unit]
        )
        await conn.execute(
            "INSERT INTO memory_units (bank_id, id, text, fact_type, item_hash, mentioned_at, search_tsv)"
            " VALUES ($1, $2, 'The user pays by card.', 'observation', 'observation:' || $2::uuid::text, $3,"
            " to_tsvector('simple', 'card'))",
            BANK,
            observation,
            WHEN,
        )
        await conn.execute(
            "INSERT INTO observations (bank_id, id, scope, origin) VALUES ($1, $2, '{}', 'heuristic')",
            BANK,
            observation,
        )
        await conn.execute(
            "INSERT INTO observation_evidence (bank_id, observation_id, memory_id, quote, evidenced_at, source_key)"
            " VALUES ($1, $2, $3, 'card', $4, $5)",
            BANK,
            observation,
            unit,
            WHEN,
            f"item:{hashed}",
        )
        await conn.execute(
            "INSERT INTO jobs (kind, bank_id, payload) VALUES ('extract', $1, $2::jsonb)",
            BANK,
            json.dumps({"item_hashes": [hashed, "not-a-hash"]}),
        )
        return {"hash": hashed, "unit": unit}
    finally:
        await conn.close()


async def test_an_old_store_is_rekeyed_and_its_items_are_found_again(old_store: str, memwrap_home: Path) -> None:
    probe = await asyncpg.connect(old_store)
    dim = int(await probe.fetchval("SELECT value FROM store_meta WHERE key = 'embedding_dim'"))
    await probe.close()
    old = await write_old_state(old_store, dim)
    engine = await Engine.open(Settings(home=memwrap_home, database_url=old_store, llm_provider="none", worker="off"))
    try:
        pool = engine.store.pool
        key = bytes.fromhex(await pool.fetchval("SELECT value FROM store_meta WHERE key = 'legacy_item_hash_key'"))
        assert len(key) == 32
        keyed = hmac.new(key, str(old["hash"]).encode(), hashlib.sha256).hexdigest()
        rows = []
        for table in ("memory_units", "retained_items", "observation_evidence", "jobs"):
            rows += await pool.fetch(f"SELECT * FROM {table} WHERE bank_id = $1", BANK)
        dump = "\n".join(str(tuple(r)) for r in rows)
        assert old["hash"] not in dump  # no copy of the unkeyed hash is left
        assert await pool.fetchval("SELECT item_hash FROM memory_units WHERE id = $1", old["unit"]) == keyed
        assert await pool.fetchval("SELECT item_hash FROM retained_items WHERE bank_id = $1", BANK) == keyed
        assert (
            await pool.fetchval("SELECT source_key FROM observation_evidence WHERE bank_id = $1", BANK)
            == f"item:{keyed}"
        )
        assert json.loads(await pool.fetchval("SELECT payload::text FROM jobs WHERE bank_id = $1", BANK)) == {
            "item_hashes": [keyed, "not-a-hash"]
        }

        # Retained again, the old item is the same memory; so is a bulk import of it.
        assert await engine.retain(BANK, OLD_CONTENT, document_id="chat:7") == [old["unit"]]
        assert await engine.import_memories(BANK, [{"text": OLD_CONTENT, "document_id": "chat:7"}]) == 0
        # A new item is hashed the new way, over its defended text.
        [new] = await engine.retain(BANK, f"user: my other card is {CARD}", document_id="chat:8")
        assert await pool.fetchval("SELECT item_hash FROM memory_units WHERE id = $1", new) == old_hash(
            "chat:8", "user: my other card is [REDACTED:credit_card]"
        )
        assert (
            await pool.fetchval("SELECT count(*) FROM memory_units WHERE bank_id = $1 AND fact_type = 'raw'", BANK) == 2
        )
    finally:
        await engine.close()


async def test_a_new_store_has_no_legacy_key(memory: Memory, memwrap_home: Path) -> None:
    await asyncio.to_thread(memory.banks)  # the session's store exists, created at schema v10 with no rows
    conn = await asyncpg.connect(await asyncio.to_thread(embedded_database_url, memwrap_home / "pg"))
    try:
        assert await conn.fetchval("SELECT value FROM store_meta WHERE key = 'legacy_item_hash_key'") is None
    finally:
        await conn.close()
