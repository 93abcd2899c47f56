"""LangChain's ChatOpenAI through `memwrap.integrations.langchain.wrap_chat_model`: invoke, ainvoke, stream,
astream, with_structured_output (json_schema and function calling), use_responses_api=True, and a bind_tools
loop. Each checks the block upstream and one retained exchange."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from conftest_wrappers import *  # noqa: F403 - fixtures
from conftest_wrappers import Reply, ToolCall
from frameworks_support import (  # noqa: F401 - fixtures and helpers, used by name
    QUESTION,
    assert_block,
    assert_retained_once,
    exchanges,
    seeded,
)
from pydantic import BaseModel

langchain_openai = pytest.importorskip("langchain_openai")
from langchain_core.messages import HumanMessage, ToolMessage  # noqa: E402 - after importorskip

from memwrap.integrations.langchain import memwrap_handle, wrap_chat_model  # noqa: E402 - after importorskip

# What the wrappers do with memory, not what the engine stores or ranks: the in-memory engine (memwrap.testing).
warm_memory = memory_double()


class Dog(BaseModel):
    name: str
    breed: str


def chat_model(server: Any, memory: Any, bank: str, **options: Any) -> Any:
    model = langchain_openai.ChatOpenAI(
        model="gpt-4o-mini", base_url=server.openai_base_url, api_key="test", max_retries=0, **options
    )
    return wrap_chat_model(model, bank_id=bank, memory=memory, recall_timeout=10)


def text_of(content: Any) -> str:
    """A message's text: Responses-API messages carry content as a list of blocks."""
    if isinstance(content, list):
        return "".join(str(block.get("text", "")) if isinstance(block, dict) else str(block) for block in content)
    return str(content)


def invoke(llm: Any) -> str:
    return text_of(llm.invoke(QUESTION).content)


def stream(llm: Any) -> str:
    return "".join(text_of(chunk.content) for chunk in llm.stream(QUESTION))


async def ainvoke(llm: Any) -> str:
    return text_of((await llm.ainvoke(QUESTION)).content)


async def astream(llm: Any) -> str:
    return "".join([text_of(chunk.content) async for chunk in llm.astream(QUESTION)])


# LangChain shares one default httpx client per process: async calls run on the test session's one event loop.
SYNC_CALLS: dict[str, Callable[[Any], str]] = {"invoke": invoke, "stream": stream}
ASYNC_CALLS: dict[str, Callable[[Any], Awaitable[str]]] = {"ainvoke": ainvoke, "astream": astream}
RESPONSES_API = pytest.mark.parametrize("responses_api", [False, True], ids=["chat", "responses"])


@RESPONSES_API
@pytest.mark.parametrize("call", sorted(SYNC_CALLS))
def test_sync_calls(call: str, responses_api: bool, llm_server: Any, warm_memory: Any, seeded: str) -> None:
    llm = chat_model(llm_server, warm_memory, seeded, use_responses_api=responses_api)
    llm_server.script([Reply(text="Your dog is Biscuit.", chunk_size=4)])
    assert SYNC_CALLS[call](llm) == "Your dog is Biscuit."
    assert_block(llm_server)
    assert memwrap_handle(llm).flush(30)
    assert_retained_once(warm_memory, seeded, "Your dog is Biscuit.")


@RESPONSES_API
@pytest.mark.parametrize("call", sorted(ASYNC_CALLS))
async def test_async_calls(call: str, responses_api: bool, llm_server: Any, warm_memory: Any, seeded: str) -> None:
    llm = chat_model(llm_server, warm_memory, seeded, use_responses_api=responses_api)
    llm_server.script([Reply(text="Your dog is Biscuit.", chunk_size=4)])
    assert await ASYNC_CALLS[call](llm) == "Your dog is Biscuit."
    assert_block(llm_server)
    assert await memwrap_handle(llm).aflush(30)
    assert_retained_once(warm_memory, seeded, "Your dog is Biscuit.")


@RESPONSES_API
@pytest.mark.parametrize("method", ["json_schema", "function_calling"])
async def test_with_structured_output(
    method: str, responses_api: bool, llm_server: Any, warm_memory: Any, seeded: str
) -> None:
    llm = chat_model(llm_server, warm_memory, seeded, use_responses_api=responses_api)
    answer = {"name": "Biscuit", "breed": "beagle"}
    llm_server.script([Reply(json=answer) if method == "json_schema" else Reply(tool_calls=[ToolCall("Dog", answer)])])
    structured = llm.with_structured_output(Dog, method=method)
    assert await structured.ainvoke(QUESTION) == Dog(**answer)
    assert_block(llm_server)
    assert await memwrap_handle(llm).aflush(30)
    (text,) = exchanges(warm_memory, seeded).values()
    assert f"user: {QUESTION}" in text and "beagle" in text


def test_bind_tools_loop(llm_server: Any, warm_memory: Any, seeded: str) -> None:
    def dog_age(name: str) -> str:
        """How old a dog is."""
        return f"{name} is 4."

    llm = chat_model(llm_server, warm_memory, seeded).bind_tools([dog_age])
    llm_server.script([Reply(tool_calls=[ToolCall("dog_age", {"name": "Biscuit"}, id="call_7")]), "Biscuit is 4."])
    history: list[Any] = [HumanMessage(QUESTION)]
    step = llm.invoke(history)
    history += [step, ToolMessage("Biscuit is 4.", tool_call_id=step.tool_calls[0]["id"])]
    assert llm.invoke(history).content == "Biscuit is 4."
    assert_block(llm_server, requests=2)
    handle = memwrap_handle(llm.bound)
    assert handle.stats.recalls == 1 and handle.flush(30)
    assert_retained_once(warm_memory, seeded, "Biscuit is 4.")


def test_the_original_model_is_untouched_and_bad_models_are_refused(llm_server: Any, bank: str) -> None:
    model = langchain_openai.ChatOpenAI(model="gpt-4o-mini", base_url=llm_server.openai_base_url, api_key="test")
    wrapped = wrap_chat_model(model, bank_id=bank)
    assert not hasattr(model.root_client, "memwrap") and wrapped.root_client.__wrapped__ is model.root_client
    assert wrapped.async_client.__wrapped__ is model.async_client
    assert memwrap_handle(wrapped).options.bank_id == bank
    rewrapped = wrap_chat_model(wrapped, bank_id="other")
    assert memwrap_handle(rewrapped).options.bank_id == "other"
    assert rewrapped.root_client.__wrapped__ is model.root_client, "wrapping twice wraps the SDK client once"
    with pytest.raises(TypeError, match="ChatOpenAI"):
        wrap_chat_model(object(), bank_id=bank)
    with pytest.raises(TypeError, match="not wrapped"):
        memwrap_handle(model)
