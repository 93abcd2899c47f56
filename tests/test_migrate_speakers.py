"""Migration 0010: a store of an older release, whose turns carry their speaker only as a label in their text
("Alice: …") and link every turn to the speaker as an entity, opens with `speaker` filled in and those links gone.

The old state is built for real: a database of its own on the test server, migrated up to version 9 by the store's
own migrations, filled with rows as the old code wrote them; then the migrations of today run on it.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit
from uuid import uuid4

import asyncpg
import pytest

from memwrap import Memory
from memwrap.config import Settings, embedding_space
from memwrap.store.db import migrate
from memwrap.store.embedded_pg import embedded_database_url

BANK = "old-chat"
WHEN = datetime(2025, 5, 4, 18, 30, tzinfo=UTC)
# (text as the old code stored it, the entities it linked, the speaker today's migration must find)
ROWS = [
    ("Alice: I'm lactose intolerant.", ["Alice"], "Alice"),
    ("Bob: Nice, Alice. My sister Maya is visiting.", ["Bob", "Alice", "Maya"], "Bob"),
    ("user: I moved to Lisbon.\nassistant: Welcome!", ["Lisbon"], "user"),
    ("Human: hello there", [], "user"),
    ("张伟：我下周去上海出差。", ["张伟", "上海"], "张伟"),
    ("Note: the spare key is under the flowerpot.", ["Note"], None),
    ("A plain note without any label.", [], None),
]


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


async def test_an_old_store_gets_its_speakers_and_loses_the_speaker_entities(old_store: str) -> None:
    conn = await asyncpg.connect(old_store)
    try:
        await conn.execute("INSERT INTO banks (bank_id, memory_count) VALUES ($1, $2)", BANK, len(ROWS))
        entity_ids: dict[str, object] = {}
        for text, names, _speaker in ROWS:
            unit_id = uuid4()
            await conn.execute(
                "INSERT INTO memory_units (bank_id, id, text, fact_type, item_hash, mentioned_at, search_tsv)"
                " VALUES ($1, $2, $3, 'raw', $4, $5, to_tsvector('simple', $3))",
                BANK,
                unit_id,
                text,
                uuid4().hex,
                WHEN,
            )
            for name in names:
                if name not in entity_ids:
                    entity_ids[name] = uuid4()
                    await conn.execute(
                        "INSERT INTO entities (bank_id, id, name, name_key) VALUES ($1, $2, $3, $4)",
                        BANK,
                        entity_ids[name],
                        name,
                        name.lower(),
                    )
                await conn.execute(
                    "INSERT INTO unit_entities (bank_id, unit_id, entity_id) VALUES ($1, $2, $3)",
                    BANK,
                    unit_id,
                    entity_ids[name],
                )
        await conn.execute(
            "UPDATE entities e SET mention_count = (SELECT count(*) FROM unit_entities u"
            " WHERE u.bank_id = e.bank_id AND u.entity_id = e.id)"
        )
    finally:
        await conn.close()

    await migrate(old_store, embedding_model=embedding_space(Settings().embedding_model), embedding_dim=384)

    conn = await asyncpg.connect(old_store)
    try:
        speakers = {
            r["text"]: r["speaker"]
            for r in await conn.fetch("SELECT text, speaker FROM memory_units WHERE bank_id = $1", BANK)
        }
        assert speakers == {text: speaker for text, _names, speaker in ROWS}
        mentions = {
            r["name"]: r["mention_count"]
            for r in await conn.fetch("SELECT name, mention_count FROM entities WHERE bank_id = $1", BANK)
        }
        # Alice stays where Bob's words name her; Bob and 张伟 were only labels; Note is no speaker, so it stays.
        assert mentions == {"Alice": 1, "Bob": 0, "Maya": 1, "Lisbon": 1, "张伟": 0, "上海": 1, "Note": 1}
        linked = await conn.fetchval(
            "SELECT count(*) FROM unit_entities ue JOIN memory_units m ON m.bank_id = ue.bank_id AND m.id = ue.unit_id"
            " WHERE ue.bank_id = $1 AND m.text LIKE 'Alice:%'",
            BANK,
        )
        assert linked == 0
    finally:
        await conn.close()
