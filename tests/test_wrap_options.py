"""The wrapper options are declared once (memwrap/wrappers/options.py) and every wrapper takes them from there.

Each wrapper's signature, as `help()` and editors show it, has every option of the declaration with the declared
default and nothing else; `scope()` has every per-call option; mypy checks that the options are typed parameters
of each wrapper (tests/typing_wrap_options.py). The checker is also run on a hand-written wrapper that drifted.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import inspect
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import memwrap
from memwrap.integrations.langchain import wrap_chat_model
from memwrap.integrations.litellm import MemwrapLogger, wrap_completion
from memwrap.models import DEFAULT_TOKEN_BUDGET
from memwrap.wrappers import _wrap
from memwrap.wrappers.options import OPTION_NAMES, Options, WrapOptions

WRAPPERS: dict[str, Callable[..., Any]] = {
    "wrap_openai": memwrap.wrap_openai,
    "wrap_anthropic": memwrap.wrap_anthropic,
    "wrap_completion": wrap_completion,
    "wrap_chat_model": wrap_chat_model,
}


def declared(cls: type[Options]) -> dict[str, Any]:
    return {
        f.name: f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
        for f in dataclasses.fields(cls)
    }


def option_problems(name: str, function: Callable[..., Any], cls: type[Options]) -> list[str]:
    """The function's keyword parameters are exactly the declared options, with the declared defaults."""
    parameters = list(inspect.signature(function).parameters.values())
    offered = {p.name: p.default for p in parameters if p.kind is inspect.Parameter.KEYWORD_ONLY}
    problems = [f"{name} lacks `{option}`" for option in declared(cls) if option not in offered]
    problems += [f"{name} takes `{option}`, which is not declared" for option in offered if option not in declared(cls)]
    problems += [
        f"{name}: `{option}` defaults to {offered[option]!r}, declared {default!r}"
        for option, default in declared(cls).items()
        if option in offered and offered[option] != default
    ]
    return problems


@pytest.mark.parametrize("name", list(WRAPPERS))
def test_every_wrapper_takes_the_declared_options(name: str) -> None:
    assert option_problems(name, WRAPPERS[name], WrapOptions) == []


def test_scope_takes_every_option_a_call_can_change() -> None:
    assert option_problems("scope", memwrap.scope, Options) == []
    assert set(OPTION_NAMES) == set(declared(Options)) - {"max_tokens"}


def test_the_shared_core_takes_the_declared_options() -> None:
    assert inspect.signature(_wrap.wrap).parameters["options"].annotation == "WrapOptions"


def test_one_default_token_budget() -> None:
    assert declared(WrapOptions)["token_budget"] == DEFAULT_TOKEN_BUDGET == 1024
    assert inspect.signature(MemwrapLogger).parameters["token_budget"].default == DEFAULT_TOKEN_BUDGET


def test_the_checker_notices_a_wrapper_that_drifted() -> None:
    def hand_written(client: Any, *, bank_id: Any = None, token_budget: int = 2048, budget: int = 0) -> Any:
        return client

    problems = option_problems("hand_written", hand_written, WrapOptions)
    assert "hand_written lacks `inject`" in problems
    assert "hand_written takes `budget`, which is not declared" in problems
    assert "hand_written: `token_budget` defaults to 2048, declared 1024" in problems


def test_options_given_by_name_are_checked_and_normalised() -> None:
    with pytest.raises(TypeError, match="unexpected keyword argument 'bank'"):
        memwrap.scope(bank="alice")  # type: ignore[call-arg]
    with memwrap.scope(bank_id="alice", tags="support", inject=None) as block:
        assert block.values == {"bank_id": "alice", "tags": ("support",)}  # None: not given
    with pytest.warns(DeprecationWarning, match="`max_tokens` is now `token_budget`"):
        assert memwrap.scope(max_tokens=300).values == {"token_budget": 300}
    with pytest.warns(DeprecationWarning, match="`max_tokens` is now `token_budget`"):
        assert WrapOptions(max_tokens=300).per_call().token_budget == 300


@pytest.mark.skipif(importlib.util.find_spec("mypy") is None, reason="mypy is not installed")
def test_the_options_are_typed_parameters_of_every_wrapper() -> None:
    module = Path(__file__).with_name("typing_wrap_options.py")
    checked = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--follow-imports=silent",
            "--ignore-missing-imports",
            "--warn-unused-ignores",
            "--cache-dir",
            str(Path(__file__).parent.parent / ".mypy_cache"),
            str(module),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
