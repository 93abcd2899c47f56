"""Which LLM the learning work uses: consolidation, mental models and forgetting all ask the same question."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memwrap.engine.parts import EngineParts


def consolidation_llm(parts: EngineParts) -> Any | None:
    """The engine's LLM when one is configured for consolidation, else None (LLM-free grouping)."""
    llm = parts.learning().llm
    return llm if llm is not None and llm.configured("consolidation") else None
