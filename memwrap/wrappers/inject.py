"""Recall query and memory-block placement, on plain request payloads.

The wrappers pass the SDK's keyword arguments; the sidecar proxy passes the raw JSON body. Both are dicts with
the same keys (`messages`, `system`, `instructions`, `input`), so one implementation serves both. Functions
here never mutate their input: they return a shallow copy with only the touched fields rebuilt.

The block is placed exactly as `Recall.context` rendered it, after the app's own system text (which keeps the
app's static prefix cacheable by the provider), and any memory block already present is removed first, so a
request never carries two.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from memwrap.block.format import OPEN_TAG, footer, header
from memwrap.wrappers.attachments import without_unnamed_placeholders
from memwrap.wrappers.transcript import (
    Turn,
    anthropic_answer,
    anthropic_turns,
    chat_answer,
    chat_turns,
    get,
    responses_answer,
    responses_turns,
)

SEPARATOR = "\n\n"

# Only blocks memwrap rendered are ever removed: the app's own text stays as it is, even text between tags it
# wrote itself. A block is memwrap's when it is one this process injected (matched exactly, below), or when it
# has the block's exact shape (block/format.py, engine/recall/pack.py): the open tag, the header line, memory
# lines "- …" and the close tag. Memory text cannot fake the end of that shape: the renderer neutralises look-alike tags
# in it (block/fence.py), so a block holds exactly one close tag, its own.
_HEADER_RE = re.escape(header(datetime(2000, 1, 1))).replace("2000\\-01\\-01", r"\d{4}-\d{2}-\d{2}")
MEMORY_BLOCK_RE = re.compile(r"(?:\n\n)?" + _HEADER_RE + r"(?:- [^\n]*\n)*" + re.escape(footer()) + r"?")


class _RecentBlocks:
    """Blocks this process injected lately, matched exactly: a fallback should the fence ever change."""

    def __init__(self, size: int = 256) -> None:
        self._blocks: OrderedDict[str, None] = OrderedDict()
        self._size = size
        self._lock = threading.Lock()

    def add(self, block: str) -> None:
        with self._lock:
            self._blocks[block] = None
            self._blocks.move_to_end(block)
            while len(self._blocks) > self._size:
                self._blocks.popitem(last=False)

    def snapshot(self) -> list[str]:
        with self._lock:
            return list(self._blocks)


recent_blocks = _RecentBlocks()


def strip_memory(text: str) -> str:
    """`text` without any memory block (and without the separator that joined it to the app's text)."""
    if not text:
        return text
    out, changed = text, False
    for block in recent_blocks.snapshot():
        if block and block in out:
            out = out.replace(SEPARATOR + block, "").replace(block + SEPARATOR, "").replace(block, "")
            changed = True
    if OPEN_TAG in out and MEMORY_BLOCK_RE.search(out):
        out, changed = MEMORY_BLOCK_RE.sub("", out), True
    return out.strip("\n") if changed else text


def has_memory(text: str) -> bool:
    return bool(text) and strip_memory(text) != text


def _strip_content(content: Any) -> Any:
    """Content (string or list of parts) without memory blocks; parts that held only a block are dropped."""
    if isinstance(content, str):
        return strip_memory(content)
    if isinstance(content, list):
        parts = []
        for part in content:
            text = get(part, "text")
            if isinstance(text, str) and has_memory(text):
                text = strip_memory(text)
                if not text.strip():
                    continue
                part = {**_as_dict(part), "text": text}
            parts.append(part)
        return parts
    return content


def _append(content: Any, block: str) -> Any:
    """Put `block` after existing system content: joined to a string, or as one more text part of a list."""
    if content is None or (isinstance(content, str) and not content.strip()) or content == []:
        return block
    if isinstance(content, str):
        return content + SEPARATOR + block
    return [*content, {"type": "text", "text": block}]


def _as_dict(obj: Any) -> dict[str, Any]:
    if isinstance(obj, Mapping):
        return dict(obj)
    dump = getattr(obj, "model_dump", None)
    return dump(exclude_unset=True) if callable(dump) else dict(vars(obj))


# ---------------------------------------------------------------------------------------------- placement


def inject_chat(body: Mapping[str, Any], block: str) -> dict[str, Any]:
    """Chat Completions: the block goes into the first system/developer message, or a new system message."""
    messages = list(body.get("messages") or [])
    first = None
    for i, message in enumerate(messages):
        if get(message, "role") in ("system", "developer"):
            content = get(message, "content")
            stripped = _strip_content(content)
            if stripped is not content:
                messages[i] = {**_as_dict(message), "content": stripped}
            if first is None:
                first = i
    if block:
        recent_blocks.add(block)
        if first is None:
            messages.insert(0, {"role": "system", "content": block})
        else:
            message = messages[first]
            messages[first] = {**_as_dict(message), "content": _append(get(message, "content"), block)}
    return {**body, "messages": messages}


def inject_responses(body: Mapping[str, Any], block: str) -> dict[str, Any]:
    """Responses API: the block goes into `instructions` (system/developer items in `input` lose old blocks)."""
    out = dict(body)
    instructions = body.get("instructions")
    if isinstance(instructions, str):
        instructions = strip_memory(instructions)
    input_ = body.get("input")
    if isinstance(input_, list):
        cleaned = []
        for item in input_:
            if get(item, "role") in ("system", "developer"):
                content = get(item, "content")
                stripped = _strip_content(content)
                if stripped is not content:
                    item = {**_as_dict(item), "content": stripped}
            cleaned.append(item)
        out["input"] = cleaned
    if block:
        recent_blocks.add(block)
        instructions = _append(instructions, block)
    if instructions is not None or "instructions" in body:
        out["instructions"] = instructions
    return out


def inject_anthropic(body: Mapping[str, Any], block: str) -> dict[str, Any]:
    """Anthropic Messages: the block goes into `system`, a string or a list of text blocks."""
    out = dict(body)
    system = _strip_content(body.get("system"))
    if block:
        recent_blocks.add(block)
        system = _append(system, block)
    if system is not None or "system" in body:
        out["system"] = system
    return out


# ---------------------------------------------------------------------------------------------- query


def build_query(turns: list[Turn], *, max_chars: int = 1000, short_chars: int = 60, context_turns: int = 2) -> str:
    """The recall query: the last user turn, with the turns just before it when it is short ("and her sister?").

    Memory blocks are removed first; the result keeps its last `max_chars` characters (questions come last).
    """

    def said(turn: Turn) -> str:  # what a turn says: no memory block, no placeholder that names nothing
        return "\n".join(
            line for line in without_unnamed_placeholders(strip_memory(turn.text)).splitlines() if line.strip()
        ).strip()

    users = [i for i, t in enumerate(turns) if t.role == "user" and said(t)]
    if not users:
        return ""
    last = users[-1]
    parts = [said(turns[last])]
    if len(parts[0]) < short_chars:
        j = last - 1
        while j >= 0 and len(parts) <= context_turns:
            turn = turns[j]
            text = said(turn)
            if turn.role in ("user", "assistant") and text:
                parts.insert(0, text[:300])
            j -= 1
    query = "\n".join(parts)
    return query[-max_chars:]


# ---------------------------------------------------------------------------------------------- providers


@dataclass(frozen=True)
class Provider:
    """How one API shapes its requests and answers."""

    name: str
    turns: Callable[[Mapping[str, Any]], list[Turn]]
    inject: Callable[[Mapping[str, Any], str], dict[str, Any]]
    answer: Callable[[Any], list[Turn]]


def _responses_request_turns(body: Mapping[str, Any]) -> list[Turn]:
    turns = responses_turns(body.get("input"))
    instructions = body.get("instructions")
    if isinstance(instructions, str) and instructions:
        turns.insert(0, Turn("system", instructions))
    return turns


OPENAI_CHAT = Provider("openai.chat", lambda body: chat_turns(body.get("messages")), inject_chat, chat_answer)
OPENAI_RESPONSES = Provider("openai.responses", _responses_request_turns, inject_responses, responses_answer)
ANTHROPIC = Provider(
    "anthropic.messages",
    lambda body: anthropic_turns(body.get("messages"), body.get("system")),
    inject_anthropic,
    anthropic_answer,
)
PROVIDERS = {p.name: p for p in (OPENAI_CHAT, OPENAI_RESPONSES, ANTHROPIC)}


def request_turns(provider: str, body: Mapping[str, Any]) -> list[Turn]:
    """The request's turns with memory blocks removed from their text."""
    turns = PROVIDERS[provider].turns(body)
    return [Turn(t.role, strip_memory(t.text)) if has_memory(t.text) else t for t in turns]


def query_for(provider: str, body: Mapping[str, Any], **options: Any) -> str:
    return build_query(request_turns(provider, body), **options)


def inject(provider: str, body: Mapping[str, Any], block: str) -> dict[str, Any]:
    return PROVIDERS[provider].inject(body, block)
