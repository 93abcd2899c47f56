"""The process's life as memwrap sees it: what runs at exit and in which order, and what a forked child resets.

At interpreter exit four phases run, in this order, each bounded in time:

  1. HELD      what the wrappers still hold in memory (a tool loop's step waiting for its turn's answer,
               memwrap/wrappers/loops.py) is written to the spool, so that the next phase delivers it;
  2. RETAINS   queued exchanges are on disk; they are delivered while the engine still runs (what cannot be
               delivered in time stays in the spool for the next process);
  3. MEMORIES  each open `Memory` closes its engine (learning worker, connection pool);
  4. SERVERS   the embedded PostgreSQL is left (stopped when no other process uses it).

The phases run from a `threading` exit hook, not from `atexit`: Python shuts concurrent.futures' executors
down (the engine starts PostgreSQL, loads its model and embeds through them) *before* atexit callbacks run, and from
then on nothing can be embedded or started ("cannot schedule new futures after interpreter shutdown").
concurrent.futures.thread is imported first so that its own hook is registered before ours, and so runs after.
Hence every exit step of memwrap is a hook of a phase (`at_exit`), never an `atexit` callback of its own: that
would run after the whole sequence, when the spool no longer delivers and the engine is closed.

Then, if an engine ran in this process, the heap is frozen (`gc.collect()`, then `gc.freeze()`): the interpreter's
own tear-down walks every object in its final garbage collections, which took more than a second after an
engine's imports (its model, tokenizer, tables) and under 0.2 s once frozen. Refcounting still frees what it
frees and atexit callbacks still run; only finalizers of objects caught in reference cycles that are still
alive at exit are skipped, which Python never promised to run. MEMWRAP_EXIT_GC_FREEZE=0 turns this off.

Fork: a child process inherits objects whose threads, event loops and connections belong to its parent.
Modules register `after_fork_in_child` callbacks that drop (never close: closing would cut the parent's
connections) what belongs to the parent; `before_fork` callbacks let them reach a state that is safe to copy.
"""

from __future__ import annotations

import atexit
import concurrent.futures.thread  # noqa: F401 - see the module docstring: its exit hook must precede ours
import gc
import logging
import os
import threading
from collections.abc import Callable

log = logging.getLogger("memwrap")

HELD, RETAINS, MEMORIES, SERVERS = 1, 2, 3, 4

_hooks: list[tuple[int, int, Callable[[], None]]] = []
_lock = threading.Lock()
_exiting = threading.Event()
_ran = False
_engine_ran = False
_servers_in_use = False
# Objects a fork child inherited from its parent and must neither use nor finalise (their destructors would
# close connections or join threads that belong to the parent). Kept alive here for the child's lifetime.
_inherited: list[object] = []


def at_exit(phase: int, hook: Callable[[], None]) -> None:
    """Run `hook` at interpreter exit in `phase` (HELD, RETAINS, MEMORIES, SERVERS); hooks of one phase run in
    the order they were added. A hook must bound its own time and not raise (errors are logged at DEBUG)."""
    with _lock:
        _hooks.append((phase, len(_hooks), hook))


def exiting() -> bool:
    """True once the exit sequence started: failures from then on are shutdown noise, not bad data."""
    return _exiting.is_set()


def run_exit_hooks() -> None:
    """The exit sequence (runs once; also callable by a host that ends the process its own way)."""
    global _ran
    with _lock:
        if _ran:
            return
        _ran = True
        hooks = sorted(_hooks)
    _exiting.set()
    for _, _, hook in hooks:
        try:
            hook()
        except Exception as exc:  # noqa: BLE001 - an exit hook must never turn a clean exit into a traceback
            log.debug("memwrap: exit hook %r failed: %r", hook, exc)
    if _engine_ran and os.environ.get("MEMWRAP_EXIT_GC_FREEZE", "1") != "0":
        gc.collect()  # garbage made before exit is finalised as usual...
        gc.freeze()  # ...and what is still alive is left to refcounting (see the module docstring)


def keep_servers_running() -> None:
    """A memory could not close its connections in time: leaving the database server running is better than
    stopping it under them (they would fail loudly); the next process on the home stops it when it leaves."""
    global _servers_in_use
    _servers_in_use = True


def servers_in_use() -> bool:
    return _servers_in_use


def engine_started() -> None:
    """An engine ran in this process: its exit is worth the heap freeze (see the module docstring)."""
    global _engine_ran
    _engine_ran = True


_closing_listeners: list[Callable[[object], object]] = []  # what a listener returns is not used


def on_memory_close(listener: Callable[[object], object]) -> None:
    """Call `listener(memory)` when a Memory/AsyncMemory is about to close (the wrappers deliver the retains
    they queued for it first). Lets the memory API stay unaware of the layers above it."""
    _closing_listeners.append(listener)


def memory_closing(memory: object) -> None:
    for listener in list(_closing_listeners):
        try:
            listener(memory)
        except Exception as exc:  # noqa: BLE001 - closing goes on: what was not delivered stays spooled
            log.debug("memwrap: close listener %r failed: %r", listener, exc)


def keep_inherited(*objects: object) -> None:
    """Keep what a fork child inherited alive and untouched (see `_inherited`)."""
    _inherited.extend(objects)


def _reset_in_child() -> None:
    global _lock, _ran, _engine_ran, _servers_in_use
    _lock = threading.Lock()
    _exiting.clear()
    _ran = _engine_ran = _servers_in_use = False


try:
    threading._register_atexit(run_exit_hooks)  # type: ignore[attr-defined]  # see docstring
except (AttributeError, RuntimeError):  # another Python, or imported during shutdown: atexit is the next best
    pass
atexit.register(run_exit_hooks)  # runs nothing if the threading hook already did (os._exit skips both)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_in_child)
