"""Which memory a wrapper uses when the app does not pass one: the process's default `Memory()`, or the
process's `Memory(url=...)` for a sidecar URL (one per URL and key, so every wrapper of it shares one backend)."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from memwrap.api import Memory

if TYPE_CHECKING:
    from memwrap.wrappers.backend import MemoryLike

_lock = threading.Lock()
_default: Memory | None = None
_by_url: dict[tuple[str, str | None], Memory] = {}


def default_memory() -> Memory:
    """One `Memory()` per process (MEMWRAP_* settings), created on first use."""
    global _default
    with _lock:
        if _default is None or _default.closed:
            _default = Memory()
        return _default


def is_url(value: object) -> bool:
    return isinstance(value, str) and value.startswith(("http://", "https://"))


def memory_for_url(url: str, *, api_key: str | None = None) -> Memory:
    """The process's `Memory(url=url, api_key=api_key)` (created on first use; api_key None: MEMWRAP_API_KEY)."""
    key = (url.rstrip("/"), api_key)
    with _lock:
        memory = _by_url.get(key)
        if memory is None or memory.closed:
            memory = _by_url[key] = Memory(url=url, api_key=api_key)
        return memory


def resolve_memory(memory: MemoryLike | str | None, *, api_key: str | None = None) -> MemoryLike | None:
    """A wrapper's `memory=` argument: a Memory/AsyncMemory as given, a sidecar URL, or None (the default,
    created when first needed)."""
    if isinstance(memory, str):
        if not is_url(memory):
            raise TypeError(f"memory= takes a Memory, an AsyncMemory or a sidecar URL (http://...), not {memory!r}.")
        return memory_for_url(memory, api_key=api_key)
    if api_key is not None:
        raise TypeError("memory_api_key= goes with memory='http://...' (a sidecar); a Memory object has its own key.")
    return memory
