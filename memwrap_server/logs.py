"""The sidecar's own logging: one plain `key=value` line per record, formatted and written off the event loop.

A server must not pay for its logs on the loop that serves requests: a traceback pretty-printed there (the
MCP SDK installs rich's handler on the root logger) cost seconds per failed request and stalled every other
request, /health included. Here the loop only puts the record on a queue; a listener thread formats it
(tracebacks as plain text), removes anything that looks like a secret, and writes it to stderr.

    2026-12-01T10:00:00.123Z level=warning logger=memwrap.server msg="POST /v1/banks/{bank_id}/recall failed: ..."

Upstream URLs stay out of the log: httpx's per-request INFO lines are off, and the access log is only on at
`--log-level debug`.
"""

from __future__ import annotations

import copy
import logging
import logging.handlers
import queue
import sys
import time
from typing import IO, Any

from memwrap.defense.policy import redact

# Loggers that are chatty at INFO about things a server operator does not need line by line.
_QUIET = {
    "httpx": logging.WARNING,
    "httpcore": logging.WARNING,
    "mcp": logging.WARNING,
    "mcp.server.lowlevel.server": logging.WARNING,
    "mcp.server.streamable_http": logging.WARNING,
    "mcp.server.streamable_http_manager": logging.WARNING,
}
# Rendered on the loop, or rendered prettily: handlers the SDKs we use install, which we take back out.
_FOREIGN_HANDLERS = ("RichHandler",)
MAX_TRACEBACK_CHARS = 8000


class LineFormatter(logging.Formatter):
    """`time level=… logger=… msg="…"`, then the traceback (plain, indented) if there is one; secrets redacted."""

    def format(self, record: logging.LogRecord) -> str:
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z"
        message = record.getMessage().replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
        line = f'{stamp} level={record.levelname.lower()} logger={record.name} msg="{message}"'
        if record.exc_info and record.exc_info[0] is not None:
            error = record.exc_info[1]
            line += f' error="{type(error).__name__}"'
            trace = self.formatException(record.exc_info)
            if len(trace) > MAX_TRACEBACK_CHARS:
                trace = "…" + trace[-MAX_TRACEBACK_CHARS:]
            line += "\n" + "\n".join("    " + t for t in trace.splitlines())
        return redact(line)


def is_client_disconnect(error: BaseException | None) -> bool:
    """A caller that hung up before its request was read: theirs to notice, not a server error."""
    from starlette.requests import ClientDisconnect

    return isinstance(error, ClientDisconnect)


class QuietDisconnects(logging.Filter):
    """Libraries (the MCP SDK) log a caller's hang-up as an error with a traceback; here it is one debug line."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and is_client_disconnect(record.exc_info[1]):
            record.levelno, record.levelname = logging.DEBUG, "DEBUG"
            record.msg, record.args, record.exc_info = f"client disconnected ({record.getMessage()})", None, None
            return logging.getLogger().isEnabledFor(logging.DEBUG)
        return True


class _LoopSafeQueueHandler(logging.handlers.QueueHandler):
    """Puts the record on the queue with its message merged but its traceback unformatted: the listener
    thread formats it, not the event loop."""

    def prepare(self, record: logging.LogRecord) -> logging.LogRecord:
        record = copy.copy(record)
        record.msg, record.args = record.getMessage(), None
        return record


class ServerLogging:
    """Installs the queue handler on the root logger and runs the listener thread that writes lines."""

    def __init__(self, level: str = "info", stream: IO[str] | None = None) -> None:
        self.level = logging.getLevelName(level.upper()) if isinstance(level, str) else level
        if not isinstance(self.level, int):
            self.level = logging.INFO
        self.queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self.output = logging.StreamHandler(stream or sys.stderr)
        self.output.setFormatter(LineFormatter())
        self.handler = _LoopSafeQueueHandler(self.queue)
        self.handler.addFilter(QuietDisconnects())
        self.listener = logging.handlers.QueueListener(self.queue, self.output, respect_handler_level=False)

    def install(self) -> ServerLogging:
        root = logging.getLogger()
        for handler in list(root.handlers):
            root.removeHandler(handler)
        root.addHandler(self.handler)
        root.setLevel(self.level)
        for name, level in _QUIET.items():
            logging.getLogger(name).setLevel(max(level, self.level))
        # uvicorn's loggers write through ours (uvicorn.run(log_config=None) leaves them unconfigured).
        for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
            found = logging.getLogger(name)
            found.handlers.clear()
            found.propagate = True
        logging.getLogger("uvicorn.access").setLevel(logging.INFO if self.level <= logging.DEBUG else logging.WARNING)
        logging.captureWarnings(True)  # Python warnings become log lines too, not text of their own on stderr
        self.listener.start()
        return self

    def stop(self) -> None:
        self.listener.stop()  # writes what is queued, then ends the thread


def remove_foreign_handlers(before: list[logging.Handler]) -> None:
    """Take out root handlers that a library added since `before` was read and that render on the caller's
    thread (the MCP SDK's RichHandler): a process that configured logging keeps its own configuration."""
    root = logging.getLogger()
    for handler in list(root.handlers):
        if handler not in before and type(handler).__name__ in _FOREIGN_HANDLERS:
            root.removeHandler(handler)
