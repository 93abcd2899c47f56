"""A one-shot CLI command's engine runs its own bank's queued jobs only, and no server-wide pass: `memwrap
import-bank b` must not spend minutes on another bank's consolidation (issue 39)."""

from __future__ import annotations

import argparse
import uuid

from memwrap import Memory
from memwrap.cli.verb_call import one_shot_settings
from memwrap.engine.jobs import queue as jobs
from memwrap.engine.jobs.worker import Worker
from memwrap.engine.learn.kinds import JobKind, noop

# A kind only this test's worker runs: the session's own inline worker (BUILTIN_KINDS) leaves these jobs alone.
PROBE = "one-shot-probe"


def test_the_command_settings_hold_the_worker_to_its_bank() -> None:
    args = argparse.Namespace(home=None, database_url=None)
    assert one_shot_settings(args, "alice").worker_bank == "alice"
    assert one_shot_settings(args, None).worker == "off"


def test_a_worker_held_to_a_bank_leaves_other_banks_jobs_queued(memory: Memory) -> None:
    engine = memory._run(memory.aio._get_engine())
    ours, theirs = f"ours-{uuid.uuid4().hex[:6]}", f"theirs-{uuid.uuid4().hex[:6]}"
    for bank in (ours, theirs):
        memory.create_bank(bank)
    kind = PROBE

    async def scenario() -> tuple[bool, bool, list[str]]:
        pool = engine.store.pool
        for bank in (theirs, ours):
            await jobs.enqueue(pool, kind, bank_id=bank, dedupe_key=f"test-{bank}")
        held = Worker(engine.parts, worker_id="one-shot-test", registry={PROBE: JobKind(noop)}, bank_id=ours)
        first = await held.run_one()
        second = await held.run_one()
        left = await pool.fetch(
            "SELECT bank_id FROM jobs WHERE kind = $1 AND status = 'queued' AND bank_id = ANY($2::text[])",
            kind,
            [ours, theirs],
        )
        return first, second, [r["bank_id"] for r in left]

    first, second, left = memory._run(scenario())
    assert first and not second  # its own bank's job ran; the other bank's was not its to take
    assert left == [theirs]
    for bank in (ours, theirs):
        memory.delete_bank(bank)
