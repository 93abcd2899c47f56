"""The verbs born in the declaration (update, history, filters, several banks, export/import, the views of a
bank) work the same embedded and over a `memwrap serve` sidecar, with the sidecar's keys checked per bank."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_server_harness import *  # noqa: F403 - fixtures: sidecar, upstream

from memwrap import Memory
from memwrap.client.http import AuthError
from memwrap.errors import BankNotFoundError, EntityNotFoundError, InvalidInputError, MemoryNotFoundError


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


def test_the_views_of_a_bank(surface: Memory) -> None:
    """The memory browser's views are verbs like the others: the same results and the same errors in Python,
    over `Memory(url=...)` and (tests/test_server_browse.py) over REST."""
    bank = f"views-{uuid.uuid4().hex[:8]}"
    ids = surface.retain_many(
        bank,
        [
            {"content": "Alice moved to Lisbon with her sister Maya.", "document_id": "s1:turn-0"},
            {"content": "Maya and Alice went hiking in Sintra.", "document_id": "s1:turn-1"},
            {"content": "Alice plays the cello.", "document_id": "s2:turn-0"},
        ],
    )
    surface.invalidate(bank, ids[-1], "she plays the viola")

    stats = surface.bank_stats(bank)
    assert stats.bank_id == bank and stats.memories == len(surface.list(bank)) == len(ids) - 1
    assert stats.invalidated == 1 and stats.entities == len(surface.entities(bank)) > 0

    context = surface.memory_context(bank, ids[0])
    assert context.id == ids[0] and {"Alice", "Maya"} <= {e.name for e in context.entities}
    assert [(link.kind, link.direction, link.id) for link in context.links] == [("next", "out", ids[1])]
    assert surface.memory_context(bank, ids[-1]).invalidation_reason == "she plays the viola"

    entities = surface.entities(bank)
    assert entities[0].name == "Alice" and entities[0].mentions == 3  # most mentioned first
    [maya] = surface.entities(bank, search="MAY")
    assert maya.name == "Maya" and [e.name for e in surface.entities(bank, limit=1, offset=1)] == [entities[1].name]
    graph = surface.entity_graph(bank, maya.id, neighbours=1)
    assert graph.entity.id == maya.id and [n.entity.name for n in graph.neighbours] == ["Alice"]
    assert graph.neighbours[0].co_mentions == 2 and {m.id for m in graph.memories} == set(ids[:2])

    with pytest.raises(BankNotFoundError):
        surface.bank_stats(f"views-none-{uuid.uuid4().hex[:8]}")
    with pytest.raises(MemoryNotFoundError):
        surface.memory_context(bank, uuid.uuid4())
    with pytest.raises(EntityNotFoundError, match="entities"):
        surface.entity_graph(bank, uuid.uuid4())
    with pytest.raises(EntityNotFoundError):
        surface.entity_graph(bank, "not-an-id")


def test_the_views_check_their_bounds(memory: Memory) -> None:
    """Embedded, the engine checks what the REST API checks before it (a 422 there, tests/test_server_browse.py)."""
    with pytest.raises(InvalidInputError, match="limit must be from 1 to 500"):
        memory.entities("views-bounds", limit=0)
    with pytest.raises(InvalidInputError, match="neighbours must be from 1 to 50"):
        memory.entity_graph("views-bounds", uuid.uuid4(), neighbours=51)
    with pytest.raises(InvalidInputError, match="search is 201 characters"):
        memory.entities("views-bounds", search="x" * 201)
    with pytest.raises(InvalidInputError, match="NUL"):
        memory.entities("views-bounds", search="a\x00b")
    assert memory.entities("views-bounds", search="  ") == []  # blank: no filter (and no such bank: nothing)


def test_a_limit_out_of_range_is_invalid_input_on_every_surface(surface: Memory) -> None:
    # Over HTTP the server's own check answers 422; the client raises what the engine raises embedded.
    with pytest.raises(InvalidInputError, match="limit"):
        surface.entities("views-bounds", limit=0)
    with pytest.raises(InvalidInputError):
        surface.list("views-bounds", limit=0)
