"""Reflect's limits: the context-token budget of the conversation, iterations, and the wall clock.

The budget is counted by us, with tiktoken, over everything a request carries (system prompt, tool schemas,
messages, tool-call arguments), so it is enforced *before* a request goes out instead of discovered by the
provider's overflow error after it. Providers count with their own tokenizers; ours is an estimate of the same
order, which is why a provider overflow is still caught (agent.py) and ends in the same synthesis.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import tiktoken

from memwrap.engine.llm.types import Message, Tool
from memwrap.tokens import encoding_for_model

# Every message costs a few tokens of framing (role, separators) beyond its text, on every provider.
MESSAGE_OVERHEAD = 4
# A tool's result is never cut below this: smaller than this, a result says nothing useful.
MIN_RESULT_TOKENS = 48
# Kept free for the model's next turn to be asked (a short user nudge in the synthesis) and rounding.
SAFETY_TOKENS = 64
# One call takes at most this part of the whole budget: a single broad search must not leave nothing for the
# turns after it (an even split of the room left still applies below this).
MAX_SHARE = 0.25


class TokenCounter:
    def __init__(self, model: str | None = None) -> None:
        self.encoding: tiktoken.Encoding = encoding_for_model(model)

    def text(self, text: str) -> int:
        return len(self.encoding.encode(text, disallowed_special=())) if text else 0

    def cut(self, text: str, max_tokens: int) -> tuple[str, bool]:
        """`text` within `max_tokens`, cut at a line end when one is near (whole memory lines read better)."""
        tokens = self.encoding.encode(text, disallowed_special=())
        if len(tokens) <= max_tokens:
            return text, False
        marker = "\n[… cut to fit the context budget]"
        keep = max(0, max_tokens - self.text(marker))
        head = self.encoding.decode(tokens[:keep])
        line_end = head.rfind("\n")
        if line_end > len(head) // 2:
            head = head[:line_end]
        return head + marker, True

    def message(self, message: Message) -> int:
        total = MESSAGE_OVERHEAD + self.text(message.content)
        for call in message.tool_calls:
            arguments = call.raw_arguments if call.raw_arguments is not None else json.dumps(call.arguments)
            total += MESSAGE_OVERHEAD + self.text(call.name) + self.text(arguments)
        return total

    def tools(self, tools: Sequence[Tool]) -> int:
        return sum(self.text(t.name) + self.text(t.description) + self.text(json.dumps(t.parameters)) for t in tools)

    def request(self, system: str, messages: Sequence[Message], tools: Sequence[Tool] = ()) -> int:
        return self.text(system) + self.tools(tools) + sum(self.message(m) for m in messages)


@dataclass
class Limits:
    max_tokens: int
    max_iterations: int
    timeout: float
    synthesis_timeout: float
    answer_tokens: int
    started: float = field(default_factory=time.monotonic)

    @property
    def deadline(self) -> float:
        return self.started + self.timeout

    def time_left(self) -> float:
        return self.deadline - time.monotonic()

    def shares(self, used: int, calls: int) -> list[int] | None:
        """Each call's cap for a turn of `calls` tool calls, when the prompt holds `used` tokens: the room left,
        divided evenly, after each result's framing, and at most MAX_SHARE of the budget each. None when even
        MIN_RESULT_TOKENS each would not fit."""
        if calls <= 0:
            return []
        room = self.max_tokens - used - SAFETY_TOKENS - calls * MESSAGE_OVERHEAD
        share = room // calls
        if share < MIN_RESULT_TOKENS:
            return None
        return [min(share, max(MIN_RESULT_TOKENS, int(self.max_tokens * MAX_SHARE)))] * calls


__all__ = ["MAX_SHARE", "MESSAGE_OVERHEAD", "MIN_RESULT_TOKENS", "SAFETY_TOKENS", "Limits", "TokenCounter"]
