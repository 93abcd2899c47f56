"""The public API: `AsyncMemory`, and `Memory`, its synchronous twin.

There is one implementation, `AsyncMemory`. `Memory` runs it on a private event loop in a background thread,
so it works the same from plain scripts, from threads, and from code that already runs an event loop
(Jupyter, FastAPI handlers): it never calls `run_until_complete` on the caller's loop.

They live in memwrap/async_api.py and memwrap/sync_api.py (with the loop thread); import them from here
(or from `memwrap`).
"""

from __future__ import annotations

from memwrap.async_api import AsyncMemory, ItemLike
from memwrap.sync_api import Memory

__all__ = ["AsyncMemory", "ItemLike", "Memory"]
