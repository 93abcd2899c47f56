"""Fixtures and helpers for the wrapper tests (and anyone needing a fake LLM).

Import into a test module with `from conftest_wrappers import *` (tests/ is on sys.path under pytest), or
register once in tests/conftest.py with `pytest_plugins = ["conftest_wrappers"]`.
The `memory` and `bank` fixtures come from tests/conftest.py: one real embedded PostgreSQL per run.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest
from fakes.llm_server import FakeLLMServer, RecordedRequest, Reply, ToolCall

from memwrap import testing
from memwrap.block.format import CLOSE_TAG, OPEN_TAG
from memwrap.wrappers.transcript import content_text

__all__ = [
    "FakeLLMServer",
    "RecordedRequest",
    "Reply",
    "ToolCall",
    "anthropic_sdk",
    "blocks_in",
    "fake_llm",
    "llm_server",
    "engine_memory",
    "memory_block",
    "memory_double",
    "openai_sdk",
    "pg_socket",
    "system_text",
    "warm_memory",
]

BLOCK_RE = re.compile(re.escape(OPEN_TAG) + r".*?" + re.escape(CLOSE_TAG) + r"\n?", re.DOTALL)


@pytest.fixture(scope="session")
def warm_memory(memory: Any) -> Any:
    """The session's Memory with its engine started (PostgreSQL up, embedding model loaded).

    Wrapped calls fail open while the engine starts; tests about placement want it ready first.
    """
    memory.banks()
    return memory


@pytest.fixture(scope="session")
def engine_memory(memory: Any) -> Any:
    """The session's Memory on the real engine, started (as `warm_memory` is): in a module whose `warm_memory` is
    the double, for the tests that check what the engine stores (speakers, metadata filters)."""
    memory.banks()
    return memory


def memory_double() -> Any:
    """A module's memory fixture on memwrap.testing's in-memory engine, for tests of what the wrappers do with
    memory, not of what the engine stores or ranks (no PostgreSQL for them): `warm_memory = memory_double()`."""

    @pytest.fixture(scope="module")
    def on_the_double() -> Iterator[Any]:
        with testing.memory() as memory:
            yield memory

    return on_the_double


@pytest.fixture(scope="session")
def fake_llm() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as server:
        yield server


@pytest.fixture
def llm_server(fake_llm: FakeLLMServer) -> FakeLLMServer:
    """The session's fake LLM server, with an empty script and no recorded requests."""
    fake_llm.reset()
    return fake_llm


def openai_sdk(server: FakeLLMServer, *, is_async: bool = False, **kwargs: Any) -> Any:
    """A real OpenAI/AsyncOpenAI client pointed at the fake server (no retries: errors surface at once)."""
    from openai import AsyncOpenAI, OpenAI

    cls = AsyncOpenAI if is_async else OpenAI
    return cls(base_url=server.openai_base_url, api_key="test", max_retries=0, **kwargs)


def anthropic_sdk(server: FakeLLMServer, *, is_async: bool = False, **kwargs: Any) -> Any:
    from anthropic import Anthropic, AsyncAnthropic

    cls = AsyncAnthropic if is_async else Anthropic
    return cls(base_url=server.anthropic_base_url, api_key="test", max_retries=0, **kwargs)


def system_text(request: RecordedRequest) -> str:
    """The system prompt a recorded request carried upstream, as one string."""
    body = request.body
    if request.provider == "openai.chat":
        return "\n".join(
            content_text(m.get("content")) for m in body.get("messages", []) if m.get("role") in ("system", "developer")
        )
    if request.provider == "openai.responses":
        return str(body.get("instructions") or "")
    return content_text(body.get("system"))


def memory_block(request: RecordedRequest) -> str:
    """The one memory block in a request's system prompt ("" if none)."""
    found = BLOCK_RE.findall(system_text(request))
    assert len(found) <= 1, f"more than one memory block upstream: {found}"
    return found[0] if found else ""


def blocks_in(value: Any) -> int:
    """How many memory blocks appear anywhere in a request body (or any JSON-able value)."""
    return json.dumps(value).count(OPEN_TAG.replace("<", "\\u003c")) + json.dumps(value).count(OPEN_TAG)


def pg_socket(url: str) -> str:
    """The unix socket path of an embedded-PostgreSQL URL ("postgresql://postgres:@/postgres?host=DIR")."""
    parsed = urlparse(url)
    host = parse_qs(parsed.query).get("host", [""])[0]
    port = parsed.port or int(parse_qs(parsed.query).get("port", ["5432"])[0])
    return str(Path(host) / f".s.PGSQL.{port}")
