"""Retain's pipeline (engine/retain/pipeline.py, issues 36 and 38): items are embedded and written in groups of
about EMBED_GROUP_UNITS units, the embedding of the next group running while this one is written. Checked here:
the order of the steps (not how long they took), that cutting a call into groups changes nothing that is
stored, and that the joint check (joints.py) scans each side of a joint only when something crosses it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pytest
from database import Database

from memwrap import Memory, RetainItem
from memwrap.engine.retain import joints, pipeline

START = datetime(2026, 5, 4, 18, 0, tzinfo=UTC)
LONG_ANSWER = "assistant: " + " ".join(
    f"Step {i}: run migrate.py against the staging database in Berlin, then check the sync log before noon."
    for i in range(40)
)


def _engine(memory: Memory) -> Any:
    return memory._run(memory.aio._get_engine())


def _turns(count: int, session: str = "s1") -> list[RetainItem]:
    names = ("Alice", "Bob")
    return [
        RetainItem(
            content=f"{names[i % 2]}: On day {i} I went hiking near Lisbon with Carmen and we saw {i} goats.",
            document_id=f"{session}:{i}",
            timestamp=START + timedelta(minutes=i),
        )
        for i in range(count)
    ]


def test_the_next_group_is_embedded_while_this_one_is_written(
    memory: Memory, bank: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = _engine(memory)
    events: list[str] = []
    embed, write = engine.embedder.embed, pipeline.write_items

    async def embed_spy(texts: Sequence[str]) -> np.ndarray:
        number = sum(e.startswith("embed ") for e in events)
        events.append(f"embed {number} ({len(texts)})")
        return await embed(texts)

    async def write_spy(conn: Any, bank_id: str, items: Sequence[Any], vectors: np.ndarray, **kw: Any) -> Any:
        number = sum(e.startswith("write ") for e in events)
        events.append(f"write {number}")
        return await write(conn, bank_id, items, vectors, **kw)

    monkeypatch.setattr(engine.embedder, "embed", embed_spy)
    monkeypatch.setattr(pipeline, "write_items", write_spy)
    items = _turns(80)  # one unit each: three groups of 32, 32 and 16 units
    ids = memory.retain_many(bank, items)

    assert len(ids) == 80 and len(set(ids)) == 80
    embeds = [e for e in events if e.startswith("embed ")]
    assert embeds == ["embed 0 (32)", "embed 1 (32)", "embed 2 (16)"], events
    # Group 1's embedding was started before group 0 was written, group 2's before group 1 was.
    assert events.index("embed 1 (32)") < events.index("write 0")
    assert events.index("embed 2 (16)") < events.index("write 1")
    assert events.index("write 1") < events.index("write 2")


def _items() -> list[RetainItem]:
    """Chat turns of two sessions interleaved, a long message cut into chunks, a duplicate, items with no session
    (a multi-turn transcript), dates and names: everything retain derives rows from."""
    items = [*_turns(30, "s1"), *_turns(20, "s2")]
    items.sort(key=lambda item: (item.timestamp, item.document_id))
    items.insert(11, RetainItem(content=LONG_ANSWER, document_id="s1:long", timestamp=START + timedelta(hours=1)))
    items.insert(25, items[3])  # the same item twice in one call: stored once
    items += [
        RetainItem(
            content="user: Remind me: the Madrid offsite is next Friday.\nassistant: Noted, Friday 15 May in Madrid.",
            timestamp=START + timedelta(days=1),
        ),
        RetainItem(content="Bob moved to Porto last year.", timestamp=START + timedelta(days=2), tags=["move"]),
    ]
    return items


DUMP_UNITS = """
SELECT coalesce(document_id, '') || '#' || part_index::text || '#' || item_hash AS key, text, fact_type,
       session_key, metadata::text, tags, occurred_start, occurred_end, mentioned_at, embedding::text,
       search_tsv::text, speaker, expires_at, turn_part, turn_parts, standing, id
FROM memory_units WHERE bank_id = $1
"""


async def _dump(db: Database, bank: str) -> dict[str, Any]:
    """The bank's stored rows with unit ids replaced by (document id, part, item hash)."""
    units = await db.fetch(DUMP_UNITS, bank)
    key = {r["id"]: r["key"] for r in units}
    entities = await db.fetch(
        "SELECT id, name, name_key, mention_count, entity_type FROM entities WHERE bank_id = $1", bank
    )
    entity = {r["id"]: r["name_key"] for r in entities}
    links = await db.fetch("SELECT from_id, to_id, kind, weight FROM memory_links WHERE bank_id = $1", bank)
    mentions = await db.fetch("SELECT unit_id, entity_id FROM unit_entities WHERE bank_id = $1", bank)
    items = await db.fetch("SELECT item_hash, unit_ids FROM retained_items WHERE bank_id = $1", bank)
    count = await db.fetchval("SELECT memory_count FROM banks WHERE bank_id = $1", bank)
    return {
        "units": {r["key"]: tuple(v for k, v in r.items() if k not in {"key", "id"}) for r in units},
        "entities": sorted((r["name_key"], r["name"], r["mention_count"], r["entity_type"]) for r in entities),
        "links": sorted((key[r["from_id"]], key[r["to_id"]], r["kind"], r["weight"]) for r in links),
        "mentions": sorted((key[r["unit_id"]], entity[r["entity_id"]]) for r in mentions),
        "items": sorted((r["item_hash"], tuple(key[u] for u in r["unit_ids"])) for r in items),
        "memory_count": count,
    }


@pytest.mark.parametrize("group_units", [1, 5, 32])
def test_groups_store_what_one_batch_stores(
    memory: Memory, db: Database, monkeypatch: pytest.MonkeyPatch, group_units: int
) -> None:
    """The same items retained as one group (the whole call, as before the pipeline) and in groups of 1, 5 and 32
    units give the same rows: texts, vectors (to the bit), search terms, entities, links, item records."""
    banks = {}
    for name, size in (("whole", 10**6), ("grouped", group_units)):
        monkeypatch.setattr(pipeline, "EMBED_GROUP_UNITS", size, raising=False)
        banks[name] = f"t-pipe-{name}-{group_units}-{np.random.default_rng().integers(1 << 40):x}"
        memory.retain_many(banks[name], _items())
    whole, grouped = (asyncio.run(_dump(db, b)) for b in banks.values())
    assert len(whole["units"]) > 55  # every turn, the long message's chunks, the transcript's two turns
    assert any(v[13] is not None for v in whole["units"].values())  # a chunked message (turn_parts)
    assert whole["links"] and whole["mentions"] and whole["entities"]
    assert grouped == whole


def test_the_joint_check_scans_each_side_only_when_something_crosses(monkeypatch: pytest.MonkeyPatch) -> None:
    scanned: list[str] = []
    real = joints.scan

    def counting(text: str) -> Any:
        scanned.append(text)
        return real(text)

    monkeypatch.setattr(joints, "scan", counting)
    assert joints.split_secret("We met in Lisbon on Friday.", "Bob: great, see you there") is None
    assert len(scanned) == 2  # glued and with a space; neither side alone
    scanned.clear()
    token = "ghp_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5b"
    assert joints.split_secret("my token is " + token[:14], token[14:] + " thanks") is not None
    assert "my token is " + token[:14] in scanned  # the sides are read once a finding crosses the joint
