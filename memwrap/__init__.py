"""memwrap: long-term memory for LLM applications.

import memwrap
client = memwrap.wrap_openai(OpenAI(), bank_id="alice")
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memwrap.api import AsyncMemory, Memory
from memwrap.errors import (
    BankExistsError,
    BankNotFoundError,
    EmbeddingModelMismatchError,
    InvalidBankIdError,
    InvalidBudgetError,
    InvalidContentError,
    InvalidInputError,
    LLMNotConfiguredError,
    MemoryNotFoundError,
    MemwrapError,
    SecretBlockedError,
    StoreError,
)
from memwrap.models import BankInfo, Disposition, MemoryRecord, Recall, RecalledMemory, ReflectResult, RetainItem

__version__ = "0.1.0"

if TYPE_CHECKING:  # what type checkers and editors see: the wrappers' own signatures, not __getattr__'s Any
    from memwrap.wrappers.anthropic import wrap_anthropic
    from memwrap.wrappers.openai import wrap_openai
    from memwrap.wrappers.scope import scope

# The wrappers pull in the OpenAI/Anthropic SDKs; import them only when asked for.
_WRAPPER_NAMES = ("wrap_openai", "wrap_anthropic", "scope")


def __getattr__(name: str) -> Any:
    if name in _WRAPPER_NAMES:
        from memwrap import wrappers

        return getattr(wrappers, name)
    raise AttributeError(f"module 'memwrap' has no attribute {name!r}")


__all__ = [
    "AsyncMemory",
    "BankInfo",
    "BankExistsError",
    "BankNotFoundError",
    "Disposition",
    "EmbeddingModelMismatchError",
    "InvalidBankIdError",
    "InvalidBudgetError",
    "InvalidContentError",
    "InvalidInputError",
    "LLMNotConfiguredError",
    "Memory",
    "MemoryNotFoundError",
    "MemoryRecord",
    "MemwrapError",
    "Recall",
    "RecalledMemory",
    "ReflectResult",
    "RetainItem",
    "SecretBlockedError",
    "StoreError",
    "scope",
    "wrap_anthropic",
    "wrap_openai",
]
