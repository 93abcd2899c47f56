"""Every wrapped chat surface, sync and async, streamed and not, against the real engine and a fake LLM.

Turn 1 states a fact; after a flush, turn 2 (a new conversation) asks about it. The request the fake LLM
received for turn 2 must carry exactly the block `Recall.context` renders, once, after the app's own system
prompt; what was retained must hold the user's words and never a memory block.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from anthropic import Anthropic, AsyncAnthropic
from conftest_wrappers import *  # noqa: F403 - fixtures
from conftest_wrappers import Reply, blocks_in, memory_block, system_text
from openai import AsyncOpenAI, OpenAI
from pydantic import BaseModel

import memwrap
from memwrap.wrappers.inject import OPEN_TAG

# What the wrappers do with memory, not what the engine stores or ranks: the in-memory engine (memwrap.testing).
warm_memory = memory_double()

OPENAI_MODEL = "gpt-4o-mini"
CLAUDE_MODEL = "claude-sonnet-4-5"
SYSTEM = "You are a helpful assistant."
FACT = "My favourite colour is teal"
QUESTION = "What is my favourite colour?"


class Answer(BaseModel):
    answer: str


def _chat(text: str, system: str | None) -> dict[str, Any]:
    messages = ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": text}]
    return {"model": OPENAI_MODEL, "messages": messages}


def _resp(text: str, system: str | None) -> dict[str, Any]:
    return {"model": OPENAI_MODEL, "input": text, **({"instructions": system} if system else {})}


def _claude(text: str, system: str | None, *, blocks: bool = False) -> dict[str, Any]:
    kwargs: dict[str, Any] = {"model": CLAUDE_MODEL, "max_tokens": 256, "messages": [{"role": "user", "content": text}]}
    if system:
        kwargs["system"] = (
            [{"type": "text", "text": system, "cache_control": {"type": "ephemeral"}}] if blocks else system
        )
    return kwargs


# -- sync drivers: one call through one surface ----------------------------------------------------------------


def chat_create(c: Any, text: str, system: str | None) -> None:
    c.chat.completions.create(**_chat(text, system))


def chat_create_stream(c: Any, text: str, system: str | None) -> None:
    for _ in c.chat.completions.create(**_chat(text, system), stream=True):
        pass


def chat_stream_helper(c: Any, text: str, system: str | None) -> None:
    with c.chat.completions.stream(**_chat(text, system)) as stream:
        stream.get_final_completion()


def chat_stream_helper_iter(c: Any, text: str, system: str | None) -> None:
    with c.chat.completions.stream(**_chat(text, system)) as stream:
        for _ in stream:
            pass


def chat_parse(c: Any, text: str, system: str | None) -> None:
    assert c.chat.completions.parse(**_chat(text, system), response_format=Answer).choices[0].message.parsed


def beta_chat_parse(c: Any, text: str, system: str | None) -> None:
    assert c.beta.chat.completions.parse(**_chat(text, system), response_format=Answer).choices[0].message.parsed


def chat_raw(c: Any, text: str, system: str | None) -> None:
    raw = c.chat.completions.with_raw_response.create(**_chat(text, system))
    assert raw.headers["content-type"].startswith("application/json")
    assert raw.parse().choices[0].message.content


def chat_raw_stream(c: Any, text: str, system: str | None) -> None:
    for _ in c.chat.completions.with_raw_response.create(**_chat(text, system), stream=True).parse():
        pass


def chat_client_raw(c: Any, text: str, system: str | None) -> None:
    c.with_raw_response.chat.completions.create(**_chat(text, system)).parse()


def chat_streaming_response(c: Any, text: str, system: str | None) -> None:
    with c.chat.completions.with_streaming_response.create(**_chat(text, system)) as response:
        response.parse()


def responses_create(c: Any, text: str, system: str | None) -> None:
    assert c.responses.create(**_resp(text, system)).output_text


def responses_create_stream(c: Any, text: str, system: str | None) -> None:
    for _ in c.responses.create(**_resp(text, system), stream=True):
        pass


def responses_stream_helper(c: Any, text: str, system: str | None) -> None:
    with c.responses.stream(**_resp(text, system)) as stream:
        stream.get_final_response()


def responses_parse(c: Any, text: str, system: str | None) -> None:
    assert c.responses.parse(**_resp(text, system), text_format=Answer).output_parsed


def responses_raw(c: Any, text: str, system: str | None) -> None:
    c.responses.with_raw_response.create(**_resp(text, system)).parse()


def messages_create(c: Any, text: str, system: str | None) -> None:
    assert c.messages.create(**_claude(text, system)).content[0].text


def messages_create_blocks(c: Any, text: str, system: str | None) -> None:
    c.messages.create(**_claude(text, system, blocks=True))


def messages_create_stream(c: Any, text: str, system: str | None) -> None:
    for _ in c.messages.create(**_claude(text, system, blocks=True), stream=True):
        pass


def messages_stream_helper(c: Any, text: str, system: str | None) -> None:
    with c.messages.stream(**_claude(text, system)) as stream:
        assert stream.get_final_text()


def messages_stream_text(c: Any, text: str, system: str | None) -> None:
    with c.messages.stream(**_claude(text, system)) as stream:
        assert "".join(stream.text_stream)


def messages_raw(c: Any, text: str, system: str | None) -> None:
    c.messages.with_raw_response.create(**_claude(text, system)).parse()


# -- async drivers --------------------------------------------------------------------------------------------


async def a_chat_create(c: Any, text: str, system: str | None) -> None:
    await c.chat.completions.create(**_chat(text, system))


async def a_chat_create_stream(c: Any, text: str, system: str | None) -> None:
    async for _ in await c.chat.completions.create(**_chat(text, system), stream=True):
        pass


async def a_chat_stream_helper(c: Any, text: str, system: str | None) -> None:
    async with c.chat.completions.stream(**_chat(text, system)) as stream:
        await stream.get_final_completion()


async def a_chat_stream_helper_iter(c: Any, text: str, system: str | None) -> None:
    async with c.chat.completions.stream(**_chat(text, system)) as stream:
        async for _ in stream:
            pass


async def a_chat_parse(c: Any, text: str, system: str | None) -> None:
    assert (await c.chat.completions.parse(**_chat(text, system), response_format=Answer)).choices[0].message.parsed


async def a_beta_chat_parse(c: Any, text: str, system: str | None) -> None:
    await c.beta.chat.completions.parse(**_chat(text, system), response_format=Answer)


async def a_chat_raw(c: Any, text: str, system: str | None) -> None:
    (await c.chat.completions.with_raw_response.create(**_chat(text, system))).parse()


async def a_chat_raw_stream(c: Any, text: str, system: str | None) -> None:
    raw = await c.chat.completions.with_raw_response.create(**_chat(text, system), stream=True)
    async for _ in raw.parse():
        pass


async def a_chat_streaming_response(c: Any, text: str, system: str | None) -> None:
    async with c.chat.completions.with_streaming_response.create(**_chat(text, system)) as response:
        await response.parse()


async def a_responses_create(c: Any, text: str, system: str | None) -> None:
    await c.responses.create(**_resp(text, system))


async def a_responses_create_stream(c: Any, text: str, system: str | None) -> None:
    async for _ in await c.responses.create(**_resp(text, system), stream=True):
        pass


async def a_responses_stream_helper(c: Any, text: str, system: str | None) -> None:
    async with c.responses.stream(**_resp(text, system)) as stream:
        async for _ in stream:
            pass


async def a_responses_parse(c: Any, text: str, system: str | None) -> None:
    assert (await c.responses.parse(**_resp(text, system), text_format=Answer)).output_parsed


async def a_responses_raw(c: Any, text: str, system: str | None) -> None:
    (await c.responses.with_raw_response.create(**_resp(text, system))).parse()


async def a_messages_create(c: Any, text: str, system: str | None) -> None:
    await c.messages.create(**_claude(text, system))


async def a_messages_create_stream(c: Any, text: str, system: str | None) -> None:
    async for _ in await c.messages.create(**_claude(text, system, blocks=True), stream=True):
        pass


async def a_messages_stream_helper(c: Any, text: str, system: str | None) -> None:
    async with c.messages.stream(**_claude(text, system, blocks=True)) as stream:
        assert await stream.get_final_text()


async def a_messages_raw(c: Any, text: str, system: str | None) -> None:
    raw = await c.messages.with_raw_response.create(**_claude(text, system))
    parsed = raw.parse()  # a coroutine since anthropic 0.4x; older versions return the Message itself
    assert (await parsed if inspect.isawaitable(parsed) else parsed).content[0].text


# What each driver needs beyond `create` (older SDKs lack them: the oldest supported openai has no Responses
# API, and `parse`/`stream` only under `beta.chat.completions`).
NEEDS = {
    "chat_stream_helper": "chat.completions.stream",
    "chat_parse": "chat.completions.parse",
    "beta_chat_parse": "beta.chat.completions.parse",
    "responses": "responses",
}


@dataclass
class Surface:
    drive: Callable[..., Any]
    family: str

    @property
    def is_async(self) -> bool:
        return asyncio.iscoroutinefunction(self.drive)

    def missing_in(self, client: Any) -> str | None:
        """The SDK attribute this surface needs and the installed SDK lacks, if any."""
        name = self.drive.__name__.removeprefix("a_")
        for prefix, path in NEEDS.items():
            if name.startswith(prefix):
                target = client
                for part in path.split("."):
                    target = getattr(target, part, None)
                    if target is None:
                        return path
        return None

    def __repr__(self) -> str:
        return self.drive.__name__


SURFACES = [
    *(
        Surface(f, "openai")
        for f in (
            chat_create,
            chat_create_stream,
            chat_stream_helper,
            chat_stream_helper_iter,
            chat_parse,
            beta_chat_parse,
            chat_raw,
            chat_raw_stream,
            chat_client_raw,
            chat_streaming_response,
            responses_create,
            responses_create_stream,
            responses_stream_helper,
            responses_parse,
            responses_raw,
            a_chat_create,
            a_chat_create_stream,
            a_chat_stream_helper,
            a_chat_stream_helper_iter,
            a_chat_parse,
            a_beta_chat_parse,
            a_chat_raw,
            a_chat_raw_stream,
            a_chat_streaming_response,
            a_responses_create,
            a_responses_create_stream,
            a_responses_stream_helper,
            a_responses_parse,
            a_responses_raw,
        )
    ),
    *(
        Surface(f, "anthropic")
        for f in (
            messages_create,
            messages_create_blocks,
            messages_create_stream,
            messages_stream_helper,
            messages_stream_text,
            messages_raw,
            a_messages_create,
            a_messages_create_stream,
            a_messages_stream_helper,
            a_messages_raw,
        )
    ),
]


def make_client(surface: Surface, server: Any, memory: Any, bank: str) -> Any:
    # A generous recall_timeout: these tests are about where the memory goes, not about latency.
    if surface.family == "openai":
        sdk = (AsyncOpenAI if surface.is_async else OpenAI)(
            base_url=server.openai_base_url, api_key="test", max_retries=0
        )
        return memwrap.wrap_openai(sdk, bank_id=bank, memory=memory, recall_timeout=10)
    sdk = (AsyncAnthropic if surface.is_async else Anthropic)(
        base_url=server.anthropic_base_url, api_key="test", max_retries=0
    )
    return memwrap.wrap_anthropic(sdk, bank_id=bank, memory=memory, recall_timeout=10)


@pytest.mark.parametrize("surface", SURFACES, ids=repr)
def test_turn_two_carries_turn_one(surface: Surface, llm_server: Any, warm_memory: Any, bank: str) -> None:
    memory = warm_memory
    client = make_client(surface, llm_server, memory, bank)
    if missing := surface.missing_in(client):
        pytest.skip(f"this {surface.family} SDK version has no {missing}")
    llm_server.script([Reply(json={"answer": "Noted."}), Reply(json={"answer": "Teal."})])
    model = OPENAI_MODEL if surface.family == "openai" else CLAUDE_MODEL
    expected: dict[str, str] = {}

    def between_turns() -> None:
        # What recall renders for turn 2's query, now that turn 1 is stored (and before turn 2 is).
        expected["block"] = memory.recall(bank, QUESTION, token_budget=1024, model=model).context

    if surface.is_async:

        async def scenario() -> None:
            await surface.drive(client, FACT, None)
            assert await client.memwrap.aflush(30)
            await asyncio.to_thread(between_turns)
            await surface.drive(client, QUESTION, SYSTEM)
            assert await client.memwrap.aflush(30)

        asyncio.run(scenario())
    else:
        surface.drive(client, FACT, None)
        assert client.memwrap.flush(30)
        between_turns()
        surface.drive(client, QUESTION, SYSTEM)
        assert client.memwrap.flush(30)

    first, second = llm_server.requests[-2:]
    assert "memwrap" not in first.body and "memwrap" not in second.body
    assert memory_block(first) == ""  # a fresh bank: nothing to inject, and nothing added
    block = memory_block(second)
    assert "teal" in block
    assert block == expected["block"], "the block must be exactly what Recall.context rendered"
    assert system_text(second).startswith(SYSTEM), "the app's own system prompt stays first"
    assert blocks_in(second.body) == 1, "injected once"

    stats = client.memwrap.stats
    assert stats.injected == 1 and stats.recall_empty == 1 and stats.failed_open == 0, stats
    texts = [r.text for r in memory.list(bank)]
    assert any(FACT in t for t in texts), texts
    assert any(QUESTION in t for t in texts), texts
    assert any("Noted." in t for t in texts) and any("Teal." in t for t in texts), "the answers are retained too"
    assert not any(OPEN_TAG in t or "Recalled from long-term memory" in t for t in texts), texts
