"""SQL on the test run's database, for tests that check (or set up) stored rows no public verb shows.

A connection of its own per call, from the database URL: tests never borrow the engine's pool or reach into
`Memory` for it. `Database` is for async tests; `Database.blocking` runs the same calls from synchronous ones.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import asyncpg
from pgvector.asyncpg import register_vector

from memwrap import Memory
from memwrap.store.embedded_pg import embedded_database_url


class Database:
    def __init__(self, url: str) -> None:
        self.url = url
        self.blocking = BlockingDatabase(self)

    @classmethod
    def of(cls, memory: Memory) -> Database:
        """The database of an embedded `Memory` of the test's own (another home)."""
        settings = memory.aio.settings
        return cls(settings.database_url or embedded_database_url(settings.pgdata))

    @asynccontextmanager
    async def pool(self) -> AsyncIterator[asyncpg.Pool]:
        """A pool of its own, for engine parts under test that take one."""
        async with asyncpg.create_pool(self.url, min_size=1, max_size=4, init=register_vector) as pool:
            yield pool

    @asynccontextmanager
    async def connect(self) -> AsyncIterator[asyncpg.Connection]:
        conn = await asyncpg.connect(self.url)
        try:
            await register_vector(conn)
            yield conn
        finally:
            await conn.close()

    async def fetch(self, query: str, *args: Any) -> list[asyncpg.Record]:
        async with self.connect() as conn:
            return await conn.fetch(query, *args)

    async def fetchval(self, query: str, *args: Any) -> Any:
        async with self.connect() as conn:
            return await conn.fetchval(query, *args)

    async def execute(self, query: str, *args: Any) -> str:
        async with self.connect() as conn:
            return await conn.execute(query, *args)


class BlockingDatabase:
    """The same calls for synchronous tests (no event loop running in the calling thread)."""

    def __init__(self, database: Database) -> None:
        self.database = database

    def fetch(self, query: str, *args: Any) -> list[asyncpg.Record]:
        return asyncio.run(self.database.fetch(query, *args))

    def fetchval(self, query: str, *args: Any) -> Any:
        return asyncio.run(self.database.fetchval(query, *args))

    def execute(self, query: str, *args: Any) -> str:
        return asyncio.run(self.database.execute(query, *args))
