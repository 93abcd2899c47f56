"""A mem0 export (its get_all JSON) imported into a bank: ids, times, scopes (user/agent/run) and metadata kept,
recallable and filterable by them; a second import stores nothing; a bad file stores nothing."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from memwrap import Memory
from memwrap.cli import main
from memwrap.engine.transfer.mem0_export import read_mem0_file
from memwrap.errors import InvalidInputError

PACIFIC = timezone(timedelta(hours=-7))
EXPORT: dict[str, Any] = {
    "results": [
        {
            "id": "3c90c3cc-0d44-4b50-8888-8dd25736052a",
            "memory": "Likes hiking in the Alps",
            "hash": "h1",
            "metadata": {"category": "hobbies"},
            "created_at": "2024-07-20T01:23:45.678901-07:00",
            "updated_at": "2024-08-01T10:00:00-07:00",
            "user_id": "alice",
            "score": 0.9,
            "categories": ["hobbies"],
        },
        {
            "id": "5d6e7f80-1a2b-4c3d-9e8f-0a1b2c3d4e5f",
            "memory": "Is allergic to peanuts",
            "hash": "h2",
            "metadata": None,
            "created_at": "2024-07-21T09:00:00-07:00",
            "updated_at": None,
            "user_id": "alice",
            "agent_id": "diet-coach",
            "run_id": "run-42",
        },
        {
            "id": "mem-not-a-uuid",
            "memory": "Prefers window seats on flights",
            "created_at": "2024-07-22T12:00:00",
            "user_id": "alice",
            "agent_id": "travel-agent",
        },
    ]
}


def _write(tmp_path: Path, data: Any) -> Path:
    path = tmp_path / "mem0.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_a_mem0_export_lands_with_ids_times_and_scopes(memory: Memory, tmp_path: Path) -> None:
    bank = f"mem0-{uuid.uuid4().hex[:8]}"
    path = _write(tmp_path, EXPORT)
    assert memory.import_memories(bank, read_mem0_file(path)) == 3
    listed = {m.text: m for m in memory.list(bank)}
    hiking, peanuts, seats = (
        listed[t] for t in ("Likes hiking in the Alps", "Is allergic to peanuts", "Prefers window seats on flights")
    )
    assert str(hiking.id) == EXPORT["results"][0]["id"] and str(peanuts.id) == EXPORT["results"][1]["id"]
    assert hiking.type == "world" and hiking.mentioned_at == datetime(2024, 7, 20, 1, 23, 45, 678901, tzinfo=PACIFIC)
    assert seats.mentioned_at == datetime(2024, 7, 22, 12, tzinfo=UTC)  # a naive time is read as UTC
    assert hiking.metadata == {
        "category": "hobbies",
        "user_id": "alice",
        "mem0": {"id": EXPORT["results"][0]["id"], "hash": "h1", "updated_at": "2024-08-01T10:00:00-07:00"},
    }
    assert peanuts.metadata["agent_id"] == "diet-coach" and peanuts.metadata["run_id"] == "run-42"
    assert peanuts.tags == ["agent:diet-coach"] and peanuts.document_id == "run-42:" + EXPORT["results"][1]["id"]
    assert seats.metadata["mem0"]["id"] == "mem-not-a-uuid" and seats.tags == ["agent:travel-agent"]

    # The scopes work as the README says: an agent's tag, a run's session, metadata filters.
    by_agent = memory.recall(bank, "what should I eat or book", tags=["agent:diet-coach"], top_k=5)
    assert [m.text for m in by_agent.memories] == ["Is allergic to peanuts"]
    by_run = memory.recall(bank, "allergies", filters={"session_ids": ["run-42"]}, top_k=5)
    assert [m.text for m in by_run.memories] == ["Is allergic to peanuts"]
    by_metadata = memory.recall(bank, "hobbies", filters={"metadata": {"category": "hobbies"}}, top_k=5)
    assert [m.text for m in by_metadata.memories] == ["Likes hiking in the Alps"]

    assert memory.import_memories(bank, read_mem0_file(path)) == 0  # idempotent
    assert len(memory.list(bank)) == 3


def test_the_cli_imports_a_bare_list_and_reports(
    memory: Memory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bank = f"mem0-{uuid.uuid4().hex[:8]}"
    path = _write(tmp_path, EXPORT["results"][:2])  # older mem0 versions return the list itself
    assert main(["import-mem0", bank, str(path), "--home", str(memory.settings.home), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"bank_id": bank, "read": 2, "imported": 2}
    assert sorted(m.text for m in memory.list(bank)) == ["Is allergic to peanuts", "Likes hiking in the Alps"]


@pytest.mark.parametrize("bad", [{"memories": []}, {"results": [{"id": "x"}]}, "not json"])
def test_a_bad_export_stores_nothing(memory: Memory, tmp_path: Path, bad: Any) -> None:
    bank = f"mem0-{uuid.uuid4().hex[:8]}"
    path = tmp_path / "bad.json"
    path.write_text(bad if isinstance(bad, str) else json.dumps(bad), encoding="utf-8")
    with pytest.raises(InvalidInputError, match="bad.json"):
        memory.import_memories(bank, read_mem0_file(path))
    assert bank not in {b.bank_id for b in memory.banks()}
    assert main(["import-mem0", bank, str(path), "--home", str(memory.settings.home)]) == 2
