"""What a memory unit's vector is computed from: the one rule retain, update, import and reembed follow.

A reply such as "Yes, it was amazing!" means nothing alone; with the end of the unit before it in its session, its
vector lands near the questions it answers. Only the vector sees that context: the stored text is the unit's own.

A long unit (a pasted answer, a chunk of one) carries its own meaning, so it is embedded alone: the previous
unit's end would add tokens to embed (150 long s_3q messages: 72,495 cl100k tokens embedded with it, 57,256
without, for 52,623 of chunks; issue 36) and, the model reading a bounded number of tokens, push the unit's own end
out of what the vector sees. Short turns keep their context: dropping it for them too lowered LoCoMo recall.
"""

from __future__ import annotations

# How much of the previous unit of a session joins a unit's embedding text.
PREVIOUS_CONTEXT_CHARS = 300
# A unit at least this long is embedded without the previous unit's context.
CONTEXT_FREE_CHARS = 400


def context_of(text: str | None, turn_parts: int | None) -> str | None:
    """What a unit lends the next unit of its session as context: its text, or nothing when it is a chunk of a long
    message (`turn_parts` set). A short statement after pasted code, or the last lines of a long answer, is not a
    reply to the 300 characters before it: with them its vector moved away from the questions it answers (on a
    generated long technical bank, evidence the plain dense baseline ranks 1-7 ranked 120-370; issue 36)."""
    return None if turn_parts is not None else text


def embedding_text(text: str, previous: str | None, *, chunk: bool = False) -> str:
    """What a unit's vector is computed from: its text, after the end of the unit before it (`previous`, as
    `context_of` gives it) when it has one, is not itself a chunk of a long message, and is shorter than
    CONTEXT_FREE_CHARS."""
    if chunk or not previous or len(text) >= CONTEXT_FREE_CHARS:
        return text
    return f"{previous[-PREVIOUS_CONTEXT_CHARS:]}\n{text}"
