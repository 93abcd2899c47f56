"""Checked by a type checker, never run: every wrapper takes the declared options (memwrap/wrappers/options.py)
as typed keyword parameters, and gives back what it was given (tests/test_wrap_options.py runs mypy on this)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anthropic
import openai

import memwrap
from memwrap.integrations.langchain import wrap_chat_model
from memwrap.integrations.litellm import wrap_completion


def openai_client(client: openai.OpenAI) -> openai.OpenAI:
    return memwrap.wrap_openai(client, bank_id="alice", token_budget=512, tags=["support"], tool_loop="step")


def anthropic_client(client: anthropic.AsyncAnthropic) -> anthropic.AsyncAnthropic:
    return memwrap.wrap_anthropic(client, bank_id=lambda: "alice", retain_assistant=False, memory_api_key=None)


def litellm_completion(completion: Callable[..., Any]) -> Callable[..., Any]:
    return wrap_completion(completion, bank_id="alice", recall_timeout=0.5, llm="openai/gpt-4o-mini")


def langchain_model(model: openai.OpenAI) -> openai.OpenAI:
    return wrap_chat_model(model, bank_id="alice", inject=False)


def a_scope() -> memwrap.scope:
    return memwrap.scope(bank_id="alice", filters={"metadata": {"project": "apollo"}})


def a_wrong_option(client: openai.OpenAI) -> openai.OpenAI:
    # The checker sees the wrapper's parameters (were it Any, this ignore would be unused: --warn-unused-ignores).
    return memwrap.wrap_openai(client, token_budget="all")  # type: ignore[arg-type]
