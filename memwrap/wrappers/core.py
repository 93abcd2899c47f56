"""The one core under every wrapped surface, sync or async: begin a call, recall and inject, finish and retain.

    call, kwargs = handle.begin("openai.chat", kwargs)     # pops memwrap=..., reads the conversation
    kwargs = call.prepare_sync()  /  await call.prepare_async()   # the only I/O step that differs
    result = sdk_method(**kwargs)
    call.finish(answer_turns)                               # queues the retain; never blocks

Recall fails open: an error, a missed `recall_timeout` or a known-down engine means the call goes out without
memory, with a warning logged (rate-limited) and counted in `handle.stats`. A call made while the engine is
still starting first waits for it, up to the memory's start-up limit (memwrap/wrappers/backend.py).

Memories and their retainers are per process: a forked child builds its own on first use (memwrap/lifecycle.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any, NamedTuple

from memwrap import lifecycle, tracing, validate
from memwrap.wrappers import spans
from memwrap.wrappers.backend import Backend, MemoryLike, RecallSkipped, RecallTimeout, in_loop
from memwrap.wrappers.inject import PROVIDERS, Provider, build_query, request_turns, strip_memory
from memwrap.wrappers.loops import ToolLoops, exchange_turns, forces_one_tool
from memwrap.wrappers.memories import default_memory
from memwrap.wrappers.scope import Options, as_tags, resolve
from memwrap.wrappers.spool import Retainer, RetainStats
from memwrap.wrappers.transcript import Turn, get, in_tool_loop, render, session_key, turn_number

log = logging.getLogger("memwrap.wrappers")

# Read-your-writes: of its recall timeout, a call waits at most this share for the delivery of the exchanges
# this process retained just before into the same bank (delivery runs in the background, ~10-50 ms without
# an LLM); the rest is the recall's.
READ_YOUR_WRITES_SHARE = 0.5
_SENTINELS = ("NotGiven", "Omit")  # the SDKs' "argument not given" markers: the same as leaving the key out


@dataclass
class Stats:
    calls: int = 0  # calls through the wrapper
    passthrough: int = 0  # calls left untouched (no bank id, or inject and retain both off)
    recalls: int = 0  # recalls attempted
    injected: int = 0  # calls that carried a memory block upstream
    recall_empty: int = 0  # recalls that found nothing
    recall_timeouts: int = 0  # failed open: slower than recall_timeout
    recall_errors: int = 0  # failed open: the engine raised
    recall_skipped: int = 0  # failed open: engine known down or overloaded, not even tried
    recall_reused: int = 0  # later steps of a tool loop: given their user turn's block, no recall
    retains: int = 0  # retains queued by this client
    internal_errors: int = 0  # payloads memwrap could not read or place (the call went on untouched)
    last_error: str | None = None

    @property
    def failed_open(self) -> int:
        return self.recall_timeouts + self.recall_errors + self.recall_skipped


# -- memories and their retainers, one of each per memory object per process ----------------------------------


class MemoryParts(NamedTuple):
    """What the wrappers keep per memory object: the calls to it and the delivery of retains to it."""

    backend: Backend  # recall under a deadline, start-up, the circuit breaker (backend.py)
    retainer: Retainer  # the spool and its delivery thread (spool.py)


_registry: dict[int, MemoryParts] = {}
_registry_lock = threading.Lock()


def backend_for(memory: MemoryLike) -> MemoryParts:
    with _registry_lock:
        found = _registry.get(id(memory))
        if found is None or found.backend.memory is not memory:
            backend = Backend(memory)
            backend.bind_loop()  # before the retainer's first delivery: an async memory's rows go to this loop
            settings = getattr(memory, "settings", None)
            retainer = Retainer(
                backend.spool_path,
                backend.deliver,
                reachable=lambda: not backend.closed,
                engine_down=backend.known_down,
                exit_timeout=float(getattr(settings, "exit_timeout", 5.0)),
            )
            backend.caught_up = retainer.caught_up
            found = _registry[id(memory)] = MemoryParts(backend, retainer)
        return found


def _release(memory: object, timeout: float | None = None) -> bool:
    # Any object: only the memory's identity is read (lifecycle's close listeners are handed an `object`).
    with _registry_lock:
        found = _registry.pop(id(memory), None)
    if found is None:
        return True
    return found.retainer.close(found.retainer.exit_timeout if timeout is None else timeout)


def _after_fork_in_child() -> None:
    """The parent's backends and retainers run on threads this process does not have: start afresh."""
    global _registry_lock, _registry
    _registry_lock = threading.Lock()
    lifecycle.keep_inherited(_registry)
    _registry = {}


lifecycle.on_memory_close(_release)  # a memory that closes first delivers what the wrappers queued for it
os.register_at_fork(after_in_child=_after_fork_in_child)


class Memwrap:
    """What `client.memwrap` is: options, statistics, and control over the retains in flight."""

    def __init__(self, memory: MemoryLike | None, options: Options, *, family: str) -> None:
        self._memory = memory
        self.options = options
        self.family = family
        self.stats = Stats()
        self._lock = threading.Lock()
        # (bank, response id) -> (session, next turn): an id continues a session only in the bank it was made in
        self._responses: OrderedDict[tuple[str, str], tuple[str, int]] = OrderedDict()
        self._warned_no_bank = False
        self._last_warning = 0.0
        self.loops = ToolLoops(self.enqueue)

    # -- public ----------------------------------------------------------------------------------------------

    @property
    def memory(self) -> MemoryLike:
        if self._memory is None:
            self._memory = default_memory()
        return self._memory

    @property
    def retain_stats(self) -> RetainStats:
        """Delivery counters of the spool shared by every client on this memory."""
        return backend_for(self.memory).retainer.stats

    @property
    def pending(self) -> int:
        """Retains queued here (or by other clients on the same memory) and not yet delivered."""
        return backend_for(self.memory).retainer.pending

    def start(self) -> None:
        """Start the memory's engine in the background now (wrapping does this); calls made meanwhile wait."""
        backend_for(self.memory).backend.start()

    def flush(self, timeout: float | None = 10.0) -> bool:
        """Deliver every retain queued so far (and what earlier processes left in the spool) to the engine, and
        wait for it. False on timeout: they stay safe in the spool, and exit or the next process delivers them.

        Tool-loop steps still waiting for their turn's final answer are retained as they are first."""
        self.loops.commit_all()
        backend, retainer = backend_for(self.memory)
        if backend.kind == "async" and in_loop(backend.home_loop):
            raise RuntimeError(
                "flush() would block the event loop that delivers retains; use `await client.memwrap.aflush()`."
            )
        return retainer.flush(timeout)

    async def aflush(self, timeout: float | None = 10.0) -> bool:
        """`flush` for async code: waits in a thread, so the event loop keeps delivering."""
        self.loops.commit_all()
        return await asyncio.to_thread(backend_for(self.memory).retainer.flush, timeout)

    def wait_spooled(self, timeout: float | None = 10.0) -> bool:
        """Wait until queued retains are on disk (durable across a crash), delivered or not."""
        return backend_for(self.memory).retainer.wait_spooled(timeout)

    def close(self, timeout: float = 5.0) -> bool:
        """Deliver what can be delivered in `timeout`, stop this memory's retain worker; the rest stays spooled.
        Not needed at exit: memwrap delivers then on its own (MEMWRAP_EXIT_TIMEOUT)."""
        self.loops.commit_all()
        return _release(self.memory, timeout)

    def __repr__(self) -> str:
        return f"<memwrap {self.family} options={self.options} stats={asdict(self.stats)}>"

    # -- the core --------------------------------------------------------------------------------------------

    def count(self, name: str, error: BaseException | None = None) -> None:
        with self._lock:
            setattr(self.stats, name, getattr(self.stats, name) + 1)
            if error is not None:
                self.stats.last_error = f"{type(error).__name__}: {error}"

    def begin(self, provider: str, kwargs: Mapping[str, Any]) -> tuple[Call | None, dict[str, Any]]:
        """Start a call: returns (None, kwargs) when memory has nothing to do with it."""
        body = dict(kwargs)
        per_call = body.pop("memwrap", None)
        self.count("calls")
        options = resolve(self.options, per_call)
        bank = options.resolve_bank()
        if bank is None or not (options.inject or options.retain):
            if bank is None and not self._warned_no_bank:
                self._warned_no_bank = True
                log.warning(
                    "memwrap: no bank_id (pass bank_id=, memwrap={'bank_id': ...} or use memwrap.scope()); "
                    "calls go through without memory"
                )
            self.count("passthrough")
            return None, body
        validate.bank_id(bank)  # a bad bank id is the caller's bug: say so now, do not fail open on it
        body = _clean(body)
        backend = backend_for(self.memory).backend
        backend.bind_loop()
        backend.start()
        try:
            return Call(self, PROVIDERS[provider], body, options, bank), body
        except Exception as exc:  # noqa: BLE001 - a conversation we cannot read goes out untouched
            self.internal_error(exc)
            return None, body

    def remember_response(self, bank: str, response_id: str, session: str, next_turn: int) -> None:
        with self._lock:
            self._responses[(bank, response_id)] = (session, next_turn)
            while len(self._responses) > 10_000:
                self._responses.popitem(last=False)

    def session_of_response(self, bank: str, response_id: str) -> tuple[str, int] | None:
        with self._lock:
            return self._responses.get((bank, response_id))

    def recall_failed(self, error: Exception) -> None:
        kind = {RecallTimeout: "recall_timeouts", RecallSkipped: "recall_skipped"}.get(type(error), "recall_errors")
        self.count(kind, error)
        now = time.monotonic()
        if now - self._last_warning > 10.0:  # one line per 10 s: a down engine must not flood the app's logs
            self._last_warning = now
            log.warning(
                "memwrap: recall failed open (%s); the call goes on without memory [%s]",
                error,
                ", ".join(
                    f"{k}={getattr(self.stats, k)}" for k in ("recall_timeouts", "recall_errors", "recall_skipped")
                ),
            )

    def internal_error(self, error: BaseException) -> None:
        """A bug of ours met an unforeseen payload: count and log it; the app's call is not affected."""
        self.count("internal_errors", error)
        log.warning("memwrap: internal error, memory skipped for this call: %r", error, exc_info=True)

    def enqueue(self, bank: str, item: dict[str, Any]) -> None:
        """On disk before this returns (the call's exchange survives the process being killed right after)."""
        backend_for(self.memory).retainer.put(bank, item)
        self.count("retains")


def _clean(body: dict[str, Any]) -> dict[str, Any]:
    """Drop "not given" markers and turn one-shot iterables into lists (we read them, the SDK reads them again)."""
    out = {k: v for k, v in body.items() if type(v).__name__ not in _SENTINELS}
    for key in ("messages", "input"):
        value = out.get(key)
        if value is not None and not isinstance(value, (str, list, tuple, Mapping)) and isinstance(value, Iterable):
            out[key] = list(value)
    return out


class Call:
    """One wrapped call: the conversation it carries, where it belongs, and its retain once answered."""

    def __init__(self, handle: Memwrap, provider: Provider, body: dict[str, Any], options: Options, bank: str):
        self.handle = handle
        self.provider = provider
        self.body = body
        self.options = options
        self.bank = bank
        self.turns = request_turns(provider.name, body)
        self.stream = bool(body.get("stream"))
        self.per_step = options.tool_loop == "step"
        self.session, self.turn = self._place()
        self._finished = False
        self._lock = threading.Lock()
        self.block = ""

    def _place(self) -> tuple[str, int]:
        """(session id, number of answers before this one): the retain's document id is "session:turn-N"."""
        answered = turn_number(self.turns, per_step=self.per_step)
        if self.options.session_id:
            return self.options.session_id, answered
        if self.provider.name == "openai.responses":
            previous = self.body.get("previous_response_id")
            if previous:
                known = self.handle.session_of_response(self.bank, str(previous))
                session, base = known or (f"resp-{previous}", 1)
                return session, base + answered
            conversation = self.body.get("conversation")
            if conversation:
                # The server keeps the history; a clock reading keeps parts of one conversation distinct.
                return f"conv-{get(conversation, 'id') or conversation}", int(time.time() * 1000)
        return session_key(self.turns), answered

    # -- recall and injection --------------------------------------------------------------------------------

    @property
    def loop_key(self) -> tuple[str, str, int]:
        return self.bank, self.session, self.turn

    def _query(self) -> str:
        if not self.options.inject:
            return ""
        if not self.per_step and in_tool_loop(self.turns):
            block = self.handle.loops.block(self.loop_key)
            if block is not None:  # a later step of a tool loop: its user turn's block again, no recall
                self.handle.count("recall_reused")
                self.block = block
                return ""
        return build_query(self.turns)

    def prepare_sync(self) -> dict[str, Any]:
        """The request to send: recalled memory placed in it, or the request as it was if recall failed."""
        query = self._query()
        recall = None
        if query:
            with self._recall_span(query) as current:
                self.handle.count("recalls")
                try:
                    parts = backend_for(self.handle.memory)
                    parts.backend.wait_ready_sync()
                    options = self._recall_options()
                    if parts.retainer.pending_for(self.bank):  # read-your-writes: the exchange just before
                        started = time.monotonic()
                        parts.retainer.wait_delivered(self.bank, options["timeout"] * READ_YOUR_WRITES_SHARE)
                        options["timeout"] -= time.monotonic() - started
                    recall = parts.backend.recall_sync(self.bank, query, **options)
                except Exception as exc:  # noqa: BLE001 - fail open: the call goes on without memory
                    self.handle.recall_failed(exc)
                    spans.failed_open(current, exc)
                spans.recalled(current, recall)
        return self._placed(recall, tried=bool(query))

    async def prepare_async(self) -> dict[str, Any]:
        query = self._query()
        recall = None
        if query:
            with self._recall_span(query) as current:
                self.handle.count("recalls")
                try:
                    parts = backend_for(self.handle.memory)
                    await parts.backend.wait_ready_async()
                    options = self._recall_options()
                    if parts.retainer.pending_for(self.bank):  # read-your-writes, as in prepare_sync
                        started = time.monotonic()
                        share = options["timeout"] * READ_YOUR_WRITES_SHARE
                        await asyncio.to_thread(parts.retainer.wait_delivered, self.bank, share)
                        options["timeout"] -= time.monotonic() - started
                    recall = await parts.backend.recall_async(self.bank, query, **options)
                except Exception as exc:  # noqa: BLE001 - fail open, as in prepare_sync
                    self.handle.recall_failed(exc)
                    spans.failed_open(current, exc)
                spans.recalled(current, recall)
        return self._placed(recall, tried=bool(query))

    @contextlib.contextmanager
    def _recall_span(self, query: str) -> Iterator[Any]:
        # The app's call to its memory (kind CLIENT): the engine's own search span, if embedded, is inside it.
        with tracing.client_span(
            spans.RECALL,
            bank_id=self.bank,
            provider=self.provider.name,
            token_budget=self.options.token_budget,
            **tracing.memory_operation("search_memory", self.bank),
            **tracing.memory_query(query),
        ) as current:
            spans.query_attributes(current, query, self._model())
            yield current

    def _placed(self, recall: Any, *, tried: bool) -> dict[str, Any]:
        with tracing.span(spans.INJECT, bank_id=self.bank, provider=self.provider.name) as current:
            try:
                reused = recall is None and not tried and bool(self.block)
                if recall is not None:
                    self.block = str(get(recall, "context") or "")
                    self.handle.count("injected" if self.block else "recall_empty")
                elif reused:
                    self.handle.count("injected")
                placed = self.provider.inject(self.body, self.block)
                tracing.set_attributes(current, injected=bool(self.block), reused=reused)
                spans.block_tokens(current, self.block, self._model())
                return placed
            except Exception as exc:  # noqa: BLE001 - a payload shape we did not foresee must not break the app's call
                self.handle.internal_error(exc)
                tracing.mark_error(current, f"memory not placed ({type(exc).__name__})")
                return self.body

    def _model(self) -> str | None:
        model = self.body.get("model")
        return model if isinstance(model, str) else None

    def _recall_options(self) -> dict[str, Any]:
        return {
            "token_budget": self.options.token_budget,
            "tags": self.options.tags,
            "filters": self.options.filters,
            "model": self._model(),
            "timeout": self.options.recall_timeout,
        }

    # -- retain ----------------------------------------------------------------------------------------------

    def finish_result(self, result: Any) -> None:
        """Finish from a complete SDK result (or its dict form)."""
        try:
            answer, response_id = self.provider.answer(result), get(result, "id")
        except Exception as exc:  # noqa: BLE001 - an answer we cannot read: still keep what the user said
            self.handle.internal_error(exc)
            answer, response_id = [], None
        self.finish(answer, response_id=response_id if isinstance(response_id, str) else None)

    def finish(self, answer: list[Turn], *, partial: bool = False, response_id: str | None = None) -> None:
        """Queue the retain of this exchange (once): the app's new turns and the answer, without memory blocks."""
        with self._lock:
            if self._finished:
                return
            self._finished = True
        with tracing.span(spans.RETAIN, bank_id=self.bank, provider=self.provider.name, turn=self.turn) as current:
            try:
                self._retain(answer, partial=partial, response_id=response_id, current=current)
            except Exception as exc:  # noqa: BLE001 - runs inside the app's iteration or a finalizer: never raise there
                self.handle.internal_error(exc)
                tracing.mark_error(current, f"exchange not retained ({type(exc).__name__})")

    def _retain(self, answer: list[Turn], *, partial: bool, response_id: str | None, current: Any) -> None:
        # A step that asked for tools is held back until its user turn's answer (loops.py), unless this request
        # forced that one tool (then the call is the answer).
        step = not self.per_step and any(t.calls_tools for t in answer) and not forces_one_tool(self.body)
        if response_id and self.provider.name == "openai.responses":
            self.handle.remember_response(self.bank, response_id, self.session, self.turn + (0 if step else 1))
        carried = [] if self.per_step else self.handle.loops.take(self.loop_key)
        exchange, loop = exchange_turns(
            self.turns, answer, per_step=self.per_step, tools=self.options.retain_tools, carried=carried
        )
        if not self.options.retain_assistant:
            exchange = [t for t in exchange if t.role != "assistant"]
        item = (
            exchange_item(
                exchange,
                source=f"memwrap.{self.provider.name}",
                session=self.session,
                turn=self.turn,
                model=self._model(),
                tags=as_tags(self.options.tags),  # a tuple already: as_tags says so to the type checker
                partial=partial,
            )
            if self.options.retain
            else None
        )
        if step:
            self.handle.loops.hold(self.loop_key, self.block, item, loop)
        elif item is not None:
            self.handle.enqueue(self.bank, item)
        spans.retained(current, item, exchange_turns=len(exchange), held=step)


def exchange_item(
    exchange: list[Turn],
    *,
    source: str,
    session: str,
    turn: int,
    model: str | None = None,
    tags: Sequence[str] = (),
    partial: bool = False,
) -> dict[str, Any] | None:
    """The retain item for one exchange (what the app said since the last answer, then the answer), memory
    blocks removed.

    A plain dict (JSON-ready), so the sidecar proxy builds the very same items from raw bodies.
    None when there is nothing to remember.
    """
    content = render([Turn(t.role, strip_memory(t.text)) for t in exchange])
    if not content.strip():
        return None
    metadata: dict[str, Any] = {"source": source, "session_id": session, "turn": turn}
    if model:
        metadata["model"] = model
    if partial:
        metadata["partial"] = True  # the stream ended early: the answer may be cut
    return {
        "content": content,
        "timestamp": datetime.now(UTC).isoformat(),
        "context": "conversation between the user and an AI assistant",
        "document_id": f"{session}:turn-{turn}",
        "metadata": metadata,
        "tags": list(tags),
    }
