"""LiteLLM: memory for `litellm.completion` / `acompletion`, and for the LiteLLM proxy server.

SDK (inject + retain, sync, async, streaming):

    from memwrap.integrations.litellm import wrap_completion
    completion = wrap_completion(litellm.completion, bank_id="alice")      # or litellm.acompletion
    completion(model="openai/gpt-4o-mini", messages=[...], stream=True)

SDK, retain only (calls made without the wrapper are still remembered):

    litellm.callbacks = [MemwrapLogger(bank_id="alice")]

Both may be on at once: the wrapper marks its calls, and the logger leaves marked calls to the wrapper, so a
turn is retained once; a memory block already in a request is replaced, never doubled.

LiteLLM proxy server (config.yaml: `litellm_settings: {callbacks: my_module.memwrap_logger}`): the logger's
`async_pre_call_hook` recalls and injects, its success hooks retain. The bank comes, in this order, from the
virtual key's metadata `{"memwrap": {"bank_id": ...}}` (a key bound to a bank cannot reach another; the flat
`memwrap_bank_id` is read too), the request header
`X-Memwrap-Bank`, the request's `metadata: {"memwrap": {"bank_id": ...}}`, then the logger's `bank_id`.

Everything goes through the wrappers' core (memwrap/wrappers/core.py): same query, same block placement,
same durable retain spool. `memory` is a `Memory`, an `AsyncMemory` or a sidecar URL ("http://...").

Lifecycle: the logger's retain runs wherever LiteLLM runs its success callbacks — its logging worker, which for
`acompletion` inside a short `asyncio.run` may only get to it while the loop shuts down, or from LiteLLM's own
exit hook. Either way the exchange is written to the spool at once (a retain never needs the event loop it was
reported on): delivered before exit when it can be, by the next process otherwise.
"""

from __future__ import annotations

import functools
import inspect
import threading
import uuid
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from types import SimpleNamespace
from typing import Any

from memwrap.config import Settings
from memwrap.llm import LLM, ROLES, OpenAIProvider, policy
from memwrap.models import DEFAULT_TOKEN_BUDGET
from memwrap.wrappers.core import Call, Memwrap
from memwrap.wrappers.memories import resolve_memory
from memwrap.wrappers.options import BankId, Options, WrapOptions, takes_options
from memwrap.wrappers.scope import scope
from memwrap.wrappers.streams import AsyncStreamProxy, Capture, ChatAccumulator, StreamProxy

try:  # the logger must subclass LiteLLM's CustomLogger to be accepted as a callback
    from litellm.integrations.custom_logger import CustomLogger
except ImportError:  # pragma: no cover - the wrapper functions work without litellm installed
    CustomLogger = object  # type: ignore[assignment,misc]  # litellm is optional

PROVIDER = "openai.chat"  # LiteLLM speaks the Chat Completions shape for every model
MARK = "memwrap_retained_by"  # metadata key: set on calls whose retain the wrapper owns
CALL_KEY = "memwrap_call"  # metadata key: the pre-call hook's Call, for the success hook
COMPLETION_CALLS = ("completion", "acompletion")


def _handle(memory: Any, options: Options, *, api_key: str | None = None) -> Memwrap:
    handle = Memwrap(resolve_memory(memory, api_key=api_key), options, family="litellm")
    handle.start()  # as wrap_openai does: the engine starts now, not at the first call (nor at exit)
    return handle


def _mark(kwargs: dict[str, Any]) -> dict[str, Any]:
    metadata = dict(kwargs.get("metadata") or {})
    metadata[MARK] = "wrapper"
    return {**kwargs, "metadata": metadata}


# ---------------------------------------------------------------------------------------------- SDK wrapper


@takes_options(WrapOptions)
def wrap_completion(fn: Callable[..., Any], options: WrapOptions) -> Callable[..., Any]:
    """`litellm.completion` or `litellm.acompletion` with memory. Per call: `memwrap={"bank_id": ...}`.

    Recall fails open (a slow or down engine never fails the call); streams are relayed untouched and the turn
    is retained when they end. The returned function has `.memwrap` (statistics, `flush()`), as wrapped clients do.
    `llm="openai/gpt-4o-mini"` (any LiteLLM model name): the memory's own LLM work (extraction, consolidation,
    reflect) goes through LiteLLM with that model, instead of MEMWRAP_LLM_*.
    """
    if options.llm is True:
        raise TypeError(
            'wrap_completion(llm=...) names the LiteLLM model for memory\'s own LLM work, e.g. "openai/gpt-4o-mini".'
        )
    handle = _handle(options.memory, options.per_call(), api_key=options.memory_api_key)
    if options.llm:
        use_litellm(handle.memory, options.llm)

    if inspect.iscoroutinefunction(fn):

        @functools.wraps(fn)
        async def acompletion(*args: Any, **kwargs: Any) -> Any:
            call, kwargs = handle.begin(PROVIDER, kwargs)
            if call is None:
                return await fn(*args, **kwargs)
            result = await fn(*args, **_mark(await call.prepare_async()))
            if call.stream:
                return AsyncStreamProxy(result, Capture(call, ChatAccumulator()))
            call.finish_result(result)
            return result

        acompletion.memwrap = handle  # type: ignore[attr-defined]  # the handle rides on the function
        return acompletion

    @functools.wraps(fn)
    def completion(*args: Any, **kwargs: Any) -> Any:
        call, kwargs = handle.begin(PROVIDER, kwargs)
        if call is None:
            return fn(*args, **kwargs)
        result = fn(*args, **_mark(call.prepare_sync()))
        if call.stream:
            return StreamProxy(result, Capture(call, ChatAccumulator()))
        call.finish_result(result)
        return result

    completion.memwrap = handle  # type: ignore[attr-defined]  # the handle rides on the function
    return completion


def use_litellm(memory: Any, model: str) -> None:
    """The engine's own LLM calls go through `litellm.acompletion` with `model` (every role; per-role
    MEMWRAP_*_MODEL overrides still apply). LiteLLM answers in the Chat Completions shape, so the engine's
    OpenAI provider reads it as it is."""
    import litellm

    settings = getattr(memory, "settings", None) or Settings()
    client = SimpleNamespace(
        chat=SimpleNamespace(completions=SimpleNamespace(create=litellm.acompletion)), base_url="litellm"
    )
    shared: dict[str, OpenAIProvider] = {}
    for role in ROLES:
        role_model = getattr(settings, f"{role}_model") or model
        shared.setdefault(role_model, OpenAIProvider(role_model, client, owns_client=False))
    providers = {role: shared[getattr(settings, f"{role}_model") or model] for role in ROLES}
    memory.use_llm(LLM(providers, **policy(settings)))  # type: ignore[arg-type]  # Literal role keys: str keys


# ---------------------------------------------------------------------------------------------- logger


def _lower(headers: Any) -> dict[str, str]:
    return {str(k).lower(): str(v) for k, v in dict(headers or {}).items()}


def _request_headers(data: Mapping[str, Any]) -> dict[str, str]:
    """The proxy request's headers, wherever this LiteLLM version put them."""
    found: dict[str, str] = {}
    for source in (
        (data.get("proxy_server_request") or {}).get("headers"),
        (data.get("metadata") or {}).get("headers"),
        (data.get("litellm_metadata") or {}).get("headers"),
    ):
        found.update(_lower(source))
    return found


class MemwrapLogger(CustomLogger):
    """Inject before (LiteLLM proxy's `async_pre_call_hook`) and retain after (success events) each chat call."""

    def __init__(
        self,
        *,
        bank_id: BankId = None,
        memory: Any = None,
        inject: bool = True,
        retain: bool = True,
        token_budget: int = DEFAULT_TOKEN_BUDGET,
        tags: str | Sequence[str] | None = None,
        recall_timeout: float = 0.5,  # the proxy's hop: longer than a wrapped client's 0.3
        **kwargs: Any,
    ) -> None:
        if CustomLogger is not object:
            super().__init__(**kwargs)
        options = Options(
            bank_id=bank_id,
            inject=inject,
            retain=retain,
            token_budget=token_budget,
            tags=tags,
            recall_timeout=recall_timeout,
        )
        self.handle = _handle(memory, options)
        self._calls: OrderedDict[str, Call] = OrderedDict()  # pre-call hook -> success hook, bounded
        self._seen: OrderedDict[str, None] = OrderedDict()  # litellm_call_ids already retained
        self._lock = threading.Lock()

    @property
    def memwrap(self) -> Memwrap:
        return self.handle

    # -- where a call belongs -------------------------------------------------------------------------------

    def bank_for(self, data: Mapping[str, Any], key: Any = None) -> str | None:
        key_meta = getattr(key, "metadata", None) or {}
        # A key bound to a bank: what the request says does not matter. Same spelling as a request's metadata
        # ({"memwrap": {"bank_id": ...}}); the flat `memwrap_bank_id` of earlier keys is still read.
        bound = (key_meta.get("memwrap") or {}).get("bank_id") if isinstance(key_meta.get("memwrap"), Mapping) else None
        bound = bound or key_meta.get("memwrap_bank_id")
        if bound:
            return str(bound)
        header = _request_headers(data).get("x-memwrap-bank")
        if header:
            return header
        for meta in (data.get("metadata"), data.get("litellm_metadata")):
            chosen = ((meta or {}).get("memwrap") or {}).get("bank_id") if isinstance(meta, Mapping) else None
            if chosen:
                return str(chosen)
        return self.handle.options.resolve_bank()

    def _begin(self, data: Mapping[str, Any], bank: str) -> Call | None:
        body = {k: data[k] for k in ("model", "messages", "stream") if k in data}
        session = _request_headers(data).get("x-memwrap-session")
        with scope(bank_id=bank, session_id=session or None):
            call, _ = self.handle.begin(PROVIDER, body)
        return call

    # -- LiteLLM proxy: inject -------------------------------------------------------------------------------

    async def async_pre_call_hook(
        self, user_api_key_dict: Any, cache: Any, data: dict[str, Any], call_type: str
    ) -> Any:
        if call_type not in COMPLETION_CALLS or not isinstance(data.get("messages"), list):
            return data
        bank = self.bank_for(data, user_api_key_dict)
        call = self._begin(data, bank) if bank else None
        if call is None:
            return data
        placed = await call.prepare_async()
        data["messages"] = placed["messages"]
        token = uuid.uuid4().hex
        with self._lock:
            self._calls[token] = call
            while len(self._calls) > 10_000:  # calls that never reported back (a crash upstream of us)
                self._calls.popitem(last=False)
        metadata = data.get("metadata")
        if not isinstance(metadata, dict):
            metadata = data["metadata"] = {}
        metadata[CALL_KEY] = token
        return data

    # -- retain ----------------------------------------------------------------------------------------------

    def log_success_event(self, kwargs: dict[str, Any], response_obj: Any, start_time: Any, end_time: Any) -> None:
        self._retain(kwargs, response_obj)

    async def async_log_success_event(
        self, kwargs: dict[str, Any], response_obj: Any, start_time: Any, end_time: Any
    ) -> None:
        self._retain(kwargs, response_obj)

    def log_failure_event(self, kwargs: dict[str, Any], response_obj: Any, start_time: Any, end_time: Any) -> None:
        self._forget(kwargs)

    async def async_log_failure_event(
        self, kwargs: dict[str, Any], response_obj: Any, start_time: Any, end_time: Any
    ) -> None:
        self._forget(kwargs)

    @staticmethod
    def _metadata(kwargs: Mapping[str, Any]) -> dict[str, Any]:
        params = kwargs.get("litellm_params") or {}
        merged: dict[str, Any] = {}
        for source in (params.get("metadata"), params.get("litellm_metadata"), kwargs.get("metadata")):
            if isinstance(source, Mapping):
                merged.update(source)
        return merged

    def _forget(self, kwargs: Mapping[str, Any]) -> None:
        token = self._metadata(kwargs).get(CALL_KEY)
        if token:
            with self._lock:
                self._calls.pop(str(token), None)

    def _retain(self, kwargs: dict[str, Any], response_obj: Any) -> None:
        metadata = self._metadata(kwargs)
        if metadata.get(MARK) == "wrapper":
            return  # wrap_completion retains its own calls
        call_id = str(kwargs.get("litellm_call_id") or "")
        with self._lock:
            # LiteLLM may report one call through both the sync and the async hook: retain it once.
            if call_id and call_id in self._seen:
                return
            if call_id:
                self._seen[call_id] = None
                while len(self._seen) > 10_000:
                    self._seen.popitem(last=False)
            token = metadata.get(CALL_KEY)
            call = self._calls.pop(str(token), None) if token else None
        if call is None:  # not seen by the pre-call hook (the SDK with callbacks only): read the call now
            data = {**kwargs, "metadata": metadata}
            bank = self.bank_for(data)
            if not bank or not self.handle.options.retain:
                return
            call = self._begin(
                {"model": kwargs.get("model"), "messages": kwargs.get("messages") or [], "metadata": metadata}, bank
            )
            if call is None:
                return
        call.finish_result(kwargs.get("complete_streaming_response") or response_obj)


__all__ = ["MemwrapLogger", "wrap_completion"]
