"""Whether a memory states a change is worked out once, when it is written (memory_units.change_cue, migration 0023),
and recall's order step reads it instead of searching every hit's text for cues (issue 36)."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime, timedelta

from database import Database

from memwrap import Memory
from memwrap.engine.change_cues import fill_change_cues
from memwrap.engine.language.change_cue import change_cue
from memwrap.engine.recall.order import apply_changes, weigh_speakers
from memwrap.models import RecalledMemory

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)

RETAINED = [
    "user: I use Neovim for all my coding.",
    "user: Actually I switched to VS Code last week.",
    "assistant: The search endpoint's p95 is now averaging 250 ms after the index change.",
    "user: The cache lives in SQLite for now, next to the exporter.",
    "user: We renamed utils.py to helpers.py yesterday.",
    "assistant: Here is the fixture: it yields a temporary cursor store and closes it afterwards.",
]
IMPORTED = [
    "We moved from SQLite to Postgres for the job queue.",
    "The nightly report runs at two and mails the team.",
]


def stored(db: Database, bank: str) -> list[tuple[str, str | None, bool | None]]:
    rows = db.blocking.fetch("SELECT text, speaker, change_cue FROM memory_units WHERE bank_id = $1", bank)
    return [(r["text"], r["speaker"], r["change_cue"]) for r in rows]


def test_writers_store_the_cue_the_text_gives(memory: Memory, db: Database, bank: str) -> None:
    memory.retain_many(bank, [{"content": t, "timestamp": T0 + timedelta(days=i)} for i, t in enumerate(RETAINED)])
    memory.import_memories(bank, [{"text": t, "mentioned_at": T0} for t in IMPORTED])
    rows = stored(db, bank)
    assert len(rows) == len(RETAINED) + len(IMPORTED)
    for text, speaker, cue in rows:
        assert cue is not None, text
        assert cue == change_cue(text, speaker), text
    cues = {text: cue for text, _speaker, cue in rows}
    assert cues["We moved from SQLite to Postgres for the job queue."] is True
    assert cues["The nightly report runs at two and mails the team."] is False
    assert sum(cues.values()) >= 3 and not all(cues.values())


def test_an_update_of_the_text_works_the_cue_out_again(memory: Memory, db: Database, bank: str) -> None:
    memory.retain(bank, "user: The nightly report runs at two.", timestamp=T0)
    (memory_id,) = [r["id"] for r in db.blocking.fetch("SELECT id FROM memory_units WHERE bank_id = $1", bank)]
    memory.update(bank, memory_id, text="user: We moved the nightly report from cron to Airflow.")
    ((text, speaker, cue),) = stored(db, bank)
    assert cue is True and cue == change_cue(text, speaker)
    # Any other writer that changes the text without saying the cue leaves it unknown (the trigger), never stale.
    db.blocking.execute("UPDATE memory_units SET text = 'user: Tea at noon.' WHERE bank_id = $1", bank)
    assert stored(db, bank)[0][2] is None


def test_the_background_fill_works_out_unknown_cues(memory: Memory, db: Database, bank: str) -> None:
    memory.retain_many(bank, [{"content": t, "timestamp": T0 + timedelta(days=i)} for i, t in enumerate(RETAINED)])
    db.blocking.execute("UPDATE memory_units SET change_cue = NULL WHERE bank_id = $1", bank)

    async def fill() -> int:
        async with db.pool() as pool:
            return await fill_change_cues(pool, batch=4, pause_s=0)

    assert asyncio.run(fill()) >= len(RETAINED)  # other tests' banks may hold unknown cues too
    for text, speaker, cue in stored(db, bank):
        assert cue is not None and cue == change_cue(text, speaker), text


def memory_of(text: str, day: int) -> RecalledMemory:
    return RecalledMemory(
        id=uuid.uuid4(), bank_id="b", text=text, type="raw", speaker="user", mentioned_at=T0 + timedelta(days=day)
    )


def test_recall_reads_the_stored_cue_instead_of_the_text() -> None:
    older = memory_of("user: I use Neovim for all my coding.", 0)
    newer = memory_of("user: Actually I switched to VS Code for all my coding.", 30)
    question = "which editor do I use for coding?"

    worked_out = apply_changes([older, newer], question)  # no stored cue: from the text, as before
    assert [m.id for m in worked_out] == [newer.id, older.id] and older.replaced_by == newer.id

    older.replaced_by = older.replaced_at = None
    as_stored = apply_changes([older, newer], question, {("b", newer.id): True})
    assert [m.id for m in as_stored] == [newer.id, older.id] and older.replaced_by == newer.id

    # The stored answer is what counts: stored as stating no change, the newer memory replaces nothing.
    older.replaced_by = older.replaced_at = None
    stored_none = apply_changes([older, newer], question, {("b", newer.id): False})
    assert [m.id for m in stored_none] == [older.id, newer.id] and older.replaced_by is None


def test_an_assistant_that_states_a_change_weighs_as_much_as_the_user() -> None:
    """The assistant's turns weigh `assistant_weight` (0.5), but not one that states a change: in a coding session
    the assistant reports what it did and measured, and that is the newest word on it. On the generated long
    technical banks the newest statement of a knowledge update was the assistant's and fell below the block's
    room (bench/README.md, ninth session)."""
    said = [
        ("assistant: The lock file now resolves SQLAlchemy 2.1 after the upgrade.", 0.9),  # states a change
        ("assistant: Sure, SQLAlchemy sessions are scoped to a request here.", 0.8),  # states none
        ("user: We're pinned to SQLAlchemy 1.4 because of the plugin.", 0.6),
    ]
    ranked = []
    for day, (text, score) in enumerate(said):
        memory = memory_of(text, day)
        memory.speaker, memory.score = text.split(":")[0], score
        ranked.append(memory)
    reported, chatter, user = ranked

    worked_out = weigh_speakers([m.model_copy() for m in ranked], 0.5)  # the cue from the text
    assert [(m.id, m.score) for m in worked_out] == [(reported.id, 0.9), (user.id, 0.6), (chatter.id, 0.4)]
    as_stored = weigh_speakers([m.model_copy() for m in ranked], 0.5, {("b", reported.id): False})
    assert [(m.id, m.score) for m in as_stored] == [(user.id, 0.6), (reported.id, 0.45), (chatter.id, 0.4)]
    assert weigh_speakers([m.model_copy() for m in ranked], 1.0) == ranked  # weight 1: nothing to do
