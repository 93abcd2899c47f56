"""The exceptions users catch. Every message says what went wrong and what to do about it."""

from __future__ import annotations

from typing import Any


class MemwrapError(Exception):
    """Base class of every memwrap error."""

    code: str = "memwrap_error"


class InvalidInputError(MemwrapError, ValueError):
    """The caller passed something memwrap cannot store or search; nothing was changed."""

    code = "invalid_input"


class ConflictError(InvalidInputError):
    """The request is well formed, but the bank's state refuses it now (a name taken, a limit reached): 409 over
    HTTP. An InvalidInputError too, so code that caught that still does."""

    code = "conflict"


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


class EntityNotFoundError(MemwrapError, KeyError):
    """No entity of that id in the bank (`entities(bank_id)` lists the bank's entities and their ids)."""

    code = "entity_not_found"

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "entity not found"


class WebhookNotFoundError(MemwrapError, KeyError):
    """No webhook subscription of that id in the bank (`webhooks(bank_id)` lists them, with their ids)."""

    code = "webhook_not_found"

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "webhook not found"


class BankExistsError(MemwrapError):
    """create_bank on a bank id that is taken (configure_bank changes an existing bank)."""

    code = "bank_exists"


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


class LLMError(MemwrapError):
    """A call to the LLM the engine uses for its own work (extraction, consolidation, reflect) failed."""

    code = "llm_error"


class LLMUnavailableError(LLMError):
    """The provider could not be reached or kept failing (timeouts, 429, 5xx) after every retry."""

    code = "llm_unavailable"


class LLMRequestError(LLMError):
    """The provider refused the request (bad key, unknown model, malformed request): retrying will not help."""

    code = "llm_request_rejected"


class LLMOutputError(LLMError):
    """The model's reply did not have the required shape, even after JSON repair and one re-ask."""

    code = "llm_invalid_output"
    usage: Any = None  # the tokens the failed call spent, when known (memwrap/engine/llm.py sets it)


class ContextOverflowError(LLMError):
    """The prompt does not fit the model's context window: send less (fewer messages, shorter tool results)."""

    code = "llm_context_overflow"
