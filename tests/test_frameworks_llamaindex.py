"""LlamaIndex's OpenAI LLM on wrapped clients (`openai_client=` / `async_openai_client=`): chat, stream_chat,
complete, achat and astream_chat.

llama-index-llms-openai still requires openai<3, so it is not in the [frameworks] extra (whose other frameworks
need openai 3): .ci/run runs this module in a second environment, on openai 2.x.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from conftest_wrappers import *  # noqa: F403 - fixtures
from conftest_wrappers import Reply, openai_sdk
from frameworks_support import QUESTION, assert_block, assert_retained_once, seeded  # noqa: F401 - fixture

import memwrap

llama_openai = pytest.importorskip("llama_index.llms.openai")
from llama_index.core.llms import ChatMessage  # noqa: E402 - after importorskip

# What the wrappers do with memory, not what the engine stores or ranks: the in-memory engine (memwrap.testing).
warm_memory = memory_double()

ANSWER = "Your dog is Biscuit."


def llm_on(server: Any, memory: Any, bank: str) -> tuple[Any, Any]:
    options = {"bank_id": bank, "memory": memory, "recall_timeout": 10}
    client = memwrap.wrap_openai(openai_sdk(server), **options)
    aclient = memwrap.wrap_openai(openai_sdk(server, is_async=True), **options)
    llm = llama_openai.OpenAI(model="gpt-4o-mini", api_key="test", openai_client=client, async_openai_client=aclient)
    return llm, client


def chat(llm: Any) -> str:
    return str(llm.chat([ChatMessage(role="user", content=QUESTION)]).message.content)


def stream_chat(llm: Any) -> str:
    return "".join(r.delta or "" for r in llm.stream_chat([ChatMessage(role="user", content=QUESTION)]))


def complete(llm: Any) -> str:
    return str(llm.complete(QUESTION).text)


SYNC: dict[str, Callable[[Any], str]] = {"chat": chat, "stream_chat": stream_chat, "complete": complete}


@pytest.mark.parametrize("call", sorted(SYNC))
def test_sync(call: str, llm_server: Any, warm_memory: Any, seeded: str) -> None:
    llm, client = llm_on(llm_server, warm_memory, seeded)
    llm_server.script([Reply(text=ANSWER, chunk_size=4)])
    assert SYNC[call](llm) == ANSWER
    assert_block(llm_server)
    assert client.memwrap.flush(30)
    assert_retained_once(warm_memory, seeded, ANSWER)


async def test_achat_and_astream_chat(llm_server: Any, warm_memory: Any, seeded: str) -> None:
    llm, client = llm_on(llm_server, warm_memory, seeded)
    llm_server.script([Reply(text=ANSWER, chunk_size=4)])
    assert (await llm.achat([ChatMessage(role="user", content=QUESTION)])).message.content == ANSWER
    assert_block(llm_server)
    assert await client.memwrap.aflush(30)
    assert_retained_once(warm_memory, seeded, ANSWER)

    llm_server.script([Reply(text="Still Biscuit.", chunk_size=4)])
    follow_up = "And his breed?"
    stream = await llm.astream_chat([ChatMessage(role="user", content=follow_up)])
    assert "".join([r.delta or "" async for r in stream]) == "Still Biscuit."
    assert_block(llm_server)
    assert await client.memwrap.aflush(30)
