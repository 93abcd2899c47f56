"""`memwrap mcp --bank …` (MCP over stdio) with the official `mcp` client, as Claude Desktop starts it: a fresh
process of the console script on an embedded home. And docs/coding-agents.md's snippets: they parse, and the
commands and addresses they name answer an MCP client."""

from __future__ import annotations

import json
import os
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

import memwrap

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


def _env(**values: str) -> dict[str, str]:
    """A child's environment: these values, and PYTHONPATH when the run has one (a checkout tested without
    installing it: the console script must import the same memwrap as the tests)."""
    if os.environ.get("PYTHONPATH"):
        values.setdefault("PYTHONPATH", os.environ["PYTHONPATH"])
    return values


def _server(args: list[str], home: Path, errlog: Any) -> Client:
    command = MEMWRAP if args[0] == "memwrap" else args[0]
    params = StdioServerParameters(command=command, args=args[1:], env=_env(MEMWRAP_HOME=str(home)))
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
            assert "reflect" not in tools  # no LLM configured: it could only fail
            assert c.server_info is not None and c.server_info.version == memwrap.__version__
            assert "bank_id" not in json.dumps([t.input_schema for t in (await c.list_tools()).tools])
            ids = _payload(await c.call_tool("retain", {"content": "Staging is reset every Monday at 06:00 UTC."}))
            kept = _payload(await c.call_tool("retain", {"content": "Deploys go out on Thursdays after the standup."}))
            recalled = _payload(await c.call_tool("recall", {"query": "When is staging reset?"}))
            assert "Monday at 06:00 UTC" in recalled["context"]

            gone = ids["ids"][0]
            invalidated = _payload(
                await c.call_tool("invalidate_memory", {"memory_id": gone, "reason": "now Tuesdays"})
            )
            assert invalidated["invalidated"] is True
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
        env=_env(MEMWRAP_HOME=str(stdio_home), PATH="/usr/bin:/bin", HOME=str(stdio_home)),
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
            "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p),
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
    """Every MCP server entry the doc gives: Cursor's, Claude Desktop's and `.mcp.json`'s JSON (`mcpServers`),
    VS Code's (`servers`), Codex's TOML."""
    found = [json.loads(b)["mcpServers"]["memwrap"] for b in _blocks("json") if "mcpServers" in b]
    found += [json.loads(b)["servers"]["memwrap"] for b in _blocks("json") if '"servers"' in b]
    found += [tomllib.loads(b)["mcp_servers"]["memwrap"] for b in _blocks("toml") if "mcp_servers" in b]
    return found


def _claude_mcp_add() -> list[list[str]]:
    return [shlex.split(line) for b in _blocks("bash") for line in b.splitlines() if line.startswith("claude mcp add")]


def test_the_doc_gives_every_client_both_ways() -> None:
    servers = _servers()
    # Over HTTP: Cursor, Codex and VS Code without and with a key, Claude Code's .mcp.json; over stdio: Claude
    # Desktop, Cursor, Codex, VS Code.
    assert len(servers) == 11
    assert sum("url" in s for s in servers) == 7 and sum("command" in s for s in servers) == 4
    keyed = [s for s in servers if "headers" in s or "bearer_token_env_var" in s]
    assert len(keyed) == 4  # .mcp.json, Cursor, Codex, VS Code
    adds = _claude_mcp_add()
    assert [a[:5] for a in adds if "--transport" in a] == [["claude", "mcp", "add", "--transport", "http"]] * 2
    assert any("--header" in a for a in adds)
    assert any(a[a.index("--") + 1 :][:2] == ["memwrap", "mcp"] for a in adds if "--" in a)


def test_the_docs_project_and_vscode_entries_say_their_type() -> None:
    """`.mcp.json` (claude mcp add --scope project) needs "type": "http" for a URL; VS Code's `servers` say theirs."""
    project = [
        json.loads(b)["mcpServers"]["memwrap"] for b in _blocks("json") if "mcpServers" in b and '"type": "http"' in b
    ]
    vscode = [json.loads(b)["servers"]["memwrap"] for b in _blocks("json") if '"servers"' in b]
    assert any("url" in entry for entry in project) and len(vscode) == 3
    assert {entry["type"] for entry in vscode} == {"http", "stdio"}


def _keyed_entries(key: str) -> list[tuple[str, str, dict[str, str]]]:
    """Each key-bearing HTTP snippet as (what, url, headers), the key supplied as that client supplies it: Claude
    Code's shell and `.mcp.json` expand $VAR / ${VAR}, Cursor ${env:VAR}, VS Code an input's answer, Codex sends
    the variable `bearer_token_env_var` names as a bearer token."""
    env = {"MEMWRAP_API_KEY": key}
    found: list[tuple[str, str, dict[str, str]]] = []
    for add in _claude_mcp_add():
        if "--header" in add:
            name, _, value = add[add.index("--header") + 1].partition(":")
            url = add[add.index("http") + 2]
            found.append(
                ("claude mcp add --header", url, {name: re.sub(r"\$(\w+)", lambda m: env[m[1]], value.strip())})
            )
    for block in _blocks("json"):
        data = json.loads(block)
        entry = (data.get("mcpServers") or data.get("servers") or {}).get("memwrap", {})
        if "headers" in entry:
            answers = {i["id"]: key for i in data.get("inputs", [])}  # VS Code asks, once, and keeps the answer

            def expand(value: str, answers: dict[str, str] = answers) -> str:
                value = re.sub(r"\$\{env:(\w+)\}", lambda m: env[m[1]], value)  # Cursor
                value = re.sub(r"\$\{input:([\w-]+)\}", lambda m: answers[m[1]], value)  # VS Code
                return re.sub(r"\$\{(\w+)\}", lambda m: env[m[1]], value)  # Claude Code's .mcp.json

            what = "VS Code" if "servers" in data else ".mcp.json" if entry.get("type") == "http" else "Cursor"
            found.append((what, entry["url"], {k: expand(v) for k, v in entry["headers"].items()}))
    for block in _blocks("toml"):
        entry = tomllib.loads(block)["mcp_servers"]["memwrap"]
        if "bearer_token_env_var" in entry:
            found.append(("Codex", entry["url"], {"Authorization": f"Bearer {env[entry['bearer_token_env_var']]}"}))
    return found


async def test_the_docs_key_bearing_snippets_reach_a_sidecar_that_requires_a_key(
    sidecar: ServerProcess,  # noqa: F405
) -> None:
    entries = _keyed_entries(ADMIN_KEY)  # noqa: F405
    assert sorted(what for what, _, _ in entries) == [
        ".mcp.json",
        "Codex",
        "Cursor",
        "VS Code",
        "claude mcp add --header",
    ]
    for what, url, headers in entries:
        assert "MEMWRAP_API_KEY" not in str(headers) and "${" not in str(headers), what  # all expanded
        path = re.fullmatch(r"http://127\.0\.0\.1:8765(/mcp/[^/]+/)", url)
        assert path, url
        async with Client(
            streamable_http_client(sidecar.url + path.group(1), http_client=create_mcp_http_client(headers=headers))
        ) as client:
            assert "recall" in {t.name for t in (await client.list_tools()).tools}, what
    # The sidecar does require it: the same request without the header is refused.
    refused = httpx.post(
        f"{sidecar.url}/mcp/my-project/",
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        headers={"Accept": "application/json, text/event-stream"},
    )
    assert refused.status_code == 401


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


HOOK_FIXTURES_OF = {
    "claude-code": {
        "SessionStart": "session_start",
        "UserPromptSubmit": "user_prompt_submit",
        "Stop": "stop",
        "SubagentStop": "subagent_stop",
        "PreCompact": "pre_compact",
        "SessionEnd": "session_end",
    },
    "codex": {"SessionStart": "session_start", "UserPromptSubmit": "codex_user_prompt_submit", "Stop": "codex_stop"},
}


def test_the_docs_hooks_blocks_run(memwrap_home: Path, tmp_path: Path) -> None:
    blocks = [json.loads(b) for b in _blocks("json") if '"hooks"' in b]
    assert len(blocks) == 2  # Claude Code's settings.json, Codex's hooks.json
    project = tmp_path / "my-project"
    project.mkdir()
    for settings, agent in zip(blocks, ("claude-code", "codex"), strict=True):
        assert set(settings["hooks"]) == set(HOOK_FIXTURES_OF[agent])
        for event, groups in settings["hooks"].items():
            for entry in (h for group in groups for h in group["hooks"]):
                assert entry["type"] == "command" and entry["timeout"] == 60
                assert entry.get("async", False) == (event in {"Stop", "SubagentStop"} and agent == "claude-code")
                argv = shlex.split(entry["command"])
                assert argv[:3] == ["memwrap", "hook", event]
                assert ("--agent" in argv) == (agent == "codex")
                stdin = (HOOK_FIXTURES / f"{HOOK_FIXTURES_OF[agent][event]}.json").read_text()
                stdin = stdin.replace("{fixtures}", str(HOOK_FIXTURES)).replace("{project}", str(project))
                env = {"MEMWRAP_HOME": str(memwrap_home), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
                env["MEMWRAP_HOOK_IDLE_SECONDS"] = "5"  # the hook service goes soon after the test
                if os.environ.get("PYTHONPATH"):  # a checkout's tree, when the tests run against one
                    env["PYTHONPATH"] = os.environ["PYTHONPATH"]
                result = subprocess.run(
                    [MEMWRAP, *argv[1:]], input=stdin, capture_output=True, text=True, timeout=300, env=env
                )
                assert (result.returncode, result.stderr) == (0, ""), result.stderr
                if event == "SessionStart" and result.stdout:
                    assert json.loads(result.stdout)["hookSpecificOutput"]["hookEventName"] == "SessionStart"


async def test_reflect_is_listed_when_an_llm_is_configured(
    stdio_home: Path, tmp_path: Path, upstream_server: Any
) -> None:
    env = {
        "MEMWRAP_HOME": str(stdio_home),
        "MEMWRAP_LLM_PROVIDER": "openai",
        "MEMWRAP_LLM_MODEL": "gpt-4o-mini",
        "MEMWRAP_LLM_BASE_URL": upstream_server.openai_base_url,
    }
    params = StdioServerParameters(
        command=MEMWRAP, args=["mcp", "--bank", "desk", "--home", str(stdio_home)], env=_env(**env)
    )
    with (tmp_path / "stderr.txt").open("w") as errlog:
        async with Client(stdio_client(params, errlog=errlog)) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
    print("\n".join(f"{name}: {t.annotations}" for name, t in tools.items()))  # the acceptance note's table
    assert "reflect" in tools
    hints = tools["reflect"].annotations
    assert hints is not None and (hints.read_only_hint, hints.open_world_hint) == (True, False)


async def test_stdio_through_a_sidecar(sidecar: ServerProcess, tmp_path: Path) -> None:  # noqa: F405
    """With --url the stdio process is a client of the sidecar: what it retains is the sidecar's, in its bank."""
    bank = f"stdio-url-{tmp_path.name[-6:]}".replace("_", "-")
    params = StdioServerParameters(
        command=MEMWRAP,
        args=["mcp", "--bank", bank, "--url", sidecar.url],
        env=_env(MEMWRAP_API_KEY=ADMIN_KEY, MEMWRAP_HOME=str(tmp_path / "unused")),  # noqa: F405
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
