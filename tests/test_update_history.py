"""update: re-embedded, re-dated, entities re-linked, old versions in history, citing observations revised."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from memwrap import Memory
from memwrap.errors import InvalidInputError, MemoryNotFoundError, SecretBlockedError

SAID = datetime(2026, 12, 1, 10, tzinfo=UTC)


def engine(memory: Memory) -> Any:
    return memory._run(memory.aio._get_engine())


def test_update_text_redates_reembeds_relinks_and_keeps_history(memory: Memory, bank: str) -> None:
    eng = engine(memory)
    [memory_id] = memory.retain_many(
        bank,
        [
            {
                "content": "I moved to Lisbon in March.",
                "timestamp": SAID,
                "metadata": {"source": "chat"},
                "tags": ["home"],
            }
        ],
    )
    memory.retain_many(bank, ["The weather report for the Baltic coast."])
    before = memory.get(bank, memory_id)
    assert before.occurred_start is not None and before.occurred_start.month == 3 and "Lisbon" in before.entities

    after = memory._run(eng.update(bank, memory_id, text="I moved to Porto in May."))
    assert after.text == "I moved to Porto in May." and after.metadata == {"source": "chat"} and after.tags == ["home"]
    assert after.occurred_start.month == 5 and after.occurred_start.year == 2026  # re-dated, past tense
    assert "Porto" in after.entities and "Lisbon" not in after.entities
    pool = eng.store.pool
    lisbon = memory._run(
        pool.fetchval("SELECT mention_count FROM entities WHERE bank_id = $1 AND name_key = 'lisbon'", bank)
    )
    assert lisbon == 0
    # Re-embedded: recall by the new words finds it first; the old words no longer find it by meaning or keyword.
    found = memory._run(eng.recall(bank, "Porto", top_k=1)).memories
    assert found[0].id == memory_id
    assert memory_id not in {
        m.id for m in memory._run(eng.recall(bank, "Lisbon", top_k=5)).memories if "keyword" in m.arms
    }

    memory._run(eng.update(bank, memory_id, metadata={"source": "chat", "checked": True}, tags=["home", "moves"]))
    same = memory._run(eng.update(bank, memory_id, tags=["home", "moves"]))  # nothing different: no version
    assert same.tags == ["home", "moves"]
    versions = memory._run(eng.history(bank, memory_id))
    assert [v.version for v in versions] == [1, 2, 3]
    assert [v.text for v in versions] == [
        "I moved to Lisbon in March.",
        "I moved to Porto in May.",
        "I moved to Porto in May.",
    ]
    assert [v.changed for v in versions] == [[], ["text"], ["metadata", "tags"]]
    assert versions[0].occurred_start.month == 3 and versions[0].tags == ["home"]
    assert versions[-1].current and versions[-1].metadata == {"source": "chat", "checked": True}
    assert versions[0].valid_until == versions[1].valid_from and versions[1].valid_until == versions[2].valid_from
    assert all(v.valid_from is not None for v in versions)
    # Filters see the new metadata at once.
    hits = memory._run(eng.recall(bank, "where did I move", top_k=10, filters={"metadata": {"checked": True}}))
    assert [m.id for m in hits.memories] == [memory_id]


def test_update_refuses_what_it_cannot_do(memory: Memory, bank: str) -> None:
    eng = engine(memory)
    [memory_id] = memory.retain_many(bank, ["A plain note."])
    with pytest.raises(InvalidInputError, match="at least one"):
        memory._run(eng.update(bank, memory_id))
    with pytest.raises(InvalidInputError):
        memory._run(eng.update(bank, memory_id, text="   "))
    with pytest.raises(MemoryNotFoundError):
        memory._run(eng.update(bank, "00000000-0000-0000-0000-000000000000", text="x"))
    memory.configure_bank(bank, defense_policy="block")
    with pytest.raises(SecretBlockedError):
        memory._run(eng.update(bank, memory_id, text="my key is sk-proj-abcdefghijklmnopqrstuvwxyz0123456789ABCD"))
    assert memory.get(bank, memory_id).text == "A plain note."  # refused: nothing changed
    assert len(memory._run(eng.history(bank, memory_id))) == 1


def test_observations_citing_an_updated_memory_are_revised_by_the_worker(mem: Memory, bank: str) -> None:
    eng = engine(mem)
    # Said a day apart: the observation keeps the first one's words, its newest evidence is the last one. The
    # update touches the middle one, so neither order by date alone would put the updated words first.
    ids = mem.retain_many(
        bank,
        [
            {"content": "I prefer dark mode in my code editor.", "document_id": "a", "timestamp": SAID},
            {
                "content": "I really prefer dark mode in my code editor.",
                "document_id": "b",
                "timestamp": SAID + timedelta(days=1),
            },
            {
                "content": "I still prefer dark mode in my code editor.",
                "document_id": "c",
                "timestamp": SAID + timedelta(days=2),
            },
        ],
    )
    assert mem.wait_for_jobs(bank, timeout=60)
    [listed] = mem.observations(bank)
    observation = mem.get_observation(bank, listed.id)
    assert {e.memory_id for e in observation.evidence} == set(ids)
    assert observation.text == "I prefer dark mode in my code editor."
    target = ids[1]
    mem._run(eng.update(bank, target, text="Lately I prefer light mode in my code editor."))
    jobs = mem._run(eng.learning.jobs(bank_id=bank, status=None, kind="revise_observations", limit=10))
    assert jobs and jobs[0].payload["ids"] == [str(observation.id)]
    assert mem.wait_for_jobs(bank, timeout=60)
    revised = mem.get_observation(bank, observation.id)
    assert revised.version > observation.version
    # With no LLM the revision says what the updated memory now says: it is the newest word, whenever first said.
    assert revised.text == "Lately I prefer light mode in my code editor."
    assert any(
        v.action == "rewritten" and v.reason == "evidence updated"
        for v in mem.observation_history(bank, observation.id)
    )
    assert any(e.memory_id == target and e.quote.startswith("Lately I prefer light") for e in revised.evidence)
