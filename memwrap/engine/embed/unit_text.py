"""What a memory unit's vector is computed from: the one rule retain, update, import and reembed follow.

A reply such as "Yes, it was amazing!" means nothing alone; with the end of the unit before it in its session, its
vector lands near the questions it answers. Only the vector sees that context: the stored text is the unit's own.
"""

from __future__ import annotations

# How much of the previous unit of a session joins a unit's embedding text.
PREVIOUS_CONTEXT_CHARS = 300


def embedding_text(text: str, previous: str | None) -> str:
    """What a unit's vector is computed from: its text, after the end of the unit before it when it has one."""
    return f"{previous[-PREVIOUS_CONTEXT_CHARS:]}\n{text}" if previous else text
