"""memwrap.integrations.litellm against the real `litellm` package, with a local fake OpenAI upstream."""

from __future__ import annotations

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no download of the price list at import

from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest
from conftest_wrappers import blocks_in, fake_llm, llm_server, memory_block, memory_double  # noqa: F401 - fixtures
from fakes.llm_server import FakeLLMServer, Reply
from test_server_harness import wait_until

from memwrap import Memory

litellm = pytest.importorskip("litellm")
from memwrap.integrations.litellm import MemwrapLogger, wrap_completion  # noqa: E402 - after importorskip

# What the wrappers do with memory, not what the engine stores or ranks: the in-memory engine (memwrap.testing).
memory = memory_double()

FACT = "Alice's dog is called Biscuit and is a beagle."


@pytest.fixture
def seeded(memory: Memory, bank: str) -> str:
    memory.retain(bank, FACT)
    return bank


@pytest.fixture(autouse=True)
def no_global_callbacks() -> Iterator[None]:
    # LiteLLM copies `callbacks` into internal lists (keeping one logger per class): clear them all around each test.
    litellm.logging_callback_manager._reset_all_callbacks()
    yield
    litellm.logging_callback_manager._reset_all_callbacks()


def _args(server: FakeLLMServer, question: str = "What is my dog's name?", **extra: Any) -> dict[str, Any]:
    return {
        "model": "openai/gpt-4o-mini",
        "api_base": server.openai_base_url,
        "api_key": "test",
        "messages": [{"role": "user", "content": question}],
        **extra,
    }


def _answers(memory: Memory, bank: str, text: str) -> list[Any]:
    return [m for m in memory.list(bank) if text in m.text]


async def _eventually(check: Any, timeout: float = 20.0) -> Any:
    """wait_until for async tests: LiteLLM's async success callbacks run on this loop, so it must keep turning."""
    import asyncio
    import time

    deadline = time.monotonic() + timeout
    while not (value := await asyncio.to_thread(check)) and time.monotonic() < deadline:
        await asyncio.sleep(0.1)
    return value


def test_sync_completion_injects_and_retains(memory: Memory, llm_server: FakeLLMServer, seeded: str) -> None:
    completion = wrap_completion(litellm.completion, bank_id=seeded, memory=memory, recall_timeout=10)
    llm_server.script(["Biscuit, the beagle."])
    response = completion(**_args(llm_server))
    assert response.choices[0].message.content == "Biscuit, the beagle."
    sent = llm_server.last("openai.chat")
    assert "Biscuit" in memory_block(sent)
    assert "memwrap_retained_by" not in str(sent.body)  # our marker stays inside LiteLLM
    assert completion.memwrap.flush(15)
    assert _answers(memory, seeded, "Biscuit, the beagle.")


def test_sync_stream(memory: Memory, llm_server: FakeLLMServer, seeded: str) -> None:
    completion = wrap_completion(litellm.completion, bank_id=seeded, memory=memory, recall_timeout=10)
    llm_server.script([Reply(text="Your dog is Biscuit, a very good beagle.", chunk_size=4)])
    chunks = [c.choices[0].delta.content or "" for c in completion(**_args(llm_server, stream=True))]
    assert "".join(chunks) == "Your dog is Biscuit, a very good beagle."
    assert "Biscuit" in memory_block(llm_server.last("openai.chat"))
    assert completion.memwrap.flush(15)
    assert _answers(memory, seeded, "a very good beagle")


async def test_async_stream(memory: Memory, llm_server: FakeLLMServer, seeded: str) -> None:
    acompletion = wrap_completion(litellm.acompletion, bank_id=seeded, memory=memory, recall_timeout=10)
    llm_server.script([Reply(text="Async Biscuit answer.", chunk_size=3)])
    stream = await acompletion(**_args(llm_server, stream=True))
    chunks = [c.choices[0].delta.content or "" async for c in stream]
    assert "".join(chunks) == "Async Biscuit answer."
    assert "Biscuit" in memory_block(llm_server.last("openai.chat"))
    assert await acompletion.memwrap.aflush(15)
    assert _answers(memory, seeded, "Async Biscuit answer.")


def test_logger_alone_retains(memory: Memory, llm_server: FakeLLMServer, bank: str) -> None:
    logger = MemwrapLogger(memory=memory)
    litellm.callbacks = [logger]
    llm_server.script(["Logged answer."])
    litellm.completion(**_args(llm_server, "Hello there", metadata={"memwrap": {"bank_id": bank}}))
    assert "<memwrap_memories>" not in str(llm_server.last("openai.chat").body)  # the logger alone never injects
    assert wait_until(lambda: logger.memwrap.flush(1) and _answers(memory, bank, "Logged answer."), timeout=20)


async def test_wrapper_and_logger_together_inject_once_and_retain_once(
    memory: Memory, llm_server: FakeLLMServer, seeded: str
) -> None:
    logger = MemwrapLogger(bank_id=seeded, memory=memory)
    litellm.callbacks = [logger]
    acompletion = wrap_completion(litellm.acompletion, bank_id=seeded, memory=memory, recall_timeout=10)
    llm_server.script(["Only once, Biscuit."])
    await acompletion(**_args(llm_server))
    assert blocks_in(llm_server.last("openai.chat").body) == 1
    assert await acompletion.memwrap.aflush(15)
    await _eventually(lambda: False, timeout=1.0)  # give LiteLLM's success callbacks time to (wrongly) retain again
    assert await logger.memwrap.aflush(5)
    assert len(_answers(memory, seeded, "Only once, Biscuit.")) == 1


async def test_proxy_hooks_inject_and_retain(memory: Memory, llm_server: FakeLLMServer, seeded: str, bank: str) -> None:
    """The LiteLLM proxy's flow: pre-call hook on the request data, then the call, then the success event."""
    from litellm.caching.dual_cache import DualCache

    logger = MemwrapLogger(memory=memory, recall_timeout=10)
    litellm.callbacks = [logger]
    key = SimpleNamespace(metadata={}, user_id="u1")
    data: dict[str, Any] = {
        "model": "openai/gpt-4o-mini",
        "messages": [{"role": "user", "content": "What is my dog called?"}],
        "proxy_server_request": {"headers": {"X-Memwrap-Bank": seeded, "Authorization": "Bearer sk-x"}},
        "metadata": {},
    }
    data = await logger.async_pre_call_hook(key, DualCache(), data, "acompletion")
    assert "Biscuit" in data["messages"][0]["content"]
    llm_server.script(["Proxy says Biscuit."])
    await litellm.acompletion(
        model=data["model"],
        messages=data["messages"],
        metadata=data["metadata"],
        api_base=llm_server.openai_base_url,
        api_key="test",
    )
    assert "Biscuit" in memory_block(llm_server.last("openai.chat"))
    assert await _eventually(lambda: logger.memwrap.flush(1) and _answers(memory, seeded, "Proxy says Biscuit."))

    # A virtual key bound to a bank wins over the request's header.
    bound = SimpleNamespace(metadata={"memwrap_bank_id": bank})
    assert logger.bank_for(data, bound) == bank
