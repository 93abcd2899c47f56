"""A model's output that only repeats its prompt is not knowledge: reject it.

A small model asked to turn turns into facts, or facts into observations, sometimes returns the prompt's own
wording (an instruction, an illustration) as if it were a memory; "Since April 2026 the user prefers Vue
(before that: React)" became an observation word for word. Prompts therefore illustrate with placeholders
("<current state>") instead of plausible memories, and whatever a model returns is checked here: text that
holds a placeholder, or that is a long enough run of the prompt's own words, is an echo.
"""

from __future__ import annotations

import re

_PLACEHOLDER = re.compile(r"<[^<>\n]{1,40}>")
_WORDS = re.compile(r"\w+", re.UNICODE)
# An output sharing a run of this many words with its prompt copied the prompt (memories are not instructions).
ECHO_WORDS = 6


def _norm(text: str) -> list[str]:
    return [w.casefold() for w in _WORDS.findall(text)]


class EchoGuard:
    """Checks outputs against one prompt (built once per prompt: the prompt's word runs are indexed)."""

    def __init__(self, prompt: str, *, words: int = ECHO_WORDS) -> None:
        self.words = words
        tokens = _norm(prompt)
        self._runs = {tuple(tokens[i : i + words]) for i in range(max(0, len(tokens) - words + 1))}
        self._placeholders = {p.casefold() for p in _PLACEHOLDER.findall(prompt)}

    def echoes(self, text: str) -> bool:
        """True when `text` holds one of the prompt's placeholders, or a run of `words` of the prompt's words."""
        if self._placeholders and any(p.casefold() in self._placeholders for p in _PLACEHOLDER.findall(text)):
            return True
        tokens = _norm(text)
        if not tokens:
            return False
        if len(tokens) < self.words:
            return False
        return any(tuple(tokens[i : i + self.words]) in self._runs for i in range(len(tokens) - self.words + 1))


__all__ = ["ECHO_WORDS", "EchoGuard"]
