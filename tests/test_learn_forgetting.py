"""Forgetting, LLM-free: delete and invalidate cascade into observations and mental models; restore undoes;
a per-bank TTL expires raw facts."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

import pytest
from database import Database

from memwrap import Memory
from memwrap.engine.learn import reconcile
from memwrap.errors import InvalidInputError, MemoryNotFoundError

FACTS = [
    "I prefer dark mode in my code editor.",
    "I really prefer dark mode in my code editor.",
    "Honestly, I prefer dark mode in my code editor.",
    "As always, I prefer dark mode in my code editor.",
]
T0 = datetime(2026, 2, 1, tzinfo=UTC)


def _three(mem: Memory, bank: str, count: int = 3) -> list:
    ids = [
        mem.retain(bank, text, timestamp=T0 + timedelta(days=i), document_id=f"d{i}")[0]
        for i, text in enumerate(FACTS[:count])
    ]
    mem.consolidate(bank)
    return ids


def _wait_fresh(mem: Memory, bank: str, name: str, version: int) -> None:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        model = mem.get_mental_model(bank, name)
        if model.status == "fresh" and model.version >= version:
            return
        time.sleep(0.05)
    raise AssertionError(f"mental model never became fresh at version {version}: {mem.get_mental_model(bank, name)}")


def test_deleting_evidence_updates_then_removes_the_observation(mem: Memory, bank: str) -> None:
    first, second, third, _fourth = _three(mem, bank, 4)
    [observation] = mem.observations(bank)
    assert observation.proof_count == 4 and observation.text == FACTS[0]

    mem.delete(bank, second)
    [observation] = mem.observations(bank)
    assert (observation.proof_count, observation.evidence_count, observation.text) == (3, 3, FACTS[0])

    mem.delete(bank, first)  # the fact whose words it used: the next fact's words replace them
    [observation] = mem.observations(bank)
    assert (observation.proof_count, observation.text) == (2, FACTS[2])
    history = mem.observation_history(bank, observation.id)
    assert [v.action for v in history] == ["rewritten"]  # the version in the deleted fact's words is gone too
    assert all(FACTS[0] != v.text and first not in v.evidence_ids for v in history)

    mem.delete(bank, third)  # one fact left: a group of one is just that fact
    assert mem.observations(bank, include_invalidated=True) == []
    with pytest.raises(MemoryNotFoundError):
        mem.get(bank, observation.id)
    assert next(b for b in mem.banks() if b.bank_id == bank).memories == 1


def test_invalidate_hides_and_restore_brings_back(mem: Memory, bank: str) -> None:
    first, second, _third = _three(mem, bank)
    [observation] = mem.observations(bank)
    query = "Which editor theme does the user like?"

    mem.invalidate(bank, second, "the user said it was a joke")
    [after] = mem.observations(bank)
    assert after.proof_count == 2 and second not in {m.id for m in mem.recall(bank, query).memories}

    mem.invalidate(bank, first, "also a joke")  # one fact left: not a group any more
    assert mem.observations(bank) == []
    assert observation.id not in {m.id for m in mem.recall(bank, query).memories}
    [hidden] = mem.observations(bank, include_invalidated=True)
    assert hidden.invalidated_at is not None

    mem.restore(bank, first)  # the observation it took down comes back with it
    [back] = mem.observations(bank)
    assert back.id == observation.id and back.proof_count == 2
    assert [v.action for v in mem.observation_history(bank, back.id)] == ["created", "invalidated", "restored"]
    mem.restore(bank, second)
    assert mem.observations(bank)[0].proof_count == 3

    mem.invalidate(bank, observation.id, "not true any more")  # an observation itself, directly
    assert mem.observations(bank) == [] and mem.recall(bank, query).memories  # its facts are still there
    mem.restore(bank, observation.id)
    assert [o.id for o in mem.observations(bank)] == [observation.id]
    with pytest.raises(InvalidInputError):
        mem.invalidate(bank, first, "x" * 5000)


def test_deleting_evidence_makes_its_mental_model_stale_then_the_worker_refreshes_it(mem: Memory, bank: str) -> None:
    ids = _three(mem, bank)
    mem.create_mental_model(bank, "editor", "Which editor theme does the user like?", max_answer_tokens=200)
    _wait_fresh(mem, bank, "editor", 1)
    model = mem.get_mental_model(bank, "editor")
    [observation] = mem.observations(bank)
    assert observation.id in model.source_ids and f"(observation) {FACTS[0]}" in model.content

    mem.delete(bank, ids[0])
    stale = mem.get_mental_model(bank, "editor")
    assert stale.status == "stale" and stale.stale_since is not None and "deleted" in stale.stale_reason
    _wait_fresh(mem, bank, "editor", 2)
    fresh = mem.get_mental_model(bank, "editor")
    assert f"(observation) {FACTS[0]}" not in fresh.content and f"(observation) {FACTS[1]}" in fresh.content
    assert ids[0] not in fresh.source_ids
    # The versions that drew on the deleted memory are forgotten with it.
    assert all(FACTS[0] not in v.content for v in mem.mental_model_history(bank, "editor"))


def test_raw_facts_expire_after_the_bank_ttl(mem: Memory, bank: str) -> None:
    ids = _three(mem, bank)
    assert mem.aio.settings.worker == "inline"
    engine = mem._run(mem.aio._get_engine())
    assert mem._run(engine.expire(bank)) == 0  # no TTL: nothing expires
    mem.configure_bank(bank, raw_ttl_days=30)
    assert mem.bank_config(bank)["raw_ttl_days"] == 30
    assert mem._run(engine.expire(bank, now=datetime.now(UTC) + timedelta(days=29))) == 0
    # The worker's reconciliation schedules the expiry of banks with a TTL.
    mem._run(reconcile.run(engine.parts))
    assert any(j.kind == "expire_raw" for j in mem.jobs(bank))
    assert mem._run(engine.expire(bank, now=datetime.now(UTC) + timedelta(days=31))) == 3
    assert mem.list(bank) == [] and mem.observations(bank, include_invalidated=True) == []
    assert all(i not in {m.id for m in mem.list(bank)} for i in ids)
    mem.configure_bank(bank, raw_ttl_days=None)
    assert "raw_ttl_days" not in mem.bank_config(bank)
    with pytest.raises(InvalidInputError):
        mem.configure_bank(bank, raw_ttl_days=-1)


def test_evidence_deleted_behind_our_back_is_healed_by_deep_reconciliation(
    mem: Memory, db: Database, bank: str
) -> None:
    ids = _three(mem, bank, 4)
    engine = mem._run(mem.aio._get_engine())
    # Another path deletes units directly (re-extraction replacing raw turns, say): the evidence rows cascade away.
    db.blocking.execute("DELETE FROM memory_units WHERE bank_id = $1 AND id = ANY($2::uuid[])", bank, ids[:2])
    [observation] = mem.observations(bank)
    assert observation.evidence_count == 4  # stale counts, words of a deleted fact
    deadline = time.monotonic() + 10
    while mem.observations(bank)[0].evidence_count != 2 and time.monotonic() < deadline:
        mem._run(reconcile.run(engine.parts, deep=True))  # another worker may hold the pass: try again
        time.sleep(0.05)
    [healed] = mem.observations(bank)
    assert (healed.evidence_count, healed.proof_count, healed.text) == (2, 2, FACTS[2])


def test_deleting_a_bank_takes_everything_learnt_with_it(mem: Memory, db: Database, bank: str) -> None:
    _three(mem, bank)
    mem.create_mental_model(bank, "m", "What does the user prefer?")
    mem.invalidate(bank, mem.observations(bank)[0].id, "test")
    assert mem.delete_bank(bank) >= 4
    for table in (
        "jobs",
        "observations",
        "observation_evidence",
        "observation_history",
        "mental_models",
        "mental_model_versions",
        "unit_learning",
        "learn_progress",
        "invalidations",
    ):
        left = db.blocking.fetchval(f"SELECT count(*) FROM {table} WHERE bank_id = $1", bank)
        assert left == 0, table
