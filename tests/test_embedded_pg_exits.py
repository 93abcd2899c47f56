"""The embedded PostgreSQL stops with its last user however that process ends.

Each app below wraps a client (or uses the LiteLLM callbacks) on a home of its own, answers one call that
starts the embedded server, and is then ended the way its operators end it: SIGTERM to uvicorn, to gunicorn's
master (uvicorn workers), to the LiteLLM proxy, and SIGKILL to a plain script. uvicorn re-raises SIGTERM with
the default action after its graceful shutdown, so no exit hook runs; SIGKILL runs nothing at all. In every
case the database must stop (memwrap/store/pg_watchdog.py) instead of running on, reparented to PID 1."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from conftest import _new_home
from conftest_wrappers import *  # noqa: F403 - fixtures: llm_server, warm_memory
from fakes.llm_server import FakeLLMServer, Reply
from test_server_harness import free_port, wait_until

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
BIN = Path(sys.executable).parent
MASTER_KEY = "sk-memwrap-test-master-key-0123456789"

APP = """
import os

from fastapi import FastAPI
from openai import OpenAI

import memwrap

client = memwrap.wrap_openai(
    OpenAI(base_url=os.environ["FAKE_LLM_URL"], api_key="sk-test", max_retries=0), bank_id="alice"
)
app = FastAPI()


@app.get("/ask")
def ask() -> dict[str, str]:
    reply = client.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": "I keep bees on the roof."}]
    )
    return {"answer": reply.choices[0].message.content or ""}
"""

SCRIPT = """
import sys
import time

import memwrap

memory = memwrap.Memory()
memory.retain("alice", "I keep bees on the roof.")
print("ready", flush=True)
time.sleep(600)
"""


@pytest.fixture
def app_home(warm_memory: Any) -> Iterator[Path]:
    home = _new_home("memwrap-exits-")
    # The embedding model, exported once for the session: each app starts in seconds, not minutes.
    (home / "models").symlink_to(Path(warm_memory.settings.home) / "models", target_is_directory=True)
    yield home
    shutil.rmtree(home, ignore_errors=True)


def _postmaster(home: Path) -> int | None:
    try:
        return int((home / "pg" / "postmaster.pid").read_text().split("\n", 1)[0])
    except (OSError, ValueError):
        return None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie is gone in all but name (its parent has not reaped it yet).
    status = Path(f"/proc/{pid}/status").read_text() if Path(f"/proc/{pid}/status").exists() else ""
    return "\nState:\tZ" not in status


def _watchdog(home: Path) -> int | None:
    try:
        return int((home / "pg" / ".memwrap_watchdog.pid").read_text())
    except (OSError, ValueError):
        return None


def _env(home: Path, llm_server: FakeLLMServer) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMWRAP_")}
    return {
        **env,
        "MEMWRAP_HOME": str(home),
        "MEMWRAP_LLM_PROVIDER": "none",
        "FAKE_LLM_URL": llm_server.openai_base_url,
        "OPENAI_API_KEY": "sk-upstream-test",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "LITELLM_MASTER_KEY": MASTER_KEY,
        "MEMWRAP_RECALL_TIMEOUT": "60",  # where memory goes, not how fast
    }


def _started(process: subprocess.Popen[bytes], url: str, log: Path) -> None:
    def up() -> bool:
        if process.poll() is not None:
            raise AssertionError(f"exited with {process.returncode}:\n{log.read_text(errors='replace')[-3000:]}")
        try:
            return httpx.get(url, timeout=2).status_code < 500
        except httpx.HTTPError:
            return False

    assert wait_until(up, timeout=300, interval=0.5), log.read_text(errors="replace")[-3000:]


def _ends_with_its_database(process: subprocess.Popen[bytes], home: Path, how: signal.Signals, log: Path) -> None:
    postmaster = _postmaster(home)
    assert postmaster is not None and _alive(postmaster), "the call did not start the embedded database"
    watchdog = _watchdog(home)
    os.kill(process.pid, how)
    process.wait(timeout=120)
    stopped = wait_until(lambda: not _alive(postmaster), timeout=60, interval=0.2)
    assert stopped, f"PostgreSQL {postmaster} outlived its last user ({how.name}):\n{log.read_text()[-3000:]}"
    assert watchdog is not None, "no watchdog was started"
    assert wait_until(lambda: not _alive(watchdog), timeout=30, interval=0.2), "the watchdog stayed behind"


def _one_call(url: str, llm_server: FakeLLMServer) -> None:
    llm_server.script([Reply(text="Bees! Noted.")])
    answer = httpx.get(url, timeout=120)
    assert answer.status_code == 200 and answer.json()["answer"] == "Bees! Noted."


@pytest.mark.parametrize("server", ["uvicorn", "gunicorn"])
def test_an_app_under_an_asgi_server_stops_its_database_on_sigterm(
    server: str, app_home: Path, llm_server: FakeLLMServer, tmp_path: Path
) -> None:
    (tmp_path / "app.py").write_text(textwrap.dedent(APP))
    port = free_port()
    if server == "uvicorn":
        command = [str(BIN / "uvicorn"), "app:app", "--host", "127.0.0.1", "--port", str(port)]
    else:
        command = [
            *(str(BIN / "gunicorn"), "app:app", "--workers", "1", "--bind", f"127.0.0.1:{port}"),
            *("--worker-class", "uvicorn.workers.UvicornWorker", "--graceful-timeout", "20"),
        ]
    log = tmp_path / "server.log"
    with log.open("wb") as out:
        process = subprocess.Popen(command, cwd=tmp_path, env=_env(app_home, llm_server), stdout=out, stderr=out)
    try:
        _started(process, f"http://127.0.0.1:{port}/docs", log)
        _one_call(f"http://127.0.0.1:{port}/ask", llm_server)
        _ends_with_its_database(process, app_home, signal.SIGTERM, log)
    finally:
        if process.poll() is None:
            process.kill()


def test_the_litellm_proxy_stops_its_database_on_sigterm(
    app_home: Path, llm_server: FakeLLMServer, tmp_path: Path
) -> None:
    pytest.importorskip("litellm.proxy")
    yaml = pytest.importorskip("yaml")
    shutil.copy(EXAMPLES / "memwrap_litellm_callbacks.py", tmp_path)
    config = yaml.safe_load((EXAMPLES / "litellm_proxy_config.yaml").read_text())
    for entry in config["model_list"]:
        entry["litellm_params"]["api_base"] = llm_server.openai_base_url
    config["model_list"] = [
        e for e in config["model_list"] if not e["litellm_params"]["model"].startswith("anthropic/")
    ]
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    port = free_port()
    log = tmp_path / "litellm.log"
    command = [str(BIN / "litellm"), "--config", "config.yaml", "--host", "127.0.0.1", "--port", str(port)]
    with log.open("wb") as out:
        process = subprocess.Popen(command, cwd=tmp_path, env=_env(app_home, llm_server), stdout=out, stderr=out)
    try:
        _started(process, f"http://127.0.0.1:{port}/health/liveliness", log)
        llm_server.script([Reply(text="Bees! Noted.")])
        from openai import OpenAI

        client = OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key=MASTER_KEY, max_retries=0)
        answer = client.chat.completions.create(
            model=config["model_list"][0]["model_name"],
            messages=[{"role": "user", "content": "I keep bees on the roof."}],
            extra_headers={"X-Memwrap-Bank": "alice"},
        )
        assert answer.choices[0].message.content == "Bees! Noted.", log.read_text()[-3000:]
        assert wait_until(lambda: _postmaster(app_home) is not None, timeout=120), log.read_text()[-3000:]
        _ends_with_its_database(process, app_home, signal.SIGTERM, log)
    finally:
        if process.poll() is None:
            process.kill()


def test_a_script_killed_with_sigkill_stops_its_database(
    app_home: Path, llm_server: FakeLLMServer, tmp_path: Path
) -> None:
    (tmp_path / "script.py").write_text(textwrap.dedent(SCRIPT))
    log = tmp_path / "script.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "script.py"], cwd=tmp_path, env=_env(app_home, llm_server), stdout=out, stderr=out
        )
    try:
        assert wait_until(lambda: b"ready" in log.read_bytes() or process.poll() is not None, timeout=300)
        assert process.poll() is None, log.read_text()
        _ends_with_its_database(process, app_home, signal.SIGKILL, log)
    finally:
        if process.poll() is None:
            process.kill()


def test_the_database_stays_while_another_process_still_uses_it(
    app_home: Path, llm_server: FakeLLMServer, tmp_path: Path
) -> None:
    """Two scripts on one home: the first killed, the database stays for the second; the second killed, it goes."""
    (tmp_path / "script.py").write_text(textwrap.dedent(SCRIPT))
    processes = []
    for name in ("first", "second"):
        log = tmp_path / f"{name}.log"
        with log.open("wb") as out:
            processes.append(
                subprocess.Popen(
                    [sys.executable, "script.py"], cwd=tmp_path, env=_env(app_home, llm_server), stdout=out, stderr=out
                )
            )
        assert wait_until(lambda log=log: b"ready" in log.read_bytes(), timeout=300), log.read_text()
    try:
        postmaster = _postmaster(app_home)
        assert postmaster is not None
        processes[0].kill()
        processes[0].wait(timeout=30)
        # The watchdog looks every second: give it several looks, then the server must still be there.
        assert not wait_until(lambda: not _alive(postmaster), timeout=5, interval=0.2)
        _ends_with_its_database(processes[1], app_home, signal.SIGKILL, tmp_path / "second.log")
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
