"""A bank's settings (the `banks.config` JSON): read, create with, merge into. Checked by the caller
(memwrap/validate.py: bank_config); the worker reads `raw_ttl_days` from here too (learn/forgetting.py)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import asyncpg

from memwrap.errors import BankExistsError, BankNotFoundError
from memwrap.store.pg_types import Executor

DEFENSE_POLICIES = ("redact", "block", "off")


async def read(pool: asyncpg.Pool, bank_id: str) -> dict[str, Any]:
    row = await pool.fetchrow("SELECT config FROM banks WHERE bank_id = $1", bank_id)
    if row is None:
        raise BankNotFoundError(f"No bank {bank_id!r}.")
    return dict(row["config"] or {})


async def create(pool: asyncpg.Pool, bank_id: str, settings: Mapping[str, Any]) -> dict[str, Any]:
    """One statement: of two concurrent creates of one bank, one wins and the other gets BankExistsError."""
    config = await pool.fetchval(
        "INSERT INTO banks (bank_id, config) VALUES ($1, $2::jsonb) ON CONFLICT (bank_id) DO NOTHING RETURNING config",
        bank_id,
        dict(settings),
    )
    if config is None:
        raise BankExistsError(f"Bank {bank_id!r} exists already; configure_bank changes its settings.")
    return dict(config)


async def update(pool: asyncpg.Pool, bank_id: str, changes: Mapping[str, Any]) -> dict[str, Any]:
    """Create the bank if needed; a None value removes the setting (back to the default), others are merged."""
    removed = [k for k, v in changes.items() if v is None]
    merged = {k: v for k, v in changes.items() if v is not None}
    config = await pool.fetchval(
        "INSERT INTO banks AS b (bank_id, config) VALUES ($1, $2::jsonb) ON CONFLICT (bank_id) DO UPDATE"
        " SET config = (b.config || $2::jsonb) - $3::text[] RETURNING config",
        bank_id,
        merged,
        removed,
    )
    return dict(config or {})


async def extraction_instructions(db: Executor, bank_id: str) -> str | None:
    """The bank's extraction instructions (memwrap/engine/banks/instructions.py), or None (no bank, none set)."""
    text = await db.fetchval("SELECT config->>'extraction_instructions' FROM banks WHERE bank_id = $1", bank_id)
    return str(text) if text else None


async def defense_policy(pool: asyncpg.Pool, bank_id: str, default: str) -> str:
    config = await pool.fetchval("SELECT config FROM banks WHERE bank_id = $1", bank_id)
    if isinstance(config, dict) and config.get("defense_policy") in DEFENSE_POLICIES:
        return str(config["defense_policy"])
    return default
