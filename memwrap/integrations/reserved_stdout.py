"""Standard output kept for one reader: a process whose stdout is a protocol (an MCP stdio server's JSON-RPC, a
Claude Code hook's JSON answer) sends everything else to stderr.

    with reserved_stdout() as out:   # out: the real stdout, binary
        ...                          # print(), logging, a child process writing to fd 1: all reach stderr
        out.write(b"{...}"); out.flush()

File descriptor 1 itself is pointed at stderr for the duration, not only `sys.stdout`: the embedded PostgreSQL
server and its tools are child processes that inherit fd 1, and a library may write to it from C. What the
protocol writes goes through a duplicate of the original descriptor, made before the switch.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import BinaryIO


@contextmanager
def reserved_stdout() -> Iterator[BinaryIO]:
    sys.stdout.flush()
    saved = os.dup(1)
    out = os.fdopen(os.dup(saved), "wb")
    previous = sys.stdout
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    try:
        yield out
    finally:
        out.close()
        sys.stdout = previous
        os.dup2(saved, 1)
        os.close(saved)
