"""A light install (`pip install memwrap`, no extras): the commands and integrations that need an extra say, in one
line, what to install, instead of an 'unexpected error' or a bare ModuleNotFoundError. Each case runs in a fresh
interpreter with the extra's modules blocked (None in sys.modules: importing them raises ImportError, as when they
are not installed)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _run(blocked: list[str], code: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    prelude = f"import sys\nfor name in {blocked!r}:\n    sys.modules[name] = None\n"
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)  # this checkout first
    env = {**os.environ, "MEMWRAP_HOME": str(tmp_path / "home"), "PYTHONPATH": path}
    return subprocess.run(
        [sys.executable, "-c", prelude + code], capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path
    )


@pytest.mark.parametrize("command", ["serve", "ui"])
def test_a_server_command_without_the_server_extra_names_it(command: str, tmp_path: Path) -> None:
    result = _run(["fastapi", "uvicorn"], f"from memwrap.cli import main\nsys.exit(main([{command!r}]))", tmp_path)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr  # one line, no traceback, no "unexpected"
    assert f"memwrap {command} needs the server extra (fastapi, uvicorn not installed)" in lines[0]
    assert "pip install 'memwrap[server]'" in lines[0]
    assert not (tmp_path / "home").exists()  # nothing was started


def test_mcp_without_the_server_extra_names_it(tmp_path: Path) -> None:
    result = _run(["mcp"], "from memwrap.cli import main\nsys.exit(main(['mcp', '--bank', 'b']))", tmp_path)
    assert result.returncode == 2 and result.stderr.strip().splitlines() == [
        "memwrap mcp needs the server extra: pip install 'memwrap[server]'"
    ]


@pytest.mark.parametrize(
    ("module", "blocked", "package", "extra"),
    [
        ("langgraph", "langgraph", "langgraph", "langgraph"),
        ("agents_tools", "agents", "openai-agents", "agents"),
        ("pydantic_ai_tools", "pydantic_ai", "pydantic-ai-slim", "pydantic-ai"),
        ("langchain_tools", "langchain_core", "langchain", "langchain"),
        ("langchain", "langchain_openai", "langchain-openai", "langchain"),
    ],
)
def test_an_integration_without_its_framework_names_the_package_and_extra(
    module: str, blocked: str, package: str, extra: str, tmp_path: Path
) -> None:
    code = f"try:\n    import memwrap.integrations.{module}\nexcept ImportError as exc:\n    print(exc)\n"
    result = _run([blocked], code, tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == (
        f"memwrap.integrations.{module} needs {package}, which is not installed: "
        f"pip install 'memwrap[{extra}]' (or pip install {package})"
    )


def test_each_integration_extra_is_declared() -> None:
    import tomllib

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert {"langgraph", "agents", "pydantic-ai", "langchain"} <= set(extras)
    docs = (ROOT / "docs" / "frameworks.md").read_text()
    for extra in ("langgraph", "agents", "pydantic-ai", "langchain"):
        assert f"pip install 'memwrap[{extra}]'" in docs, extra
