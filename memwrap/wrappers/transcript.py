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

from memwrap.wrappers.attachments import attachment_text

# How a tool's output may be shown when it is retained; long outputs are mostly noise for memory.
MAX_TOOL_TEXT = 2000


@dataclass(frozen=True)
class Turn:
    """One utterance. `role` is one of "system", "user", "assistant", "tool" (a tool's result).

    `calls_tools`: an assistant turn that asked for tools, i.e. a step of a tool loop, not the turn's answer.
    """

    role: str
    text: str
    calls_tools: bool = False

    @property
    def is_answer(self) -> bool:
        """An assistant turn that ends a user turn: it asked for no tool."""
        return self.role == "assistant" and not self.calls_tools


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
    """The text of a message's content: a string, or the text parts of a list of parts joined by newlines.

    An image, audio or file part becomes a placeholder saying what it was (attachments.py), never nothing."""
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
            elif (placeholder := attachment_text(part)) is not None:
                texts.append(placeholder)
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
            calls = list(get(message, "tool_calls") or [])
            for call in calls:
                function = get(call, "function") or {}
                names[str(get(call, "id"))] = str(get(function, "name"))
                lines.append(_call_text(get(function, "name"), get(function, "arguments")))
            legacy = get(message, "function_call")
            if legacy:
                lines.append(_call_text(get(legacy, "name"), get(legacy, "arguments")))
            text = "\n".join(line for line in lines if line)
            turns.append(Turn("assistant", text, calls_tools=bool(calls or legacy)))
        elif role in ("tool", "function"):
            name = names.get(str(get(message, "tool_call_id")), get(message, "name") or "tool")
            turns.append(Turn("tool", f"{name}: {_clip(content_text(get(message, 'content')))}"))
    return turns


def chat_answer(completion: Any) -> list[Turn]:
    """The assistant turn of a ChatCompletion (first choice), or of its dict form."""
    choices = get(completion, "choices") or []
    if not choices:
        return []
    message = get(choices[0], "message")
    # Only the fields read here, through `get`: a parse() result's `parsed` is never serialized (with openai 3.x
    # that printed pydantic serializer warnings the app's own code never causes).
    fields = {key: get(message, key) for key in ("content", "refusal", "tool_calls", "function_call")}
    if not fields["content"] and fields["refusal"]:
        fields["content"] = fields["refusal"]
    return [t for t in chat_turns([{**fields, "role": "assistant"}]) if t.text]


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
            turn = Turn("system" if role in ("system", "developer") else str(role), text)
        elif kind == "function_call":
            names[str(get(item, "call_id"))] = str(get(item, "name"))
            turn = Turn("assistant", _call_text(get(item, "name"), get(item, "arguments")), calls_tools=True)
        elif kind == "function_call_output":
            name = names.get(str(get(item, "call_id")), "tool")
            turn = Turn("tool", f"{name}: {_clip(content_text(get(item, 'output')))}")
        else:
            continue
        if turn.role == "assistant" and turns and turns[-1].role == "assistant":
            # One response's items (a message, then its function calls) are one assistant turn.
            last = turns.pop()
            text = "\n".join(t for t in (last.text, turn.text) if t)
            turn = Turn("assistant", text, calls_tools=last.calls_tools or turn.calls_tools)
        turns.append(turn)
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
        calls = False
        for block in content or []:
            kind = get(block, "type")
            if kind == "text":
                lines.append(str(get(block, "text") or ""))
            elif kind == "tool_use":
                names[str(get(block, "id"))] = str(get(block, "name"))
                lines.append(_call_text(get(block, "name"), get(block, "input")))
                calls = True
            elif kind == "tool_result":
                name = names.get(str(get(block, "tool_use_id")), "tool")
                turns.append(Turn("tool", f"{name}: {_clip(content_text(get(block, 'content')))}"))
            elif (placeholder := attachment_text(block)) is not None:  # an image or a document
                lines.append(placeholder)
        text = "\n".join(line for line in lines if line)
        if text or role == "assistant":
            turns.append(Turn(role, text, calls_tools=calls and role == "assistant"))
    return turns


def anthropic_answer(message: Any) -> list[Turn]:
    return [t for t in anthropic_turns([{"role": "assistant", "content": get(message, "content") or []}]) if t.text]


# ---------------------------------------------------------------------------------------------- shared


def _ends_exchange(turn: Turn, per_step: bool) -> bool:
    return turn.role == "assistant" and (per_step or not turn.calls_tools)


def new_turns(turns: list[Turn], *, per_step: bool = False, tools: bool = True) -> list[Turn]:
    """What the app added since the last answer (no system text).

    The turns before it were retained with that answer, so a growing conversation is appended, never re-sent.
    An answer is an assistant turn that asked for no tool; `per_step` counts every assistant turn (each step of
    a tool loop is then an exchange of its own). `tools=False` keeps only what the user said: the loop's tool
    calls and tool results stay out.
    """
    last = max((i for i, t in enumerate(turns) if _ends_exchange(t, per_step)), default=-1)
    added = [t for t in turns[last + 1 :] if t.role != "system" and t.text]
    return added if tools else [t for t in added if t.role == "user"]


def turn_number(turns: list[Turn], *, per_step: bool = False) -> int:
    """How many answers came before this call: stable for a given conversation prefix, so retries dedupe.

    Without `per_step`, the steps of a tool loop share their user turn's number.
    """
    return sum(1 for t in turns if _ends_exchange(t, per_step))


def in_tool_loop(turns: list[Turn]) -> bool:
    """The request continues a tool loop: after the user's last message came a tool call or a tool's result
    (a request chained by previous_response_id carries only the result)."""
    last_user = max((i for i, t in enumerate(turns) if t.role == "user"), default=-1)
    return any(t.calls_tools or t.role == "tool" for t in turns[last_user + 1 :])


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
