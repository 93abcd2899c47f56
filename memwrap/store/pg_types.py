"""The connection types the store's and the engine's SQL functions take (as asyncpg-stubs types asyncpg)."""

from __future__ import annotations

from typing import TypeAlias

import asyncpg
from asyncpg.pool import PoolConnectionProxy

# A connection of its own, or one borrowed from the pool (`async with pool.acquire() as conn`): asyncpg lends a
# proxy that behaves as a Connection but, to a type checker, is not one.
Connection: TypeAlias = asyncpg.Connection | PoolConnectionProxy
# Whatever runs one statement: a connection, or the pool (which borrows one for it).
Executor: TypeAlias = Connection | asyncpg.Pool
