"""pydantic-ai on a wrapped AsyncOpenAI (`OpenAIProvider(openai_client=...)`): run and run_stream, Chat
Completions and Responses models, a tool loop, and structured output through the output tool."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from conftest_wrappers import *  # noqa: F403 - fixtures
from conftest_wrappers import Reply, ToolCall, openai_sdk
from frameworks_support import (  # noqa: F401 - fixtures and helpers, used by name
    QUESTION,
    assert_block,
    assert_retained_once,
    exchanges,
    seeded,
)
from pydantic import BaseModel

import memwrap

pydantic_ai = pytest.importorskip("pydantic_ai")
from pydantic_ai.models.openai import OpenAIChatModel, OpenAIResponsesModel  # noqa: E402 - after importorskip
from pydantic_ai.providers.openai import OpenAIProvider  # noqa: E402 - after importorskip

# What the wrappers do with memory, not what the engine stores or ranks: the in-memory engine (memwrap.testing).
warm_memory = memory_double()

MODELS = {"chat": OpenAIChatModel, "responses": OpenAIResponsesModel}


@pytest.fixture(params=sorted(MODELS))
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def agent_on(kind: str, server: Any, memory: Any, bank: str, **agent_options: Any) -> tuple[Any, Any]:
    client = memwrap.wrap_openai(openai_sdk(server, is_async=True), bank_id=bank, memory=memory, recall_timeout=10)
    model = MODELS[kind]("gpt-4o-mini", provider=OpenAIProvider(openai_client=client))
    return pydantic_ai.Agent(model, instructions="Be brief.", **agent_options), client


def test_run(kind: str, llm_server: Any, warm_memory: Any, seeded: str) -> None:
    agent, client = agent_on(kind, llm_server, warm_memory, seeded)
    llm_server.script(["Your dog is Biscuit."])
    assert asyncio.run(agent.run(QUESTION)).output == "Your dog is Biscuit."
    assert_block(llm_server)
    assert client.memwrap.flush(30)
    assert_retained_once(warm_memory, seeded, "Your dog is Biscuit.")


def test_run_stream(kind: str, llm_server: Any, warm_memory: Any, seeded: str) -> None:
    agent, client = agent_on(kind, llm_server, warm_memory, seeded)
    llm_server.script([Reply(text="Biscuit the beagle.", chunk_size=3)])

    async def run() -> str:
        async with agent.run_stream(QUESTION) as result:
            return "".join([delta async for delta in result.stream_text(delta=True)])

    assert asyncio.run(run()) == "Biscuit the beagle."
    assert_block(llm_server)
    assert client.memwrap.flush(30)
    assert_retained_once(warm_memory, seeded, "Biscuit the beagle.")


def test_tool_loop(kind: str, llm_server: Any, warm_memory: Any, seeded: str) -> None:
    agent, client = agent_on(kind, llm_server, warm_memory, seeded)

    @agent.tool_plain
    def dog_age(name: str) -> str:
        """How old a dog is."""
        return f"{name} is 4."

    llm_server.script([Reply(tool_calls=[ToolCall("dog_age", {"name": "Biscuit"})]), "Biscuit, aged 4."])
    assert asyncio.run(agent.run(QUESTION)).output == "Biscuit, aged 4."
    assert_block(llm_server, requests=2)
    assert client.memwrap.stats.recalls == 1
    assert client.memwrap.flush(30)
    assert_retained_once(warm_memory, seeded, "Biscuit, aged 4.")


class Dog(BaseModel):
    name: str
    breed: str


def test_structured_output_through_the_output_tool(kind: str, llm_server: Any, warm_memory: Any, seeded: str) -> None:
    """The output tool's call is the answer and nothing follows it: retained at flush, once."""
    agent, client = agent_on(kind, llm_server, warm_memory, seeded, output_type=Dog)
    llm_server.script([Reply(tool_calls=[ToolCall("final_result", {"name": "Biscuit", "breed": "beagle"})])])
    assert asyncio.run(agent.run(QUESTION)).output == Dog(name="Biscuit", breed="beagle")
    assert_block(llm_server)
    assert client.memwrap.flush(30)
    text = next(iter(exchanges(warm_memory, seeded).values()))
    assert len(exchanges(warm_memory, seeded)) == 1 and "Biscuit" in text and f"user: {QUESTION}" in text
