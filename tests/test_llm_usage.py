"""The engine's LLM usage counters (llm_usage, migration 0014): every request the engine makes for a bank is
counted for that bank, the day and the purpose, with the tokens the provider reported.

The fake LLM server is the provider: the test recomputes, from each request it recorded, the usage block it sent
back (tests/fakes/llm_wire.py) and checks that exactly that reached the counters, through the real OpenAI SDK.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from extract_support import fact, reply
from fakes.llm_server import FakeLLMServer, Reply, ToolCall
from fakes.llm_wire import Ids, RecordedRequest, chat_completion
from llm_fixtures import engine_fixture

from memwrap.config import Settings
from memwrap.engine.engine import Engine
from memwrap.errors import InvalidInputError
from memwrap.models import LLMUsage


async def make_engine(home: Path, fake: FakeLLMServer, provider: str = "openai", **overrides: Any) -> Engine:
    """Every role of the engine's LLM on the fake server; no worker (consolidation runs when a test asks)."""
    options: dict[str, Any] = {
        "home": home,
        "llm_provider": provider,
        "llm_model": "fake-model",
        "llm_base_url": fake.openai_base_url,
        "llm_api_key": "sk-test",
        "llm_backoff": 0.01,
        "llm_max_retries": 0,
        "llm_timeout": 10.0,
        "llm_tool_protocol": "native",  # no capability probe: the fake answers only what is scripted
        "extraction_retry_interval": 3600.0,
        "worker": "off",
    }
    options.update(overrides)
    return await Engine.open(Settings(**options))


engine = engine_fixture(make_engine)


def reported(requests: list[RecordedRequest]) -> dict[str, int]:
    """What the fake server reported for these requests (its usage block, recomputed as it computed it)."""
    total = {"requests": 0, "input_tokens": 0, "output_tokens": 0}
    for request in requests:
        assert request.provider == "openai.chat" and request.reply is not None and request.reply.status == 200
        usage = chat_completion(request.reply, "m", Ids(), json.dumps(request.body.get("messages", [])))["usage"]
        total["requests"] += 1
        total["input_tokens"] += usage["prompt_tokens"]
        total["output_tokens"] += usage["completion_tokens"]
    return total


def counted(usage: LLMUsage, purpose: str) -> dict[str, int]:
    found = [c for c in usage.by_purpose if c.purpose == purpose]
    if not found:
        return {"requests": 0, "input_tokens": 0, "output_tokens": 0}
    return {
        "requests": found[0].requests,
        "input_tokens": found[0].input_tokens,
        "output_tokens": found[0].output_tokens,
    }


async def test_extraction_usage_lands_in_the_banks_counters(engine: Engine, fake: FakeLLMServer) -> None:
    bank, other = f"usage-{uuid.uuid4().hex[:8]}", f"usage-other-{uuid.uuid4().hex[:8]}"
    # Another bank first: its extraction gets the fake's default "OK" (not JSON: asked once more, then kept raw).
    await engine.retain_many(other, [{"content": "user: A bank that the extraction below is not for."}])
    for_other = list(fake.requests)
    assert for_other
    fake.reset()
    fake.script([reply([fact("Alice moved to Lisbon in April.", "world", [0], ["Alice", "Lisbon"])])])
    await engine.retain_many(bank, [{"content": "user: I moved to Lisbon in April.", "document_id": "c1:0"}])
    extraction = list(fake.requests)
    assert extraction, "extraction made no request"
    usage = await engine.llm_usage(bank)
    assert counted(usage, "extraction") == reported(extraction)
    assert usage.total.requests == len(extraction) and usage.total.input_tokens > 0 and usage.total.output_tokens > 0
    assert [d.purpose for d in usage.days] == ["extraction"] and usage.days[0].day >= usage.since
    # Another extraction the same day adds to the same row.
    fake.script([reply([fact("Alice likes fado.", "world", [0], ["Alice"])])])
    await engine.retain_many(bank, [{"content": "user: I like fado.", "document_id": "c1:1"}])
    again = await engine.llm_usage(bank)
    assert counted(again, "extraction") == reported(fake.requests)
    assert len(again.days) == 1
    # The other bank's requests are its own, not this bank's: each bank counts exactly what was done for it.
    assert counted(await engine.llm_usage(other), "extraction") == reported(for_other)


async def test_reflect_and_consolidation_are_counted_per_purpose(engine: Engine, fake: FakeLLMServer) -> None:
    bank = f"usage-{uuid.uuid4().hex[:8]}"
    fake.script([reply([fact("The user prefers dark mode.", "world", [0])])])
    await engine.retain_many(bank, [{"content": "user: I prefer dark mode.", "document_id": "c2:0"}])
    after_extraction = len(fake.requests)

    await engine.create_mental_model(bank, "theme", "Which theme does the user like?")
    fake.script([{"content": "The user prefers dark mode.", "sources": ["M1"]}])
    await engine.refresh_mental_model(bank, "theme")
    consolidation = fake.requests[after_extraction:]
    assert consolidation

    fake.script([Reply(tool_calls=[ToolCall("done", {"answer": "Dark mode.", "memory_ids": []})])])
    await engine.reflect(bank, "Which theme does the user like?")
    reflect = fake.requests[after_extraction + len(consolidation) :]
    assert reflect

    usage = await engine.llm_usage(bank)
    assert counted(usage, "extraction") == reported(fake.requests[:after_extraction])
    assert counted(usage, "consolidation") == reported(consolidation)
    assert counted(usage, "reflect") == reported(reflect)
    assert [c.purpose for c in usage.by_purpose] == ["extraction", "consolidation", "reflect"]
    assert usage.total.requests == len(fake.requests)
    assert usage.total.input_tokens == sum(c.input_tokens for c in usage.by_purpose)


async def test_usage_of_no_bank_or_an_unknown_bank_is_not_counted(engine: Engine, fake: FakeLLMServer) -> None:
    missing = f"usage-none-{uuid.uuid4().hex[:8]}"
    fake.script([Reply(tool_calls=[ToolCall("done", {"answer": "Nothing known.", "memory_ids": []})])])
    await engine.reflect(missing, "What do you know?")  # a request was made, for a bank that does not exist
    assert len(fake.requests) >= 1
    usage = await engine.llm_usage(missing)
    assert usage.by_purpose == [] and usage.total.requests == 0 and usage.days == []
    # Outside any bank's work (a direct call of the LLM), nothing is counted anywhere and nothing fails.
    assert engine.llm is not None
    text, _ = await engine.llm.complete("Say OK.", "OK?", role="reflect")
    assert text == "OK"


@pytest.mark.parametrize("days", [0, 367, True, "7"])
async def test_the_period_is_checked(engine: Engine, days: Any) -> None:
    with pytest.raises(InvalidInputError, match="days"):
        await engine.llm_usage("anybank", days=days)
