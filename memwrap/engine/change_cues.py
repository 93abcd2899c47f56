"""Filling memory_units.change_cue where it is not known yet: rows of a store older than migration 0023, and rows
whose text or speaker an update changed without saying it (the trigger memory_units_change_cue_stale).

Started in the background when the engine opens; a few hundred rows at a time, each batch's cue search (~1 ms of
regular expressions per long text) off the event loop, a pause between batches, so recalls running meanwhile
barely notice. Until a row is filled, recall works its cue out from the text (recall/order.states_a_change):
the same answer, a little slower. Idempotent: two processes filling one database at once only repeat work.
"""

from __future__ import annotations

import asyncio
import logging

import asyncpg

from memwrap.engine.language.change_cue import change_cue

log = logging.getLogger("memwrap.engine")

BATCH = 200
PAUSE_S = 0.05  # between batches: the pool and the cores are recall's first

# The banks with unknown cues, from the partial index of unknowns: empty, and instant, once every row is filled (a
# store of thousands of banks is not asked bank by bank at every start).
BANKS = "SELECT DISTINCT bank_id FROM memory_units WHERE change_cue IS NULL"

# Bank by bank (the distribution rule: every statement bounded by bank_id), through the partial index of unknowns.
UNKNOWN = """
SELECT id, text, speaker FROM memory_units
WHERE bank_id = $1 AND change_cue IS NULL
LIMIT $2
"""

# Only where still unknown and the text is the one the cue was worked out from (an update may have come between).
FILL = """
UPDATE memory_units m SET change_cue = f.cue
FROM unnest($2::uuid[], $3::text[], $4::boolean[]) AS f(id, text, cue)
WHERE m.bank_id = $1 AND m.id = f.id AND m.change_cue IS NULL AND m.text = f.text
"""


def _cues(rows: list[asyncpg.Record]) -> list[bool]:
    return [change_cue(r["text"], r["speaker"]) for r in rows]


async def fill_change_cues(pool: asyncpg.Pool, *, batch: int = BATCH, pause_s: float = PAUSE_S) -> int:
    """Fill every unknown change_cue; returns how many rows were filled."""
    filled = 0
    loop = asyncio.get_running_loop()
    for bank in [r["bank_id"] for r in await pool.fetch(BANKS)]:
        while True:
            rows = await pool.fetch(UNKNOWN, bank, batch)
            if not rows:
                break
            cues = await loop.run_in_executor(None, _cues, list(rows))
            status = await pool.execute(FILL, bank, [r["id"] for r in rows], [r["text"] for r in rows], cues)
            done = int(status.split()[-1])
            filled += done
            if done == 0:
                break  # every row read was changed meanwhile: the next start fills what is left
            await asyncio.sleep(pause_s)
    return filled


async def fill_quietly(pool: asyncpg.Pool) -> None:
    """fill_change_cues for a background task: a failure is logged and left for the next start."""
    try:
        filled = await fill_change_cues(pool)
    except (asyncpg.PostgresError, asyncpg.InterfaceError, OSError) as exc:
        log.debug("memwrap: filling memory_units.change_cue stopped: %s", exc)
        return
    if filled:
        log.debug("memwrap: change_cue worked out for %d memories", filled)


__all__ = ["fill_change_cues", "fill_quietly"]
