"""The LiteLLM proxy server next to `memwrap serve`, as examples/litellm_proxy_config.yaml sets them up.

`litellm --config` runs as its own process with the example's callback module, its memory being the session's
sidecar (MEMWRAP_URL): a chat call through the LiteLLM proxy reaches the fake upstream with the bank's memory
and is retained once, in the sidecar. Both servers run in the one environment that has litellm[proxy].
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from conftest_wrappers import *  # noqa: F403 - fixtures: warm_memory
from conftest_wrappers import memory_block
from fakes.llm_server import FakeLLMServer, Reply
from test_server_harness import *  # noqa: F403 - fixtures: sidecar, admin, upstream
from test_server_harness import ADMIN_KEY, ServerProcess, free_port, wait_until

pytest.importorskip("litellm.proxy")
pytest.importorskip("apscheduler", reason="litellm[proxy] is not installed")

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
MASTER_KEY = "sk-memwrap-test-master-key-0123456789"
FACT = "Alice's dog is called Biscuit and is a beagle."
QUESTION = "What is my dog's name?"


class LiteLLMProxy:
    """`litellm --config DIR/config.yaml` on 127.0.0.1 at a free port; its output goes to DIR/litellm.log."""

    def __init__(self, directory: Path, env: dict[str, str]) -> None:
        self.port = free_port()
        self.log = directory / "litellm.log"
        command = [
            str(Path(sys.executable).with_name("litellm")),
            "--config",
            "config.yaml",
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
        ]
        with self.log.open("wb") as log:
            self.process = subprocess.Popen(command, cwd=directory, env=env, stdout=log, stderr=subprocess.STDOUT)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def ready(self) -> bool:
        if self.process.poll() is not None:
            raise RuntimeError(f"litellm exited with {self.process.returncode}:\n{self.tail()}")
        try:
            return httpx.get(f"{self.url}/health/liveliness", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    def tail(self, chars: int = 4000) -> str:
        return self.log.read_text(errors="replace")[-chars:]

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)


@pytest.fixture(scope="module")
def litellm_proxy(
    warm_memory: Any, sidecar: ServerProcess, upstream_server: FakeLLMServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LiteLLMProxy]:
    # warm_memory first: the one-time model export happens here, not inside the sidecar's start-up wait.
    directory = tmp_path_factory.mktemp("litellm-proxy")
    shutil.copy(EXAMPLES / "memwrap_litellm_callbacks.py", directory)
    config = yaml.safe_load((EXAMPLES / "litellm_proxy_config.yaml").read_text())
    for entry in config["model_list"]:  # the example as written, pointed at the fake upstream
        params = entry["litellm_params"]
        anthropic = params["model"].startswith("anthropic/")
        params["api_base"] = upstream_server.anthropic_base_url if anthropic else upstream_server.openai_base_url
    (directory / "config.yaml").write_text(yaml.safe_dump(config))
    env = {
        **os.environ,
        "MEMWRAP_URL": sidecar.url,
        "MEMWRAP_API_KEY": ADMIN_KEY,
        "LITELLM_MASTER_KEY": MASTER_KEY,
        "OPENAI_API_KEY": "sk-upstream-test",
        "ANTHROPIC_API_KEY": "sk-ant-upstream-test",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",  # no download of the price list at start-up
        "MEMWRAP_RECALL_TIMEOUT": "30",  # about where memory goes, not how fast: a loaded machine must not matter
    }
    proxy = LiteLLMProxy(directory, env)
    try:
        assert wait_until(proxy.ready, timeout=300, interval=0.5), proxy.tail()
        yield proxy
    finally:
        proxy.stop()


def test_chat_through_the_litellm_proxy_injects_and_retains_once(
    litellm_proxy: LiteLLMProxy, admin: httpx.Client, upstream: FakeLLMServer, bank: str
) -> None:
    from openai import OpenAI

    assert admin.post(f"/v1/banks/{bank}/memories", json={"content": FACT}).status_code == 201
    assert admin.get("/health").json()["status"] == "ok", "memwrap serve runs next to litellm[proxy]"
    upstream.script(["Your dog is Biscuit."])
    client = OpenAI(
        base_url=f"{litellm_proxy.url}/v1", api_key=MASTER_KEY, max_retries=0, default_headers={"X-Memwrap-Bank": bank}
    )
    answer = client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": QUESTION}])
    assert answer.choices[0].message.content == "Your dog is Biscuit.", litellm_proxy.tail()

    sent = upstream.last("openai.chat")
    assert "Biscuit" in memory_block(sent), litellm_proxy.tail()

    found = wait_until(lambda: _exchange(admin, bank), timeout=60)
    # Retained once: the question and the answer, a memory each.
    assert [m["text"] for m in found] == [f"user: {QUESTION}", "assistant: Your dog is Biscuit."], litellm_proxy.tail()


def test_streamed_chat_through_the_litellm_proxy(
    litellm_proxy: LiteLLMProxy, admin: httpx.Client, upstream: FakeLLMServer, bank: str
) -> None:
    from openai import OpenAI

    assert admin.post(f"/v1/banks/{bank}/memories", json={"content": FACT}).status_code == 201
    upstream.script([Reply(text="Biscuit, the beagle.", chunk_size=4)])
    client = OpenAI(
        base_url=f"{litellm_proxy.url}/v1", api_key=MASTER_KEY, max_retries=0, default_headers={"X-Memwrap-Bank": bank}
    )
    stream = client.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": QUESTION}], stream=True
    )
    assert "".join(c.choices[0].delta.content or "" for c in stream if c.choices) == "Biscuit, the beagle."
    assert "Biscuit" in memory_block(upstream.last("openai.chat"))

    found = wait_until(lambda: _exchange(admin, bank), timeout=60)
    assert [m["text"] for m in found] == [f"user: {QUESTION}", "assistant: Biscuit, the beagle."], litellm_proxy.tail()


def _exchange(admin: httpx.Client, bank: str) -> list[dict[str, Any]] | None:
    """The retained exchange of QUESTION (its question and its answer) once both are there, else None."""
    items = admin.get(f"/v1/banks/{bank}/memories", params={"limit": 100}).json()["items"]
    asked = [m for m in items if QUESTION in m["text"]]
    if not asked:
        return None
    exchange = [m for m in items if m["document_id"] == asked[0]["document_id"]]
    return exchange if len(exchange) >= 2 else None
