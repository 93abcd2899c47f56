"""One lock order for every transaction that writes a bank's shared rows, and a bounded retry as a safety net.

A bank's shared rows are its `banks` row (memory_count, last_retain_at) and the rows many writers update in
place: `entities` (mention counts), `entity_aliases`, `memory_links`. Before issue 37 the retain write locked
entities (UPSERT_ENTITIES) and then the bank row (BUMP_BANK), while a consolidation batch locked the bank row
after its first observation ("UPDATE banks SET memory_count = memory_count + 1") and then more entities (the next
observation's LINK_ENTITIES): each waited for the other, and PostgreSQL aborted the retain, batch and all.

The order, everywhere:

1. the item-hash advisory locks of the items written or replaced (sorted: retain/write.py `lock_items`), and
   the observation rows a consolidation or a revision changes (sorted by id, FOR UPDATE: rows no retain takes);
2. the bank row, with `lock_bank` — before any entity, alias or link row of the bank is written;
3. anything else (entities, unit_entities, entity_aliases, memory_links, retained_items, the units' rows).

Writers that follow it: the retain write (write_items, and write_translated around it), raw-to-facts
(replace_raw, link_raw_entities), joints' redaction, consolidation (observations.apply_plan), forgetting's
remove_observation, delete_memory / delete_memories / delete_bank, update, import. The common-terms count takes
the bank row last and alone (nothing a writer waits for is held meanwhile); the planner's ANALYZE takes no row
lock (its table lock, SHARE UPDATE EXCLUSIVE, does not conflict with inserts and updates).

Since every writer of entity rows holds the bank row first, the bank's entity writers run one after another and
the order in which each touches entities no longer matters. Writers of different banks lock different rows: a
retain into one bank never waits for another bank's work (the shared-sidecar promise).

`retry_transaction` re-runs a whole transaction that PostgreSQL aborted as a deadlock or a serialization failure
anyway (a writer that does not follow the order yet, or a lock taken by a statement we do not control): the
transaction rolled back entirely, and retain is idempotent by item hash, so running it again loses nothing and
stores nothing twice.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable
from typing import TypeVar

import asyncpg

from memwrap.store.pg_types import Connection

log = logging.getLogger("memwrap.store")

T = TypeVar("T")

# FOR NO KEY UPDATE: the strength of the UPDATE that bumps memory_count, so taking it early and updating later
# needs no upgrade; foreign-key checks of rows inserted into the bank (KEY SHARE) are not blocked by it.
LOCK_BANK = "SELECT 1 FROM banks WHERE bank_id = $1 FOR NO KEY UPDATE"
# Deleting the bank: the strongest row lock, first, so that the delete never upgrades while a writer waits.
LOCK_BANK_FOR_DELETE = "SELECT 1 FROM banks WHERE bank_id = $1 FOR UPDATE"

# Errors after which the whole transaction is safe to run again: it was rolled back and nothing of it stays.
RETRIABLE = (asyncpg.exceptions.DeadlockDetectedError, asyncpg.exceptions.SerializationError)
ATTEMPTS = 4
BACKOFF_SECONDS = 0.05  # first pause; doubled each time, with jitter so the two victims do not collide again


async def lock_bank(conn: Connection, bank_id: str, *, deleting: bool = False) -> None:
    """Lock the bank's row for the rest of the transaction (step 2 of the order above). A no-op when the bank
    does not exist yet; the caller that creates it (INSERT) holds its new row anyway."""
    await conn.execute(LOCK_BANK_FOR_DELETE if deleting else LOCK_BANK, bank_id)


async def retry_transaction(
    run: Callable[[], Awaitable[T]], *, what: str, attempts: int = ATTEMPTS, backoff: float = BACKOFF_SECONDS
) -> T:
    """`run()` (one whole transaction, opened and closed inside it), again after a deadlock or a serialization
    failure, up to `attempts` times in all; the last error is raised when every attempt failed."""
    for attempt in range(1, attempts + 1):
        try:
            return await run()
        except RETRIABLE as exc:
            if attempt == attempts:
                raise
            pause = backoff * 2 ** (attempt - 1) * (1 + random.random())
            log.warning(
                "memwrap: %s was aborted by PostgreSQL (%s: %s); running it again in %.2f s (attempt %d of %d)",
                what,
                type(exc).__name__,
                exc,
                pause,
                attempt + 1,
                attempts,
            )
            await asyncio.sleep(pause)
    raise AssertionError("unreachable: the loop returns or raises")  # pragma: no cover
