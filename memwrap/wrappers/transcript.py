"""Read conversations in each provider's shape as plain turns, and render them as text worth remembering.

Everything here works on plain request/response payloads (dicts and lists, as JSON has them) and equally on
the SDKs' pydantic objects, so the in-process wrappers and the sidecar proxy share it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

# How a tool's output may be shown when it is retained; long outputs are mostly noise for memory.
MAX_TOOL_TEXT = 2000


@dataclass(frozen=True)
class Turn:
    """One utterance. `role` is one of "system", "user", "assistant", "tool" (a tool's result)."""

    role: str
    text: str


def get(obj: Any, key: str, default: Any = None) -> Any:
    """`obj[key]` for mappings, `obj.key` for SDK objects: payloads arrive as either."""
    if isinstance(obj, Mapping):
        return obj.get(key, default)
    return getattr(obj, key, default)


def _clip(text: str, limit: int = MAX_TOOL_TEXT) -> str:
    return text if len(text) <= limit else text[:limit] + " …"


def _json(value: Any) -> str:
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(value)


def content_text(content: Any) -> str:
    """The text of a message's content: a string, or the text parts of a list of parts joined by newlines."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, Iterable) and not isinstance(content, (bytes, Mapping)):
        texts = []
        for part in content:
            if isinstance(part, str):
                texts.append(part)
                continue
            kind = get(part, "type")
            if kind in (None, "text", "input_text", "output_text"):
                text = get(part, "text")
                if isinstance(text, str) and text:
                    texts.append(text)
            elif kind == "refusal" and get(part, "refusal"):
                texts.append(str(get(part, "refusal")))
        return "\n".join(texts)
    return ""


def _call_text(name: Any, arguments: Any) -> str:
    return f"called {name}({_clip(_json(arguments))})"


# ---------------------------------------------------------------------------------------------- OpenAI chat


def chat_turns(messages: Any) -> list[Turn]:
    """Turns of a Chat Completions `messages` list (dicts or `ChatCompletionMessage` objects)."""
    turns: list[Turn] = []
    names: dict[str, str] = {}  # tool_call_id -> function name, to label tool results
    for message in messages or []:
        role = get(message, "role")
        if role in ("system", "developer"):
            turns.append(Turn("system", content_text(get(message, "content"))))
        elif role == "user":
            turns.append(Turn("user", content_text(get(message, "content"))))
        elif role == "assistant":
            lines = [content_text(get(message, "content"))]
            for call in get(message, "tool_calls") or []:
                function = get(call, "function") or {}
                names[str(get(call, "id"))] = str(get(function, "name"))
                lines.append(_call_text(get(function, "name"), get(function, "arguments")))
            if get(message, "function_call"):
                legacy = get(message, "function_call")
                lines.append(_call_text(get(legacy, "name"), get(legacy, "arguments")))
            turns.append(Turn("assistant", "\n".join(line for line in lines if line)))
        elif role in ("tool", "function"):
            name = names.get(str(get(message, "tool_call_id")), get(message, "name") or "tool")
            turns.append(Turn("tool", f"{name}: {_clip(content_text(get(message, 'content')))}"))
    return turns


def chat_answer(completion: Any) -> list[Turn]:
    """The assistant turn of a ChatCompletion (first choice), or of its dict form."""
    choices = get(completion, "choices") or []
    if not choices:
        return []
    return [t for t in chat_turns([{**_as_dict(get(choices[0], "message")), "role": "assistant"}]) if t.text]


def _as_dict(obj: Any) -> dict[str, Any]:
    if obj is None:
        return {}
    if isinstance(obj, Mapping):
        return dict(obj)
    dump = getattr(obj, "model_dump", None)
    return dump() if callable(dump) else dict(vars(obj))


# ---------------------------------------------------------------------------------------------- OpenAI responses


def responses_turns(input_: Any) -> list[Turn]:
    """Turns of a Responses API `input`: a string, or a list of messages and items."""
    if isinstance(input_, str):
        return [Turn("user", input_)]
    turns: list[Turn] = []
    names: dict[str, str] = {}
    for item in input_ or []:
        kind = get(item, "type")
        role = get(item, "role")
        if kind in (None, "message") and role:
            text = content_text(get(item, "content"))
            turns.append(Turn("system" if role in ("system", "developer") else str(role), text))
        elif kind == "function_call":
            names[str(get(item, "call_id"))] = str(get(item, "name"))
            turns.append(Turn("assistant", _call_text(get(item, "name"), get(item, "arguments"))))
        elif kind == "function_call_output":
            name = names.get(str(get(item, "call_id")), "tool")
            turns.append(Turn("tool", f"{name}: {_clip(content_text(get(item, 'output')))}"))
    return turns


def responses_answer(response: Any) -> list[Turn]:
    return [t for t in responses_turns(get(response, "output") or []) if t.role == "assistant" and t.text]


# ---------------------------------------------------------------------------------------------- Anthropic


def anthropic_turns(messages: Any, system: Any = None) -> list[Turn]:
    """Turns of an Anthropic Messages request; tool results inside user messages become "tool" turns."""
    turns: list[Turn] = []
    if system:
        turns.append(Turn("system", content_text(system)))
    names: dict[str, str] = {}
    for message in messages or []:
        role = str(get(message, "role"))
        content = get(message, "content")
        if isinstance(content, str):
            turns.append(Turn(role, content))
            continue
        lines: list[str] = []
        for block in content or []:
            kind = get(block, "type")
            if kind == "text":
                lines.append(str(get(block, "text") or ""))
            elif kind == "tool_use":
                names[str(get(block, "id"))] = str(get(block, "name"))
                lines.append(_call_text(get(block, "name"), get(block, "input")))
            elif kind == "tool_result":
                name = names.get(str(get(block, "tool_use_id")), "tool")
                turns.append(Turn("tool", f"{name}: {_clip(content_text(get(block, 'content')))}"))
        text = "\n".join(line for line in lines if line)
        if text or role == "assistant":
            turns.append(Turn(role, text))
    return turns


def anthropic_answer(message: Any) -> list[Turn]:
    return [t for t in anthropic_turns([{"role": "assistant", "content": get(message, "content") or []}]) if t.text]


# ---------------------------------------------------------------------------------------------- shared


def new_turns(turns: list[Turn]) -> list[Turn]:
    """What the app added since the last answer: everything after the last assistant turn (no system text).

    The turns before it were retained with that answer, so a growing conversation is appended, never re-sent.
    """
    last = max((i for i, t in enumerate(turns) if t.role == "assistant"), default=-1)
    return [t for t in turns[last + 1 :] if t.role != "system" and t.text]


def turn_number(turns: list[Turn]) -> int:
    """How many answers came before this call: stable for a given conversation prefix, so retries dedupe."""
    return sum(1 for t in turns if t.role == "assistant")


def session_key(turns: list[Turn]) -> str:
    """A stable id for a conversation: the system text plus its first user message."""
    system = "\n".join(t.text for t in turns if t.role == "system")
    first_user = next((t.text for t in turns if t.role == "user" and t.text), "")
    digest = hashlib.sha256(f"{system}\x00{first_user}".encode()).hexdigest()
    return f"chat-{digest[:16]}"


_LABELS = {"user": "user", "assistant": "assistant", "tool": "tool result", "system": "system"}


def render(turns: Iterable[Turn]) -> str:
    """Readable text of an exchange, one "role: text" block per turn."""
    return "\n".join(f"{_LABELS.get(t.role, t.role)}: {t.text.strip()}" for t in turns if t.text.strip())
