"""Test an app's use of memory offline: a `Memory` on `TestEngine`, an in-memory engine (no PostgreSQL, no
embedding model, no LLM) that records every call.

    from memwrap import testing

    engine = testing.TestEngine()
    memory = testing.memory(engine)         # a Memory; testing.async_memory(engine) for an AsyncMemory
    client = memwrap.wrap_openai(OpenAI(...), bank_id="user-42", memory=memory)
    ...
    assert engine.called("retain")          # what the app (or its wrapper) asked memory to do

What `TestEngine` stores and finds (and what it does not: the engine's ranking) is in memwrap/testing/engine.py;
docs/testing.md shows a whole test.
"""

from __future__ import annotations

from memwrap.api import AsyncMemory, Memory
from memwrap.config import Settings, load_settings
from memwrap.testing.engine import TestEngine

__all__ = ["TestEngine", "async_memory", "memory"]


def _settings() -> Settings:
    # The double needs no settings of its own; the wrappers read a few (timeouts, budgets) from the memory's.
    return load_settings()


def memory(engine: TestEngine | None = None) -> Memory:
    """A `Memory` whose engine is `engine` (a new `TestEngine` if None): pass it to a wrapper as `memory=`."""
    return Memory(settings=_settings(), engine=engine or TestEngine())


def async_memory(engine: TestEngine | None = None) -> AsyncMemory:
    """An `AsyncMemory` whose engine is `engine` (a new `TestEngine` if None)."""
    return AsyncMemory(settings=_settings(), engine=engine or TestEngine())
