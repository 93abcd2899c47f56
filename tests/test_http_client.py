"""`Memory(url=...)` / `AsyncMemory(url=...)`: the embedded surface over HTTP, errors included; wrappers on a URL."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from conftest_wrappers import memory_block, openai_sdk
from fakes.llm_server import FakeLLMServer
from test_server_harness import *  # noqa: F403 - fixtures: sidecar, upstream

import memwrap
from memwrap import AsyncMemory, InvalidContentError, Memory, MemoryNotFoundError, RetainItem, SecretBlockedError
from memwrap.client.http import AuthError


@pytest.fixture
def remote(sidecar: ServerProcess) -> Iterator[Memory]:
    with Memory(url=sidecar.url, api_key=ADMIN_KEY) as mem:
        yield mem


def test_sync_surface_over_http(remote: Memory, bank: str) -> None:
    ids = remote.retain(
        bank, "Maya is Alice's sister; she visits in May.", tags=["family"], document_id="d:1", metadata={"k": "v"}
    )
    more = remote.retain_many(bank, [RetainItem(content="Alice plays the cello."), {"content": "Alice is vegetarian."}])
    assert len(ids) == 1 and len(more) == 2

    recall = remote.recall(bank, "Who is Maya?", token_budget=300)
    assert recall.memories[0].id == ids[0] and "Maya" in recall.context and recall.tokens <= 300
    assert [r.id for r in remote.list(bank, limit=10)] == ids + more
    assert [r.id for r in remote.list(bank, tags=["family"])] == ids
    assert remote.get(bank, ids[0]).metadata == {"k": "v"}
    assert bank in [b.bank_id for b in remote.banks()]

    remote.delete(bank, ids[0])
    with pytest.raises(MemoryNotFoundError):
        remote.get(bank, ids[0])
    with pytest.raises(InvalidContentError):
        remote.retain(bank, "   ")
    with pytest.raises(memwrap.BankExistsError):  # retain created it; the server's 409 comes back as the same error
        remote.create_bank(bank)
    assert remote.create_bank(f"{bank}-new", defense_policy="off") == {"defense_policy": "off"}
    assert remote.delete_bank(f"{bank}-new") == 0
    assert remote.configure_bank(bank, defense_policy="block") == {"defense_policy": "block"}
    with pytest.raises(SecretBlockedError):  # raised by the server, turned back into the same exception
        remote.retain(bank, "password: hunter2-very-secret-123 and key sk-proj-abcdefghijklmnopqrstuvwx")
    assert remote.bank_config(bank) == {"defense_policy": "block"}
    assert remote.delete_bank(bank) == 2


def test_auth_errors(sidecar: ServerProcess, bank: str) -> None:
    with Memory(url=sidecar.url, api_key="wrong") as mem, pytest.raises(AuthError) as caught:
        mem.banks()
    assert caught.value.status == 401
    with Memory(url=sidecar.url, api_key=ALICE_KEY) as mem, pytest.raises(AuthError) as caught:
        mem.recall("bob", "anything")
    assert caught.value.status == 403 and caught.value.code == "bank_forbidden"


async def test_async_surface_over_http(sidecar: ServerProcess, bank: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("memwrap.client.http.BATCH", 2)  # big retain_many calls go in several requests
    async with AsyncMemory(url=sidecar.url, api_key=ADMIN_KEY) as mem:
        ids = await mem.retain(bank, "The launch is planned for October.")
        assert (await mem.recall(bank, "When is the launch?")).memories[0].id == ids[0]
        many = await mem.retain_many(bank, [f"Batch item number {i}." for i in range(5)])
        assert [r.id for r in await mem.list(bank)] == ids + many
        with pytest.raises(MemoryNotFoundError):
            await mem.get(bank, uuid.uuid4())


def test_wrapper_with_a_sidecar_url(
    sidecar: ServerProcess, upstream: FakeLLMServer, bank: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMWRAP_API_KEY", ADMIN_KEY)
    with Memory(url=sidecar.url, api_key=ADMIN_KEY) as mem:
        mem.retain(bank, "Alice's favourite colour is teal.")
    client = memwrap.wrap_openai(openai_sdk(upstream), bank_id=bank, memory=sidecar.url, recall_timeout=10)
    upstream.script(["Teal it is."])
    client.chat.completions.create(model="m", messages=[{"role": "user", "content": "What is my favourite colour?"}])
    assert "teal" in memory_block(upstream.last("openai.chat"))
    assert client.memwrap.flush(15)
    with Memory(url=sidecar.url, api_key=ADMIN_KEY) as mem:
        assert any("Teal it is." in r.text for r in mem.list(bank))


def test_learning_surface_over_http(remote: Memory, memory: Memory, bank: str) -> None:
    ids = remote.retain(bank, "Alice drinks her coffee black every morning.")
    model = remote.create_mental_model(bank, "coffee", "How does Alice take her coffee?")
    assert model.name == "coffee" and model.bank_id == bank
    assert [m.name for m in remote.mental_models(bank)] == ["coffee"]
    assert remote.get_mental_model(bank, "coffee").question == "How does Alice take her coffee?"
    assert remote.mental_model_history(bank, "coffee") == []  # no answer yet: its refresh job is queued
    refreshed = remote.refresh_mental_model(bank, "coffee")
    assert refreshed.version == 1 and "Alice drinks her coffee black" in refreshed.content
    [version] = remote.mental_model_history(bank, "coffee")
    assert (version.version, version.content, version.source_ids) == (1, refreshed.content, ids)
    with pytest.raises(MemoryNotFoundError):
        remote.get_mental_model(bank, "nope")
    # Nothing runs the jobs here (no worker): the retain's consolidation and the model's refresh wait, as listed
    # by the engine itself on the same database.
    assert {j.kind for j in remote.jobs(bank)} == {"consolidate", "refresh_mental_model"}
    assert remote.jobs(bank) == memory.jobs(bank)
    assert remote.jobs(bank, status="done") == []
    walks = remote.retain_many(
        bank, ["Alice walks her dog Rex every evening.", "Every evening Alice walks her dog Rex."]
    )
    report = remote.consolidate(bank)
    assert (report.units, report.created, report.mode) == (3, 1, "heuristic")
    [observation] = remote.observations(bank)
    assert observation.evidence_count == 2 and "Rex" in observation.text
    detail = remote.get_observation(bank, observation.id)
    assert sorted(e.memory_id for e in detail.evidence) == sorted(walks)
    assert detail == memory.get_observation(bank, observation.id)
    assert remote.observations(bank) == memory.observations(bank)

    remote.invalidate(bank, ids[0], "tested")
    assert all(m.id != ids[0] for m in remote.recall(bank, "coffee").memories)
    remote.restore(bank, ids[0])
    assert remote.recall(bank, "How does Alice take her coffee?").memories[0].id == ids[0]
    # Every parameter travels (tests/test_verb_drift.py checks them all against the OpenAPI document).
    preferred = remote.recall(bank, "How does Alice take her coffee?", prefer_observations=True)
    assert preferred.memories and preferred.memories[0].id == ids[0]
    remote.configure_bank(bank, raw_ttl_days=30)
    assert remote.bank_config(bank)["raw_ttl_days"] == 30
    remote.delete_mental_model(bank, "coffee")
    assert remote.mental_models(bank) == []
