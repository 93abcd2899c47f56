"""Checked by a type checker, never run: the embedded engine and the HTTP client are both `EngineVerbs`.

tests/test_verb_drift.py runs mypy on this file (and what it imports): a verb of `Engine` or `HttpEngine` whose
parameters or result stop fitting the declared ones (memwrap/engine_verbs.py, generated from memwrap/verbs.py)
is an error here, e.g. `Argument 1 has incompatible type "Engine"; expected "EngineVerbs"`.
"""

from __future__ import annotations

from memwrap.async_api import AsyncMemory
from memwrap.client.http import HttpEngine
from memwrap.engine.engine import Engine
from memwrap.engine_verbs import EngineVerbs


def embedded(engine: Engine) -> EngineVerbs:
    return engine


def over_http(engine: HttpEngine) -> EngineVerbs:
    return engine


def what_async_memory_holds(memory: AsyncMemory) -> EngineVerbs | None:
    return memory._engine  # noqa: SLF001
