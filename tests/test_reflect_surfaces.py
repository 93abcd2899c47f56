"""Reflect through every surface: the sync `Memory` (with `wrap_openai(..., llm=...)` lending the app's client),
REST, the HTTP client (`Memory(url=...)`) and MCP, on a real server in this process; the fake server is the model."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from fakes.llm_server import FakeLLMServer
from llm_fixtures import fake_fixture
from mcp.client.client import Client
from mcp.client.streamable_http import streamable_http_client
from openai import OpenAI
from pydantic import BaseModel
from reflect_support import call, done, script_ran_out, system_of, turn
from test_server_harness import free_port

from memwrap import Memory, wrap_openai
from memwrap.config import load_settings
from memwrap_server.app import create_app
from memwrap_server.config import ServerSettings

QUESTION = "Which theme does the user like in their editor?"
DARK = "I prefer dark mode in my code editor."


fake = fake_fixture(script_ran_out)


def test_wrap_openai_lends_the_apps_client_to_reflect(
    memwrap_home: Path, fake: FakeLLMServer, bank: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMWRAP_LLM_TOOL_PROTOCOL", "native")  # the fake answers as scripted: no capability probe
    with Memory(settings=load_settings(home=memwrap_home, worker="off", llm_provider="none")) as memory:
        memory.retain(bank, DARK)  # retained in none mode: the engine has no LLM yet
        app_client = OpenAI(base_url=fake.openai_base_url, api_key="sk-app", max_retries=0)
        wrap_openai(app_client, bank_id=bank, memory=memory, llm="app-model")
        fake.script([turn(call("recall", query="editor theme")), done("Dark mode [F1].", "F1")])
        result = memory.reflect(bank, QUESTION)
    assert result.answer == "Dark mode [F1]." and len(result.memory_ids) == 1 and not result.forced
    first = fake.requests[0]
    assert first.model == "app-model" and first.headers["authorization"] == "Bearer sk-app"


class Live:
    """`create_app()` under uvicorn in a thread: the app opens its own AsyncMemory from MEMWRAP_* at start-up."""

    def __init__(self) -> None:
        self.port = free_port()
        config = uvicorn.Config(
            create_app(ServerSettings(host="127.0.0.1", port=self.port)),
            host="127.0.0.1",
            port=self.port,
            log_level="warning",
            lifespan="on",
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True, name="reflect-sidecar")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> Live:
        self.thread.start()
        deadline = time.monotonic() + 120
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("the sidecar did not start")
            time.sleep(0.05)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=30)


@pytest.fixture(scope="module")
def sidecar(memwrap_home: Path, server: FakeLLMServer) -> Iterator[Live]:
    with pytest.MonkeyPatch.context() as env:
        for key, value in {
            "HOME": str(memwrap_home),
            "WORKER": "off",
            "LLM_PROVIDER": "none",
            "REFLECT_PROVIDER": "openai",
            "REFLECT_MODEL": "sidecar-reflector",
            "LLM_TOOL_PROTOCOL": "native",
            "REFLECT_BASE_URL": server.openai_base_url,
            "REFLECT_API_KEY": "sk-test",
            "LLM_MAX_RETRIES": "0",
        }.items():
            env.setenv(f"MEMWRAP_{key}", value)
        env.delenv("MEMWRAP_API_KEYS", raising=False)
        live = Live().__enter__()
    yield live
    live.__exit__()


class Verdict(BaseModel):
    theme: str


def _payload(result: Any) -> dict[str, Any]:
    import json

    assert not result.is_error, result
    return result.structured_content or json.loads(result.content[0].text)


async def test_rest_http_client_and_mcp(sidecar: Live, fake: FakeLLMServer, bank: str) -> None:
    async with httpx.AsyncClient(base_url=sidecar.url, timeout=60) as http:
        stored = await http.post(f"/v1/banks/{bank}/memories", json={"content": DARK})
        [fact_id] = stored.json()["ids"]
        patched = await http.patch(f"/v1/banks/{bank}", json={"disposition": {"empathy": 5}})
        assert patched.status_code == 200 and patched.json()["config"]["disposition"]["empathy"] == 5

        fake.script([turn(call("recall", query="editor theme")), done("Dark mode [F1].", "F1")])
        response = await http.post(f"/v1/banks/{bank}/reflect", json={"query": QUESTION, "max_iterations": 3})
        assert response.status_code == 200, response.text
        body = response.json()
        assert body["answer"] == "Dark mode [F1]." and body["memory_ids"] == [fact_id] and body["forced"] is False
        assert body["iterations"] == 2 and [e["kind"] for e in body["trace"]][:2] == ["llm", "tool"]
        assert "Empathy 5/5" in system_of(fake.requests[0]) and fake.requests[0].model == "sidecar-reflector"

        bad = await http.post(f"/v1/banks/{bank}/reflect", json={"query": QUESTION, "disposition": {"empathy": 7}})
        assert bad.status_code == 422

    # The HTTP client: the same call and result shape as the embedded engine, a pydantic schema included.
    fake.script(
        [turn(call("recall", query="editor theme")), done("Dark mode [F1].", "F1", structured={"theme": "dark"})]
    )
    with Memory(url=sidecar.url) as remote:
        result = remote.reflect(bank, QUESTION, response_schema=Verdict)
    assert result.structured == Verdict(theme="dark") and [str(i) for i in result.memory_ids] == [fact_id]
    assert fake.requests[-1].body["tools"][-1]["function"]["parameters"]["properties"]["structured"]["required"] == [
        "theme"
    ]

    # MCP: a `reflect` tool on the bank's endpoint.
    fake.script([turn(call("recall", query="editor theme")), done("Dark mode [F1].", "F1")])
    async with Client(streamable_http_client(f"{sidecar.url}/mcp/{bank}/")) as client:
        assert "reflect" in {t.name for t in (await client.list_tools()).tools}
        answered = _payload(await client.call_tool("reflect", {"query": QUESTION}))
    assert answered["answer"] == "Dark mode [F1]." and answered["memory_ids"] == [fact_id]
    assert answered["forced"] is False
