"""The response → session map of the memory proxy (table response_sessions, migration 0006), keyed by bank."""

from __future__ import annotations

import asyncpg

KEEP_DAYS = 30  # OpenAI keeps a stored response for 30 days: an older id cannot be continued


async def lookup(pool: asyncpg.Pool, bank_id: str, response_id: str) -> tuple[str, int] | None:
    row = await pool.fetchrow(
        "SELECT session, next_turn FROM response_sessions WHERE bank_id = $1 AND response_id = $2",
        bank_id,
        response_id,
    )
    return (row["session"], int(row["next_turn"])) if row else None


async def save(pool: asyncpg.Pool, bank_id: str, response_id: str, session: str, next_turn: int) -> None:
    await pool.execute(
        "INSERT INTO response_sessions (bank_id, response_id, session, next_turn) VALUES ($1, $2, $3, $4)"
        " ON CONFLICT (bank_id, response_id) DO UPDATE SET session = $3, next_turn = $4",
        bank_id,
        response_id,
        session,
        next_turn,
    )


async def expire(pool: asyncpg.Pool) -> int:
    status = await pool.execute(
        "DELETE FROM response_sessions WHERE created_at < now() - make_interval(days => $1)", KEEP_DAYS
    )
    return int(status.split()[-1])
