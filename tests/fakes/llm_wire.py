"""Wire formats of the fake LLM server: scripted replies rendered as each provider's JSON and SSE events.

Kept apart from the server so the shapes are easy to compare with the providers' API references.
"""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any


@dataclass
class ToolCall:
    name: str
    arguments: dict[str, Any] | str = field(default_factory=dict)
    id: str | None = None

    @property
    def arguments_json(self) -> str:
        return self.arguments if isinstance(self.arguments, str) else json.dumps(self.arguments)


@dataclass
class Reply:
    """One scripted answer. `json` is sent as the text (structured outputs); `status` >= 400 sends an error."""

    text: str | None = None
    tool_calls: list[ToolCall] = field(default_factory=list)
    json: Any = None
    status: int = 200
    error: str = "injected error"
    delay: float = 0.0  # seconds before the response starts
    chunk_delay: float = 0.0  # seconds between stream chunks
    cut_after: int | None = None  # streams: drop the connection after this many chunks
    chunk_size: int = 8  # characters of text per stream delta
    headers: dict[str, str] = field(default_factory=dict)  # extra response headers, e.g. {"retry-after": "1"}
    finish_reason: str | None = None  # non-stream replies: OpenAI finish_reason / Anthropic stop_reason ("length")

    @property
    def content(self) -> str:
        if self.json is not None:
            return json.dumps(self.json)
        return self.text if self.text is not None else ""


ReplyLike = Reply | str | dict[str, Any] | list[Any]


def as_reply(value: ReplyLike) -> Reply:
    if isinstance(value, Reply):
        return value
    if isinstance(value, str):
        return Reply(text=value)
    return Reply(json=value)


@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: Any
    provider: str  # "openai.chat" | "openai.responses" | "anthropic.messages"
    reply: Reply | None = None

    @property
    def stream(self) -> bool:
        return bool(isinstance(self.body, dict) and self.body.get("stream"))

    @property
    def model(self) -> str:
        return str(self.body.get("model", "")) if isinstance(self.body, dict) else ""


def _tokens(text: str) -> int:
    # Rough, deterministic usage numbers; nothing in the tests depends on their exact value.
    return max(1, len(text) // 4)


class Ids:
    def __init__(self) -> None:
        self._n = itertools.count(1)

    def __call__(self, prefix: str) -> str:
        return f"{prefix}{next(self._n):06d}"


def _chunks(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or []


def _sse(data: Any, event: str | None = None) -> bytes:
    head = f"event: {event}\n" if event else ""
    payload = data if isinstance(data, str) else json.dumps(data)
    return f"{head}data: {payload}\n\n".encode()


# ---------------------------------------------------------------------------------------------- OpenAI chat


def chat_completion(reply: Reply, model: str, ids: Ids, prompt_text: str) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.content or None, "refusal": None}
    if reply.tool_calls:
        message["tool_calls"] = [
            {
                "id": tc.id or ids("call_"),
                "type": "function",
                "function": {"name": tc.name, "arguments": tc.arguments_json},
            }
            for tc in reply.tool_calls
        ]
    return {
        "id": ids("chatcmpl-"),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": reply.finish_reason or ("tool_calls" if reply.tool_calls else "stop"),
            }
        ],
        "usage": {
            "prompt_tokens": _tokens(prompt_text),
            "completion_tokens": _tokens(reply.content),
            "total_tokens": _tokens(prompt_text) + _tokens(reply.content),
        },
    }


def chat_stream(reply: Reply, model: str, ids: Ids) -> Iterable[bytes]:
    base = {"id": ids("chatcmpl-"), "object": "chat.completion.chunk", "created": int(time.time()), "model": model}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        return _sse({**base, "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]})

    yield chunk({"role": "assistant", "content": ""})
    for piece in _chunks(reply.content, reply.chunk_size):
        yield chunk({"content": piece})
    for index, tc in enumerate(reply.tool_calls):
        head = {
            "index": index,
            "id": tc.id or ids("call_"),
            "type": "function",
            "function": {"name": tc.name, "arguments": ""},
        }
        yield chunk({"tool_calls": [head]})
        for piece in _chunks(tc.arguments_json, reply.chunk_size):
            yield chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
    yield chunk({}, "tool_calls" if reply.tool_calls else "stop")
    yield _sse("[DONE]")


# ---------------------------------------------------------------------------------------------- OpenAI responses


def _response_output(reply: Reply, ids: Ids) -> list[dict[str, Any]]:
    output: list[dict[str, Any]] = []
    if reply.content or not reply.tool_calls:
        output.append(
            {
                "type": "message",
                "id": ids("msg_"),
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": reply.content, "annotations": []}],
            }
        )
    for tc in reply.tool_calls:
        output.append(
            {
                "type": "function_call",
                "id": ids("fc_"),
                "call_id": tc.id or ids("call_"),
                "name": tc.name,
                "arguments": tc.arguments_json,
                "status": "completed",
            }
        )
    return output


def response_object(reply: Reply, body: dict[str, Any], ids: Ids, *, status: str = "completed", output=None) -> dict:
    prompt_text = json.dumps(body.get("input", "")) + str(body.get("instructions") or "")
    return {
        "id": ids("resp_"),
        "object": "response",
        "created_at": time.time(),
        "model": body.get("model", ""),
        "status": status,
        "instructions": body.get("instructions"),
        "previous_response_id": body.get("previous_response_id"),
        "output": _response_output(reply, ids) if output is None else output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": body.get("tools") or [],
        "text": {"format": {"type": "text"}},
        "error": None,
        "incomplete_details": None,
        "metadata": {},
        "usage": {
            "input_tokens": _tokens(prompt_text),
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": _tokens(reply.content),
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": _tokens(prompt_text) + _tokens(reply.content),
        },
    }


def responses_stream(reply: Reply, body: dict[str, Any], ids: Ids) -> Iterable[bytes]:
    seq = itertools.count()
    final = response_object(reply, body, ids)
    start = {**final, "status": "in_progress", "output": [], "usage": None}

    def ev(kind: str, **data: Any) -> bytes:
        return _sse({"type": kind, "sequence_number": next(seq), **data}, event=kind)

    yield ev("response.created", response=start)
    yield ev("response.in_progress", response=start)
    for index, item in enumerate(final["output"]):
        if item["type"] == "message":
            text = item["content"][0]["text"]
            yield ev(
                "response.output_item.added", output_index=index, item={**item, "status": "in_progress", "content": []}
            )
            empty_part = {"type": "output_text", "text": "", "annotations": []}
            yield ev(
                "response.content_part.added", item_id=item["id"], output_index=index, content_index=0, part=empty_part
            )
            for piece in _chunks(text, reply.chunk_size):
                yield ev(
                    "response.output_text.delta",
                    item_id=item["id"],
                    output_index=index,
                    content_index=0,
                    delta=piece,
                    logprobs=[],
                )
            yield ev(
                "response.output_text.done",
                item_id=item["id"],
                output_index=index,
                content_index=0,
                text=text,
                logprobs=[],
            )
            yield ev(
                "response.content_part.done",
                item_id=item["id"],
                output_index=index,
                content_index=0,
                part=item["content"][0],
            )
        else:
            yield ev(
                "response.output_item.added",
                output_index=index,
                item={**item, "status": "in_progress", "arguments": ""},
            )
            for piece in _chunks(item["arguments"], reply.chunk_size):
                yield ev("response.function_call_arguments.delta", item_id=item["id"], output_index=index, delta=piece)
            yield ev(
                "response.function_call_arguments.done",
                item_id=item["id"],
                output_index=index,
                arguments=item["arguments"],
                name=item["name"],
            )
        yield ev("response.output_item.done", output_index=index, item=item)
    yield ev("response.completed", response=final)


# ---------------------------------------------------------------------------------------------- Anthropic messages


def anthropic_message(reply: Reply, body: dict[str, Any], ids: Ids) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if reply.content or not reply.tool_calls:
        content.append({"type": "text", "text": reply.content})
    for tc in reply.tool_calls:
        args = tc.arguments if isinstance(tc.arguments, dict) else json.loads(tc.arguments)
        content.append({"type": "tool_use", "id": tc.id or ids("toolu_"), "name": tc.name, "input": args})
    prompt_text = json.dumps(body.get("messages", [])) + json.dumps(body.get("system") or "")
    return {
        "id": ids("msg_"),
        "type": "message",
        "role": "assistant",
        "model": body.get("model", ""),
        "content": content,
        "stop_reason": reply.finish_reason or ("tool_use" if reply.tool_calls else "end_turn"),
        "stop_sequence": None,
        "usage": {"input_tokens": _tokens(prompt_text), "output_tokens": _tokens(reply.content)},
    }


def anthropic_stream(reply: Reply, body: dict[str, Any], ids: Ids) -> Iterable[bytes]:
    final = anthropic_message(reply, body, ids)
    start = {**final, "content": [], "stop_reason": None, "usage": {**final["usage"], "output_tokens": 1}}

    def ev(kind: str, **data: Any) -> bytes:
        return _sse({"type": kind, **data}, event=kind)

    yield ev("message_start", message=start)
    yield ev("ping")
    for index, block in enumerate(final["content"]):
        if block["type"] == "text":
            yield ev("content_block_start", index=index, content_block={"type": "text", "text": ""})
            for piece in _chunks(block["text"], reply.chunk_size):
                yield ev("content_block_delta", index=index, delta={"type": "text_delta", "text": piece})
        else:
            yield ev("content_block_start", index=index, content_block={**block, "input": {}})
            for piece in _chunks(json.dumps(block["input"]), reply.chunk_size):
                yield ev("content_block_delta", index=index, delta={"type": "input_json_delta", "partial_json": piece})
        yield ev("content_block_stop", index=index)
    yield ev(
        "message_delta",
        delta={"stop_reason": final["stop_reason"], "stop_sequence": None},
        usage={"output_tokens": final["usage"]["output_tokens"]},
    )
    yield ev("message_stop")
