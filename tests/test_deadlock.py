"""Issue 37: writers of one bank take its rows in one order, so a retain and the worker never deadlock; writers of
different banks never wait for each other.

The retain write and a consolidation batch run on two connections, stepped by gates between their statements (no
sleeps decide the interleaving): the consolidation has written its first observation (and, before the fix,
bumped the bank's memory_count) when the retain writes the entity the second observation links to. Before the
fix the retain held that entity and waited for the bank row, the consolidation held the bank row and waited for
the entity, and PostgreSQL aborted one of them with DeadlockDetectedError (at BUMP_BANK, the retain, as in the
issue's report).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import Any
from uuid import uuid4

import asyncpg
import numpy as np
import pytest
from database import Database

from memwrap import Memory
from memwrap.engine.learn import observations as obs
from memwrap.engine.retain import pipeline
from memwrap.engine.retain.prepare import PreparedItem, prepare_defended
from memwrap.engine.retain.write import write_items
from memwrap.models import RetainItem
from memwrap.store import bank_lock
from memwrap.store.db import _init_connection

Gate = Callable[[str, int], Awaitable[None]]


@pytest.fixture(scope="module", autouse=True)
def _schema(memory: Memory) -> None:
    """The run's database with its tables (the engine creates them when it starts)."""
    memory._run(memory.aio._get_engine())


class Stepped:
    """A connection whose statements may stop at a gate: `gate(query, count)` runs before each statement
    (`count`: how many statements with that query text ran before it on this connection)."""

    def __init__(self, conn: asyncpg.Connection, gate: Gate) -> None:
        self._conn = conn
        self._gate = gate
        self._seen: dict[str, int] = {}

    async def _before(self, query: str) -> None:
        count = self._seen.get(query, 0)
        self._seen[query] = count + 1
        await self._gate(query, count)

    async def execute(self, query: str, *args: Any, **kwargs: Any) -> Any:
        await self._before(query)
        return await self._conn.execute(query, *args, **kwargs)

    async def executemany(self, query: str, *args: Any, **kwargs: Any) -> Any:
        await self._before(query)
        return await self._conn.executemany(query, *args, **kwargs)

    async def fetch(self, query: str, *args: Any, **kwargs: Any) -> Any:
        await self._before(query)
        return await self._conn.fetch(query, *args, **kwargs)

    async def fetchval(self, query: str, *args: Any, **kwargs: Any) -> Any:
        await self._before(query)
        return await self._conn.fetchval(query, *args, **kwargs)

    async def fetchrow(self, query: str, *args: Any, **kwargs: Any) -> Any:
        await self._before(query)
        return await self._conn.fetchrow(query, *args, **kwargs)

    def transaction(self) -> Any:
        return self._conn.transaction()


def _item(text: str) -> PreparedItem:
    return prepare_defended(RetainItem(content=text, timestamp=datetime.now(UTC)), now=datetime.now(UTC))


@asynccontextmanager
async def _connect(db: Database) -> AsyncIterator[asyncpg.Connection]:
    """A connection set up as the engine's pool sets up its own (vectors, jsonb)."""
    conn = await asyncpg.connect(db.url)
    try:
        await _init_connection(conn)
        yield conn
    finally:
        await conn.close()


async def _dim(db: Database) -> int:
    return int(
        await db.fetchval(
            "SELECT atttypmod FROM pg_attribute WHERE attrelid = 'memory_units'::regclass AND attname = 'embedding'"
        )
    )


def _vectors(items: list[PreparedItem], dim: int) -> np.ndarray:
    count = sum(len(i.units) for i in items)
    return np.random.default_rng(7).random((count, dim), dtype=np.float32)


async def _write(db: Database, bank: str, items: list[PreparedItem]) -> None:
    dim = await _dim(db)
    async with _connect(db) as conn:
        await write_items(conn, bank, items, _vectors(items, dim))


async def _waiting_on_lock(db: Database, pid: int, task: asyncio.Task[Any]) -> None:
    """Until the backend `pid` waits for a lock (or its task ended without having to)."""
    for _ in range(600):
        if task.done():
            return
        if await db.fetchval("SELECT wait_event_type = 'Lock' FROM pg_stat_activity WHERE pid = $1", pid):
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"backend {pid} neither waited for a lock nor finished in 30 s")


def _observation(dim: int, evidence: Any) -> obs.CreateOp:
    return obs.CreateOp(
        id=uuid4(),
        text=f"observation {uuid4().hex[:6]}",
        scope=[],
        origin="heuristic",
        evidence=[obs.EvidenceIn(evidence)],
        embedding=np.ones(dim, dtype=np.float32),
    )


async def test_retain_and_consolidation_of_one_bank_do_not_deadlock(db: Database, bank: str) -> None:
    dim = await _dim(db)
    # Two stored memories, one naming Yolanda, one Xavier: the consolidation's two observations cite one each.
    first, second = _item("Yolanda fixed the parser."), _item("Xavier reviewed the release notes.")
    await _write(db, bank, [first, second])
    plan = obs.Plan(creates=[_observation(dim, first.units[0].id), _observation(dim, second.units[0].id)])
    retained = _item("Xavier merged the branch into main.")  # the entity the second observation links to

    retain_at_gate, go_retain = asyncio.Event(), asyncio.Event()
    consolidation_at_gate, go_consolidation = asyncio.Event(), asyncio.Event()

    async def retain_gate(query: str, count: int) -> None:
        if "pg_advisory_xact_lock" in query:  # past ENSURE_BANK and the first look-up, before any lock
            retain_at_gate.set()
            await go_retain.wait()

    async def consolidation_gate(query: str, count: int) -> None:
        if query == obs.LINK_ENTITIES and count == 1:  # the first observation written (and counted)
            consolidation_at_gate.set()
            await go_consolidation.wait()

    async with _connect(db) as retain_conn, _connect(db) as consolidation_conn:
        retain_pid = retain_conn.get_server_pid()

        async def retain() -> None:
            await write_items(Stepped(retain_conn, retain_gate), bank, [retained], _vectors([retained], dim))  # type: ignore[arg-type]

        async def consolidate() -> None:
            stepped = Stepped(consolidation_conn, consolidation_gate)
            async with consolidation_conn.transaction():
                await obs.apply_plan(stepped, bank, plan)  # type: ignore[arg-type]

        retain_task = asyncio.create_task(retain())
        await asyncio.wait_for(retain_at_gate.wait(), 30)
        consolidation_task = asyncio.create_task(consolidate())
        await asyncio.wait_for(consolidation_at_gate.wait(), 30)
        go_retain.set()
        await _waiting_on_lock(db, retain_pid, retain_task)  # the retain waits for the consolidation's bank row
        go_consolidation.set()
        results = await asyncio.wait_for(asyncio.gather(retain_task, consolidation_task, return_exceptions=True), 60)

    errors = [r for r in results if isinstance(r, BaseException)]
    assert not errors, (
        f"a writer failed: {[(e, getattr(e, 'detail', None), getattr(e, 'context', None)) for e in errors]!r}"
    )
    count = await db.fetchval("SELECT memory_count FROM banks WHERE bank_id = $1", bank)
    assert count == 2 + 1 + 2  # two memories, the retained one, two observations
    mentions = await db.fetchval("SELECT mention_count FROM entities WHERE bank_id = $1 AND name_key = 'xavier'", bank)
    assert mentions == 3  # the second memory, the retained one, the observation citing the second


async def test_a_held_bank_does_not_block_a_retain_into_another_bank(db: Database, bank: str) -> None:
    """The shared-sidecar promise: bank A's row held by a writer (here: locked and kept) does not stop a retain
    into bank B, even one naming the same entities."""
    other = f"{bank}-b"
    await _write(db, bank, [_item("Xavier fixed the parser.")])
    async with _connect(db) as holder, holder.transaction():
        await bank_lock.lock_bank(holder, bank)
        await holder.execute(
            "UPDATE entities SET mention_count = mention_count + 1 WHERE bank_id = $1 AND name_key = 'xavier'", bank
        )
        await asyncio.wait_for(_write(db, other, [_item("Xavier reviewed the parser fix.")]), 30)
        await asyncio.wait_for(_write(db, other, [_item("Xavier shipped it.")]), 30)
    assert await db.fetchval("SELECT memory_count FROM banks WHERE bank_id = $1", other) == 2


async def test_retry_runs_an_aborted_transaction_again() -> None:
    calls: list[int] = []

    async def flaky() -> str:
        calls.append(1)
        if len(calls) < 3:
            raise asyncpg.exceptions.DeadlockDetectedError("deadlock detected")
        return "stored"

    assert await bank_lock.retry_transaction(flaky, what="test", backoff=0.001) == "stored"
    assert len(calls) == 3


async def test_retry_gives_up_after_its_attempts_and_passes_other_errors() -> None:
    async def always() -> None:
        raise asyncpg.exceptions.SerializationError("could not serialize access")

    with pytest.raises(asyncpg.exceptions.SerializationError):
        await bank_lock.retry_transaction(always, what="test", attempts=2, backoff=0.001)

    calls: list[int] = []

    async def broken() -> None:
        calls.append(1)
        raise asyncpg.exceptions.UniqueViolationError("duplicate key")

    with pytest.raises(asyncpg.exceptions.UniqueViolationError):
        await bank_lock.retry_transaction(broken, what="test", backoff=0.001)
    assert len(calls) == 1


def test_a_retain_aborted_by_a_deadlock_is_written_once_on_retry(
    memory: Memory, bank: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first write of the batch is rolled back by a deadlock after it wrote everything: the batch is written
    again, whole and once (idempotent by item hash)."""
    real = pipeline.write_items
    aborted: list[int] = []

    async def aborted_once(conn: Any, bank_id: str, items: Any, vectors: Any, **kwargs: Any) -> Any:
        if not aborted:
            aborted.append(1)
            async with conn.transaction():
                await real(conn, bank_id, items, vectors, **kwargs)
                raise asyncpg.exceptions.DeadlockDetectedError("deadlock detected")
        return await real(conn, bank_id, items, vectors, **kwargs)

    monkeypatch.setattr(pipeline, "write_items", aborted_once)
    items = [{"content": f"Xavier fixed bug number {n} in the parser."} for n in range(5)]
    ids = memory.retain_many(bank, items)
    assert aborted == [1]
    assert len(ids) == 5
    assert len(memory.list(bank, limit=50)) == 5
    assert Database.of(memory).blocking.fetchval("SELECT memory_count FROM banks WHERE bank_id = $1", bank) == 5
