"""Reading a model's JSON reply: the repairs models commonly need before pydantic validates it."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from memwrap.defense.policy import redact
from memwrap.errors import LLMOutputError

_FENCE_RE = re.compile(r"^\s*```[\w-]*\s*\n?|\n?\s*```\s*$")
_TRAILING_COMMA_RE = re.compile(r",(\s*[}\]])")
_PY_LITERALS = {"True": "true", "False": "false", "None": "null"}


def repair_json(text: str, *, truncated: bool = False) -> Any:
    """Parse a model's JSON reply, repairing what models commonly get wrong; LLMOutputError if hopeless.

    Handles: a code fence around it, prose before/after the object, trailing commas, Python literals
    (True/False/None) and, for a reply cut off at max_tokens, the missing closing brackets.
    """
    text = _FENCE_RE.sub("", text.strip()) if text else ""
    if not text:
        raise LLMOutputError("the reply was empty, not a JSON object")
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        pass
    start = min((i for i in (text.find("{"), text.find("[")) if i >= 0), default=-1)
    if start < 0:
        raise LLMOutputError(f"the reply holds no JSON object: {redact(text[:120])!r}")
    end = max(text.rfind("}"), text.rfind("]"))
    whole = text[start : end + 1] if end > start else None
    tail = text[start:]

    def fixed(candidate: str) -> str:
        return _outside_strings(candidate, lambda part: _TRAILING_COMMA_RE.sub(r"\1", _py_literals(part)))

    # Prose around a complete object first; then a reply cut short, closed; a bracket inside a string can
    # fake the end of the object, so the whole tail is tried before the slice is closed.
    attempts = [fixed(whole)] if whole else []
    attempts.append(_close_brackets(fixed(tail)))
    if whole:
        attempts.append(_close_brackets(fixed(whole)))
    for attempt in attempts:
        try:
            return json.loads(attempt)
        except json.JSONDecodeError:
            continue
    cut = " (it was cut off at the token limit)" if truncated else ""
    raise LLMOutputError(f"the reply is not valid JSON{cut}: {redact(text[:120])!r}")


def _py_literals(segment: str) -> str:
    return re.sub(r"\b(True|False|None)\b", lambda m: _PY_LITERALS[m.group()], segment)


def _outside_strings(text: str, fix: Callable[[str], str]) -> str:
    """Apply `fix` to the parts of `text` that are not inside JSON strings."""
    parts = re.split(r'("(?:[^"\\]|\\.)*(?:"|$))', text)  # an unterminated last string counts as a string
    return "".join(part if index % 2 else fix(part) for index, part in enumerate(parts))


def _close_brackets(text: str) -> str:
    """Close what a truncated reply left open: an unfinished string, then brackets, innermost first."""
    stack: list[str] = []
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "{[":
            stack.append("}" if ch == "{" else "]")
        elif ch in "}]" and stack:
            stack.pop()
    tail = '"' if in_string else ""
    body = (text + tail).rstrip()
    body = re.sub(r"[,:]\s*$", "", body)  # a dangling separator
    return body + "".join(reversed(stack))
