"""`memwrap hook` fed the payloads Claude Code sends (recorded fixtures: tests/fixtures/claude_code_hooks/), run as
Claude Code runs it: a fresh process, the payload on stdin, the real package and an embedded home (or a sidecar).
What it retained is read back from the bank; what it printed is parsed as Claude Code's hook output."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import httpx
import pytest
from test_server_harness import *  # noqa: F403 - fixtures: sidecar, admin

from memwrap import Memory
from memwrap.block.fence import OPEN_TAG
from memwrap.integrations.claude_code import answer_from_transcript, project_bank

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "claude_code_hooks"
MEMWRAP = str(Path(sys.executable).parent / "memwrap")
PROMPT = json.loads((FIXTURES / "user_prompt_submit.json").read_text())["prompt"]
ANSWER = (
    "I'll check the CI workflow.\n\nDone: the CI test job now starts the Postgres service from "
    "docker-compose.test.yml before running `pnpm test` (it used npm before)."
)
STORED_ANSWER = " ".join(ANSWER.split())  # retain keeps a turn's text with its whitespace collapsed


def payload(name: str, project: Path) -> str:
    text = (FIXTURES / f"{name}.json").read_text()
    return text.replace("{fixtures}", str(FIXTURES)).replace("{project}", str(project))


def hook(
    args: list[str],
    stdin: str,
    home: Path,
    *,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    binary: bytes | None = None,
) -> subprocess.CompletedProcess[str]:
    """The hook run as the agent runs it (`binary`: these bytes on stdin instead of `stdin`)."""
    environment = {k: v for k, v in os.environ.items() if k not in {"CLAUDE_PROJECT_DIR", "MEMWRAP_URL"}}
    # The hook service outlives the hook; here it goes 5 s after the test's last hook (the default is 10 min).
    environment.update({"MEMWRAP_HOME": str(home), "MEMWRAP_HOOK_IDLE_SECONDS": "5", **(env or {})})
    done = subprocess.run(
        [MEMWRAP, "hook", *args],
        input=stdin.encode() if binary is None else binary,
        capture_output=True,
        cwd=cwd,
        env=environment,
        timeout=300,
    )
    return subprocess.CompletedProcess(done.args, done.returncode, done.stdout.decode(), done.stderr.decode())


def injected(result: subprocess.CompletedProcess[str], event: str) -> str:
    output = json.loads(result.stdout)
    assert output["hookSpecificOutput"]["hookEventName"] == event
    return str(output["hookSpecificOutput"]["additionalContext"])


@pytest.fixture
def bank() -> str:
    return f"hooks-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    path = tmp_path / "orchard"
    path.mkdir()
    return path


def test_a_session_is_retained_and_recalled_at_the_next_start(
    memory: Memory, memwrap_home: Path, bank: str, project: Path
) -> None:
    prompt = hook(["UserPromptSubmit", "--bank", bank], payload("user_prompt_submit", project), memwrap_home)
    assert (prompt.returncode, prompt.stdout) == (0, ""), prompt.stderr
    stop = hook(["Stop", "--bank", bank], payload("stop", project), memwrap_home)
    assert (stop.returncode, stop.stdout) == (0, ""), stop.stderr  # Stop prints nothing: it would be a decision

    stored = memory.list(bank)
    assert [m.text for m in stored] == [f"user: {PROMPT}", f"assistant: {STORED_ANSWER}"]
    assert [m.speaker for m in stored] == ["user", "assistant"]
    assert all(m.tags == ["claude-code"] and m.metadata["source"] == "claude-code" for m in stored)
    assert {m.metadata["session_id"] for m in stored} == {"6f1c2a9e-3d4b-4c8a-9e21-7b5d0f3a1c44"}
    assert [m.metadata["hook"] for m in stored] == ["UserPromptSubmit", "Stop"]

    start = hook(["SessionStart", "--bank", bank], payload("session_start", project), memwrap_home)
    assert start.returncode == 0, start.stderr
    context = injected(start, "SessionStart")
    assert context.startswith(OPEN_TAG)  # the fenced block: memory as data, not instructions
    assert "pnpm" in context and "docker-compose.test.yml" in context

    again = hook(["Stop", "--bank", bank], payload("stop", project), memwrap_home)  # the same turn once more
    assert again.returncode == 0 and len(memory.list(bank)) == 2  # stored once


def test_stop_takes_last_assistant_message_when_given(
    memory: Memory, memwrap_home: Path, bank: str, project: Path
) -> None:
    result = hook(["stop", "--bank", bank], payload("stop_with_last_message", project), memwrap_home)
    assert (result.returncode, result.stdout) == (0, ""), result.stderr
    assert [m.text for m in memory.list(bank)] == [
        "assistant: Renamed the release workflow to release.yml and pinned Node 22 in .nvmrc, as agreed."
    ]


def test_the_event_may_come_from_the_payload(memory: Memory, memwrap_home: Path, bank: str, project: Path) -> None:
    result = hook(["--bank", bank], payload("user_prompt_submit", project), memwrap_home)
    assert result.returncode == 0, result.stderr
    assert [m.text for m in memory.list(bank)] == [f"user: {PROMPT}"]


def test_prompt_hook_with_recall_injects_what_memory_holds_before_retaining(
    memory: Memory, memwrap_home: Path, bank: str, project: Path
) -> None:
    memory.retain(bank, "The integration tests of orchard run against Postgres 16 on port 5433.")
    result = hook(
        ["user-prompt-submit", "--bank", bank, "--recall"], payload("user_prompt_submit", project), memwrap_home
    )
    assert result.returncode == 0, result.stderr
    context = injected(result, "UserPromptSubmit")
    assert "Postgres 16 on port 5433" in context
    assert "never npm" not in context  # recalled before the prompt itself was retained
    assert f"user: {PROMPT}" in [m.text for m in memory.list(bank)]


def test_session_start_with_an_empty_bank_prints_nothing(memwrap_home: Path, bank: str, project: Path) -> None:
    result = hook(["SessionStart", "--bank", bank], payload("session_start", project), memwrap_home)
    assert (result.returncode, result.stdout) == (0, ""), result.stderr


def test_the_default_bank_is_the_projects(memory: Memory, memwrap_home: Path, project: Path, tmp_path: Path) -> None:
    expected = project_bank(project.resolve())
    assert expected.startswith("orchard-") and len(expected) == len("orchard-") + 8
    shown = hook(["--show-bank"], "", memwrap_home, cwd=project)
    assert (shown.returncode, shown.stdout.strip()) == (0, expected)

    # The payload's cwd names the project...
    result = hook(["UserPromptSubmit"], payload("user_prompt_submit", project), memwrap_home, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert [m.text for m in memory.list(expected)] == [f"user: {PROMPT}"]
    # ...unless Claude Code says where the project is (the session may have moved to a subdirectory).
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {"CLAUDE_PROJECT_DIR": str(elsewhere)}
    result = hook(["Stop"], payload("stop", project), memwrap_home, env=env)
    assert result.returncode == 0, result.stderr
    assert [m.text for m in memory.list(project_bank(elsewhere.resolve()))] == [f"assistant: {STORED_ANSWER}"]
    memory.delete_bank(expected)
    memory.delete_bank(project_bank(elsewhere.resolve()))


@pytest.mark.parametrize(
    ("args", "stdin", "said"),
    [
        (["UserPromptSubmit"], "this is not JSON", "JSONDecodeError"),
        (["PreToolUse"], '{"hook_event_name": "PreToolUse"}', "unsupported hook event 'PreToolUse'"),
        (["Stop"], '{"hook_event_name": "Stop", "transcript_path": "/nonexistent/t.jsonl"}', "FileNotFoundError"),
        (["UserPromptSubmit", "--bank", " bad bank"], '{"prompt": "hello"}', "Invalid bank id"),
        (["UserPromptSubmit"], '{"hook_event_name": "UserPromptSubmit"}', "has no prompt"),
    ],
)
def test_a_failing_hook_never_blocks_the_agent(memwrap_home: Path, args: list[str], stdin: str, said: str) -> None:
    result = hook([*args, "--bank", "hooks-failures"] if "--bank" not in args else args, stdin, memwrap_home)
    assert (result.returncode, result.stdout) == (0, "")
    assert said in result.stderr and result.stderr.startswith("memwrap hook: ")


def test_an_unreachable_sidecar_does_not_block_either(memwrap_home: Path, project: Path) -> None:
    closed = f"http://127.0.0.1:{free_port()}"  # noqa: F405 - from test_server_harness
    result = hook(["SessionStart", "--url", closed, "--timeout", "20"], payload("session_start", project), memwrap_home)
    assert (result.returncode, result.stdout) == (0, "")
    assert result.stderr.startswith("memwrap hook: ") and len(result.stderr.splitlines()) == 1


def test_hooks_through_a_sidecar(sidecar: ServerProcess, admin: httpx.Client, bank: str, project: Path) -> None:  # noqa: F405
    env = {"MEMWRAP_URL": sidecar.url, "MEMWRAP_API_KEY": ADMIN_KEY}  # noqa: F405
    home = Path(os.environ["MEMWRAP_HOME"])
    for name in ("user_prompt_submit", "stop"):
        result = hook(["--bank", bank], payload(name, project), home, env=env)
        assert (result.returncode, result.stdout) == (0, ""), result.stderr
    texts = [m["text"] for m in admin.get(f"/v1/banks/{bank}/memories").json()["items"]]
    assert texts == [f"user: {PROMPT}", f"assistant: {STORED_ANSWER}"]
    start = hook(["SessionStart", "--bank", bank], payload("session_start", project), home, env=env)
    assert "pnpm" in injected(start, "SessionStart")
    denied = hook(
        ["SessionStart", "--bank", bank],
        payload("session_start", project),
        home,
        env={**env, "MEMWRAP_API_KEY": "wrong"},
    )
    assert (denied.returncode, denied.stdout) == (0, "") and "memwrap hook: " in denied.stderr


def test_the_last_turn_is_read_from_the_transcript() -> None:
    lines = (FIXTURES / "transcript.jsonl").read_text().splitlines()
    assert answer_from_transcript(lines) == ANSWER
    # Before the last prompt's answer came, the turn is the earlier one's; a line cut mid-write is skipped.
    assert answer_from_transcript(lines[:3] + ['{"type": "assistant", "mess']) == (
        "It rebuilds the search index (an earlier answer: not part of the last turn)."
    )
    assert answer_from_transcript(lines[:5]) == ""  # a prompt with no answer yet
