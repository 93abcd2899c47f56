"""memwrap: long-term memory for LLM applications.

import memwrap
client = memwrap.wrap_openai(OpenAI(), bank_id="alice")
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:  # what type checkers and editors see; at run time each name is imported when first used
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
    from memwrap.models import (
        BankInfo,
        Disposition,
        EntityType,
        MemoryRecord,
        Recall,
        RecalledMemory,
        ReflectResult,
        RetainItem,
    )
    from memwrap.wrappers.anthropic import wrap_anthropic
    from memwrap.wrappers.openai import wrap_openai
    from memwrap.wrappers.scope import scope

# Imported when first asked for: `import memwrap` alone stays light (a hook's process imports only what it
# uses; the wrappers pull in the OpenAI/Anthropic SDKs, the API the engine).
_LAZY = {
    **dict.fromkeys(("AsyncMemory", "Memory"), "memwrap.api"),
    **dict.fromkeys(
        (
            "BankExistsError",
            "BankNotFoundError",
            "EmbeddingModelMismatchError",
            "InvalidBankIdError",
            "InvalidBudgetError",
            "InvalidContentError",
            "InvalidInputError",
            "LLMNotConfiguredError",
            "MemoryNotFoundError",
            "MemwrapError",
            "SecretBlockedError",
            "StoreError",
        ),
        "memwrap.errors",
    ),
    **dict.fromkeys(
        (
            "BankInfo",
            "Disposition",
            "EntityType",
            "MemoryRecord",
            "Recall",
            "RecalledMemory",
            "ReflectResult",
            "RetainItem",
        ),
        "memwrap.models",
    ),
    **dict.fromkeys(("wrap_openai", "wrap_anthropic", "scope"), "memwrap.wrappers"),
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'memwrap' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__all__ = [
    "AsyncMemory",
    "BankInfo",
    "BankExistsError",
    "BankNotFoundError",
    "Disposition",
    "EmbeddingModelMismatchError",
    "EntityType",
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
