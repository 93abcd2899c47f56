"""The engine's LLM layer (memwrap.engine.llm.client) through the real openai/anthropic SDKs against the fake server."""

from __future__ import annotations

import asyncio
import json
import socket
import time
from typing import Any

import anthropic
import openai
import pytest
from fakes.llm_server import FakeLLMServer, Reply, ToolCall
from pydantic import BaseModel

from memwrap.config import Settings
from memwrap.engine.llm.client import (
    LLM,
    ContextOverflowError,
    LLMNotConfiguredError,
    LLMOutputError,
    LLMRequestError,
    LLMUnavailableError,
    Message,
    OutputTruncatedError,
    Tool,
    repair_json,
)
from memwrap.engine.llm.clients import llm_from_client


class Person(BaseModel):
    name: str
    age: int
    city: str | None = None


def make_llm(fake: FakeLLMServer, provider: str = "openai", **overrides: Any) -> LLM:
    base = fake.openai_base_url if provider == "openai" else fake.anthropic_base_url
    options: dict[str, Any] = {
        "llm_provider": provider,
        "llm_model": "test-model",
        "llm_base_url": base,
        "llm_api_key": "sk-test-key",
        "llm_backoff": 0.01,
        "llm_max_retries": 2,
        "llm_timeout": 5.0,
    }
    options.update(overrides)
    return LLM.from_settings(Settings(**options))


def dead_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"  # nothing listens there once the socket is closed


# --- structured output --------------------------------------------------------------------------------------


async def test_openai_structured_sends_strict_schema_and_validates(fake: FakeLLMServer) -> None:
    fake.script([{"name": "Alice", "age": 30, "city": None}])
    llm = make_llm(fake)
    person, usage = await llm.structured("You extract people.", "Alice is 30.", Person, role="extraction")
    assert person == Person(name="Alice", age=30)
    body = fake.last().body
    assert body["model"] == "test-model"
    assert body["messages"] == [
        {"role": "system", "content": "You extract people."},
        {"role": "user", "content": "Alice is 30."},
    ]
    fmt = body["response_format"]
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["strict"] is True
    schema = fmt["json_schema"]["schema"]
    assert schema["additionalProperties"] is False and schema["required"] == ["name", "age", "city"]
    assert usage.calls == 1 and usage.prompt_tokens > 0 and usage.completion_tokens > 0
    assert llm.usage["extraction"] == usage and llm.usage["reflect"].calls == 0
    assert fake.last().headers["authorization"] == "Bearer sk-test-key"
    await llm.aclose()


async def test_anthropic_structured_forces_a_tool_and_caches_the_system_prompt(fake: FakeLLMServer) -> None:
    fake.script([Reply(tool_calls=[ToolCall("person", {"name": "Bo", "age": 41})])])
    llm = make_llm(fake, "anthropic")
    person, usage = await llm.structured("Stable instructions.", "Bo is 41.", Person, role="consolidation")
    assert person.name == "Bo" and person.age == 41
    body = fake.last("anthropic.messages").body
    assert body["tool_choice"] == {"type": "tool", "name": "person"}
    assert body["tools"][0]["name"] == "person" and body["tools"][0]["input_schema"]["required"] == [
        "name",
        "age",
        "city",
    ]
    assert body["system"] == [{"type": "text", "text": "Stable instructions.", "cache_control": {"type": "ephemeral"}}]
    assert body["messages"] == [{"role": "user", "content": [{"type": "text", "text": "Bo is 41."}]}]
    assert usage.calls == 1 and llm.usage["consolidation"].calls == 1
    await llm.aclose()


async def test_malformed_json_is_repaired_without_asking_again(fake: FakeLLMServer) -> None:
    fake.script(['Sure! Here it is:\n```json\n{"name": "Cy", "age": 7,}\n```'])
    llm = make_llm(fake)
    person, _ = await llm.structured("s", "u", Person, role="extraction")
    assert person.age == 7
    assert len(fake.requests) == 1
    await llm.aclose()


async def test_invalid_reply_is_reasked_once_with_the_error(fake: FakeLLMServer) -> None:
    fake.script([{"name": "Di"}, {"name": "Di", "age": 50}])
    llm = make_llm(fake)
    person, usage = await llm.structured("s", "Di is 50.", Person, role="extraction")
    assert person.age == 50 and usage.calls == 2
    second = fake.requests[1].body["messages"]
    assert [m["role"] for m in second] == ["system", "user", "assistant", "user"]
    assert second[2]["content"] == json.dumps({"name": "Di"})
    assert "age" in second[3]["content"] and "Field required" in second[3]["content"]
    await llm.aclose()


async def test_invalid_twice_raises_output_error_with_usage(fake: FakeLLMServer) -> None:
    fake.script(["not json at all", '{"name": "x"'])
    llm = make_llm(fake)
    with pytest.raises(LLMOutputError) as info:
        await llm.structured("s", "u", Person, role="extraction")
    assert info.value.usage.calls == 2  # type: ignore[attr-defined]  # usage: set on the error by llm.py
    assert llm.usage["extraction"].calls == 2
    await llm.aclose()


async def test_endpoint_without_schema_support_gets_the_schema_in_the_prompt(fake: FakeLLMServer) -> None:
    fake.script(
        [
            Reply(status=400, error="response_format json_schema is not supported by this server"),
            {"name": "E", "age": 1},
        ]
    )
    llm = make_llm(fake)
    person, _ = await llm.structured("Base.", "u", Person, role="extraction")
    assert person.name == "E"
    retry = fake.requests[1].body
    assert "response_format" not in retry
    assert retry["messages"][0]["content"].startswith("Base.") and '"age"' in retry["messages"][0]["content"]
    fake.script([{"name": "F", "age": 2}])
    await llm.structured("Base.", "u", Person, role="extraction")
    assert "response_format" not in fake.last().body  # remembered: no second rejected request
    await llm.aclose()


# --- retries, errors --------------------------------------------------------------------------------------


async def test_429_retry_after_is_honoured(fake: FakeLLMServer) -> None:
    fake.script([Reply(status=429, error="slow down", headers={"retry-after": "1"}), {"name": "G", "age": 3}])
    llm = make_llm(fake, llm_backoff=0.0)
    started = time.monotonic()
    person, _ = await llm.structured("s", "u", Person, role="extraction")
    elapsed = time.monotonic() - started
    assert person.name == "G" and len(fake.requests) == 2
    assert elapsed >= 0.95  # it waited as told (no upper bound: a busy machine is slow, not wrong)
    await llm.aclose()


async def test_retry_after_ms_and_anthropic_overloaded(fake: FakeLLMServer) -> None:
    fake.script(
        [
            Reply(status=529, error="overloaded", headers={"retry-after-ms": "300"}),
            Reply(tool_calls=[ToolCall("person", {"name": "H", "age": 4})]),
        ]
    )
    llm = make_llm(fake, "anthropic", llm_backoff=0.0)
    started = time.monotonic()
    await llm.structured("s", "u", Person, role="extraction")
    assert time.monotonic() - started >= 0.28 and len(fake.requests) == 2
    await llm.aclose()


async def test_retry_after_longer_than_max_backoff_gives_up_at_once(fake: FakeLLMServer) -> None:
    fake.script([Reply(status=429, error="quota", headers={"retry-after": "120"})])
    llm = make_llm(fake, llm_max_backoff=5.0)
    with pytest.raises(LLMUnavailableError, match="retry after 120s"):
        await llm.structured("s", "u", Person, role="extraction")
    assert len(fake.requests) == 1
    await llm.aclose()


async def test_5xx_is_retried_then_reported(fake: FakeLLMServer) -> None:
    fake.script([Reply(status=500, error="boom")] * 3)
    llm = make_llm(fake, llm_max_retries=2)
    with pytest.raises(LLMUnavailableError, match="failed 3 time"):
        await llm.structured("s", "u", Person, role="extraction")
    assert len(fake.requests) == 3
    await llm.aclose()


async def test_timeouts_are_retried_then_reported(fake: FakeLLMServer) -> None:
    # Replies that would come after 10 s: with a 0.3 s timeout the call ends in a Timeout error, not an answer.
    fake.script([Reply(json={"name": "I", "age": 5}, delay=10)] * 2)
    llm = make_llm(fake, llm_timeout=0.3, llm_max_retries=1)
    with pytest.raises(LLMUnavailableError, match="Timeout"):
        await llm.structured("s", "u", Person, role="extraction")
    assert len(fake.requests) == 2
    await llm.aclose()


async def test_provider_down_is_unavailable() -> None:
    llm = LLM.from_settings(
        Settings(llm_provider="openai", llm_base_url=dead_url(), llm_api_key="k", llm_backoff=0.01, llm_max_retries=1)
    )
    with pytest.raises(LLMUnavailableError, match="Connection"):
        await llm.complete("s", "u", role="reflect")
    await llm.aclose()


@pytest.mark.parametrize(
    ("provider", "status", "message"),
    [
        ("openai", 400, "This model's maximum context length is 8192 tokens. However, you requested 9000 tokens."),
        ("anthropic", 400, "prompt is too long: 210000 tokens > 200000 maximum"),
        ("anthropic", 413, "Request exceeds the maximum allowed number of bytes."),
    ],
)
async def test_context_overflow_is_specific_and_not_retried(
    fake: FakeLLMServer, provider: str, status: int, message: str
) -> None:
    fake.script([Reply(status=status, error=message)])
    llm = make_llm(fake, provider)
    with pytest.raises(ContextOverflowError):
        await llm.tool_step([Message.user("hi")], [], role="reflect")
    assert len(fake.requests) == 1
    await llm.aclose()


async def test_refused_request_is_not_retried_and_redacts_secrets(fake: FakeLLMServer) -> None:
    fake.script(
        [Reply(status=401, error="Incorrect API key provided: sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789abcd")]
    )
    llm = make_llm(fake)
    with pytest.raises(LLMRequestError) as info:
        await llm.complete("s", "u", role="extraction")
    assert len(fake.requests) == 1
    assert "sk-proj-AbCd" not in str(info.value) and "[REDACTED:" in str(info.value)
    await llm.aclose()


async def test_concurrency_limit(fake: FakeLLMServer) -> None:
    fake.responder = lambda request: Reply(text="ok", delay=0.3)
    llm = make_llm(fake, llm_max_concurrency=2)
    started = time.monotonic()
    await asyncio.gather(*(llm.complete("s", str(i), role="extraction") for i in range(6)))
    elapsed = time.monotonic() - started
    assert len(fake.requests) == 6
    assert elapsed >= 0.85  # three waves of two; unlimited it would take ~0.3 s
    assert llm.usage["extraction"].calls == 6
    await llm.aclose()


# --- configuration ----------------------------------------------------------------------------------------


async def test_none_provider_raises_not_configured() -> None:
    llm = LLM.from_settings(Settings(llm_provider="none"))
    assert not llm.configured("extraction")
    with pytest.raises(LLMNotConfiguredError, match="MEMWRAP_LLM_PROVIDER"):
        await llm.complete("s", "u", role="extraction")


async def test_per_role_overrides(fake: FakeLLMServer) -> None:
    llm = LLM.from_settings(
        Settings(
            llm_provider="openai",
            llm_model="base-model",
            llm_base_url=fake.openai_base_url,
            llm_api_key="k",
            extraction_provider="none",
            reflect_model="big-model",
        )
    )
    assert not llm.configured("extraction")
    assert llm.model("consolidation") == "base-model" and llm.model("reflect") == "big-model"
    await llm.complete("s", "u", role="reflect")
    assert fake.last().body["model"] == "big-model"
    await llm.aclose()


def test_settings_read_role_overrides_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMWRAP_LLM_PROVIDER", "anthropic")
    monkeypatch.setenv("MEMWRAP_EXTRACTION_MODEL", "small-one")
    settings = Settings()
    assert settings.llm_provider == "anthropic" and settings.extraction_model == "small-one"


async def test_llm_from_client_reuses_credentials(fake: FakeLLMServer) -> None:
    client = openai.OpenAI(base_url=fake.openai_base_url, api_key="sk-client-key", max_retries=0)
    llm = llm_from_client(client, "mini-model")
    assert llm.configured("extraction") and llm.configured("reflect")
    text, _ = await llm.complete("s", "u", role="extraction")
    assert text == "OK"
    request = fake.last()
    assert request.headers["authorization"] == "Bearer sk-client-key" and request.body["model"] == "mini-model"
    await llm.aclose()
    with pytest.raises(TypeError):
        llm_from_client(object())


async def test_llm_from_a_wrapped_client_bypasses_the_wrapper(fake: FakeLLMServer, memory: Any, bank: str) -> None:
    import memwrap

    memory.retain(bank, "Alice likes green tea.")
    client = openai.AsyncOpenAI(base_url=fake.openai_base_url, api_key="sk-client-key", max_retries=0)
    wrapped = memwrap.wrap_openai(client, bank_id=bank, memory=memory)
    queued = wrapped.memwrap.retain_stats.queued
    llm = llm_from_client(wrapped, "mini-model")
    await llm.complete("What does Alice like?", "Tell me about Alice and tea.", role="reflect")
    assert fake.last().body["messages"][0] == {"role": "system", "content": "What does Alice like?"}  # nothing injected
    assert wrapped.memwrap.retain_stats.queued == queued  # a wrapped call hands its retain over as it returns
    assert await wrapped.memwrap.aflush(30)  # and anything handed over is delivered by now
    assert [m.text for m in memory.list(bank)] == ["Alice likes green tea."]
    await llm.aclose()


@pytest.mark.parametrize("sdk", ["openai", "anthropic"])
async def test_closing_memwrap_leaves_the_apps_async_client_open(fake: FakeLLMServer, sdk: str) -> None:
    if sdk == "openai":
        client: Any = openai.AsyncOpenAI(base_url=fake.openai_base_url, api_key="sk-app", max_retries=0)
    else:
        client = anthropic.AsyncAnthropic(base_url=fake.anthropic_base_url, api_key="sk-app", max_retries=0)
    llm = llm_from_client(client, "mini-model")
    await llm.complete("s", "u", role="extraction")
    await llm.aclose()
    assert not client.is_closed()  # the app keeps using its client after memwrap is closed
    await llm.complete("s", "again", role="extraction")  # and so would a second memwrap on it
    await client.close()


# --- tool loop (reflect) ----------------------------------------------------------------------------------


class Search(BaseModel):
    """Search the memory bank."""

    query: str


async def test_openai_tool_step_round_trip(fake: FakeLLMServer) -> None:
    fake.script([Reply(tool_calls=[ToolCall("search", {"query": "tide"}, id="call_1")]), "High tide at 6."])
    llm = make_llm(fake)
    tools = [Tool.from_model(Search)]
    messages = [Message.user("When is high tide?")]
    step = await llm.tool_step(messages, tools, role="reflect", system="Answer from memory.")
    assert not step.done and step.stop_reason == "tool_calls"
    assert step.tool_calls[0].name == "search" and step.tool_calls[0].arguments == {"query": "tide"}
    first = fake.requests[0].body
    assert first["tools"][0]["function"]["name"] == "search"
    assert first["tools"][0]["function"]["description"] == "Search the memory bank."
    messages += [step.message(), Message.tool_result("call_1", "tide: 6am")]
    final = await llm.tool_step(messages, tools, role="reflect", system="Answer from memory.")
    assert final.done and final.text == "High tide at 6."
    sent = fake.requests[1].body["messages"]
    assert sent[2]["tool_calls"][0]["id"] == "call_1"
    assert sent[3] == {"role": "tool", "tool_call_id": "call_1", "content": "tide: 6am"}
    assert llm.usage["reflect"].calls == 2
    await llm.aclose()


async def test_anthropic_tool_step_round_trip(fake: FakeLLMServer) -> None:
    fake.script(
        [
            Reply(
                tool_calls=[
                    ToolCall("search", {"query": "a"}, id="toolu_1"),
                    ToolCall("search", {"query": "b"}, id="toolu_2"),
                ]
            ),
            "Done.",
        ]
    )
    llm = make_llm(fake, "anthropic")
    tools = [Tool.from_model(Search)]
    messages = [Message.user("Look up a and b.")]
    step = await llm.tool_step(messages, tools, role="reflect", tool_choice="required")
    assert [c.id for c in step.tool_calls] == ["toolu_1", "toolu_2"]
    assert fake.requests[0].body["tool_choice"] == {"type": "any"}
    messages += [
        step.message(),
        Message.tool_result("toolu_1", "A"),
        Message.tool_result("toolu_2", "B", is_error=True),
    ]
    final = await llm.tool_step(messages, tools, role="reflect")
    assert final.text == "Done."
    sent = fake.requests[1].body["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "user"]  # both results in one user turn
    assert [b["type"] for b in sent[1]["content"]] == ["tool_use", "tool_use"]
    assert sent[2]["content"][1] == {"type": "tool_result", "tool_use_id": "toolu_2", "content": "B", "is_error": True}
    await llm.aclose()


async def test_tool_call_with_broken_arguments_is_reported_not_raised(fake: FakeLLMServer) -> None:
    fake.script([Reply(tool_calls=[ToolCall("search", '{"query": "unterminated', id="c9")])])
    llm = make_llm(fake)
    step = await llm.tool_step([Message.user("x")], [Tool.from_model(Search)], role="reflect")
    assert step.tool_calls[0].arguments == {} and step.tool_calls[0].raw_arguments == '{"query": "unterminated'
    await llm.aclose()


# --- JSON repair ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"a": 1}', {"a": 1}),
        ('```json\n{"a": [1, 2,],}\n```', {"a": [1, 2]}),
        ('Here you go: {"a": true} Hope it helps!', {"a": True}),
        ('{"a": True, "b": None}', {"a": True, "b": None}),
        ('{"a": "x, ]", "b": [1', {"a": "x, ]", "b": [1]}),
        ('{"facts": [{"text": "cut off mid-str', {"facts": [{"text": "cut off mid-str"}]}),
    ],
)
def test_repair_json(text: str, expected: Any) -> None:
    assert repair_json(text) == expected


@pytest.mark.parametrize("text", ["", "no json here", "{]"])
def test_repair_json_gives_up(text: str) -> None:
    with pytest.raises(LLMOutputError):
        repair_json(text)


async def test_a_reply_cut_at_the_output_limit_is_not_accepted(fake: FakeLLMServer) -> None:
    # Valid JSON, but the model stopped at max_tokens: what is missing cannot be known, so it is an error.
    fake.script([Reply(json={"name": "J", "age": 9}, finish_reason="length")])
    llm = make_llm(fake)
    with pytest.raises(OutputTruncatedError):
        await llm.structured("s", "u", Person, role="extraction")
    assert len(fake.requests) == 1  # no re-ask: it would be cut the same way
    fake.script([Reply(tool_calls=[ToolCall("person", {"name": "J", "age": 9})], finish_reason="max_tokens")])
    claude = make_llm(fake, "anthropic")
    with pytest.raises(OutputTruncatedError):
        await claude.structured("s", "u", Person, role="extraction")
    await llm.aclose()
    await claude.aclose()
