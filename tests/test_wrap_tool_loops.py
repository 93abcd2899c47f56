"""Tool and agent loops through the wrappers: one recall per user turn (its block reused by the later steps),
one retain per user turn (the user's words with the final answer), tool calls and results only when asked.
Real engine, real SDKs, the fake LLM upstream.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from conftest_wrappers import *  # noqa: F403 - fixtures
from conftest_wrappers import Reply, ToolCall, anthropic_sdk, blocks_in, memory_block, openai_sdk
from test_server_harness import wait_until

import memwrap
from memwrap.wrappers import loops

# What the wrappers do with memory, not what the engine stores or ranks: the in-memory engine (memwrap.testing).
warm_memory = memory_double()

MODEL = "gpt-4o-mini"
FACT = "The user's picnic spot is the Parc des Buttes-Chaumont in Paris."
QUESTION = "What will the weather be like at my picnic spot tomorrow?"
TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]


def records(memory: Any, bank: str) -> list[Any]:
    return [r for r in memory.list(bank) if FACT not in r.text]


def retained_items(memory: Any, bank: str) -> dict[str, str]:
    """document id -> the retained text of that exchange (all its units)."""
    items: dict[str, list[str]] = {}
    for r in records(memory, bank):
        items.setdefault(str(r.document_id), []).append(r.text)
    return {doc: "\n".join(parts) for doc, parts in items.items()}


@pytest.fixture
def seeded(warm_memory: Any, bank: str) -> str:
    warm_memory.retain(bank, FACT)
    return bank


def chat_loop(client: Any, server: Any) -> list[Any]:
    """The usual hand-written loop: ask, run the tool the model asked for, ask again with its result."""
    server.script([Reply(tool_calls=[ToolCall("get_weather", {"city": "Paris"}, id="call_1")]), "Sunny, 24C: enjoy."])
    messages: list[Any] = [{"role": "system", "content": "You plan outings."}, {"role": "user", "content": QUESTION}]
    first = client.chat.completions.create(model=MODEL, messages=messages, tools=TOOLS)
    messages += [first.choices[0].message, {"role": "tool", "tool_call_id": "call_1", "content": "sunny, 24C"}]
    client.chat.completions.create(model=MODEL, messages=messages, tools=TOOLS)
    return server.requests[-2:]


def test_chat_loop_recalls_once_and_retains_the_turn_once(llm_server: Any, warm_memory: Any, seeded: str) -> None:
    client = memwrap.wrap_openai(openai_sdk(llm_server), bank_id=seeded, memory=warm_memory, recall_timeout=10)
    first, second = chat_loop(client, llm_server)
    assert "Buttes-Chaumont" in memory_block(first)
    assert memory_block(second) == memory_block(first), "the later step carries its user turn's block"
    assert blocks_in(second.body) == 1
    stats = client.memwrap.stats
    assert (stats.recalls, stats.recall_reused, stats.injected) == (1, 1, 2), stats
    assert client.memwrap.flush(30)
    items = retained_items(warm_memory, seeded)
    assert len(items) == 1, items
    (text,) = items.values()
    assert QUESTION in text and "Sunny, 24C: enjoy." in text
    assert "get_weather" not in text and "tool result" not in text, "tool steps stay out unless asked"


def test_retain_tools_keeps_the_calls_and_results(llm_server: Any, warm_memory: Any, bank: str) -> None:
    client = memwrap.wrap_openai(
        openai_sdk(llm_server), bank_id=bank, memory=warm_memory, recall_timeout=10, retain_tools=True
    )
    chat_loop(client, llm_server)
    assert client.memwrap.flush(30)
    (text,) = retained_items(warm_memory, bank).values()
    said = [
        f"user: {QUESTION}",
        'assistant: called get_weather({"city": "Paris"})',
        "tool result: get_weather: sunny, 24C",
        "assistant: Sunny, 24C: enjoy.",
    ]
    assert " ".join(text.split()) == " ".join(said), text


def test_step_mode_treats_every_request_as_an_exchange(llm_server: Any, warm_memory: Any, seeded: str) -> None:
    client = memwrap.wrap_openai(
        openai_sdk(llm_server), bank_id=seeded, memory=warm_memory, recall_timeout=10, tool_loop="step"
    )
    chat_loop(client, llm_server)
    assert client.memwrap.stats.recalls == 2 and client.memwrap.stats.recall_reused == 0
    assert client.memwrap.flush(30)
    assert len(retained_items(warm_memory, seeded)) == 2


def test_anthropic_streamed_loop(llm_server: Any, warm_memory: Any, seeded: str) -> None:
    claude = memwrap.wrap_anthropic(anthropic_sdk(llm_server), bank_id=seeded, memory=warm_memory, recall_timeout=10)
    llm_server.script([Reply(tool_calls=[ToolCall("get_weather", {"city": "Paris"}, id="toolu_1")]), "Sunny: go."])
    history: list[Any] = [{"role": "user", "content": QUESTION}]
    tools = [{"name": "get_weather", "input_schema": {"type": "object"}}]
    with claude.messages.stream(model="claude", max_tokens=100, messages=history, tools=tools) as stream:
        message = stream.get_final_message()
    history += [
        {"role": "assistant", "content": message.content},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "sunny"}]},
    ]
    with claude.messages.stream(model="claude", max_tokens=100, messages=history, tools=tools) as stream:
        assert stream.get_final_text() == "Sunny: go."
    first, second = llm_server.requests[-2:]
    assert "Buttes-Chaumont" in memory_block(first) and memory_block(second) == memory_block(first)
    assert claude.memwrap.stats.recalls == 1
    assert claude.memwrap.flush(30)
    (text,) = retained_items(warm_memory, seeded).values()
    assert " ".join(text.split()) == f"user: {QUESTION} assistant: Sunny: go."


def test_responses_chained_by_previous_response_id(llm_server: Any, warm_memory: Any, seeded: str) -> None:
    """The second step sends only the tool's output: the user's message comes from the step it supersedes."""
    client = memwrap.wrap_openai(
        openai_sdk(llm_server, is_async=True), bank_id=seeded, memory=warm_memory, recall_timeout=10
    )
    if not hasattr(client, "responses"):
        pytest.skip("this openai SDK version has no Responses API")
    tools = [{"type": "function", "name": "get_weather", "parameters": {"type": "object"}}]
    llm_server.script(
        [Reply(tool_calls=[ToolCall("get_weather", {"city": "Paris"}, id="call_9")]), "Rain: bring a coat."]
    )

    async def run() -> None:
        first = await client.responses.create(model=MODEL, input=QUESTION, tools=tools)
        output = [{"type": "function_call_output", "call_id": "call_9", "output": "rain"}]
        final = await client.responses.create(model=MODEL, previous_response_id=first.id, input=output, tools=tools)
        assert final.output_text == "Rain: bring a coat."
        assert await client.memwrap.aflush(30)

    asyncio.run(run())
    first, second = llm_server.requests[-2:]
    assert "Buttes-Chaumont" in memory_block(first) and memory_block(second) == memory_block(first)
    items = retained_items(warm_memory, seeded)
    assert [" ".join(t.split()) for t in items.values()] == [f"user: {QUESTION} assistant: Rain: bring a coat."]


def test_a_step_nobody_continues_is_retained_at_flush(llm_server: Any, warm_memory: Any, bank: str) -> None:
    """An agent whose tool call is its answer (pydantic-ai's output tool): nothing follows, nothing is lost."""
    client = memwrap.wrap_openai(openai_sdk(llm_server), bank_id=bank, memory=warm_memory, recall_timeout=10)
    llm_server.script([Reply(tool_calls=[ToolCall("final_result", {"city": "Oslo"})])])
    client.chat.completions.create(
        model=MODEL,
        messages=[{"role": "user", "content": "Where do I live? Oslo."}],
        tools=TOOLS,
        tool_choice="required",
    )
    assert client.memwrap.loops.held == 1 and client.memwrap.stats.retains == 0
    assert client.memwrap.flush(30)
    (text,) = retained_items(warm_memory, bank).values()
    assert " ".join(text.split()) == 'user: Where do I live? Oslo. assistant: called final_result({"city": "Oslo"})'


def test_a_forced_tool_is_the_answer(llm_server: Any, warm_memory: Any, bank: str) -> None:
    """instructor and function-calling structured output force one named tool: retained at once."""
    client = memwrap.wrap_openai(openai_sdk(llm_server), bank_id=bank, memory=warm_memory, recall_timeout=10)
    llm_server.script([Reply(tool_calls=[ToolCall("Profile", {"name": "Sam"})])])
    client.chat.completions.create(
        model=MODEL,
        messages=[{"role": "user", "content": "I'm Sam."}],
        tools=TOOLS,
        tool_choice={"type": "function", "function": {"name": "Profile"}},
    )
    assert client.memwrap.loops.held == 0 and client.memwrap.stats.retains == 1


def test_a_held_step_is_retained_after_its_grace(
    llm_server: Any, warm_memory: Any, bank: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(loops, "HELD_STEP_SECONDS", 0.2)
    client = memwrap.wrap_openai(openai_sdk(llm_server), bank_id=bank, memory=warm_memory, recall_timeout=10)
    llm_server.script([Reply(tool_calls=[ToolCall("get_weather", {"city": "Rome"})])])
    client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "Rome weather?"}], tools=TOOLS)
    assert wait_until(lambda: client.memwrap.stats.retains == 1, timeout=20)
    assert client.memwrap.loops.held == 0
    assert client.memwrap.flush(30)
    assert len(retained_items(warm_memory, bank)) == 1


def test_a_new_user_turn_recalls_again(llm_server: Any, warm_memory: Any, seeded: str) -> None:
    client = memwrap.wrap_openai(openai_sdk(llm_server), bank_id=seeded, memory=warm_memory, recall_timeout=10)
    chat_loop(client, llm_server)
    history = [
        {"role": "user", "content": QUESTION},
        {"role": "assistant", "content": "Sunny, 24C: enjoy."},
        {"role": "user", "content": "And where exactly is that spot?"},
    ]
    client.chat.completions.create(model=MODEL, messages=history)
    assert client.memwrap.stats.recalls == 2 and client.memwrap.stats.recall_reused == 1


def test_bad_tool_loop_option_is_refused(llm_server: Any, bank: str) -> None:
    client = openai_sdk(llm_server)
    with pytest.raises(memwrap.InvalidInputError, match="tool_loop"):
        memwrap.wrap_openai(client, bank_id=bank, tool_loop="every")  # type: ignore[arg-type]  # on purpose
    with pytest.raises(memwrap.InvalidInputError, match="tool_loop"):
        memwrap.scope(tool_loop="sometimes")  # type: ignore[arg-type]  # on purpose
