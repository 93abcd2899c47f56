"""The hooks past the first three: a recorded Claude Code session (isMeta, sidechain, tool use, thinking, a
compaction) read turn by turn; PreCompact, SessionEnd and SubagentStop; Codex's payloads; and the hostile inputs
of issue 37 (a FIFO or a device as transcript_path, NUL and invalid UTF-8 in a prompt, a secret in --verbose)."""

from __future__ import annotations

import json
import os
import threading
import uuid
from pathlib import Path

import pytest
from test_claude_code_hooks import FIXTURES, hook, payload

from memwrap import Memory
from memwrap.integrations import agent_transcript

SESSION = (FIXTURES / "session.jsonl").read_text().splitlines()
FIRST = "Setting up src/api with zod validation as the convention for all endpoints."
LAST = "Done: src/api/users.ts, orders.ts and health.ts each parse their body with a zod schema; routes are kebab-case."
PROMPT = "Set up the API layer under src/api; validate every request body."


@pytest.fixture
def bank() -> str:
    return f"hooks-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    path = tmp_path / "orchard"
    path.mkdir()
    return path


def test_meta_sidechain_and_tool_result_entries_never_split_a_turn() -> None:
    found = agent_transcript.turns(SESSION)
    assert [t.prompt for t in found] == [PROMPT]  # the compaction summary, /clear echo, command output: no prompt
    assert found[0].answer == [FIRST, LAST]  # the sub-agent's text and the thinking left out
    assert agent_transcript.last_answer_text(SESSION) == f"{FIRST}\n\n{LAST}"
    everything = agent_transcript.turns(SESSION, since_compaction=False)
    assert [t.prompt for t in everything] == ["What does the nightly job do?", PROMPT]
    sub = agent_transcript.turns((FIXTURES / "subagent.jsonl").read_text().splitlines(), sidechain=True)
    assert [(t.prompt, t.answer_text) for t in sub] == [
        (
            "List the HTTP endpoints in src/",
            "Found 3 endpoints: /users, /orders, /health, all registered in src/server.ts.",
        )
    ]


def test_the_transcript_is_read_from_a_regular_file_only_and_tail_first(tmp_path: Path) -> None:
    with pytest.raises(agent_transcript.TranscriptRefused):
        agent_transcript.read_tail("/dev/zero", 1024)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    done: list[object] = []
    reader = threading.Thread(target=lambda: done.append(_refused(fifo)), daemon=True)
    reader.start()
    reader.join(10)  # a blocking open would wait for a writer forever
    assert done == [True]
    with pytest.raises(agent_transcript.TranscriptRefused):
        agent_transcript.read_tail(tmp_path, 1024)
    big = tmp_path / "big.jsonl"
    big.write_text("x" * 5000 + "\n" + "\n".join(SESSION) + "\n")
    tail = agent_transcript.read_tail(big, len("\n".join(SESSION)) + 10)
    assert "x" * 50 not in "".join(tail) and agent_transcript.last_answer_text(tail) == f"{FIRST}\n\n{LAST}"


def _refused(path: Path) -> bool:
    try:
        agent_transcript.read_tail(path, 1024)
    except agent_transcript.TranscriptRefused:
        return True
    return False


def test_stop_retains_every_text_of_the_turn(memory: Memory, memwrap_home: Path, bank: str, project: Path) -> None:
    result = hook(["Stop", "--bank", bank], payload("stop_session", project), memwrap_home)
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")
    (stored,) = memory.list(bank)
    assert FIRST in stored.text and LAST in stored.text and "sub-agent" not in stored.text


def test_pre_compact_and_session_end_retain_what_the_compaction_drops(
    memory: Memory, memwrap_home: Path, bank: str, project: Path
) -> None:
    assert hook(["Stop", "--bank", bank], payload("stop_session", project), memwrap_home).stderr == ""
    result = hook(["PreCompact", "--bank", bank], payload("pre_compact", project), memwrap_home)
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")
    stored = memory.list(bank)
    texts = sorted(m.text for m in stored)
    assert texts == [f"assistant: {FIRST} {LAST}", f"user: {PROMPT}"]  # the answer Stop kept: once
    # (the nightly job's turn came before the last compaction: the last PreCompact's to keep)
    assert [m.metadata["hook"] for m in stored] == ["Stop", "PreCompact"]
    assert stored[1].metadata["trigger"] == "auto"
    end = hook(["--bank", bank], payload("session_end", project), memwrap_home)  # the event from the payload
    assert (end.returncode, end.stdout, end.stderr) == (0, "", "")
    assert len(memory.list(bank)) == 2


def test_subagent_stop_retains_the_subagents_answer(
    memory: Memory, memwrap_home: Path, bank: str, project: Path
) -> None:
    result = hook(["subagent-stop", "--bank", bank], payload("subagent_stop", project), memwrap_home)
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")
    (stored,) = memory.list(bank)
    assert stored.text == "assistant: Found 3 endpoints: /users, /orders, /health, all registered in src/server.ts."
    assert stored.tags == ["claude-code", "subagent"] and stored.metadata["agent_type"] == "Explore"


def test_codex_hooks(memory: Memory, memwrap_home: Path, bank: str, project: Path) -> None:
    for name in ("codex_user_prompt_submit", "codex_stop"):
        result = hook(["--bank", bank], payload(name, project), memwrap_home)
        assert (result.returncode, result.stdout, result.stderr) == (0, "", ""), name
    stored = memory.list(bank)
    assert [m.text for m in stored] == [
        "user: Our release branches are named release/YYYY-MM; never push tags by hand.",
        "assistant: Created release/2026-12 from main; the tag will come from the release workflow.",
    ]
    assert all(m.tags == ["codex"] and m.metadata["source"] == "codex" for m in stored)


@pytest.mark.parametrize("path", ["/dev/zero", "{fifo}"])
def test_stop_refuses_a_transcript_that_is_not_a_file(memwrap_home: Path, tmp_path: Path, path: str) -> None:
    fifo = tmp_path / "t.fifo"
    os.mkfifo(fifo)
    stdin = json.dumps({"hook_event_name": "Stop", "transcript_path": path.replace("{fifo}", str(fifo))})
    result = hook(["--bank", "hooks-refused", "--timeout", "20"], stdin, memwrap_home)
    assert (result.returncode, result.stdout) == (0, "")
    assert "not a regular file" in result.stderr


def test_a_broken_prompt_is_repaired_not_dropped_and_verbose_is_redacted(
    memory: Memory, memwrap_home: Path, bank: str, project: Path
) -> None:
    token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    raw = (
        b'{"hook_event_name": "UserPromptSubmit", "session_id": "s", "prompt": "keep \\u0000 this \xff\xfe and '
        + token.encode()
        + b' \\ud800 too"}'
    )
    result = hook(["--bank", bank, "--verbose"], raw.decode("latin-1"), memwrap_home, binary=raw)
    assert (result.returncode, result.stdout) == (0, "")
    assert token not in result.stderr and "[REDACTED:" in result.stderr
    (stored,) = memory.list(bank)
    assert stored.text.startswith("user: keep \ufffd this \ufffd\ufffd and ") and stored.text.endswith("\ufffd too")
    assert token not in stored.text
