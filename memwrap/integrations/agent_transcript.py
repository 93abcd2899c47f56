"""Reading a coding agent's JSONL transcript (Claude Code's on-disk format) for the hooks: safely, and turn by turn.

Safety: `transcript_path` comes from the hook's payload, so it is opened as a regular file only (a FIFO, a
device such as /dev/zero, a directory or a socket is refused before a byte is read; the open itself never waits
on a FIFO's writer), and only its last `max_bytes` are read (tail first): a long session's transcript is never
read whole, and the hook's timeout covers the read.

Turns: one line per entry. A turn starts at a *real* prompt: a user entry that is not `isMeta` (a skill's text,
an auto-continuation, a caveat or a command's echo injected by Claude Code), not a sidechain entry (a
sub-agent's), not a tool result, not a compaction summary and not a local command's output. Every other entry
belongs to the turn in progress; of an assistant entry only its text blocks are kept (tool calls and thinking
are left out). A `compact_boundary` system entry marks where the last compaction cut: what came before it was
already handed to memory by that compaction's PreCompact hook.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# Tail bounds: the last turn of a session sits at the end; a compaction's span (PreCompact, SessionEnd) is larger.
TURN_TAIL_BYTES = 4 * 1024 * 1024
SWEEP_TAIL_BYTES = 32 * 1024 * 1024

# User entries whose text Claude Code wrote, not the user: output of a local command (`!ls`, `/cost`).
_NOT_SAID = ("<local-command-stdout>", "<local-command-stderr>", "<bash-stdout>", "<bash-stderr>")


class TranscriptRefused(ValueError):
    """`transcript_path` is not a regular file."""


@dataclass
class Turn:
    """One prompt and the assistant's text blocks that answered it (prompt None: the turn began before the read)."""

    prompt: str | None
    answer: list[str] = field(default_factory=list)

    @property
    def answer_text(self) -> str:
        return "\n\n".join(t.strip() for t in self.answer if t.strip())


def read_tail(path: str | os.PathLike[str], max_bytes: int) -> list[str]:
    """The complete lines among the last `max_bytes` of `path`, a regular file (else TranscriptRefused).

    O_NONBLOCK makes the open of a FIFO return at once (fstat then refuses it); nothing past `max_bytes` is read,
    whatever the file's size claims. A first line cut by the bound is dropped; bytes that are not UTF-8 are
    replaced (a line being written as we read ends without its newline and is skipped by the JSON parse).
    """
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
    fd = os.open(Path(path).expanduser(), flags)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise TranscriptRefused(f"transcript_path {str(path)!r} is not a regular file; it was not read")
        start = max(0, info.st_size - max_bytes)
        os.lseek(fd, start, os.SEEK_SET)
        chunks: list[bytes] = []
        left = max_bytes
        while left > 0:
            chunk = os.read(fd, min(left, 1024 * 1024))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
    finally:
        os.close(fd)
    data = b"".join(chunks)
    lines = data.decode("utf-8", "replace").split("\n")
    return lines[1:] if start > 0 else lines


def _entries(lines: Iterable[str]) -> Iterable[dict[str, Any]]:
    for line in lines:
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
        except ValueError:
            continue  # a line being written as we read, or not JSON at all
        if isinstance(entry, dict):
            yield entry


def _prompt_text(entry: dict[str, Any]) -> str | None:
    """The prompt a user entry carries, or None when the entry does not start a turn."""
    if entry.get("isMeta") or entry.get("isCompactSummary") or entry.get("isVisibleInTranscriptOnly"):
        return None
    message = entry.get("message")
    if not isinstance(message, dict):
        return None
    content = message.get("content")
    if isinstance(content, str):
        text = content
    elif isinstance(content, list):
        if any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content):
            return None
        text = "\n".join(str(b.get("text", "")) for b in content if isinstance(b, dict) and b.get("type") == "text")
    else:
        return None
    stripped = text.strip()
    if not stripped or stripped.startswith(_NOT_SAID):
        return None
    return text


def _text_blocks(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content]
    if not isinstance(content, list):
        return []
    return [str(b.get("text", "")) for b in content if isinstance(b, dict) and b.get("type") == "text"]


def turns(lines: Iterable[str], *, sidechain: bool = False, since_compaction: bool = True) -> list[Turn]:
    """The turns of a transcript, oldest first. `sidechain`: read a sub-agent's own transcript (every entry is
    a sidechain one there); else sidechain entries are skipped. `since_compaction`: only what follows the last
    compact_boundary."""
    found: list[Turn] = []
    for entry in _entries(lines):
        kind = entry.get("type")
        if kind == "system" and entry.get("subtype") == "compact_boundary" and since_compaction:
            found = []
            continue
        if bool(entry.get("isSidechain")) != sidechain:
            continue
        if kind == "user":
            prompt = _prompt_text(entry)
            if prompt is not None:
                found.append(Turn(prompt))
        elif kind == "assistant":
            message = entry.get("message")
            if isinstance(message, dict):
                texts = _text_blocks(message.get("content"))
                if texts:
                    if not found:
                        found.append(Turn(None))
                    found[-1].answer += texts
    return found


def last_answer_text(lines: Iterable[str], *, sidechain: bool = False) -> str:
    """Every assistant text of the last turn, joined (empty: the last prompt has no answer yet)."""
    found = turns(lines, sidechain=sidechain)
    return found[-1].answer_text if found else ""
