"""Proxies around the SDK clients: the same objects to the app, with memory on the chat surfaces only.

A client proxy is a wrapt ObjectProxy, so `isinstance(client, OpenAI)` holds and every attribute we do not
name (files, embeddings, models, `retrieve`, `list`, ...) is the SDK's own. A small tree per SDK says which
attributes lead to a chat resource; there, `create`/`parse`/`stream` go through the core (core.py), and the
`with_raw_response` / `with_streaming_response` variants do too.
"""

from __future__ import annotations

import inspect
import weakref
from collections.abc import Callable, Coroutine, Mapping
from typing import Any, cast

import wrapt

from memwrap.wrappers.core import Call, Memwrap
from memwrap.wrappers.streams import (
    ACCUMULATORS,
    SNAPSHOTS,
    AsyncHelperStreamProxy,
    AsyncStreamProxy,
    Capture,
    HelperStreamProxy,
    StreamProxy,
)


class Resource:
    """Tree leaf: a chat resource (`chat.completions`, `responses`, `messages`) of one provider."""

    def __init__(self, provider: str, mode: str = "plain") -> None:
        self.provider = provider
        self.mode = mode  # "plain" | "raw" (with_raw_response) | "streaming" (with_streaming_response)


Tree = Mapping[str, "Tree | Resource"]


class sdk_method:  # used as a decorator, like `property`
    """A resource method the proxy has only when the SDK object has it: `hasattr(client.chat.completions,
    "parse")` and the AttributeError stay what the installed SDK version says (older ones lack `parse`, `stream`
    or `responses`), and no recall runs for a call the SDK cannot make."""

    def __init__(self, method: Callable[..., Any]) -> None:
        self.method = method
        self.name = method.__name__

    def __get__(self, proxy: Any, owner: type | None = None) -> Any:
        if proxy is None:
            return self
        if not hasattr(proxy.__wrapped__, self.name):
            raise AttributeError(f"{type(proxy.__wrapped__).__name__!r} object has no attribute {self.name!r}")
        return self.method.__get__(proxy, owner)


class _Proxy(wrapt.ObjectProxy):
    def __init__(self, wrapped: Any, handle: Memwrap, is_async: bool) -> None:
        super().__init__(wrapped)
        self._self_handle = handle
        self._self_async = is_async


class Namespace(_Proxy):
    """A client or a namespace of it (`client.chat`, `client.beta`): routes named children, passes the rest."""

    def __init__(self, wrapped: Any, handle: Memwrap, is_async: bool, tree: Tree) -> None:
        super().__init__(wrapped, handle, is_async)
        self._self_tree = tree
        self._self_children: dict[str, Any] = {}

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_self_"):
            raise AttributeError(name)
        spec = self._self_tree.get(name)
        if spec is None:
            return getattr(self.__wrapped__, name)
        child = self._self_children.get(name)
        if child is None:
            child = self._self_children[name] = build(
                getattr(self.__wrapped__, name), self._self_handle, self._self_async, spec
            )
        return child


def build(wrapped: Any, handle: Memwrap, is_async: bool, spec: Tree | Resource) -> Any:
    if isinstance(spec, Resource):
        cls = (
            (AsyncResource if is_async else SyncResource)
            if spec.mode == "plain"
            else (AsyncRaw if is_async else SyncRaw)
        )
        return cls(wrapped, handle, is_async, spec)
    return Namespace(wrapped, handle, is_async, spec)


class _ResourceBase(_Proxy):
    def __init__(self, wrapped: Any, handle: Memwrap, is_async: bool, spec: Resource) -> None:
        super().__init__(wrapped, handle, is_async)
        self._self_spec = spec

    @property
    def with_raw_response(self) -> Any:
        return build(
            self.__wrapped__.with_raw_response,
            self._self_handle,
            self._self_async,
            Resource(self._self_spec.provider, "raw"),
        )

    @property
    def with_streaming_response(self) -> Any:
        return build(
            self.__wrapped__.with_streaming_response,
            self._self_handle,
            self._self_async,
            Resource(self._self_spec.provider, "streaming"),
        )


# -- plain resources ---------------------------------------------------------------------------------------------


def _finish_plain(call: Call, result: Any) -> Any:
    """A complete (non-stream) answer: retain it now; a stream: hand back a capturing proxy."""
    if call.stream:
        return StreamProxy(result, Capture(call, ACCUMULATORS[call.provider.name]()))
    call.finish_result(result)
    return result


def _finish_plain_async(call: Call, result: Any) -> Any:
    if call.stream:
        return AsyncStreamProxy(result, Capture(call, ACCUMULATORS[call.provider.name]()))
    call.finish_result(result)
    return result


class SyncResource(_ResourceBase):
    def _run(self, method: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        fn = getattr(self.__wrapped__, method)
        call, body = self._self_handle.begin(self._self_spec.provider, kwargs)
        if call is None:
            return fn(*args, **body)
        return _finish_plain(call, fn(*args, **call.prepare_sync()))

    @sdk_method
    def create(self, *args: Any, **kwargs: Any) -> Any:
        return self._run("create", args, kwargs)

    @sdk_method
    def parse(self, *args: Any, **kwargs: Any) -> Any:
        return self._run("parse", args, kwargs)

    @sdk_method
    def stream(self, *args: Any, **kwargs: Any) -> Any:
        call, body = self._self_handle.begin(self._self_spec.provider, kwargs)
        if call is None:
            return self.__wrapped__.stream(*args, **body)
        return ManagerProxy(self.__wrapped__.stream(*args, **call.prepare_sync()), call)


class AsyncResource(_ResourceBase):
    async def _run(self, method: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        fn = getattr(self.__wrapped__, method)
        call, body = self._self_handle.begin(self._self_spec.provider, kwargs)
        if call is None:
            return await fn(*args, **body)
        return _finish_plain_async(call, await fn(*args, **await call.prepare_async()))

    @sdk_method
    async def create(self, *args: Any, **kwargs: Any) -> Any:
        return await self._run("create", args, kwargs)

    @sdk_method
    async def parse(self, *args: Any, **kwargs: Any) -> Any:
        return await self._run("parse", args, kwargs)

    @sdk_method
    def stream(self, *args: Any, **kwargs: Any) -> AsyncManager:
        # The SDK's async `stream()` is a plain function returning a manager; recall must await, so the real
        # manager is made in __aenter__, once the block is known.
        call, body = self._self_handle.begin(self._self_spec.provider, kwargs)
        return AsyncManager(lambda kw: self.__wrapped__.stream(*args, **kw), call, body)


# -- the `.stream()` helpers' managers ---------------------------------------------------------------------------


def _helper_capture(call: Call) -> Capture:
    return Capture(call, ACCUMULATORS[call.provider.name](), SNAPSHOTS[call.provider.name])


class ManagerProxy(wrapt.ObjectProxy):
    def __init__(self, manager: Any, call: Call) -> None:
        super().__init__(manager)
        self._self_capture = _helper_capture(call)
        self._self_stream: Any = None

    def __enter__(self) -> Any:
        self._self_stream = self.__wrapped__.__enter__()
        return HelperStreamProxy(self._self_stream, self._self_capture)

    def __exit__(self, *exc: Any) -> Any:
        try:
            return self.__wrapped__.__exit__(*exc)
        finally:
            if self._self_stream is not None:
                self._self_capture.finish(self._self_stream)


class AsyncManager:
    """Stands in for the SDK's async stream manager (`async with client....stream(...) as stream:`)."""

    def __init__(self, make: Callable[[dict[str, Any]], Any], call: Call | None, body: dict[str, Any]) -> None:
        self._make = make
        self._call = call
        self._body = body
        self._manager: Any = None
        self._stream: Any = None
        self._capture = _helper_capture(call) if call is not None else None

    async def __aenter__(self) -> Any:
        kwargs = await self._call.prepare_async() if self._call is not None else self._body
        self._manager = self._make(kwargs)
        self._stream = await self._manager.__aenter__()
        if self._capture is None:
            return self._stream
        return AsyncHelperStreamProxy(self._stream, self._capture)

    async def __aexit__(self, *exc: Any) -> Any:
        try:
            return await self._manager.__aexit__(*exc)
        finally:
            if self._capture is not None and self._stream is not None:
                self._capture.finish(self._stream)


# -- with_raw_response / with_streaming_response -----------------------------------------------------------------


class RawResponseProxy(wrapt.ObjectProxy):
    """The SDK's raw response: headers and all as before; `parse()` yields a capturing stream when streaming."""

    def __init__(self, raw: Any, call: Call, is_async: bool, *, eager: bool) -> None:
        super().__init__(raw)
        self._self_call = call
        self._self_async = is_async
        self._self_state: dict[str, Any] = {"stream": None}
        if eager and not call.stream:
            try:
                parsed = raw.parse()  # the SDK caches it: the app's own parse() returns this same object
            except Exception:  # noqa: BLE001 - reading the answer for memory must never break the app's call
                parsed = None
            if inspect.isawaitable(parsed):  # an async raw response: the caller awaits `eager_parse` instead
                cast(Coroutine[Any, Any, Any], parsed).close()  # the SDK's async parse(): a coroutine, never awaited
            else:
                _finish_parsed(call, parsed)
        # Never parsed (headers only) and dropped: still remember what the user said.
        weakref.finalize(self, _finish_unparsed, call, self._self_state).atexit = False

    def parse(self, *args: Any, **kwargs: Any) -> Any:
        result = self.__wrapped__.parse(*args, **kwargs)
        if inspect.isawaitable(result):  # with_streaming_response on an async client: parse() is a coroutine
            return self._parse_async(result, kwargs)
        return self._captured(result, kwargs)

    async def _parse_async(self, result: Any, kwargs: dict[str, Any]) -> Any:
        return self._captured(await result, kwargs)

    def _captured(self, result: Any, kwargs: dict[str, Any]) -> Any:
        call = self._self_call
        if kwargs.get("to") is not None:
            return result
        if not call.stream:
            call.finish_result(result)
            return result
        if self._self_state["stream"] is None:
            proxy_cls = AsyncStreamProxy if self._self_async else StreamProxy
            self._self_state["stream"] = proxy_cls(result, Capture(call, ACCUMULATORS[call.provider.name]()))
        return self._self_state["stream"]


def _finish_parsed(call: Call, parsed: Any) -> None:
    if parsed is None:
        call.finish([])
    else:
        call.finish_result(parsed)


async def _eager_parse_async(proxy: RawResponseProxy, call: Call) -> RawResponseProxy:
    """Async raw responses whose parse() is a coroutine (anthropic's): read the answer before returning."""
    if not call.stream and inspect.iscoroutinefunction(proxy.__wrapped__.parse):
        try:
            parsed = await proxy.__wrapped__.parse()  # cached by the SDK, as in the sync case
        except Exception:  # noqa: BLE001 - see RawResponseProxy
            parsed = None
        _finish_parsed(call, parsed)
    return proxy


def _finish_unparsed(call: Call, state: dict[str, Any]) -> None:
    if state["stream"] is None:
        call.finish([], partial=True)


class _StreamingManager(wrapt.ObjectProxy):
    """with_streaming_response's context manager: yields a RawResponseProxy (answer captured on parse())."""

    def __init__(self, manager: Any, call: Call, is_async: bool) -> None:
        super().__init__(manager)
        self._self_call = call
        self._self_async = is_async

    def __enter__(self) -> Any:
        return RawResponseProxy(self.__wrapped__.__enter__(), self._self_call, False, eager=False)

    def __exit__(self, *exc: Any) -> Any:
        return self.__wrapped__.__exit__(*exc)

    async def __aenter__(self) -> Any:
        return RawResponseProxy(await self.__wrapped__.__aenter__(), self._self_call, True, eager=False)

    async def __aexit__(self, *exc: Any) -> Any:
        return await self.__wrapped__.__aexit__(*exc)


class SyncRaw(_ResourceBase):
    def _run(self, method: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        fn = getattr(self.__wrapped__, method)
        call, body = self._self_handle.begin(self._self_spec.provider, kwargs)
        if call is None:
            return fn(*args, **body)
        result = fn(*args, **call.prepare_sync())
        if self._self_spec.mode == "streaming":
            return _StreamingManager(result, call, False)
        return RawResponseProxy(result, call, False, eager=True)

    @sdk_method
    def create(self, *args: Any, **kwargs: Any) -> Any:
        return self._run("create", args, kwargs)

    @sdk_method
    def parse(self, *args: Any, **kwargs: Any) -> Any:
        return self._run("parse", args, kwargs)


class AsyncRaw(_ResourceBase):
    @sdk_method
    def create(self, *args: Any, **kwargs: Any) -> Any:
        return self._dispatch("create", args, kwargs)

    @sdk_method
    def parse(self, *args: Any, **kwargs: Any) -> Any:
        return self._dispatch("parse", args, kwargs)

    def _dispatch(self, method: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if self._self_spec.mode == "streaming":
            # `async with client...with_streaming_response.create(...)`: a manager, not a coroutine.
            call, body = self._self_handle.begin(self._self_spec.provider, kwargs)
            return _AsyncStreamingManager(lambda kw: getattr(self.__wrapped__, method)(*args, **kw), call, body)
        return self._run_raw(method, args, kwargs)

    async def _run_raw(self, method: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        fn = getattr(self.__wrapped__, method)
        call, body = self._self_handle.begin(self._self_spec.provider, kwargs)
        if call is None:
            return await fn(*args, **body)
        raw = await fn(*args, **await call.prepare_async())
        eager = not inspect.iscoroutinefunction(getattr(raw, "parse", None))
        return await _eager_parse_async(RawResponseProxy(raw, call, True, eager=eager), call)


class _AsyncStreamingManager:
    def __init__(self, make: Callable[[dict[str, Any]], Any], call: Call | None, body: dict[str, Any]) -> None:
        self._make, self._call, self._body = make, call, body
        self._manager: Any = None

    async def __aenter__(self) -> Any:
        kwargs = await self._call.prepare_async() if self._call is not None else self._body
        self._manager = self._make(kwargs)
        response = await self._manager.__aenter__()
        return response if self._call is None else RawResponseProxy(response, self._call, True, eager=False)

    async def __aexit__(self, *exc: Any) -> Any:
        return await self._manager.__aexit__(*exc)


# -- the client ------------------------------------------------------------------------------------------------


class ClientProxy(Namespace):
    """The wrapped client. `client.memwrap` is the handle: stats, flush(), options."""

    @property
    def memwrap(self) -> Memwrap:
        return self._self_handle

    def with_options(self, *args: Any, **kwargs: Any) -> ClientProxy:
        return ClientProxy(
            self.__wrapped__.with_options(*args, **kwargs), self._self_handle, self._self_async, self._self_tree
        )

    def copy(self, *args: Any, **kwargs: Any) -> ClientProxy:
        return ClientProxy(self.__wrapped__.copy(*args, **kwargs), self._self_handle, self._self_async, self._self_tree)

    def __repr__(self) -> str:
        return f"<memwrap-wrapped {self.__wrapped__!r}>"
