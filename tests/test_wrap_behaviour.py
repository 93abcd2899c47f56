"""What the wrappers promise beyond "memory goes in": same client, options and scopes, sessions, tool calls,
streams that end badly, and no feedback loop. Real engine (the run's embedded PostgreSQL), fake LLM.
"""

from __future__ import annotations

import asyncio
import contextvars
import gc
import threading
import warnings
from typing import Any

import anthropic
import httpx
import openai
import pytest
from conftest_wrappers import *  # noqa: F403 - fixtures
from conftest_wrappers import Reply, ToolCall, anthropic_sdk, blocks_in, memory_block, openai_sdk
from pydantic import BaseModel

import memwrap
from memwrap import AsyncMemory, InvalidInputError
from memwrap.tokens import count_tokens
from memwrap.wrappers.inject import OPEN_TAG

# What the wrappers do with memory, not what the engine stores or ranks: the in-memory engine (memwrap.testing);
# the tests of what the engine stores (each exchange's speakers, metadata filters) take `engine_memory`, the real one.
warm_memory = memory_double()

MODEL = "gpt-4o-mini"
# What the SDK raises when the connection drops mid-stream: httpx's error (older SDKs), httpx2's (openai 3.x and
# anthropic 2.x moved to httpx2), or wrapped as APIConnectionError (newer openai 3.x).
DROPPED: tuple[type[BaseException], ...] = (httpx.RemoteProtocolError, openai.APIConnectionError)
try:
    import httpx2

    DROPPED += (httpx2.RemoteProtocolError,)
except ImportError:  # pragma: no cover - the oldest supported SDKs
    pass


def ask(text: str, system: str | None = None) -> dict[str, Any]:
    messages = ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": text}]
    return {"model": MODEL, "messages": messages}


def wrapped(server: Any, memory: Any, bank: str | None, **options: Any) -> Any:
    return memwrap.wrap_openai(openai_sdk(server), bank_id=bank, memory=memory, recall_timeout=10, **options)


def texts(memory: Any, bank: str) -> list[str]:
    return [r.text for r in memory.list(bank)]


def test_same_client_same_type_and_everything_else_untouched(llm_server: Any, warm_memory: Any, bank: str) -> None:
    sdk = openai_sdk(llm_server)
    client = memwrap.wrap_openai(sdk, bank_id=bank, memory=warm_memory)
    assert isinstance(client, openai.OpenAI)
    assert client.models is sdk.models and client.files is sdk.files and client.api_key == "test"
    assert client.completions is sdk.completions and client.chat.completions.with_raw_response
    if hasattr(sdk.chat.completions, "retrieve"):  # stored completions: openai 1.7x+
        assert client.chat.completions.retrieve == sdk.chat.completions.retrieve
    assert client.with_options(timeout=5).memwrap is client.memwrap
    assert isinstance(memwrap.wrap_openai(openai_sdk(llm_server, is_async=True), bank_id=bank), openai.AsyncOpenAI)
    assert isinstance(memwrap.wrap_anthropic(anthropic_sdk(llm_server), bank_id=bank), anthropic.Anthropic)
    assert isinstance(
        memwrap.wrap_anthropic(anthropic_sdk(llm_server, is_async=True), bank_id=bank), anthropic.AsyncAnthropic
    )
    with pytest.raises(TypeError):
        memwrap.wrap_openai(object(), bank_id=bank)
    with pytest.raises(TypeError, match="sync memory"):
        memwrap.wrap_openai(sdk, bank_id=bank, memory=AsyncMemory())


class User(BaseModel):
    name: str
    age: int


def test_wrapping_twice_and_echoed_blocks_inject_once(llm_server: Any, warm_memory: Any, bank: str) -> None:
    warm_memory.retain(bank, "The user's dog is called Biscuit.")
    client = memwrap.wrap_openai(
        wrapped(llm_server, warm_memory, bank), bank_id=bank, memory=warm_memory, recall_timeout=10
    )
    client.chat.completions.create(**ask("What is my dog called?", "Be kind."))
    first = llm_server.last()
    assert blocks_in(first.body) == 1 and "Biscuit" in memory_block(first)
    # The app sends back the exact messages that went upstream (block included), plus a new turn.
    echoed = [
        *first.body["messages"],
        {"role": "assistant", "content": "OK"},
        {"role": "user", "content": "And his breed?"},
    ]
    client.chat.completions.create(model=MODEL, messages=echoed)
    assert blocks_in(llm_server.last().body) == 1
    assert client.memwrap.flush(30)
    assert not any(OPEN_TAG in t or "Recalled from long-term memory" in t for t in texts(warm_memory, bank))


def test_per_call_options(llm_server: Any, engine_memory: Any, bank: str) -> None:
    client = wrapped(llm_server, engine_memory, bank)
    engine_memory.retain(bank, "The user lives in Porto.")
    engine_memory.retain(
        bank, "In Porto the user walks by the river every evening, " * 4 + "and eats grilled sardines."
    )
    client.chat.completions.create(**ask("Say hello."), memwrap={"inject": False})
    assert memory_block(llm_server.last()) == "" and client.memwrap.stats.recalls == 0
    client.chat.completions.create(**ask("Secret: do not keep this."), memwrap={"retain": False})
    # Delivered before the next recall, whatever the spool's timing: the turn above is in the bank, its question
    # not the one asked next (the same question, retained, would rank first and fill a 60-token block).
    assert client.memwrap.flush(30)
    client.chat.completions.create(**ask("Where do I live?"), memwrap={"token_budget": 60})
    block = memory_block(llm_server.last())
    assert "lives in Porto" in block and "sardines" not in block and count_tokens(block, MODEL) <= 60
    other = bank + "-other"
    client.chat.completions.create(
        **ask("Kept elsewhere."), memwrap={"bank_id": other, "session_id": "s1", "tags": ["t1"]}
    )
    assert "memwrap" not in llm_server.last().body
    with pytest.raises(InvalidInputError, match="Unknown memwrap option"):
        client.chat.completions.create(**ask("x"), memwrap={"bnak_id": "typo"})
    assert client.memwrap.flush(30)
    assert not any("Secret" in t for t in texts(engine_memory, bank))
    # The exchange is two memories: what the user said and the assistant's answer, each with its speaker.
    records = engine_memory.list(other)
    assert [(r.document_id, r.tags, r.speaker) for r in records] == [
        ("s1:turn-0", ["t1"], "user"),
        ("s1:turn-0", ["t1"], "assistant"),
    ]
    assert "Kept elsewhere." in records[0].text


def test_retain_assistant_false_keeps_only_what_the_user_said(llm_server: Any, engine_memory: Any, bank: str) -> None:
    llm_server.script(["Noted: you are vegetarian, no peanuts."])
    client = wrapped(llm_server, engine_memory, bank, retain_assistant=False)
    client.chat.completions.create(**ask("I'm vegetarian and allergic to peanuts."))
    llm_server.script(["Sure, noted."])
    with memwrap.scope(retain_assistant=True):
        client.chat.completions.create(**ask("I also hate coriander."))
    assert client.memwrap.flush(30)
    said = [(r.speaker, r.text) for r in engine_memory.list(bank)]
    assert said == [
        ("user", "user: I'm vegetarian and allergic to peanuts."),
        ("user", "user: I also hate coriander."),
        ("assistant", "assistant: Sure, noted."),
    ]


def test_filters_narrow_what_is_injected(llm_server: Any, engine_memory: Any, bank: str) -> None:
    engine_memory.retain(bank, "Project apollo deploys on Tuesdays.", metadata={"project": "apollo"})
    engine_memory.retain(bank, "Project gemini deploys on Fridays.", metadata={"project": "gemini"})
    client = wrapped(llm_server, engine_memory, bank, filters={"metadata": {"project": "apollo"}})
    client.chat.completions.create(**ask("When does the project deploy?"))
    block = memory_block(llm_server.last())
    assert "Tuesdays" in block and "Fridays" not in block
    # Per call and per block, the inner filter wins.
    client.chat.completions.create(
        **ask("When does the project deploy?"), memwrap={"filters": {"metadata": {"project": "gemini"}}}
    )
    block = memory_block(llm_server.last())
    assert "Fridays" in block and "Tuesdays" not in block
    with memwrap.scope(filters={"metadata": {"project": {"in": ["apollo", "gemini"]}}}):
        client.chat.completions.create(**ask("When does the project deploy?"))
    block = memory_block(llm_server.last())
    assert "Fridays" in block and "Tuesdays" in block
    # A wrong filter is an error at the call, never an empty recall.
    with pytest.raises(InvalidInputError, match="Invalid recall filter"):
        client.chat.completions.create(**ask("x"), memwrap={"filters": {"metdata": {"project": "apollo"}}})
    with pytest.raises(InvalidInputError, match="Invalid recall filter"):
        wrapped(llm_server, engine_memory, bank, filters={"mentioned_after": "yesterday-ish"})
    assert client.memwrap.flush(30)


def test_without_a_bank_the_call_passes_through(llm_server: Any, warm_memory: Any) -> None:
    client = wrapped(llm_server, warm_memory, None)
    client.chat.completions.create(**ask("hi"))
    assert llm_server.last().body == ask("hi") and client.memwrap.stats.passthrough == 1


def test_scope_per_thread_and_per_task(llm_server: Any, warm_memory: Any, bank: str) -> None:
    client = wrapped(llm_server, warm_memory, None)
    barrier = threading.Barrier(2)

    def user(name: str) -> None:
        with memwrap.scope(bank_id=f"{bank}-{name}", tags=[name]):
            barrier.wait()  # both scopes are open at once
            client.chat.completions.create(**ask(f"I am {name} and I like kites."))

    threads = [threading.Thread(target=user, args=(n,)) for n in ("ann", "bea")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    aclient = memwrap.wrap_openai(openai_sdk(llm_server, is_async=True), memory=warm_memory, recall_timeout=10)

    async def task(name: str) -> None:
        async with memwrap.scope(bank_id=f"{bank}-{name}"):
            await asyncio.sleep(0.01)
            await aclient.chat.completions.create(**ask(f"I am {name} and I like boats."))

    async def both() -> None:
        await asyncio.gather(task("cid"), task("dot"))

    asyncio.run(both())
    assert client.memwrap.flush(30)
    for name in ("ann", "bea", "cid", "dot"):
        found = texts(warm_memory, f"{bank}-{name}")
        said = [t for t in found if t.startswith("user: ")]  # and the answers, "assistant: OK"
        assert said and all(f"I am {name}" in t for t in said), (name, found)
    assert warm_memory.list(f"{bank}-ann")[0].tags == ["ann"]


def test_bank_id_may_be_a_callable(llm_server: Any, warm_memory: Any, bank: str) -> None:
    current: contextvars.ContextVar[str] = contextvars.ContextVar("user")
    client = wrapped(llm_server, warm_memory, lambda: f"{bank}-{current.get()}")
    current.set("zoe")
    client.chat.completions.create(**ask("Zoe here, I collect stamps."))
    assert client.memwrap.flush(30)
    assert any("stamps" in t for t in texts(warm_memory, f"{bank}-zoe"))


def test_a_growing_conversation_is_appended_not_resent(llm_server: Any, warm_memory: Any, bank: str) -> None:
    client = wrapped(llm_server, warm_memory, bank)
    llm_server.script(["Nice to meet you, Ines.", "Lisbon is lovely.", "You said Lisbon."])
    messages: list[Any] = [{"role": "system", "content": "Be brief."}]
    for text in ("Hi, my name is Ines.", "I moved to Lisbon in May.", "Where did I move?"):
        messages.append({"role": "user", "content": text})
        reply = client.chat.completions.create(model=MODEL, messages=messages)
        messages.append(reply.choices[0].message)  # SDK objects in the history, as apps do
        assert client.memwrap.flush(30)
    records = warm_memory.list(bank)
    documents = sorted({r.document_id for r in records})
    session = documents[0].rsplit(":", 1)[0]
    assert documents == [f"{session}:turn-{n}" for n in range(3)]
    assert sum("my name is Ines" in r.text for r in records) == 1, "turn 1 is stored once"
    last = llm_server.last()
    assert blocks_in(last.body) == 1 and "Lisbon" in memory_block(last)


def test_tool_calls_and_results_are_retained_readably(llm_server: Any, warm_memory: Any, bank: str) -> None:
    """With retain_tools=True (tests/test_wrap_tool_loops.py has the default: the user's words and the answer)."""
    client = wrapped(llm_server, warm_memory, bank, retain_tools=True)
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]
    llm_server.script(
        [Reply(tool_calls=[ToolCall("get_weather", {"city": "Paris"}, id="call_1")]), "It is sunny in Paris."]
    )
    messages: list[Any] = [{"role": "user", "content": "Weather in Paris for my picnic?"}]
    first = client.chat.completions.create(model=MODEL, messages=messages, tools=tools)
    messages += [first.choices[0].message, {"role": "tool", "tool_call_id": "call_1", "content": "18C and sunny"}]
    client.chat.completions.create(model=MODEL, messages=messages, tools=tools)

    claude = memwrap.wrap_anthropic(
        anthropic_sdk(llm_server), bank_id=bank, memory=warm_memory, recall_timeout=10, retain_tools=True
    )
    llm_server.script([Reply(tool_calls=[ToolCall("lookup", {"q": "tide"}, id="toolu_1")]), "High tide at 6."])
    history: list[Any] = [{"role": "user", "content": "When is high tide for my swim?"}]
    answer = claude.messages.create(model="claude", max_tokens=100, messages=history)
    history += [
        {"role": "assistant", "content": answer.content},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "06:00"}]},
    ]
    claude.messages.create(model="claude", max_tokens=100, messages=history)
    assert client.memwrap.flush(30)
    joined = "\n".join(texts(warm_memory, bank))
    for expected in (
        'called get_weather({"city": "Paris"})',
        "tool result: get_weather: 18C and sunny",
        "It is sunny in Paris.",
        'called lookup({"q": "tide"})',
        "tool result: lookup: 06:00",
    ):
        assert expected in joined, (expected, joined)


def test_streams_closed_abandoned_or_cut_are_still_retained(llm_server: Any, warm_memory: Any, bank: str) -> None:
    client = wrapped(llm_server, warm_memory, bank)
    long = "A fairly long streamed answer that the app stops reading early."
    llm_server.script([Reply(text=long), Reply(text=long), Reply(text=long, cut_after=4)])

    stream = client.chat.completions.create(**ask("Closed early: the kettle is blue."), stream=True)
    next(stream), next(stream)
    stream.close()

    stream = client.chat.completions.create(**ask("Abandoned: the teapot is green."), stream=True)
    next(stream), next(stream)
    del stream
    gc.collect()

    with pytest.raises(DROPPED):  # what the SDK raises when the connection drops mid-stream
        for _ in client.chat.completions.create(**ask("Cut: the mug is red."), stream=True):
            pass
    assert client.memwrap.flush(30)
    records = warm_memory.list(bank)
    for said in ("the kettle is blue", "the teapot is green", "the mug is red"):
        [record] = [r for r in records if said in r.text]
        assert record.metadata.get("partial") is True


def test_upstream_errors_propagate_and_retain_nothing(llm_server: Any, warm_memory: Any, bank: str) -> None:
    client = wrapped(llm_server, warm_memory, bank)
    llm_server.script([Reply(status=500, error="boom")])
    with pytest.raises(openai.InternalServerError):
        client.chat.completions.create(**ask("This call fails upstream."))
    assert client.memwrap.stats.retains == 0


def test_async_client_with_an_async_memory(llm_server: Any, memwrap_home: Any, bank: str) -> None:
    """AsyncMemory lives on the app's loop: recall awaits there, retains are delivered onto it."""

    async def scenario() -> tuple[str, list[str]]:
        async with AsyncMemory(home=memwrap_home) as memory:
            client = memwrap.wrap_openai(
                openai_sdk(llm_server, is_async=True), bank_id=bank, memory=memory, recall_timeout=10
            )
            await client.chat.completions.create(**ask("My bike is a green Brompton."))
            assert await client.memwrap.aflush(30)
            await client.chat.completions.create(**ask("What bike do I ride?"))
            assert await client.memwrap.aflush(30)
            found = [r.text for r in await memory.list(bank)]
            client.memwrap.close()
            return memory_block(llm_server.last()), found

    block, found = asyncio.run(scenario())
    assert "green Brompton" in block
    assert any("What bike do I ride?" in t for t in found)


def test_parse_adds_no_warning(llm_server: Any, warm_memory: Any, bank: str) -> None:
    """Reading a parse() result for memory must not serialize its `parsed` field (pydantic warned on openai 3.x)."""
    client = wrapped(llm_server, warm_memory, bank)
    llm_server.script([Reply(json={"name": "Ada", "age": 36}), Reply(json={"name": "Ada", "age": 36})])
    # older openai 1.x has parse/stream only under beta.chat.completions
    completions = client.chat.completions if hasattr(client.chat.completions, "parse") else client.beta.chat.completions
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        user = completions.parse(**ask("Ada is 36."), response_format=User).choices[0].message.parsed
        with completions.stream(**ask("Ada is 36."), response_format=User) as stream:
            streamed = stream.get_final_completion().choices[0].message.parsed
    assert user == streamed == User(name="Ada", age=36)
    assert client.memwrap.flush(30) and client.memwrap.stats.internal_errors == 0
