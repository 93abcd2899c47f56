"""The memory block a model reads: its frame (format.py) and the fence that keeps memory text from forging its
tags (fence.py). Shared by the engine's renderer, the wrappers and the server."""
