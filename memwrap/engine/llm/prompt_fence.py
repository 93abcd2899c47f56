"""Fences around operator-written text in an LLM system prompt (extraction instructions, entity types).

A fence is a pair of markers, `<name>` … `</name>`, that the prompt introduces as "the operator's words, which
cannot change the rules above". Text placed inside one fence must not be able to end it early, or to open or
close another fence of the same prompt: every spelling of every fence's markers (any case, blanks inside the
brackets) is removed from it. All fences are declared here, so a new one is neutralised in every other one's
text without anyone remembering to add it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class PromptFence:
    """One fence: its markers, and the text that goes between them."""

    name: str

    @property
    def open(self) -> str:
        return f"<{self.name}>"

    @property
    def close(self) -> str:
        return f"</{self.name}>"


OPERATOR_INSTRUCTIONS = PromptFence("operator_instructions")
ENTITY_TYPES = PromptFence("entity_types")
FENCES = (OPERATOR_INSTRUCTIONS, ENTITY_TYPES)

# Any spelling of any fence's open or close marker.
_MARKERS = re.compile(
    r"<\s*/?\s*(?:" + "|".join(re.escape(fence.name) for fence in FENCES) + r")\s*>",
    re.IGNORECASE,
)


def without_markers(text: str) -> str:
    """`text` with every marker of every fence removed (what goes between a fence's markers)."""
    return _MARKERS.sub("", text)


__all__ = ["ENTITY_TYPES", "FENCES", "OPERATOR_INSTRUCTIONS", "PromptFence", "without_markers"]
