"""Read-your-writes within one process: a wrapped call sees the exchange the process retained just before it,
back to back, although retains are delivered in the background (memwrap/wrappers/spool.py)."""

from __future__ import annotations

import asyncio
from typing import Any

from conftest_wrappers import *  # noqa: F403 - fixtures: llm_server, warm_memory
from conftest_wrappers import memory_block, openai_sdk
from fakes.llm_server import FakeLLMServer, Reply

import memwrap

# What the wrappers do with memory, not what the engine stores or ranks: the in-memory engine (memwrap.testing).
warm_memory = memory_double()

LOCKERS = ["4417", "9023", "3158", "7761", "2290"]


def test_a_call_sees_the_exchange_just_before_it(llm_server: FakeLLMServer, warm_memory: Any, bank: str) -> None:
    # A generous recall timeout: this is about what the recall sees, not how fast (half of it may be waited).
    client = memwrap.wrap_openai(openai_sdk(llm_server), bank_id=bank, memory=warm_memory, recall_timeout=10)
    for locker in LOCKERS:
        llm_server.script([Reply(text="Noted."), Reply(text=f"Locker {locker}.")])
        told = f"My new gym locker is number {locker}."
        client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": told}])
        # At once, no flush: the retain of the call above is still on its way.
        client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": "Which gym locker is mine now?"}]
        )
        assert locker in memory_block(llm_server.last()), f"the exchange just before was not recalled ({locker})"


def test_an_async_call_sees_the_exchange_just_before_it(llm_server: FakeLLMServer, warm_memory: Any, bank: str) -> None:
    async def run() -> None:
        client = memwrap.wrap_openai(
            openai_sdk(llm_server, is_async=True), bank_id=bank, memory=warm_memory, recall_timeout=10
        )
        for locker in LOCKERS:
            llm_server.script([Reply(text="Noted."), Reply(text=f"Locker {locker}.")])
            told = f"My new bike locker is number {locker}."
            await client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": told}])
            await client.chat.completions.create(
                model="gpt-4o-mini", messages=[{"role": "user", "content": "Which bike locker is mine now?"}]
            )
            assert locker in memory_block(llm_server.last()), f"not recalled ({locker})"

    asyncio.run(run())


def test_a_call_does_not_wait_for_the_retains_of_other_banks(
    llm_server: FakeLLMServer, warm_memory: Any, bank: str
) -> None:
    """Only the same bank's retains are waited for: another bank's exchange neither holds the call nor shows."""
    other = memwrap.wrap_openai(openai_sdk(llm_server), bank_id=f"{bank}-other", memory=warm_memory, recall_timeout=10)
    mine = memwrap.wrap_openai(openai_sdk(llm_server), bank_id=bank, memory=warm_memory, recall_timeout=10)
    llm_server.script([Reply(text="Noted."), Reply(text="Hello.")])
    other.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "I like figs."}])
    retainer = memwrap.wrappers.core.backend_for(warm_memory).retainer
    assert not retainer.pending_for(bank)
    mine.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "Hello?"}])
    assert "figs" not in memory_block(llm_server.last())
