"""OpenAI Agents SDK on a wrapped AsyncOpenAI (`set_default_openai_client`): Runner.run and run_streamed, on
the Responses API (the SDK's default) and on Chat Completions, with a function tool in the loop."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from conftest_wrappers import *  # noqa: F403 - fixtures
from conftest_wrappers import Reply, ToolCall, openai_sdk
from frameworks_support import QUESTION, assert_block, assert_retained_once, seeded  # noqa: F401 - fixture

import memwrap

agents = pytest.importorskip("agents")

# What the wrappers do with memory, not what the engine stores or ranks: the in-memory engine (memwrap.testing).
warm_memory = memory_double()


@pytest.fixture(params=["responses", "chat_completions"])
def api(request: pytest.FixtureRequest) -> Iterator[str]:
    agents.set_tracing_disabled(True)  # traces would go to api.openai.com
    agents.set_default_openai_api(request.param)
    yield request.param
    agents.set_default_openai_api("responses")


def use_wrapped_client(server: Any, memory: Any, bank: str) -> Any:
    client = memwrap.wrap_openai(openai_sdk(server, is_async=True), bank_id=bank, memory=memory, recall_timeout=10)
    agents.set_default_openai_client(client, use_for_tracing=False)
    return client


@agents.function_tool
def dog_breed_facts(breed: str) -> str:
    """Facts about a dog breed."""
    return f"{breed}s are friendly hounds."


def test_run(api: str, llm_server: Any, warm_memory: Any, seeded: str) -> None:
    client = use_wrapped_client(llm_server, warm_memory, seeded)
    llm_server.script(["Your dog is Biscuit."])
    agent = agents.Agent(name="helper", instructions="Be brief.", model="gpt-4o-mini")
    result = asyncio.run(agents.Runner.run(agent, QUESTION))
    assert result.final_output == "Your dog is Biscuit."
    assert_block(llm_server)
    assert client.memwrap.flush(30)
    assert_retained_once(warm_memory, seeded, "Your dog is Biscuit.")


def test_run_streamed(api: str, llm_server: Any, warm_memory: Any, seeded: str) -> None:
    client = use_wrapped_client(llm_server, warm_memory, seeded)
    llm_server.script([Reply(text="Biscuit, your beagle.", chunk_size=4)])
    agent = agents.Agent(name="helper", instructions="Be brief.", model="gpt-4o-mini")

    async def run() -> str:
        result = agents.Runner.run_streamed(agent, QUESTION)
        async for _ in result.stream_events():
            pass
        return str(result.final_output)

    assert asyncio.run(run()) == "Biscuit, your beagle."
    assert_block(llm_server)
    assert client.memwrap.flush(30)
    assert_retained_once(warm_memory, seeded, "Biscuit, your beagle.")


def test_tool_loop_recalls_once_and_retains_the_final_answer(
    api: str, llm_server: Any, warm_memory: Any, seeded: str
) -> None:
    client = use_wrapped_client(llm_server, warm_memory, seeded)
    llm_server.script(
        [Reply(tool_calls=[ToolCall("dog_breed_facts", {"breed": "beagle"})]), "Biscuit is a friendly beagle."]
    )
    agent = agents.Agent(name="helper", instructions="Use tools.", model="gpt-4o-mini", tools=[dog_breed_facts])
    result = asyncio.run(agents.Runner.run(agent, QUESTION))
    assert result.final_output == "Biscuit is a friendly beagle."
    assert_block(llm_server, requests=2)  # both steps carry the turn's block ...
    assert client.memwrap.stats.recalls == 1  # ... recalled once
    assert client.memwrap.flush(30)
    assert_retained_once(warm_memory, seeded, "Biscuit is a friendly beagle.")
