"""`memwrap hook EVENT`: Claude Code's lifecycle hooks, so a coding session is remembered without the model
having to call a tool.

Claude Code runs the command with the hook's JSON payload on stdin (session_id, transcript_path, cwd,
hook_event_name, and the event's own fields):

* UserPromptSubmit (`prompt`): the prompt is retained; with `--recall`, what memory holds for it is printed as
  `hookSpecificOutput.additionalContext`, which Claude Code adds to the model's context.
* Stop (`last_assistant_message` in recent versions, else the JSONL transcript at `transcript_path`): the
  assistant's last answer is retained (its text blocks after the last prompt, tool calls and thinking left out).
* SessionStart (`source`: startup, resume, clear, compact): a recall of what matters for this project is printed
  as additionalContext.

A hook must never get in the agent's way: any failure is one line on stderr and exit status 0 (Claude Code treats
2 as "block"), and a hook gives up after `--timeout` seconds. Nothing waits on an LLM: the embedded engine is
opened with no inline worker and an extraction deadline of 0, so retain stores the text at once and its
extraction job (when an LLM is configured) is left queued for `memwrap serve` or `memwrap worker`.

The bank is `--bank`, else one per project: the project directory's name and a hash of its path
(`memwrap hook --show-bank` prints it). The engine is the embedded one under MEMWRAP_HOME (`--home`), or a
`memwrap serve` sidecar with `--url` or MEMWRAP_URL (key: MEMWRAP_API_KEY).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import re
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

Register = Callable[[str, Callable[[argparse.ArgumentParser], None], Callable[[argparse.Namespace], int], str], None]

SOURCE = "claude-code"
TAG = "claude-code"
DEFAULT_TIMEOUT = 45.0  # under Claude Code's own 60 s default for a command hook
DEFAULT_TOKEN_BUDGET = 800
# The most of one prompt or answer kept: a coding answer can carry whole files; memory wants what was said.
MAX_TEXT_CHARS = 8000
SESSION_START_QUERY = (
    "What matters for working on the project {project}: decisions made, conventions and preferences, "
    "what was being worked on and what is still open."
)

EVENTS = {"sessionstart": "SessionStart", "userpromptsubmit": "UserPromptSubmit", "stop": "Stop"}


class HookInputError(ValueError):
    """The payload on stdin is not what Claude Code sends for this event."""


@dataclass(frozen=True)
class HookResult:
    """What one hook did: the items it retained and the context it printed (None: printed nothing)."""

    retained: list[dict[str, Any]]
    context: str | None


# --- the payload ---------------------------------------------------------------------------------------------


def event_name(given: str | None, payload: Mapping[str, Any]) -> str:
    """The event as Claude Code names it, from the command line (any case, with - or _) or the payload."""
    raw = given or str(payload.get("hook_event_name") or "")
    event = EVENTS.get(re.sub(r"[-_\s]", "", raw).lower())
    if event is None:
        raise HookInputError(f"unsupported hook event {raw!r}: memwrap handles {', '.join(EVENTS.values())}")
    return event


def project_dir(payload: Mapping[str, Any]) -> Path:
    """The project: CLAUDE_PROJECT_DIR (set by Claude Code for hooks; stable when the session changes directory),
    else the payload's cwd, else this process's."""
    found = os.environ.get("CLAUDE_PROJECT_DIR") or payload.get("cwd") or os.getcwd()
    return Path(str(found)).expanduser().resolve()


def project_bank(project: Path) -> str:
    """One bank per project directory: its name (lower case, letters, digits, . _ -) and 8 hex digits of its path,
    so two checkouts called `api` stay apart."""
    slug = re.sub(r"[^a-z0-9._-]+", "-", project.name.lower()).strip("-._")[:60] or "project"
    digest = hashlib.sha256(str(project).encode()).hexdigest()[:8]
    return f"{slug}-{digest}"


def last_answer(payload: Mapping[str, Any]) -> str:
    """The assistant's last answer: `last_assistant_message` when Claude Code gives it, else read from the
    transcript."""
    given = payload.get("last_assistant_message")
    if isinstance(given, str) and given.strip():
        return given
    path = payload.get("transcript_path")
    if not path:
        raise HookInputError("the Stop payload has neither last_assistant_message nor transcript_path")
    with open(Path(str(path)).expanduser(), encoding="utf-8", errors="replace") as lines:
        return answer_from_transcript(lines)


def answer_from_transcript(lines: Iterable[str]) -> str:
    """The text of the assistant's turn after the last prompt of a Claude Code JSONL transcript.

    One line per entry; an assistant message may be split over several entries (one content block each), and tool
    calls and their results alternate with it. Text blocks are kept, tool calls, thinking and sub-agent
    (sidechain) entries are not; a user entry carrying a real prompt (not a tool result) starts a new turn.
    """
    texts: list[str] = []
    for line in lines:
        try:
            entry = json.loads(line)
        except ValueError:
            continue  # a line being written as we read, or not JSON at all
        if not isinstance(entry, dict) or entry.get("isSidechain"):
            continue
        message = entry.get("message")
        if not isinstance(message, dict):
            continue
        if entry.get("type") == "user" and _is_prompt(message.get("content")):
            texts = []
        elif entry.get("type") == "assistant":
            texts += _text_blocks(message.get("content"))
    return "\n\n".join(t.strip() for t in texts if t.strip())


def _is_prompt(content: Any) -> bool:
    if isinstance(content, str):
        return bool(content.strip())
    if isinstance(content, list):
        return any(isinstance(b, dict) and b.get("type") == "text" for b in content) and not any(
            isinstance(b, dict) and b.get("type") == "tool_result" for b in content
        )
    return False


def _text_blocks(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content]
    if not isinstance(content, list):
        return []
    return [str(b.get("text", "")) for b in content if isinstance(b, dict) and b.get("type") == "text"]


def _item(role: str, text: str, payload: Mapping[str, Any], event: str, project: Path) -> dict[str, Any] | None:
    from memwrap.wrappers.inject import strip_memory  # a memory block quoted back is not said again
    from memwrap.wrappers.transcript import Turn, render

    said = strip_memory(text).strip()
    if not said:
        return None
    if len(said) > MAX_TEXT_CHARS:
        said = said[:MAX_TEXT_CHARS].rstrip() + " … (cut)"
    session = str(payload.get("session_id") or "no-session")
    part = "prompt" if role == "user" else "answer"
    digest = hashlib.sha256(said.encode()).hexdigest()[:12]
    return {
        "content": render([Turn(role, said)]),
        "context": f"a Claude Code session in the project {project.name}",
        # "session:part" groups a session's items (memwrap/models.py): the answer is read after its prompt.
        "document_id": f"{SOURCE}-{session}:{part}-{digest}",
        "metadata": {"source": SOURCE, "session_id": session, "hook": event, "cwd": str(payload.get("cwd") or "")},
        "tags": [TAG],
    }


# --- running a hook ------------------------------------------------------------------------------------------


async def run_hook(
    memory: Any,
    event: str,
    payload: Mapping[str, Any],
    *,
    bank: str,
    project: Path,
    recall_prompt: bool = False,
    token_budget: int = DEFAULT_TOKEN_BUDGET,
    query: str | None = None,
) -> HookResult:
    """Do what `event` asks of memory (`memory`: an AsyncMemory, embedded or over HTTP)."""
    retained: list[dict[str, Any]] = []
    context: str | None = None
    if event == "SessionStart":
        recalled = await memory.recall(
            bank, query or SESSION_START_QUERY.format(project=project.name), token_budget=token_budget
        )
        context = recalled.context.strip() or None
    elif event == "UserPromptSubmit":
        prompt = payload.get("prompt")
        if not isinstance(prompt, str):
            raise HookInputError("the UserPromptSubmit payload has no prompt")
        if recall_prompt and prompt.strip():  # before the prompt is retained: it would find itself first
            context = (await memory.recall(bank, prompt, token_budget=token_budget)).context.strip() or None
        item = _item("user", prompt, payload, event, project)
        if item is not None:
            await memory.retain_many(bank, [item])
            retained.append(item)
    elif event == "Stop":
        item = _item("assistant", last_answer(payload), payload, event, project)
        if item is not None:
            await memory.retain_many(bank, [item])
            retained.append(item)
    return HookResult(retained, context)


def output(event: str, result: HookResult) -> str:
    """What the hook prints: Claude Code's JSON hook output with the recalled block as additionalContext, or
    nothing (Stop prints nothing: its output would be read as a decision about stopping)."""
    if result.context is None or event == "Stop":
        return ""
    return json.dumps({"hookSpecificOutput": {"hookEventName": event, "additionalContext": result.context}}) + "\n"


def _memory(args: argparse.Namespace) -> Any:
    from memwrap.api import AsyncMemory
    from memwrap.config import load_settings

    url = args.url or os.environ.get("MEMWRAP_URL") or None
    # No LLM in the hook's path: retain returns once the text is stored (extraction_deadline 0) and nothing runs
    # in the background here (worker off); a queued extraction is left to the sidecar or `memwrap worker`.
    settings = load_settings(home=args.home, database_url=args.database_url, extraction_deadline=0.0, worker="off")
    return AsyncMemory(settings=settings, url=url)


async def _run(args: argparse.Namespace, event: str, payload: Mapping[str, Any]) -> HookResult:
    project = project_dir(payload)
    memory = _memory(args)
    try:
        return await asyncio.wait_for(
            run_hook(
                memory,
                event,
                payload,
                bank=args.bank or project_bank(project),
                project=project,
                recall_prompt=args.recall,
                token_budget=args.token_budget,
                query=args.query,
            ),
            timeout=args.timeout,
        )
    finally:
        await memory.close()


def cmd_hook(args: argparse.Namespace) -> int:
    """Exit status 0 whatever happens: a hook that fails must leave the agent alone (the reason on stderr)."""
    from memwrap.integrations.reserved_stdout import reserved_stdout

    try:
        if args.show_bank:
            sys.stdout.write((args.bank or project_bank(project_dir({}))) + "\n")
            return 0
        text = sys.stdin.read()
        payload = json.loads(text) if text.strip() else {}
        if not isinstance(payload, dict):
            raise HookInputError("the hook payload on stdin is not a JSON object")
        event = event_name(args.event, payload)
        with reserved_stdout() as out:  # the engine's noise (and its child processes') goes to stderr
            result = asyncio.run(_run(args, event, payload))
            out.write(output(event, result).encode())
            out.flush()
        if args.verbose:
            for item in result.retained:
                sys.stderr.write(f"memwrap hook: retained {item['content'][:200]!r}\n")
    except TimeoutError:
        sys.stderr.write(f"memwrap hook: gave up after {args.timeout:g} s; nothing was injected.\n")
    except Exception as exc:  # noqa: BLE001 - whatever went wrong, the agent goes on
        sys.stderr.write(f"memwrap hook: {type(exc).__name__}: {exc}\n")
    return 0


def configure_hook(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "event",
        nargs="?",
        help="SessionStart, UserPromptSubmit or Stop (also session-start, ...); default: the payload's hook_event_name",
    )
    parser.add_argument("--bank", help="the bank (default: one per project, see --show-bank)")
    parser.add_argument("--url", help="a `memwrap serve` sidecar (MEMWRAP_URL; default: the embedded engine)")
    parser.add_argument(
        "--recall", action="store_true", help="UserPromptSubmit: also inject what memory holds for the prompt"
    )
    parser.add_argument("--query", help="SessionStart: the recall query (default: what matters for this project)")
    parser.add_argument("--token-budget", type=int, default=DEFAULT_TOKEN_BUDGET, help="tokens of injected memory")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, help="seconds before the hook gives up")
    parser.add_argument("--show-bank", action="store_true", help="print the bank this directory's hooks use, and exit")
    parser.add_argument("--verbose", action="store_true", help="say on stderr what was retained")


def register(register_command: Register) -> None:
    register_command(
        "hook", configure_hook, cmd_hook, "Claude Code hooks: retain prompts and answers, inject a recall (stdin JSON)"
    )
