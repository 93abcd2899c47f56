"""The `memwrap` CLI is one package above the core (issue 40): `import memwrap.cli` imports no server module, the
server's commands (serve, ui, mcp) come from memwrap_server through the `memwrap.commands` entry point, nothing
registers by import side effect, and the commands reach the engine through public verbs and callbacks.

The entry point is read from the installed metadata: a checkout installed before it was declared needs
`pip install -e .` again. The tests below that need it skip when it is not installed; the server's registration
function is tested directly whatever the metadata says."""

from __future__ import annotations

import argparse
import ast
import json
import os
import subprocess
import sys
import tomllib
from importlib.metadata import EntryPoint
from pathlib import Path
from typing import Any

import pytest

from memwrap.cli import app, long_runs, progress, registry
from memwrap.cli.app import CORE_GROUPS, build_parser, main
from memwrap.config import load_settings
from memwrap_server import commands as server_commands

ROOT = Path(__file__).resolve().parents[1]
SERVER_COMMANDS = {"serve", "ui", "mcp"}


def _python(code: str) -> subprocess.CompletedProcess[str]:
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    env = {**os.environ, "PYTHONPATH": path}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)


def _command_names(parser: argparse.ArgumentParser) -> set[str]:
    found = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return set(found.choices or {})


def test_importing_the_cli_imports_no_server_module() -> None:
    done = _python("import memwrap.cli, sys; assert not any(m.startswith('memwrap_server') for m in sys.modules)")
    assert done.returncode == 0, done.stderr


def test_the_server_commands_module_is_light_and_the_browser_router_imports_no_launcher() -> None:
    # Without the server extra, memwrap_server.commands still imports (it says what to install when run).
    done = _python(
        "import sys\nfor n in ('fastapi', 'uvicorn', 'mcp'):\n    sys.modules[n] = None\nimport memwrap_server.commands"
    )
    assert done.returncode == 0, done.stderr
    # The router (memwrap_server/ui.py) no longer reaches the launcher: no circle ui -> __main__ -> app -> ui.
    done = _python(
        "import sys, memwrap_server.ui\n"
        "assert not {'memwrap_server.__main__', 'memwrap_server.app', 'memwrap_server.commands'} & set(sys.modules)"
    )
    assert done.returncode == 0, done.stderr


def test_the_server_registers_serve_ui_and_mcp() -> None:
    found = {c.name: c for c in registry.commands([server_commands.register])}
    assert set(found) == SERVER_COMMANDS
    names = _command_names(build_parser([*CORE_GROUPS, server_commands.register]))
    assert SERVER_COMMANDS <= names and {"demo", "reembed", "spool", "worker", "jobs", "export", "hook"} <= names
    assert not SERVER_COMMANDS & _command_names(build_parser(CORE_GROUPS))  # only through the server's group


def test_the_entry_point_is_declared_and_names_the_registration_function() -> None:
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"]
    point = EntryPoint("server", declared[registry.ENTRY_POINT_GROUP]["server"], registry.ENTRY_POINT_GROUP)
    assert point.load() is server_commands.register


def test_installed_groups_come_from_the_entry_points_and_a_broken_one_is_left_out(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    points = [
        EntryPoint("server", "memwrap_server.commands:register", registry.ENTRY_POINT_GROUP),
        EntryPoint("gone", "memwrap_no_such_package.commands:register", registry.ENTRY_POINT_GROUP),
    ]
    asked: list[str] = []

    def entry_points(*, group: str) -> list[EntryPoint]:
        asked.append(group)
        return points

    monkeypatch.setattr(registry, "entry_points", entry_points)
    assert registry.installed_groups() == [server_commands.register]
    assert asked == ["memwrap.commands"]
    assert SERVER_COMMANDS <= _command_names(build_parser())


def test_the_installed_metadata_has_the_entry_point() -> None:
    if not any(g is server_commands.register for g in registry.installed_groups()):
        pytest.skip("the installed metadata predates the memwrap.commands entry point: pip install -e . again")
    assert SERVER_COMMANDS <= _command_names(build_parser())


def test_the_commands_use_no_private_engine_method_and_no_sql() -> None:
    for path in sorted((ROOT / "memwrap" / "cli").glob("*.py")):
        tree = ast.parse(path.read_text())
        private = [
            node.attr
            for node in ast.walk(tree)
            if isinstance(node, ast.Attribute) and node.attr in ("_get_engine", "_engine", "pool", "fetchval")
        ]
        assert not private, (path.name, private)
        texts = [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
        assert not [t for t in texts if "SELECT " in t.upper() and " FROM " in t.upper()], path.name


def test_memwrap_url_is_a_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMWRAP_URL", "http://127.0.0.1:9999")
    assert load_settings().url == "http://127.0.0.1:9999"
    monkeypatch.delenv("MEMWRAP_URL")
    assert load_settings().url is None


# --- the progress bars follow public verbs and callbacks -------------------------------------------------------


@pytest.fixture
def with_bars(monkeypatch: pytest.MonkeyPatch) -> None:
    """Progress bars drawn as on a terminal (here into captured stderr), --json output on stdout as always."""
    monkeypatch.setattr(progress, "progress_wanted", lambda args: True)
    monkeypatch.setattr(long_runs, "progress_wanted", lambda args: True)


def _json(argv: list[str], capsys: pytest.CaptureFixture[str]) -> Any:
    status = main([*argv, "--json"])
    said = capsys.readouterr()
    assert status == 0, said.err
    return json.loads(said.out)


def test_long_runs_with_a_bar_do_what_the_verb_does(
    fresh_home: Path, tmp_path: Path, with_bars: None, capsys: pytest.CaptureFixture[str]
) -> None:
    home = ["--home", str(fresh_home)]
    rows = tmp_path / "rows.jsonl"
    rows.write_text(
        "".join(json.dumps({"text": f"Note {i}: the meeting moved to room {i}."}) + "\n" for i in range(30))
    )
    assert _json(["import-memories", "cli-bars", str(rows), *home], capsys) == 30
    exported = tmp_path / "bank.jsonl"
    lines = _json(["export-bank", "cli-bars", str(exported), *home], capsys)
    assert lines == len(exported.read_text().splitlines()) and lines > 30
    report = _json(["import-bank", "cli-bars-copy", str(exported), *home], capsys)
    assert report["bank_id"] == "cli-bars-copy" and 30 in report["written"].values()
    assert _json(["consolidate", "cli-bars", *home], capsys)["bank_id"] == "cli-bars"
    assert main(["export-bank", "cli-barz", str(tmp_path / "none.jsonl"), *home]) == 1  # no such bank, said
    assert "cli-bars" in capsys.readouterr().err
    assert "Traceback" not in capsys.readouterr().err


def test_the_consolidate_bar_counts_what_bank_stats_says_is_left(fresh_home: Path) -> None:
    from memwrap.api import Memory

    with Memory(home=fresh_home) as memory:
        memory.retain_many("cli-left", [f"Alice moved to city {i}." for i in range(3)])
        left = long_runs.to_consolidate(memory, "cli-left")
        assert left is not None and left > 0
        memory.consolidate("cli-left")
        assert long_runs.to_consolidate(memory, "cli-left") == 0


def test_main_is_the_app_main() -> None:
    import memwrap.cli

    assert memwrap.cli.main is app.main and memwrap.cli.build_parser is app.build_parser


def test_a_server_command_missing_from_the_metadata_says_to_reinstall(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        build_parser(CORE_GROUPS).parse_args(["serve"])
    assert exited.value.code == 2
    error = capsys.readouterr().err
    assert "`memwrap.commands` entry point" in error and "pip install -e ." in error
