"""The examples run as written, with the SDKs' own env vars pointing them at the fake LLM server.

They use memwrap's default memory (one `Memory()` per process, under MEMWRAP_HOME: the run's home).
"""

from __future__ import annotations

import asyncio
import importlib.util
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from conftest_wrappers import *  # noqa: F403 - fixtures
from conftest_wrappers import Reply, ToolCall, memory_block

from memwrap.block.fence import OPEN_TAG

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def example_env(monkeypatch: pytest.MonkeyPatch, llm_server: Any, warm_memory: Any, bank: str) -> Any:
    monkeypatch.setenv("OPENAI_BASE_URL", llm_server.openai_base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", llm_server.anthropic_base_url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test")
    monkeypatch.setenv("MEMWRAP_BANK", bank)
    return llm_server


@pytest.mark.parametrize(
    ("name", "fact"),
    [("openai_chat", "teal"), ("openai_async_stream", "Lisbon"), ("anthropic_chat", "vegetarian")],
)
def test_example_recalls_turn_one_in_turn_two(name: str, fact: str, example_env: Any, capsys: Any) -> None:
    main = load(name).main
    result = main()
    if asyncio.iscoroutine(result):
        asyncio.run(result)
    first, second = example_env.requests[-2:]
    assert fact in str(first.body)
    assert fact in memory_block(second)
    assert "turn 2:" in capsys.readouterr().out


def test_instructor_example(example_env: Any, capsys: Any) -> None:
    pytest.importorskip("instructor")
    example_env.script(
        [
            "Nice to meet you, Sam.",
            Reply(tool_calls=[ToolCall("Profile", {"name": "Sam", "city": "Leeds", "allergies": ["peanuts", "kiwi"]})]),
        ]
    )
    load("instructor_extract").main()
    assert "peanuts" in memory_block(example_env.last())
    assert "city='Leeds'" in capsys.readouterr().out


def test_agent_memory_tools_example(example_env: Any, warm_memory: Any, bank: str, capsys: Any) -> None:
    """The Agents SDK example: conversation 1 retains through the tool, conversation 2 recalls through it."""
    pytest.importorskip("agents")
    fact = "The user is vegetarian and is learning Portuguese for a move to Porto."
    example_env.script(
        [
            Reply(tool_calls=[ToolCall("retain_memory", {"text": fact, "tags": None})]),
            "Noted: vegetarian, Portuguese, Porto.",
            Reply(tool_calls=[ToolCall("recall_memory", {"query": "diet and language being learnt"})]),
            "Try a feijoada de legumes.",
        ]
    )
    load("agent_memory_tools").main()
    assert [r.text for r in warm_memory.list(bank)] == [fact]
    recalled = example_env.requests[-1].body["messages"][-1]
    assert recalled["role"] == "tool" and recalled["content"].startswith(OPEN_TAG) and fact in recalled["content"]
    out = capsys.readouterr().out
    assert "conversation 1 tool call: retain_memory(" in out and "conversation 2: Try a feijoada" in out
