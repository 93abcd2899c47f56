"""examples/node/chat.mjs (the official `openai` npm package) against the proxy.

Needs node and the example's `npm install` (.ci/run does it when the machine has npm); skipped otherwise, saying
which of the two is missing."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import httpx
import pytest
from conftest_wrappers import memory_block
from fakes.llm_server import FakeLLMServer, Reply
from test_server_harness import *  # noqa: F403 - fixtures: sidecar, admin, upstream

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "node"


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not on PATH")
@pytest.mark.skipif(
    not (EXAMPLE / "node_modules" / "openai").exists(),
    reason="the example's npm package is not installed: run `npm install` in examples/node",
)
def test_node_openai_package_through_proxy(
    sidecar: ServerProcess, admin: httpx.Client, upstream: FakeLLMServer, bank: str
) -> None:
    upstream.script(["Welcome to Lisbon!", Reply(text="Try the vegetarian stalls at Time Out Market.", chunk_size=6)])
    env = {
        **os.environ,
        "MEMWRAP_URL": sidecar.url,
        "MEMWRAP_BANK": bank,
        "MEMWRAP_API_KEY": ADMIN_KEY,
        "OPENAI_API_KEY": "sk-node-upstream",
    }
    run = subprocess.run(["node", "chat.mjs"], cwd=EXAMPLE, env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert "turn 2: Try the vegetarian stalls at Time Out Market." in run.stdout
    second = upstream.last("openai.chat")
    assert second.stream and "vegetarian" in memory_block(second)
    assert second.headers["authorization"] == "Bearer sk-node-upstream"
