"""`memwrap mcp --bank …` (MCP over stdio) with the official `mcp` client, as Claude Desktop starts it: a fresh
process of the console script on an embedded home. And docs/coding-agents.md's snippets: they parse, and the
commands and addresses they name answer an MCP client."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from test_server_harness import *  # noqa: F403 - fixtures: sidecar, admin

MEMWRAP = str(Path(sys.executable).parent / "memwrap")
ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "coding-agents.md"
HOOK_FIXTURES = ROOT / "tests" / "fixtures" / "claude_code_hooks"


@pytest.fixture(scope="module")
def stdio_home() -> Iterator[Path]:
    """A home no other process uses: the stdio server starts its own PostgreSQL, a child that inherits stdout."""
    home = Path(tempfile.mkdtemp(prefix="memwrap-stdio-"))  # not tmp_path: PostgreSQL must traverse the path
    yield home
    shutil.rmtree(home, ignore_errors=True)


def _server(args: list[str], home: Path, errlog: Any) -> Client:
    command = MEMWRAP if args[0] == "memwrap" else args[0]
    params = StdioServerParameters(command=command, args=args[1:], env={"MEMWRAP_HOME": str(home)})
    return Client(stdio_client(params, errlog=errlog))


def _payload(result: Any) -> dict[str, Any]:
    assert not result.is_error, result
    return result.structured_content or json.loads(result.content[0].text)


async def test_a_stdio_session_retains_recalls_invalidates_and_deletes(stdio_home: Path, tmp_path: Path) -> None:
    errors = tmp_path / "stderr.txt"
    with errors.open("w") as errlog:
        async with _server(["memwrap", "mcp", "--bank", "desk", "--home", str(stdio_home)], stdio_home, errlog) as c:
            tools = {t.name for t in (await c.list_tools()).tools}
            assert {"retain", "recall", "list_memories", "invalidate_memory", "delete_memory"} <= tools
            assert "bank_id" not in json.dumps([t.input_schema for t in (await c.list_tools()).tools])
            ids = _payload(await c.call_tool("retain", {"content": "Staging is reset every Monday at 06:00 UTC."}))
            kept = _payload(await c.call_tool("retain", {"content": "Deploys go out on Thursdays after the standup."}))
            recalled = _payload(await c.call_tool("recall", {"query": "When is staging reset?"}))
            assert "Monday at 06:00 UTC" in recalled["context"]

            gone = ids["ids"][0]
            assert _payload(await c.call_tool("invalidate_memory", {"memory_id": gone, "reason": "now Tuesdays"})) == {
                "invalidated": True
            }
            recalled = _payload(await c.call_tool("recall", {"query": "When is staging reset?"}))
            assert "Monday" not in recalled["context"]
            assert _payload(await c.call_tool("delete_memory", {"memory_id": gone})) == {"deleted": True}
            missing = await c.call_tool("get_memory", {"memory_id": gone})
            assert missing.is_error and "memory_not_found" in missing.content[0].text
            listed = _payload(await c.call_tool("list_memories", {}))
            assert [m["id"] for m in listed["memories"]] == kept["ids"]
    assert "Traceback" not in errors.read_text()


def test_stdout_carries_json_rpc_only(stdio_home: Path, tmp_path: Path) -> None:
    """Raw: whatever the process and the PostgreSQL server it starts write, each stdout line is a JSON-RPC message."""
    messages = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "raw", "version": "0"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "retain", "arguments": {"content": "x1"}},
        },
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "recall", "arguments": {"query": "x1"}}},
    ]
    errors = (tmp_path / "stderr.txt").open("w+")  # a file, not a pipe: debug logs must not fill a pipe nobody reads
    process = subprocess.Popen(
        [MEMWRAP, "mcp", "--bank", "raw", "--log-level", "debug"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=errors,
        text=True,
        env={"MEMWRAP_HOME": str(stdio_home), "PATH": "/usr/bin:/bin", "HOME": str(stdio_home)},
    )
    answers: list[dict[str, Any]] = []
    assert process.stdin is not None and process.stdout is not None
    for message in messages:
        process.stdin.write(json.dumps(message) + "\n")
        process.stdin.flush()
        if "id" in message:  # wait for its answer before the next request (the SDK answers in order anyway)
            answers.append(json.loads(process.stdout.readline()))
    process.stdin.close()
    rest = process.stdout.read()
    process.wait(timeout=120)
    errors.seek(0)
    stderr = errors.read()
    assert process.returncode == 0, stderr
    assert rest == ""
    assert [a["id"] for a in answers] == [1, 2, 3] and all(a["jsonrpc"] == "2.0" for a in answers)
    assert not answers[1]["result"].get("isError") and "x1" in answers[2]["result"]["structuredContent"]["context"]
    assert "MCP over stdio for bank 'raw'" in stderr  # the log went to stderr


def test_every_line_with_an_id_is_answered(stdio_home: Path, tmp_path: Path) -> None:
    """What the SDK cannot read (not JSON, a lone surrogate escape, nesting past its parser) is answered with a
    JSON-RPC error (-32700, or -32600 with the call's id), and the session goes on."""
    errors = (tmp_path / "stderr.txt").open("w+")
    process = subprocess.Popen(
        [sys.executable, "-m", "memwrap", "mcp", "--bank", "raw"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=errors,
        env={
            "MEMWRAP_HOME": str(stdio_home),
            "PATH": "/usr/bin:/bin",
            "HOME": str(stdio_home),
            "PYTHONPATH": str(ROOT),
        },
    )
    assert process.stdin is not None and process.stdout is not None

    def ask(line: bytes) -> dict[str, Any]:
        process.stdin.write(line + b"\n")
        process.stdin.flush()
        return dict(json.loads(process.stdout.readline()))

    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}},
    }
    try:
        assert ask(json.dumps(init).encode())["id"] == 1
        process.stdin.write(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
        not_json = ask(b'{"jsonrpc": "2.0", "id": 2, "method": ')
        assert not_json["id"] is None and not_json["error"]["code"] == -32700, not_json
        call = (
            b'{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"recall","arguments":{"query":"\\ud800"}}}'
        )
        surrogate = ask(call)
        assert surrogate["id"] == 3 and surrogate["error"]["code"] == -32600, surrogate
        assert "surrogate" in surrogate["error"]["message"]
        deep = ask(b"[" * 5000 + b"]" * 5000)
        assert deep["id"] is None and deep["error"]["code"] == -32700, deep
        fine = {
            "jsonrpc": "2.0",
            "id": 4,
            "method": "tools/call",
            "params": {"name": "recall", "arguments": {"query": "x"}},
        }
        answer = ask(json.dumps(fine).encode())
        assert answer["id"] == 4 and not answer["result"].get("isError"), answer  # the session goes on
    finally:
        process.stdin.close()
        process.wait(timeout=120)
    errors.seek(0)
    assert "Traceback" not in errors.read()


def test_a_bad_bank_is_refused_before_anything_starts(stdio_home: Path) -> None:
    result = subprocess.run([MEMWRAP, "mcp", "--bank", "two words"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and result.stdout == ""
    assert "Invalid bank id 'two words'" in result.stderr


# --- docs/coding-agents.md -------------------------------------------------------------------------------------


def _blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", DOC.read_text(), flags=re.DOTALL)


def _servers() -> list[dict[str, Any]]:
    """Every MCP server entry the doc gives: Cursor's and Claude Desktop's JSON, Codex's TOML."""
    found = [json.loads(b)["mcpServers"]["memwrap"] for b in _blocks("json") if "mcpServers" in b]
    found += [tomllib.loads(b)["mcp_servers"]["memwrap"] for b in _blocks("toml")]
    return found


def _claude_mcp_add() -> list[list[str]]:
    return [shlex.split(line) for b in _blocks("bash") for line in b.splitlines() if line.startswith("claude mcp add")]


def test_the_doc_gives_every_client_both_ways() -> None:
    servers = _servers()
    assert len(servers) == 5  # Cursor and Codex over HTTP and stdio, Claude Desktop over stdio
    assert sum("url" in s for s in servers) == 2 and sum("command" in s for s in servers) == 3
    adds = _claude_mcp_add()
    assert [a[:5] for a in adds if "--transport" in a] == [["claude", "mcp", "add", "--transport", "http"]]
    assert any(a[a.index("--") + 1 :][:2] == ["memwrap", "mcp"] for a in adds if "--" in a)


def _stdio_commands() -> list[list[str]]:
    commands = [[s["command"], *s["args"]] for s in _servers() if "command" in s]
    commands += [a[a.index("--") + 1 :] for a in _claude_mcp_add() if "--" in a]
    return sorted({tuple(c): c for c in commands}.values())


def _urls() -> list[str]:
    urls = [s["url"] for s in _servers() if "url" in s]
    urls += [a[a.index("http") + 2] for a in _claude_mcp_add() if "http" in a]
    return sorted(set(urls))


@pytest.mark.parametrize("command", _stdio_commands(), ids=" ".join)
async def test_the_docs_stdio_commands_answer_initialize(command: list[str], stdio_home: Path, tmp_path: Path) -> None:
    assert command[:3] == ["memwrap", "mcp", "--bank"]
    with (tmp_path / "stderr.txt").open("w") as errlog:
        async with _server(command, stdio_home, errlog) as client:
            assert client.server_info is not None and client.server_info.name == "memwrap"
            assert "invalidate_memory" in {t.name for t in (await client.list_tools()).tools}


@pytest.mark.parametrize("url", _urls())
async def test_the_docs_urls_are_the_sidecars_mcp_endpoints(url: str, sidecar: ServerProcess) -> None:  # noqa: F405
    match = re.fullmatch(r"http://127\.0\.0\.1:8765(/mcp/[^/]+/)", url)
    assert match, url  # the default address of `memwrap serve`, one bank per URL
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {ADMIN_KEY}"})  # noqa: F405
    async with Client(streamable_http_client(sidecar.url + match.group(1), http_client=http)) as client:
        assert "delete_memory" in {t.name for t in (await client.list_tools()).tools}


def test_the_docs_hooks_block_runs(memwrap_home: Path, tmp_path: Path) -> None:
    settings = next(json.loads(b) for b in _blocks("json") if '"hooks"' in b)
    assert set(settings["hooks"]) == {"SessionStart", "UserPromptSubmit", "Stop"}
    project = tmp_path / "my-project"
    project.mkdir()
    for event, groups in settings["hooks"].items():
        for entry in (h for group in groups for h in group["hooks"]):
            assert entry["type"] == "command" and entry["timeout"] == 60
            argv = shlex.split(entry["command"])
            assert argv[:3] == ["memwrap", "hook", event]
            fixture = {"SessionStart": "session_start", "UserPromptSubmit": "user_prompt_submit", "Stop": "stop"}[event]
            stdin = (HOOK_FIXTURES / f"{fixture}.json").read_text()
            stdin = stdin.replace("{fixtures}", str(HOOK_FIXTURES)).replace("{project}", str(project))
            result = subprocess.run(
                [MEMWRAP, *argv[1:]],
                input=stdin,
                capture_output=True,
                text=True,
                timeout=300,
                env={"MEMWRAP_HOME": str(memwrap_home), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
            )
            assert (result.returncode, result.stderr) == (0, ""), result.stderr
            if event == "SessionStart" and result.stdout:
                assert json.loads(result.stdout)["hookSpecificOutput"]["hookEventName"] == "SessionStart"


async def test_stdio_through_a_sidecar(sidecar: ServerProcess, tmp_path: Path) -> None:  # noqa: F405
    """With --url the stdio process is a client of the sidecar: what it retains is the sidecar's, in its bank."""
    bank = f"stdio-url-{tmp_path.name[-6:]}".replace("_", "-")
    params = StdioServerParameters(
        command=MEMWRAP,
        args=["mcp", "--bank", bank, "--url", sidecar.url],
        env={"MEMWRAP_API_KEY": ADMIN_KEY, "MEMWRAP_HOME": str(tmp_path / "unused")},  # noqa: F405
    )
    with (tmp_path / "stderr.txt").open("w") as errlog:
        async with Client(stdio_client(params, errlog=errlog)) as client:
            stored = _payload(await client.call_tool("retain", {"content": "The VPN config lives in ops/vpn.ovpn."}))
    listed = httpx.get(
        f"{sidecar.url}/v1/banks/{bank}/memories",
        headers={"Authorization": f"Bearer {ADMIN_KEY}"},  # noqa: F405
    ).json()["items"]
    assert [m["id"] for m in listed] == stored["ids"]
    assert not (tmp_path / "unused").exists()  # no embedded database was started
