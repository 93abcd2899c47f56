"""Tool and agent loops: one user turn, several requests, one recall and one retain.

An agent answers a user's message in steps: the model asks for a tool, the app runs it and calls again with the
result, until the model answers in words. Every step is a request through the wrapper. With the default
`tool_loop="turn"`:

- recall runs on the user turn's first request; later steps (the request carries tool calls or tool results
  after the user's last message) get the same block again, without a recall;
- a step whose answer asks for tools is held back; the next step of the same user turn supersedes it, and the
  step that answers in words retains the user's message(s) with that answer. `retain_tools=True` keeps the
  loop's tool calls and tool results in the retained text as well.

A held step is retained as it is when nothing supersedes it: when the app never calls back (a tool call that is
itself the answer), after HELD_STEP_SECONDS, at `flush()`/`close()`, or at interpreter exit (the HELD phase of
memwrap/lifecycle.py: before the spool delivers and closes, so the exiting process delivers it). A request that
forces one named tool (instructor, `with_structured_output(method="function_calling")`) is taken as answered
by that call and retained at once.

`tool_loop="step"` treats every request as an exchange of its own (recall and retain per step).
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from memwrap import lifecycle
from memwrap.wrappers.transcript import Turn, get, new_turns

HELD_STEP_SECONDS = 120.0  # longer than most tool runs: a retain too early would split the turn in two
MAX_OPEN_TURNS = 4096  # user turns in a loop right now, per handle; past that the oldest is retained as is

LoopKey = tuple[str, str, int]  # (bank, session, user turn)
Enqueue = Callable[[str, dict[str, Any]], None]


def forces_one_tool(body: Mapping[str, Any]) -> bool:
    """The request forces a named tool: its call is the answer (structured output), no step will follow."""
    choice = body.get("tool_choice")
    if not isinstance(choice, Mapping):
        return False
    named = get(choice, "name") or get(get(choice, "function"), "name")
    return get(choice, "type") in ("function", "tool") and bool(named)


def exchange_turns(
    turns: list[Turn], answer: list[Turn], *, per_step: bool, tools: bool, carried: list[Turn]
) -> tuple[list[Turn], list[Turn]]:
    """(what to retain, the loop so far) for a request's `turns` and its `answer`.

    `carried`: the loop so far as a superseded step saw it. Used when this request does not repeat the user's
    message itself (Responses API chained by previous_response_id).
    """
    said = new_turns(turns, per_step=per_step)
    if carried and not any(t.role == "user" for t in said):
        said = [*carried, *said]
    loop = [*said, *answer]
    kept = said if tools else [t for t in said if t.role == "user"]
    return [*kept, *answer], loop


@dataclass
class _Held:
    bank: str
    block: str  # the memory block of this user turn, for its next steps
    item: dict[str, Any] | None  # the retain, should no step supersede this one
    loop: list[Turn] = field(default_factory=list)
    token: int = 0


class ToolLoops:
    """One handle's user turns in a tool loop: their memory block and the step held back, by (bank, session, turn)."""

    def __init__(self, enqueue: Enqueue) -> None:
        self._enqueue = enqueue
        self._open: OrderedDict[LoopKey, _Held] = OrderedDict()
        self._lock = threading.Lock()
        _live.add(self)

    def block(self, key: LoopKey) -> str | None:
        """The block injected into this user turn's first step, if it is still open."""
        with self._lock:
            held = self._open.get(key)
            return held.block if held is not None else None

    def hold(self, key: LoopKey, held_block: str, item: dict[str, Any] | None, loop: list[Turn]) -> None:
        """Hold back a step that asked for tools; retained as it is unless a later step of its turn comes."""
        token = next(_tokens)
        with self._lock:
            self._open[key] = _Held(key[0], held_block, item, loop, token)
            self._open.move_to_end(key)
            evicted = self._open.popitem(last=False)[1] if len(self._open) > MAX_OPEN_TURNS else None
        if evicted is not None:
            self._commit(evicted)
        _sweeper.schedule(time.monotonic() + HELD_STEP_SECONDS, self, key, token)

    def take(self, key: LoopKey) -> list[Turn]:
        """A later step of the turn arrived: the held one is superseded. Returns the loop as it saw it."""
        with self._lock:
            held = self._open.pop(key, None)
        return held.loop if held is not None else []

    def commit_all(self) -> None:
        """Retain every held step now (flush, close, exit): what the user said is never left only in memory."""
        with self._lock:
            held = list(self._open.values())
            self._open.clear()
        for entry in held:
            self._commit(entry)

    def expire(self, key: LoopKey, token: int) -> None:
        with self._lock:
            held = self._open.get(key)
            if held is None or held.token != token:
                return  # superseded, or held again by a later step with its own deadline
            del self._open[key]
        self._commit(held)

    @property
    def held(self) -> int:
        with self._lock:
            return sum(1 for h in self._open.values() if h.item is not None)

    def _commit(self, held: _Held) -> None:
        if held.item is not None:
            self._enqueue(held.bank, held.item)


_tokens = itertools.count(1)
_live: weakref.WeakSet[ToolLoops] = weakref.WeakSet()


class _Sweeper:
    """One daemon thread for every handle: retains held steps whose deadline passed."""

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, weakref.ref[ToolLoops], LoopKey]] = []
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None

    def schedule(self, deadline: float, loops: ToolLoops, key: LoopKey, token: int) -> None:
        with self._cond:
            heapq.heappush(self._heap, (deadline, token, weakref.ref(loops), key))
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="memwrap-tool-loops", daemon=True)
                self._thread.start()
            self._cond.notify()

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._heap or self._heap[0][0] > time.monotonic():
                    self._cond.wait(None if not self._heap else self._heap[0][0] - time.monotonic())
                _, token, ref, key = heapq.heappop(self._heap)
            loops = ref()
            if loops is not None:
                try:
                    loops.expire(key, token)
                except Exception:  # noqa: BLE001 - a failed retain is the spool's to log; the sweeper must live on
                    pass


_sweeper = _Sweeper()


def _commit_held_steps() -> None:
    """Exit, HELD phase: every held step goes to the spool, which delivers it in the RETAINS phase that follows."""
    for loops in list(_live):
        loops.commit_all()


lifecycle.at_exit(lifecycle.HELD, _commit_held_steps)
