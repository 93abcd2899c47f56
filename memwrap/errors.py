"""The exceptions users catch. Every message says what went wrong and what to do about it."""

from __future__ import annotations


class MemwrapError(Exception):
    """Base class of every memwrap error."""

    code: str = "memwrap_error"


class InvalidInputError(MemwrapError, ValueError):
    """The caller passed something memwrap cannot store or search; nothing was changed."""

    code = "invalid_input"


class InvalidBankIdError(InvalidInputError):
    code = "invalid_bank_id"


class InvalidContentError(InvalidInputError):
    code = "invalid_content"


class InvalidBudgetError(InvalidInputError):
    code = "invalid_budget"


class MemoryNotFoundError(MemwrapError, KeyError):
    code = "memory_not_found"

    def __str__(self) -> str:  # KeyError quotes its message; keep it readable
        return str(self.args[0]) if self.args else "memory not found"


class BankNotFoundError(MemwrapError, KeyError):
    code = "bank_not_found"

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "bank not found"


class StoreError(MemwrapError):
    """The database could not be reached or started."""

    code = "store_unavailable"


class EmbeddingModelMismatchError(StoreError):
    """The store was built with another embedding model than the one configured."""

    code = "embedding_model_mismatch"


class EmbeddingModelError(MemwrapError):
    code = "embedding_model_unavailable"


class ClosedError(MemwrapError):
    code = "closed"


class SecretBlockedError(InvalidInputError):
    """The bank's memory-defense policy is 'block' and the content holds a secret; nothing was stored."""

    code = "secret_blocked"


class LLMNotConfiguredError(MemwrapError):
    code = "llm_not_configured"
