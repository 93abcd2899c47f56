"""Capture a streamed answer, whatever way the app consumes it, and hand it to the call once.

Accumulators read stream events in each provider's shape (dicts from raw SSE, as the sidecar sees them, or
the SDKs' objects). Proxies sit between the app and the SDK's stream: they feed the accumulator and finish
the call when the stream ends, is closed, exits its `with` block, or is garbage-collected unfinished
(`weakref.finalize` on the proxy; the finalizer holds the SDK stream, never the proxy, so it can run).
"""

from __future__ import annotations

import json
import weakref
from collections.abc import Callable
from typing import Any, Protocol

import wrapt

from memwrap.wrappers.transcript import Turn, _call_text, anthropic_answer, chat_answer, get, responses_answer


class Finisher(Protocol):
    def finish(self, answer: list[Turn], *, partial: bool = False, response_id: str | None = None) -> None: ...


class ChatAccumulator:
    """Chat Completions chunks: content deltas and tool-call fragments of the first choice."""

    def __init__(self) -> None:
        self.text: list[str] = []
        self.calls: dict[int, dict[str, str]] = {}
        self.done = False
        self.response_id: str | None = None

    def feed(self, chunk: Any) -> None:
        if get(chunk, "type") == "chunk" and get(chunk, "chunk") is not None:  # the .stream() helper's events
            chunk = get(chunk, "chunk")
        for choice in get(chunk, "choices") or []:
            if (get(choice, "index") or 0) != 0:
                continue
            delta = get(choice, "delta") or {}
            if get(delta, "content"):
                self.text.append(str(get(delta, "content")))
            for call in get(delta, "tool_calls") or []:
                slot = self.calls.setdefault(int(get(call, "index") or 0), {"name": "", "arguments": ""})
                function = get(call, "function") or {}
                slot["name"] += get(function, "name") or ""
                slot["arguments"] += get(function, "arguments") or ""
            if get(choice, "finish_reason"):
                self.done = True

    def answer(self) -> list[Turn]:
        lines = ["".join(self.text)] + [_call_text(c["name"], c["arguments"]) for _, c in sorted(self.calls.items())]
        text = "\n".join(line for line in lines if line)
        return [Turn("assistant", text, calls_tools=bool(self.calls))] if text else []


class ResponsesAccumulator:
    """Responses API events: text deltas, finished function calls, and the final response when it comes."""

    def __init__(self) -> None:
        self.text: list[str] = []
        self.calls: list[str] = []
        self.final: Any = None
        self.done = False
        self.response_id: str | None = None

    def feed(self, event: Any) -> None:
        kind = get(event, "type")
        if kind == "response.created":
            self.response_id = get(get(event, "response"), "id")
        elif kind == "response.output_text.delta":
            self.text.append(str(get(event, "delta") or ""))
        elif kind == "response.output_item.done" and get(get(event, "item"), "type") == "function_call":
            item = get(event, "item")
            self.calls.append(_call_text(get(item, "name"), get(item, "arguments")))
        elif kind in ("response.completed", "response.incomplete", "response.failed"):
            self.final = get(event, "response")
            self.response_id = get(self.final, "id") or self.response_id
            self.done = kind == "response.completed"

    def answer(self) -> list[Turn]:
        if self.final is not None:
            return responses_answer(self.final)
        text = "\n".join(line for line in ["".join(self.text), *self.calls] if line)
        return [Turn("assistant", text, calls_tools=bool(self.calls))] if text else []


class AnthropicAccumulator:
    """Anthropic message events: text and tool_use input deltas per content block."""

    def __init__(self) -> None:
        self.blocks: dict[int, dict[str, Any]] = {}
        self.done = False
        self.response_id: str | None = None

    def feed(self, event: Any) -> None:
        kind = get(event, "type")
        if kind == "message_start":
            self.response_id = get(get(event, "message"), "id")
        elif kind == "content_block_start":
            block = get(event, "content_block")
            self.blocks[int(get(event, "index") or 0)] = {
                "type": get(block, "type"),
                "name": get(block, "name"),
                "text": get(block, "text") or "",
                "json": "",
            }
        elif kind == "content_block_delta":
            slot = self.blocks.setdefault(
                int(get(event, "index") or 0), {"type": "text", "name": None, "text": "", "json": ""}
            )
            delta = get(event, "delta")
            if get(delta, "type") == "text_delta":
                slot["text"] += get(delta, "text") or ""
            elif get(delta, "type") == "input_json_delta":
                slot["json"] += get(delta, "partial_json") or ""
        elif kind == "message_stop":
            self.done = True

    def answer(self) -> list[Turn]:
        content = []
        for _, block in sorted(self.blocks.items()):
            if block["type"] == "text":
                content.append({"type": "text", "text": block["text"]})
            elif block["type"] == "tool_use":
                try:
                    arguments: Any = json.loads(block["json"]) if block["json"] else {}
                except ValueError:
                    arguments = block["json"]
                content.append({"type": "tool_use", "id": "", "name": block["name"], "input": arguments})
        return anthropic_answer({"content": content})


ACCUMULATORS: dict[str, Callable[[], Any]] = {
    "openai.chat": ChatAccumulator,
    "openai.responses": ResponsesAccumulator,
    "anthropic.messages": AnthropicAccumulator,
}


# ---------------------------------------------------------------------------------------------- capture


class Capture:
    """Feeds an accumulator and finishes the call exactly once. Holds no reference to any proxy."""

    def __init__(self, call: Finisher, accumulator: Any, snapshot: Callable[[Any], Any] | None = None):
        self.call = call
        self.acc = accumulator
        self.snapshot = snapshot
        self.finished = False

    def feed(self, item: Any) -> None:
        try:
            self.acc.feed(item)
        except (AttributeError, TypeError, ValueError, KeyError):  # an event shape we do not know: ignore it
            pass

    def finish(self, stream: Any = None, *, final: Any = None) -> None:
        """Finish from, in order of preference: a final object, the SDK stream's own snapshot, our events."""
        if self.finished:
            return
        self.finished = True
        found = None
        source = final if final is not None else stream
        if source is not None and self.snapshot is not None:
            try:
                found = self.snapshot(source)
            except (AttributeError, AssertionError, RuntimeError, TypeError):  # no snapshot yet
                found = None
        try:
            answer, complete = found if found is not None else (self.acc.answer(), bool(self.acc.done))
        except (AttributeError, TypeError, ValueError, KeyError):  # events we could not make sense of
            answer, complete = [], False
        self.call.finish(answer, partial=not complete, response_id=self.acc.response_id)


def _finalize(capture: Capture, stream: Any) -> None:
    capture.finish(stream)


class StreamProxy(wrapt.ObjectProxy):
    """An SDK `Stream` (from `create(stream=True)`): same object to the app, answer captured on the way."""

    def __init__(self, stream: Any, capture: Capture) -> None:
        super().__init__(stream)
        self._self_capture = capture
        weakref.finalize(self, _finalize, capture, None).atexit = False

    def __iter__(self) -> StreamProxy:
        return self

    def __next__(self) -> Any:
        try:
            item = self.__wrapped__.__next__()
        except StopIteration:
            self._self_capture.finish()
            raise
        except BaseException:
            self._self_capture.finish()
            raise
        self._self_capture.feed(item)
        return item

    def close(self) -> None:
        try:
            self.__wrapped__.close()
        finally:
            self._self_capture.finish()

    def __enter__(self) -> StreamProxy:
        self.__wrapped__.__enter__()
        return self

    def __exit__(self, *exc: Any) -> Any:
        try:
            return self.__wrapped__.__exit__(*exc)
        finally:
            self._self_capture.finish()


class AsyncStreamProxy(wrapt.ObjectProxy):
    """An SDK `AsyncStream`, captured the same way."""

    def __init__(self, stream: Any, capture: Capture) -> None:
        super().__init__(stream)
        self._self_capture = capture
        weakref.finalize(self, _finalize, capture, None).atexit = False

    def __aiter__(self) -> AsyncStreamProxy:
        return self

    async def __anext__(self) -> Any:
        try:
            item = await self.__wrapped__.__anext__()
        except StopAsyncIteration:
            self._self_capture.finish()
            raise
        except BaseException:
            self._self_capture.finish()
            raise
        self._self_capture.feed(item)
        return item

    async def close(self) -> None:
        try:
            await self.__wrapped__.close()
        finally:
            self._self_capture.finish()

    async def __aenter__(self) -> AsyncStreamProxy:
        await self.__wrapped__.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> Any:
        try:
            return await self.__wrapped__.__aexit__(*exc)
        finally:
            self._self_capture.finish()


# -- the SDKs' stream helpers: `.stream()` context managers and the streams they yield ------------------------

_FINAL_METHODS = ("get_final_completion", "get_final_message", "get_final_response")


class HelperStreamProxy(wrapt.ObjectProxy):
    """The object a `.stream()` helper yields (ChatCompletionStream, MessageStream, ResponseStream)."""

    def __init__(self, stream: Any, capture: Capture) -> None:
        super().__init__(stream)
        self._self_capture = capture
        # The finalizer may hold the SDK stream: only the proxy must die for it to run.
        weakref.finalize(self, _finalize, capture, stream).atexit = False

    def __iter__(self) -> Any:
        for event in self.__wrapped__:
            self._self_capture.feed(event)
            yield event
        self._self_capture.finish(self.__wrapped__)

    def __next__(self) -> Any:
        try:
            event = self.__wrapped__.__next__()
        except StopIteration:
            self._self_capture.finish(self.__wrapped__)
            raise
        self._self_capture.feed(event)
        return event

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.__wrapped__, name)
        if name in _FINAL_METHODS and callable(attr):

            def final(*args: Any, **kwargs: Any) -> Any:
                result = attr(*args, **kwargs)
                self._self_capture.finish(final=result)
                return result

            return final
        if name in ("get_final_text", "until_done") and callable(attr):

            def done(*args: Any, **kwargs: Any) -> Any:
                result = attr(*args, **kwargs)
                self._self_capture.finish(self.__wrapped__)
                return result

            return done
        return attr

    def close(self) -> None:
        try:
            self.__wrapped__.close()
        finally:
            self._self_capture.finish(self.__wrapped__)

    def __enter__(self) -> HelperStreamProxy:
        return self

    def __exit__(self, *exc: Any) -> Any:
        try:
            return self.__wrapped__.__exit__(*exc)
        finally:
            self._self_capture.finish(self.__wrapped__)


class AsyncHelperStreamProxy(wrapt.ObjectProxy):
    """The async twin of HelperStreamProxy."""

    def __init__(self, stream: Any, capture: Capture) -> None:
        super().__init__(stream)
        self._self_capture = capture
        weakref.finalize(self, _finalize, capture, stream).atexit = False

    async def __aiter__(self) -> Any:
        async for event in self.__wrapped__:
            self._self_capture.feed(event)
            yield event
        self._self_capture.finish(self.__wrapped__)

    async def __anext__(self) -> Any:
        try:
            event = await self.__wrapped__.__anext__()
        except StopAsyncIteration:
            self._self_capture.finish(self.__wrapped__)
            raise
        self._self_capture.feed(event)
        return event

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.__wrapped__, name)
        if name in _FINAL_METHODS and callable(attr):

            async def final(*args: Any, **kwargs: Any) -> Any:
                result = await attr(*args, **kwargs)
                self._self_capture.finish(final=result)
                return result

            return final
        if name in ("get_final_text", "until_done") and callable(attr):

            async def done(*args: Any, **kwargs: Any) -> Any:
                result = await attr(*args, **kwargs)
                self._self_capture.finish(self.__wrapped__)
                return result

            return done
        return attr

    async def close(self) -> None:
        try:
            await self.__wrapped__.close()
        finally:
            self._self_capture.finish(self.__wrapped__)

    async def __aenter__(self) -> AsyncHelperStreamProxy:
        return self

    async def __aexit__(self, *exc: Any) -> Any:
        try:
            return await self.__wrapped__.__aexit__(*exc)
        finally:
            self._self_capture.finish(self.__wrapped__)


# Snapshots: what each helper stream already knows of the answer, read through its public API, and whether
# the answer is complete (the provider said why it stopped).

Snapshot = tuple[list[Turn], bool]


def chat_snapshot(source: Any) -> Snapshot:
    completion = source if get(source, "choices") is not None else source.current_completion_snapshot
    choices = get(completion, "choices") or []
    return chat_answer(completion), bool(choices and get(choices[0], "finish_reason"))


def anthropic_snapshot(source: Any) -> Snapshot:
    message = source if get(source, "content") is not None else source.current_message_snapshot
    return anthropic_answer(message), get(message, "stop_reason") is not None


def responses_snapshot(source: Any) -> Snapshot | None:
    # ResponseStream has no public snapshot; only a final response (from get_final_response) is used.
    if get(source, "output") is None:
        return None
    return responses_answer(source), get(source, "status") == "completed"


SNAPSHOTS: dict[str, Callable[[Any], Snapshot | None]] = {
    "openai.chat": chat_snapshot,
    "openai.responses": responses_snapshot,
    "anthropic.messages": anthropic_snapshot,
}
