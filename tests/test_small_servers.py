"""Slow and small OpenAI-compatible servers, first-class: every request bounded, cut replies continued, speed
measured, concurrency adapted, capabilities probed, through the real openai SDK against the fake server."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from fakes.llm_server import FakeLLMServer, RecordedRequest, Reply, ToolCall
from pydantic import BaseModel

from memwrap.config import Settings
from memwrap.engine.llm.capabilities import Capabilities
from memwrap.engine.llm.client import LLM, Message, OutputTruncatedError, Tool
from memwrap.engine.llm.pacing import AdaptiveLimit, SpeedMeter


class Answer(BaseModel):
    value: str


def make_llm(fake: FakeLLMServer, **overrides: Any) -> LLM:
    options: dict[str, Any] = {
        "llm_provider": "openai",
        "llm_model": "small-model",
        "llm_base_url": fake.openai_base_url,
        "llm_api_key": "local",
        "llm_backoff": 0.01,
        "llm_max_retries": 1,
        "llm_timeout": 5.0,
    }
    options.update(overrides)
    return LLM.from_settings(Settings(**options))


async def test_every_request_carries_an_output_limit(fake: FakeLLMServer) -> None:
    llm = make_llm(fake)
    fake.script(["plain", {"value": "x"}, Reply(text="t")])
    await llm.complete("s", "u", role="reflect", max_tokens=77)
    await llm.structured("s", "u", Answer, role="extraction", max_tokens=88)
    await llm.tool_step([Message.user("u")], [Tool(name="t")], role="reflect", max_tokens=99)
    assert [r.body.get("max_tokens") for r in fake.requests] == [77, 88, 99]
    await llm.aclose()


async def test_a_server_that_wants_the_other_limit_name_gets_it(fake: FakeLLMServer) -> None:
    def respond(request: RecordedRequest) -> Reply:
        if "max_tokens" in request.body:
            return Reply(status=400, error="Unsupported parameter: 'max_tokens'. Use 'max_completion_tokens' instead.")
        return Reply(text="fine")

    fake.responder = respond
    llm = make_llm(fake)
    assert (await llm.complete("s", "u", role="reflect", max_tokens=50))[0] == "fine"
    assert await llm.complete("s", "again", role="reflect", max_tokens=50)
    assert [("max_tokens" in r.body, r.body.get("max_completion_tokens")) for r in fake.requests] == [
        (True, None),
        (False, 50),
        (False, 50),
    ]  # switched once, and stays switched
    await llm.aclose()


async def test_a_text_cut_at_the_limit_is_continued(fake: FakeLLMServer) -> None:
    llm = make_llm(fake)
    fake.script([Reply(text="The user moved to Lis", finish_reason="length"), Reply(text="bon in May.")])
    text, usage = await llm.complete("s", "Where did the user move?", role="reflect", max_tokens=8)
    assert text == "The user moved to Lisbon in May." and usage.calls == 2
    follow_up = fake.requests[1].body["messages"]
    assert follow_up[-2] == {"role": "assistant", "content": "The user moved to Lis"}
    assert "Continue exactly where it stopped" in follow_up[-1]["content"]

    fake.script([Reply(text="a", finish_reason="length")] * 2)
    with pytest.raises(OutputTruncatedError):
        await llm.complete("s", "u", role="reflect", max_tokens=1, continuations=1)
    await llm.aclose()


async def test_background_requests_are_bounded_by_the_measured_speed(fake: FakeLLMServer) -> None:
    llm = make_llm(fake, llm_timeout=1.0, llm_background_timeout=50.0)
    fake.script([Reply(json={"value": "x"}, delay=0.3)])
    await llm.structured("s", "u", Answer, role="extraction", background=True, max_tokens=64)
    meter = llm.meter("extraction")
    assert meter.speed is not None and meter.samples == 1
    # A request's bound follows the measured speed: longer for more output, never below llm_timeout.
    small = meter.background_timeout(10, 1, floor=1.0, ceiling=1e9)
    large = meter.background_timeout(10, 10_000, floor=1.0, ceiling=1e9)
    assert 1.0 <= small < large
    await llm.aclose()


def test_speed_meter_prefers_the_servers_own_timings() -> None:
    meter = SpeedMeter()
    assert meter.expected_seconds(100, 100) is None
    meter.record(250, 70, 20.0, prompt_per_second=25.0, generation_per_second=7.0)
    speed = meter.speed
    assert speed is not None and speed.prompt_per_second == 25.0 and speed.generation_per_second == 7.0
    # 1,000 prompt tokens at 25/s and 1,024 output tokens at 7/s: ~188 s, and three times that as the bound.
    assert meter.expected_seconds(1000, 1024) == pytest.approx(2 + 40 + 1024 / 7)
    assert meter.background_timeout(1000, 1024, floor=60, ceiling=10_000) == pytest.approx(3 * (2 + 40 + 1024 / 7))
    assert meter.background_timeout(1000, 1024, floor=60, ceiling=300) == 300


async def test_concurrency_adapts_to_an_overloaded_server(fake: FakeLLMServer) -> None:
    llm = make_llm(fake, llm_max_concurrency=4, llm_max_retries=3)
    assert llm.limit.limit == 4
    fake.script([Reply(status=503, error="busy"), Reply(status=429, error="slow down"), "ok"])
    assert (await llm.complete("s", "u", role="reflect"))[0] == "ok"
    assert llm.limit.limit == 2  # halved twice (4 → 2 → 1), then one success: back to 2
    fake.responder = lambda request: Reply(text="ok")
    for _ in range(3):
        await llm.complete("s", "u", role="reflect")
    assert llm.limit.limit == 3  # +1 after `limit` successes in a row: 2 → 3

    # The limit holds: with limit 1, two calls run one after the other.
    llm.limit.limit = 1
    fake.responder = lambda request: Reply(text="ok", delay=0.2)
    started = asyncio.get_running_loop().time()
    await asyncio.gather(llm.complete("s", "a", role="reflect"), llm.complete("s", "b", role="reflect"))
    assert asyncio.get_running_loop().time() - started >= 0.38
    await llm.aclose()


async def test_adaptive_limit_never_leaves_its_bounds() -> None:
    limit = AdaptiveLimit(3)
    for _ in range(5):
        limit.overloaded()
    assert limit.limit == 1
    for _ in range(50):
        limit.succeeded()
    assert limit.limit == 3
    async with limit.slot():
        assert limit.in_flight == 1
    assert limit.in_flight == 0


async def test_capabilities_of_a_small_server_are_probed_once(fake: FakeLLMServer) -> None:
    fake.tools_as_text = True
    fake.refuse_named_tool_choice = True
    fake.responder = lambda request: (
        Reply(tool_calls=[ToolCall("lookup", {"query": "weather"})])
        if request.body.get("tools")
        else Reply(json={"ok": True})
    )
    llm = make_llm(fake)
    found = await llm.capabilities("reflect")
    assert found == Capabilities(native_tools=False, named_tool_choice=False, json_schema=True)
    assert found.protocol == "json"
    bodies = [r.body for r in fake.requests]
    assert bodies[0]["tool_choice"] == {"type": "function", "function": {"name": "lookup"}}  # refused (400)
    assert bodies[1]["tool_choice"] == "auto" and "response_format" in bodies[2]
    assert all(b["max_tokens"] <= 48 for b in bodies)
    assert await llm.capabilities("extraction") is found and len(fake.requests) == 3  # once per model
    await llm.aclose()


async def test_a_capable_server_keeps_native_tools(fake: FakeLLMServer) -> None:
    fake.responder = lambda request: (
        Reply(tool_calls=[ToolCall("lookup", {"query": "weather"})])
        if request.body.get("tools")
        else Reply(json={"ok": True})
    )
    llm = make_llm(fake)
    found = await llm.capabilities("reflect")
    assert found == Capabilities() and found.protocol == "native" and len(fake.requests) == 2
    await llm.aclose()
    told = make_llm(fake, llm_tool_protocol="json")
    assert (await told.capabilities("reflect")).protocol == "json" and len(fake.requests) == 2  # no probe
    await told.aclose()
