"""The verbs born in the declaration (update, history, filters, several banks, export/import) work the same
embedded and over a `memwrap serve` sidecar, with the sidecar's keys checked per bank."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_server_harness import *  # noqa: F403 - fixtures: sidecar, upstream

from memwrap import Memory
from memwrap.client.http import AuthError


@pytest.fixture(params=["embedded", "http"])
def surface(request: pytest.FixtureRequest, memory: Memory) -> Iterator[Memory]:
    if request.param == "embedded":
        yield memory
        return
    sidecar = request.getfixturevalue("sidecar")
    with Memory(url=sidecar.url, api_key=ADMIN_KEY) as remote:
        yield remote


def test_update_keeps_the_old_version(surface: Memory) -> None:
    bank = f"verbs-{uuid.uuid4().hex[:8]}"
    [mid] = surface.retain(bank, "Alice works at Google.", metadata={"team": "cloud"}, tags=["work"])
    updated = surface.update(bank, mid, text="Alice works at DeepMind.", metadata={"team": "research"})
    assert updated.text == "Alice works at DeepMind." and updated.metadata == {"team": "research"}
    versions = surface.history(bank, mid)
    assert [v.text for v in versions] == ["Alice works at Google.", "Alice works at DeepMind."]
    assert versions[-1].current and set(versions[-1].changed) == {"text", "metadata"}
    assert "DeepMind" in surface.recall(bank, "Where does Alice work?").context


def test_filters_top_k_and_several_banks(surface: Memory) -> None:
    mine, team = f"verbs-{uuid.uuid4().hex[:8]}", f"verbs-team-{uuid.uuid4().hex[:8]}"
    surface.retain(mine, "The deploy runbook is in the ops wiki.", metadata={"project": "apollo", "priority": 3})
    surface.retain(mine, "The deploy checklist lives in the repo.", metadata={"project": "gemini", "priority": 1})
    surface.retain(team, "Team rule: deploys happen on Tuesdays.", metadata={"project": "apollo"})
    only = surface.recall(mine, "deploy", filters={"metadata": {"project": "apollo", "priority": {"gte": 2}}})
    assert [m.text for m in only.memories] == ["The deploy runbook is in the ops wiki."]
    listed = surface.list(mine, filters={"metadata": {"project": "gemini"}})
    assert [m.text for m in listed] == ["The deploy checklist lives in the repo."]
    assert len(surface.recall(mine, "deploy", top_k=1).memories) == 1
    both = surface.recall([mine, team], "deploy runbook Tuesdays", filters={"metadata": {"project": "apollo"}})
    assert {m.bank_id for m in both.memories} == {mine, team} and both.bank_ids == [mine, team]


def test_export_then_import_into_another_bank(surface: Memory, tmp_path: Path) -> None:
    source, copy = f"verbs-{uuid.uuid4().hex[:8]}", f"verbs-copy-{uuid.uuid4().hex[:8]}"
    surface.retain_many(source, ["Alice plays the cello.", "Alice is vegetarian."])
    lines = surface.export_bank(source, tmp_path / "bank.jsonl")
    assert lines >= 3 and (tmp_path / "bank.jsonl").read_text().count("\n") == lines
    report = surface.import_bank(copy, tmp_path / "bank.jsonl")
    assert report.bank_id == copy and report.written.get("memory") == 2
    assert sorted(m.text for m in surface.list(copy)) == ["Alice is vegetarian.", "Alice plays the cello."]
    assert surface.import_bank(copy, tmp_path / "bank.jsonl").written.get("memory", 0) == 0  # idempotent


def test_a_key_must_allow_every_bank_of_a_recall(sidecar: ServerProcess) -> None:
    with Memory(url=sidecar.url, api_key=ALICE_KEY) as alice:
        alice.retain("alice", "Alice's locker is number 12.")
        assert alice.recall(["alice", "alice-notes"], "locker").memories
        with pytest.raises(AuthError) as refused:
            alice.recall(["alice", "team-kb"], "locker")
        assert refused.value.status == 403
