"""`memwrap hook EVENT`: Claude Code's (and Codex's) lifecycle hooks, so a coding session is remembered without the
model having to call a tool.

The agent runs the command with the hook's JSON payload on stdin (session_id, transcript_path, cwd,
hook_event_name, and the event's own fields). Codex CLI's hooks send the same contract (plus turn_id and model);
`--agent codex` (or a payload with a turn_id) labels what is retained as Codex's.

* UserPromptSubmit (`prompt`): the prompt is retained; with `--recall`, what memory holds for it is printed as
  `hookSpecificOutput.additionalContext`, which the agent adds to the model's context.
* Stop: the assistant's answer is retained: every text of the last turn read from the transcript at
  `transcript_path` (an `isMeta`, sidechain or tool-result entry never splits a turn; tool calls and thinking are
  left out), or `last_assistant_message` when the transcript does not end with it (not written yet, or Codex's).
* SubagentStop: the sub-agent's answer (its own transcript `agent_transcript_path`, else `last_assistant_message`,
  else the sidechain entries of `transcript_path`), tagged `subagent`.
* PreCompact (`trigger`: manual or auto) and SessionEnd (`reason`): every prompt and answer since the last
  compaction, the part of the session a compaction is about to drop or an ending session leaves behind. What
  UserPromptSubmit and Stop already retained is recognised (same document id and text) and not stored twice.
* SessionStart (`source`: startup, resume, clear, compact): a recall of what matters for this project is printed
  as additionalContext.

Everything here runs inside the hook service (memwrap/integrations/hook_service.py), a resident process per home
that `memwrap hook` (memwrap/integrations/hook_client.py) talks to; this module is its engine side.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memwrap.integrations import agent_transcript as transcript
from memwrap.integrations.hook_bank import project_bank

__all__ = ["HookOptions", "HookResult", "answer_from_transcript", "project_bank", "run_hook"]

SOURCES = {"claude-code": "Claude Code", "codex": "Codex"}
DEFAULT_AGENT = "claude-code"
DEFAULT_TOKEN_BUDGET = 800
# The most of one prompt or answer kept: a coding answer can carry whole files; memory wants what was said.
MAX_TEXT_CHARS = 8000
SESSION_START_QUERY = (
    "What matters for working on the project {project}: decisions made, conventions and preferences, "
    "what was being worked on and what is still open."
)

EVENTS = {
    name.lower(): name
    for name in ("SessionStart", "UserPromptSubmit", "Stop", "SubagentStop", "PreCompact", "SessionEnd")
}


class HookInputError(ValueError):
    """The payload on stdin is not what the agent sends for this event."""


@dataclass(frozen=True)
class HookResult:
    """What one hook did: the items it retained and the context it printed (None: printed nothing)."""

    retained: list[dict[str, Any]]
    context: str | None


@dataclass(frozen=True)
class HookOptions:
    """The command line's choices, as the hook service receives them."""

    bank: str | None = None
    agent: str | None = None
    recall: bool = False
    token_budget: int = DEFAULT_TOKEN_BUDGET
    query: str | None = None
    project_dir: str | None = None  # CLAUDE_PROJECT_DIR of the hook's environment
    cwd: str | None = None  # the hook process's working directory


# --- the payload ---------------------------------------------------------------------------------------------


def event_name(given: str | None, payload: Mapping[str, Any]) -> str:
    """The event as the agent names it, from the command line (any case, with - or _) or the payload."""
    raw = given or str(payload.get("hook_event_name") or "")
    event = EVENTS.get(re.sub(r"[-_\s]", "", raw).lower())
    if event is None:
        raise HookInputError(f"unsupported hook event {raw!r}: memwrap handles {', '.join(EVENTS.values())}")
    return event


def project_dir(payload: Mapping[str, Any], options: HookOptions) -> Path:
    """The project: CLAUDE_PROJECT_DIR (set by Claude Code for hooks; stable when the session changes directory),
    else the payload's cwd, else the hook process's."""
    return Path(str(options.project_dir or payload.get("cwd") or options.cwd or os.getcwd())).expanduser().resolve()


def agent_of(options: HookOptions, payload: Mapping[str, Any]) -> str:
    """`--agent`, else Codex when the payload carries Codex's turn_id, else Claude Code."""
    if options.agent:
        if options.agent not in SOURCES:
            raise HookInputError(f"unknown agent {options.agent!r}: one of {', '.join(SOURCES)}")
        return options.agent
    return "codex" if "turn_id" in payload else DEFAULT_AGENT


def _same_text(part: str, whole: str) -> bool:
    return " ".join(part.split()) in " ".join(whole.split())


def _pick_answer(from_transcript: str, given: Any) -> str:
    """The turn's texts from the transcript, unless the agent's `last_assistant_message` is not among them (the
    transcript is not written up to the end yet, or it is not in Claude Code's format): then that message."""
    if isinstance(given, str) and given.strip() and not _same_text(given, from_transcript):
        return given
    return from_transcript


def _lines(path: Any, max_bytes: int) -> list[str]:
    return transcript.read_tail(str(path), max_bytes) if path else []


def last_answer(payload: Mapping[str, Any]) -> str:
    """Stop: every text of the last turn (transcript) or `last_assistant_message`."""
    path, given = payload.get("transcript_path"), payload.get("last_assistant_message")
    if not path and not (isinstance(given, str) and given.strip()):
        raise HookInputError("the Stop payload has neither last_assistant_message nor transcript_path")
    lines = _lines(path, transcript.TURN_TAIL_BYTES)
    return _pick_answer(transcript.last_answer_text(lines), given)


def subagent_answer(payload: Mapping[str, Any]) -> str:
    """SubagentStop: the sub-agent's last turn, from its own transcript (all sidechain entries) when named."""
    given = payload.get("last_assistant_message")
    own = payload.get("agent_transcript_path")
    if own:
        lines = _lines(own, transcript.TURN_TAIL_BYTES)
        text = transcript.last_answer_text(lines, sidechain=True) or transcript.last_answer_text(lines)
    elif isinstance(given, str) and given.strip():
        text = ""
    else:
        text = transcript.last_answer_text(
            _lines(payload.get("transcript_path"), transcript.TURN_TAIL_BYTES), sidechain=True
        )
    return _pick_answer(text, given)


def answer_from_transcript(lines: Iterable[str]) -> str:
    """The text of the assistant's turn after the last prompt of a Claude Code JSONL transcript."""
    return transcript.last_answer_text(lines)


# --- what is retained ----------------------------------------------------------------------------------------


def _item(
    role: str, text: str, payload: Mapping[str, Any], event: str, project: Path, agent: str, *, part: str | None = None
) -> dict[str, Any] | None:
    from memwrap.wrappers.inject import strip_memory  # a memory block quoted back is not said again
    from memwrap.wrappers.transcript import Turn, render

    said = strip_memory(text).strip()
    if not said:
        return None
    if len(said) > MAX_TEXT_CHARS:
        said = said[:MAX_TEXT_CHARS].rstrip() + " … (cut)"
    session = str(payload.get("session_id") or "no-session")
    part = part or ("prompt" if role == "user" else "answer")
    digest = hashlib.sha256(said.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    metadata = {"source": agent, "session_id": session, "hook": event, "cwd": str(payload.get("cwd") or "")}
    for key in ("agent_type", "agent_id", "trigger", "reason"):
        if isinstance(payload.get(key), str) and payload[key]:
            metadata[key] = payload[key]
    return {
        "content": render([Turn(role, said)]),
        "context": f"a {SOURCES[agent]} session in the project {project.name}",
        # "session:part" groups a session's items (memwrap/models/memories.py): the answer is read after its prompt. The
        # digest makes the id the same whichever hook retains the same text, so it is stored once.
        "document_id": f"{agent}-{session}:{part}-{digest}",
        "metadata": metadata,
        "tags": [agent, "subagent"] if part == "subagent" else [agent],
    }


def sweep_items(payload: Mapping[str, Any], event: str, project: Path, agent: str) -> list[dict[str, Any]]:
    """PreCompact and SessionEnd: every prompt and answer since the last compaction."""
    path = payload.get("transcript_path")
    if not path:
        raise HookInputError(f"the {event} payload has no transcript_path")
    items: list[dict[str, Any]] = []
    for turn in transcript.turns(_lines(path, transcript.SWEEP_TAIL_BYTES)):
        for role, text in (("user", turn.prompt or ""), ("assistant", turn.answer_text)):
            item = _item(role, text, payload, event, project, agent)
            if item is not None:
                items.append(item)
    return items


def _storable(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Made storable as the proxy makes a turn storable (NUL and lone surrogates replaced, not refused)."""
    from memwrap import validate

    return [part for item in items for part in validate.storable_items(item)]


# --- running a hook ------------------------------------------------------------------------------------------


async def run_hook(memory: Any, event: str, payload: Mapping[str, Any], options: HookOptions) -> HookResult:
    """Do what `event` asks of memory (`memory`: an AsyncMemory, embedded or over HTTP)."""
    project = project_dir(payload, options)
    bank = options.bank or project_bank(project)
    agent = agent_of(options, payload)
    budget = options.token_budget
    items: list[dict[str, Any] | None] = []
    context: str | None = None
    if event == "SessionStart":
        query = options.query or SESSION_START_QUERY.format(project=project.name)
        context = (await memory.recall(bank, query, token_budget=budget)).context.strip() or None
    elif event == "UserPromptSubmit":
        prompt = payload.get("prompt")
        if not isinstance(prompt, str):
            raise HookInputError("the UserPromptSubmit payload has no prompt")
        from memwrap.validate import storable_text

        if options.recall and prompt.strip():  # before the prompt is retained: it would find itself first
            context = (await memory.recall(bank, storable_text(prompt), token_budget=budget)).context.strip() or None
        items.append(_item("user", prompt, payload, event, project, agent))
    elif event == "Stop":
        items.append(_item("assistant", last_answer(payload), payload, event, project, agent))
    elif event == "SubagentStop":
        items.append(_item("assistant", subagent_answer(payload), payload, event, project, agent, part="subagent"))
    elif event in ("PreCompact", "SessionEnd"):
        items += sweep_items(payload, event, project, agent)
    retained = _storable([i for i in items if i is not None])
    if retained:
        await memory.retain_many(bank, retained)
    return HookResult(retained, context)


def output(event: str, result: HookResult) -> str:
    """What the hook prints: the agent's JSON hook output with the recalled block as additionalContext, or
    nothing (Stop, SubagentStop and PreCompact print nothing: their output is read as a decision)."""
    if result.context is None or event not in ("SessionStart", "UserPromptSubmit"):
        return ""
    return json.dumps({"hookSpecificOutput": {"hookEventName": event, "additionalContext": result.context}}) + "\n"


def verbose_lines(result: HookResult) -> list[str]:
    """`--verbose`: what was retained, secrets redacted (these lines land in the agent's debug log)."""
    from memwrap.defense.policy import redact

    return [f"memwrap hook: retained {redact(item['content'])[:200]!r}" for item in result.retained]
