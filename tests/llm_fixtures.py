"""Fixtures for the tests that run against the fake LLM server (tests/fakes/llm_server.py).

Registered for every test module by tests/conftest.py (`pytest_plugins`):

    server   the fake LLM server, one per test module (module scope), stopped after the module's tests
    fake     that server, reset before each test: empty script, no recorded requests, responder "OK"

A module whose tests want another answer once the script is used up declares its own `fake`:

    fake = fake_fixture(script_ran_out)

Engines on the fake server are declared by each module, built by the module's own `make_engine` (the one in
extract_support talks to the fake for extraction, the one in reflect_support for reflect); module scope, so
each module gets its own engines, closed after its tests:

    engine = engine_fixture(make_engine)
    claude = engine_fixture(make_engine, "anthropic")
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from fakes.llm_server import FakeLLMServer, RecordedRequest, ReplyLike

if TYPE_CHECKING:
    from memwrap.engine.engine import Engine

__all__ = ["engine_fixture", "fake_fixture"]


@pytest.fixture(scope="module")
def server() -> Iterator[FakeLLMServer]:
    """The fake LLM server of this test module."""
    with FakeLLMServer() as fake:
        yield fake


def fake_fixture(responder: Callable[[RecordedRequest], ReplyLike] | None = None) -> Any:
    """A `fake` fixture: the module's server reset for each test, answering with `responder` (if given) once
    the test's script is used up."""

    @pytest.fixture
    def fake(server: FakeLLMServer) -> FakeLLMServer:
        """The module's fake LLM server, reset for this test."""
        server.reset()
        if responder is not None:
            server.responder = responder
        return server

    return fake


fake = fake_fixture()


def engine_fixture(make_engine: Callable[..., Awaitable[Engine]], provider: str = "openai", **overrides: Any) -> Any:
    """A module-scoped engine fixture: `make_engine(memwrap_home, server, provider, **overrides)`, closed after
    the module's tests."""

    @pytest.fixture(scope="module")
    async def engine(memwrap_home: Path, server: FakeLLMServer) -> AsyncIterator[Engine]:
        """An engine of this test module on its fake LLM server."""
        eng = await make_engine(memwrap_home, server, provider, **overrides)
        yield eng
        await eng.close()

    return engine
