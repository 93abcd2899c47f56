"""Entity types on every surface: the setting over REST (PATCH/POST /v1/banks, the HTTP client, the CLI), the
entity-type filter over REST and MCP (the official client), the type in REST's entity listing.

The bank is filled by an engine whose extraction runs on the fake LLM server (tests/test_entity_types.py's model);
the sidecar, on the same store, serves it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from extract_support import make_engine
from fakes.llm_server import FakeLLMServer
from llm_fixtures import engine_fixture, fake_fixture
from mcp.client.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from test_entity_types import FACTS, TYPES, _chat, typing_model
from test_server_harness import *  # noqa: F403 - fixtures: sidecar, admin
from test_server_harness import ADMIN_KEY, ServerProcess

from memwrap import InvalidInputError, Memory
from memwrap.cli import main
from memwrap.engine.engine import Engine

fake = fake_fixture(typing_model)


async def _make(home: Path, server: FakeLLMServer, provider: str = "openai", **overrides: Any) -> Engine:
    return await make_engine(home, server, provider, **overrides)


engine = engine_fixture(_make)


async def _typed_bank(engine: Engine, bank: str) -> None:
    await engine.configure_bank(bank, entity_types=TYPES)
    await engine.retain_many(bank, _chat(bank))


def test_the_setting_over_rest(admin: httpx.Client, bank: str) -> None:
    created = admin.post("/v1/banks", json={"bank_id": bank, "entity_types": TYPES})
    assert created.status_code == 201, created.text
    assert created.json()["config"]["entity_types"] == TYPES
    patched = admin.patch(f"/v1/banks/{bank}", json={"entity_types": TYPES[:1]})
    assert patched.json()["config"]["entity_types"] == TYPES[:1]
    for bad in (
        [{"name": "has space"}],
        [{"name": "A", "description": "d" * 501}],
        [{"name": f"T{i}"} for i in range(33)],
        [{"name": "A", "other": 1}],
    ):
        refused = admin.patch(f"/v1/banks/{bank}", json={"entity_types": bad})
        assert refused.status_code == 422, (bad, refused.text)
    duplicate = admin.patch(f"/v1/banks/{bank}", json={"entity_types": [{"name": "A"}, {"name": "a"}]})
    assert duplicate.status_code == 422 and "twice" in duplicate.text
    assert admin.get(f"/v1/banks/{bank}").json()["config"]["entity_types"] == TYPES[:1]  # unchanged by refusals
    cleared = admin.patch(f"/v1/banks/{bank}", json={"entity_types": None})
    assert "entity_types" not in cleared.json()["config"]
    # The OpenAPI document shows the bounds.
    spec = admin.get("/openapi.json").json()
    declared = spec["components"]["schemas"]["EntityType"]["properties"]
    assert declared["name"]["maxLength"] == 64 and declared["description"]["maxLength"] == 500
    wanted = spec["components"]["schemas"]["RecallFilter"]["properties"]["entity_types"]
    assert "[A-Za-z0-9_-]{0,63}" in json.dumps(wanted) and '"minItems": 1' in json.dumps(wanted)


def test_the_setting_through_the_http_client_and_the_cli(
    sidecar: ServerProcess, memwrap_home: Path, bank: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with Memory(url=sidecar.url, api_key=ADMIN_KEY) as remote:
        assert remote.configure_bank(bank, entity_types=TYPES) == {"entity_types": TYPES}
        with pytest.raises(InvalidInputError):
            remote.configure_bank(bank, entity_types=[{"name": "no spaces"}])
        assert remote.bank_config(bank)["entity_types"] == TYPES
    home = ["--home", str(memwrap_home)]
    given = json.dumps(TYPES[1:])
    assert main(["configure-bank", bank, "--entity-types", given, *home, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["entity_types"] == TYPES[1:]
    assert main(["configure-bank", bank, "--entity-types", "none", *home, "--json"]) == 0
    assert "entity_types" not in json.loads(capsys.readouterr().out)


async def test_the_filter_and_the_listing_over_rest(
    engine: Engine, fake: FakeLLMServer, admin: httpx.Client, bank: str
) -> None:
    await _typed_bank(engine, bank)
    recalled = admin.post(
        "/v1/recall", json={"bank_id": bank, "query": "what happened?", "filters": {"entity_types": ["Service"]}}
    )
    assert recalled.status_code == 200, recalled.text
    assert [m["text"] for m in recalled.json()["memories"]] == [FACTS["billing-api"][0]]
    refused = admin.post("/v1/recall", json={"bank_id": bank, "query": "x", "filters": {"entity_types": ["a b"]}})
    assert refused.status_code == 422
    listed = admin.get(f"/v1/banks/{bank}/memories", params={"filters": json.dumps({"entity_types": ["Person"]})})
    assert sorted(m["text"] for m in listed.json()["items"]) == sorted(text for text, _ in FACTS.values())
    entities = admin.get(f"/v1/banks/{bank}/entities").json()
    rows = entities if isinstance(entities, list) else entities["entities"]
    assert {e["name"]: e["type"] for e in rows} == {
        "billing-api": "Service",
        "Priya": "Person",
        "Marco": "Person",
        "Turin": None,
    }
    services = admin.get(f"/v1/banks/{bank}/entities", params={"entity_type": "Service"}).json()
    assert [e["name"] for e in (services if isinstance(services, list) else services["entities"])] == ["billing-api"]
    assert admin.get(f"/v1/banks/{bank}/entities", params={"entity_type": "a b"}).status_code == 422


async def test_the_filter_over_mcp(engine: Engine, fake: FakeLLMServer, sidecar: ServerProcess, bank: str) -> None:
    await _typed_bank(engine, bank)
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {ADMIN_KEY}"})
    async with Client(streamable_http_client(f"{sidecar.url}/mcp/{bank}/", http_client=http)) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        filters = tools["recall"].input_schema["properties"]["filters"]
        assert "entity_types" in json.dumps(filters) or "RecallFilter" in json.dumps(tools["recall"].input_schema)
        result = await client.call_tool("recall", {"query": "what happened?", "filters": {"entity_types": ["Service"]}})
        assert not result.is_error, result
        payload = result.structured_content or json.loads(result.content[0].text)
        # MCP shows a memory's text only inside the fenced context (memwrap_server/mcp.py).
        assert len(payload["memories"]) == 1
        assert FACTS["billing-api"][0] in payload["context"] and FACTS["Marco"][0] not in payload["context"]
        bad = await client.call_tool("recall", {"query": "x", "filters": {"entity_types": ["a b"]}})
        assert bad.is_error
