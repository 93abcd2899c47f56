"""Helpers for the reflect tests: an engine whose reflect LLM is the fake server, a bank with all three layers
(mental model, observation, facts), scripted tool calls, and readers of what the fake server received."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from fakes.llm_server import FakeLLMServer, Reply, ToolCall

from memwrap.config import Settings
from memwrap.engine.engine import Engine
from memwrap.tokens import encoding_for_model

START = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
NOW = datetime(2026, 3, 1, tzinfo=UTC)
DARK_MODE = [
    "I prefer dark mode in my code editor.",
    "I really prefer dark mode in my code editor.",
    "Honestly, I prefer dark mode in my code editor.",
    "I still prefer dark mode in my code editor.",
]
OTHER = "My sister Maya lives in Lisbon and works as an architect."


async def make_engine(home: Path, fake: FakeLLMServer, provider: str = "openai", **overrides: Any) -> Engine:
    """An engine on the test database whose reflect role (only) talks to the fake server; no worker."""
    base = fake.openai_base_url if provider == "openai" else fake.anthropic_base_url
    options: dict[str, Any] = {
        "home": home,
        "llm_provider": "none",
        "reflect_provider": provider,
        "reflect_model": "fake-reflector",
        "reflect_base_url": base,
        "reflect_api_key": "sk-test",
        "llm_backoff": 0.01,
        "llm_max_retries": 0,
        "llm_timeout": 10.0,
        "worker": "off",
        "llm_tool_protocol": "native",  # the fake answers as scripted: no capability probe (test_reflect_protocols)
    }
    options.update(overrides)
    return await Engine.open(Settings(**options))


async def three_layers(engine: Engine, bank: str) -> dict[str, Any]:
    """Four restatements (one heuristic observation), an unrelated fact, and a refreshed mental model."""
    facts = []
    for i, text in enumerate(DARK_MODE):
        facts += await engine.retain_many(
            bank, [{"content": text, "timestamp": START + timedelta(days=3 * i), "document_id": f"chat-{i}:1"}]
        )
    other = await engine.retain_many(bank, [{"content": OTHER, "timestamp": START, "document_id": "chat-9:1"}])
    await engine.consolidate(bank)
    [observation] = await engine.observations(bank, now=NOW)
    await engine.create_mental_model(bank, "editor", "Which theme does the user like in their code editor?")
    model = await engine.refresh_mental_model(bank, "editor")
    return {"facts": facts, "other": other[0], "observation": observation, "model": model}


def script_ran_out(request: Any) -> Reply:
    """The fake server's answer once a test's script is used up: a loop that asks for more than the test
    scripted fails loudly instead of getting "OK"."""
    return Reply(status=500, error="the script ran out")


def call(name: str, **arguments: Any) -> ToolCall:
    return ToolCall(name, arguments)


def turn(*calls: ToolCall) -> Reply:
    return Reply(tool_calls=list(calls))


def done(answer: str, *ids: str, **extra: Any) -> Reply:
    return turn(call("done", answer=answer, memory_ids=list(ids), **extra))


# --- what the fake server received ----------------------------------------------------------------------------


def tool_names(request: Any) -> list[str]:
    tools = request.body.get("tools") or []
    return [t["function"]["name"] if "function" in t else t["name"] for t in tools]


def system_of(request: Any) -> str:
    body = request.body
    if request.provider == "anthropic.messages":
        return "".join(block["text"] for block in body.get("system") or [])
    return next((m["content"] for m in body["messages"] if m["role"] == "system"), "")


def tool_results(request: Any) -> list[str]:
    """The tool results the request carries, in order (OpenAI tool messages, Anthropic tool_result blocks)."""
    body = request.body
    if request.provider == "anthropic.messages":
        return [
            block["content"] if isinstance(block["content"], str) else json.dumps(block["content"])
            for m in body["messages"]
            if m["role"] == "user" and isinstance(m["content"], list)
            for block in m["content"]
            if block.get("type") == "tool_result"
        ]
    return [m["content"] for m in body["messages"] if m["role"] == "tool"]


def last_turn_results(request: Any) -> list[str]:
    """Only the results answering the request's last assistant turn."""
    body = request.body
    if request.provider == "anthropic.messages":
        last = body["messages"][-1]
        return [b["content"] for b in last["content"] if b.get("type") == "tool_result"]
    out: list[str] = []
    for message in reversed(body["messages"]):
        if message["role"] != "tool":
            break
        out.insert(0, message["content"])
    return out


def tokens(text: str) -> int:
    return len(encoding_for_model(None).encode(text, disallowed_special=()))


def user_texts(request: Any) -> str:
    body = request.body
    parts = []
    for m in body["messages"]:
        if m["role"] != "user":
            continue
        content = m["content"]
        if isinstance(content, str):
            parts.append(content)
        else:
            parts += [b.get("text", "") for b in content if b.get("type") == "text"]
    return "\n".join(parts)


def request_size(request: Any) -> int:
    """Tokens of what a request carried: the system prompt, every message's text, tool-call arguments and tool
    results, and the tools' names, descriptions and parameter schemas (the JSON punctuation around them left out)."""
    body = request.body
    total = 0
    if request.provider == "anthropic.messages":
        total += tokens(system_of(request))
        for message in body["messages"]:
            for block in message["content"]:
                if block["type"] == "text":
                    total += tokens(block["text"])
                elif block["type"] == "tool_use":
                    total += tokens(block["name"]) + tokens(json.dumps(block["input"]))
                elif block["type"] == "tool_result":
                    total += tokens(block["content"])
        for tool in body.get("tools") or []:
            total += tokens(tool["name"]) + tokens(tool["description"]) + tokens(json.dumps(tool["input_schema"]))
        return total
    for message in body["messages"]:
        total += tokens(message.get("content") or "")
        for tool_call in message.get("tool_calls") or []:
            total += tokens(tool_call["function"]["name"]) + tokens(tool_call["function"]["arguments"])
    for tool in body.get("tools") or []:
        function = tool["function"]
        total += tokens(function["name"]) + tokens(function["description"]) + tokens(json.dumps(function["parameters"]))
    return total
