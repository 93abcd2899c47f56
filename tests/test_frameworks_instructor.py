"""instructor on a wrapped client (`instructor.from_openai`), sync and async, tool mode (a forced tool: its call
is the answer, retained at once) and JSON-schema mode, streaming partials too."""

from __future__ import annotations

from typing import Any

import pytest
from conftest_wrappers import *  # noqa: F403 - fixtures
from conftest_wrappers import Reply, ToolCall, openai_sdk
from frameworks_support import QUESTION, assert_block, exchanges, seeded  # noqa: F401 - fixture
from pydantic import BaseModel

import memwrap

instructor = pytest.importorskip("instructor")

# What the wrappers do with memory, not what the engine stores or ranks: the in-memory engine (memwrap.testing).
warm_memory = memory_double()


class Dog(BaseModel):
    name: str
    breed: str


ANSWER = {"name": "Biscuit", "breed": "beagle"}
MODES = {"tools": instructor.Mode.TOOLS, "json_schema": instructor.Mode.JSON_SCHEMA}


def reply(mode: str) -> Reply:
    return Reply(tool_calls=[ToolCall("Dog", ANSWER)]) if mode == "tools" else Reply(json=ANSWER)


def assert_one_exchange(memory: Any, bank: str, handle: Any) -> None:
    assert handle.loops.held == 0, "a forced tool call is the answer: nothing waits for a next step"
    assert handle.flush(30)
    found = exchanges(memory, bank)
    assert len(found) == 1, found
    (text,) = found.values()
    assert f"user: {QUESTION}" in text and "beagle" in text, text


@pytest.mark.parametrize("mode", sorted(MODES))
def test_from_openai(mode: str, llm_server: Any, warm_memory: Any, seeded: str) -> None:
    wrapped = memwrap.wrap_openai(openai_sdk(llm_server), bank_id=seeded, memory=warm_memory, recall_timeout=10)
    client = instructor.from_openai(wrapped, mode=MODES[mode])
    llm_server.script([reply(mode)])
    dog = client.chat.completions.create(
        model="gpt-4o-mini", response_model=Dog, messages=[{"role": "user", "content": QUESTION}]
    )
    assert dog.model_dump() == ANSWER
    assert_block(llm_server)
    assert_one_exchange(warm_memory, seeded, wrapped.memwrap)


@pytest.mark.parametrize("mode", sorted(MODES))
async def test_from_async_openai(mode: str, llm_server: Any, warm_memory: Any, seeded: str) -> None:
    wrapped = memwrap.wrap_openai(
        openai_sdk(llm_server, is_async=True), bank_id=seeded, memory=warm_memory, recall_timeout=10
    )
    client = instructor.from_openai(wrapped, mode=MODES[mode])
    llm_server.script([reply(mode)])
    dog = await client.chat.completions.create(
        model="gpt-4o-mini", response_model=Dog, messages=[{"role": "user", "content": QUESTION}]
    )
    assert dog.model_dump() == ANSWER
    assert_block(llm_server)
    assert await wrapped.memwrap.aflush(30)
    assert_one_exchange(warm_memory, seeded, wrapped.memwrap)


def test_create_partial_streams(llm_server: Any, warm_memory: Any, seeded: str) -> None:
    wrapped = memwrap.wrap_openai(openai_sdk(llm_server), bank_id=seeded, memory=warm_memory, recall_timeout=10)
    client = instructor.from_openai(wrapped)
    llm_server.script([Reply(tool_calls=[ToolCall("Dog", ANSWER)], chunk_size=5)])
    partials = list(
        client.chat.completions.create_partial(
            model="gpt-4o-mini", response_model=Dog, messages=[{"role": "user", "content": QUESTION}]
        )
    )
    assert partials[-1].model_dump() == ANSWER
    assert_block(llm_server)
    assert_one_exchange(warm_memory, seeded, wrapped.memwrap)
