"""Every `memwrap` command, given bad input, says what is wrong in a line and exits non-zero: never a traceback.

The commands are read from the parser (`build_parser`), so a command added later — a verb declared with
`cli=True`, or one another package registers — is driven too: with an option it does not have, without the
arguments it needs, and with an unreadable value for each option that has a type (a number, a time, JSON, an id,
a choice). Then the inputs that only the command itself can refuse: files that are not there, a directory that is
not there, JSON that is not a filter, a bank that does not exist, an id of nothing.

The cases run in this process through `memwrap.cli.main(argv)` (what `python -m memwrap.cli` runs), with stdout,
stderr and stdin of their own and an escaping exception kept as the traceback a process would print: a fresh
process per case cost a Python start and memwrap's imports each (over a minute for the whole module). Real
processes still run where the process itself is the point: the misspellings below, and the bank the engine cases
read is retained by one.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import subprocess
import sys
import traceback
from collections.abc import Iterator
from pathlib import Path

import pytest

from memwrap.cli import app as cli
from memwrap.cli import build_parser, main
from memwrap.cli.options import read_id, read_json, read_time
from memwrap.cli.parser import CommaList
from memwrap.store.embedded_pg import stop_embedded_server

ABSENT_ID = "0b9a2f4e-8c1d-4e5f-9a7b-3c2d1e0f4a5b"
# A value each kind of positional argument accepts, so that the bad part of a case is the one meant.
GOOD_POSITIONAL = {"bank_id": "alice", "memory_id": ABSENT_ID, "observation_id": ABSENT_ID, "entity_id": ABSENT_ID}


def commands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def _positionals(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    return [a for a in parser._actions if not a.option_strings and a.nargs not in ("?", "*")]


def _good_positionals(parser: argparse.ArgumentParser) -> list[str]:
    return [GOOD_POSITIONAL.get(a.dest, "x") for a in _positionals(parser)]


BAD_VALUE = {int: "many", float: "lots", read_time: "next tuesday", read_json: "{not json", read_id: "not-an-id"}


def parse_cases(name: str, parser: argparse.ArgumentParser) -> list[list[str]]:
    """Bad input argparse itself refuses, derived from the command's own arguments."""
    given = _good_positionals(parser)
    cases = [[name, *given, "--no-such-option"]]
    if _positionals(parser):
        cases.append([name])  # what it needs, missing
    for action in parser._actions:
        if not action.option_strings or action.help == argparse.SUPPRESS or isinstance(action, CommaList):
            continue
        flag = action.option_strings[-1]
        if action.type in BAD_VALUE:
            cases.append([name, *given, flag, BAD_VALUE[action.type]])  # type: ignore[index]
        elif action.choices:
            cases.append([name, *given, flag, "no-such-choice"])
    for position, action in enumerate(_positionals(parser)):
        if action.type in BAD_VALUE:
            bad = list(given)
            bad[position] = BAD_VALUE[action.type]  # type: ignore[index]
            cases.append([name, *bad])
    return cases


def run(argv: list[str], home: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "MEMWRAP_HOME": str(home), "COLUMNS": "80"}
    env.pop("MEMWRAP_DEBUG", None)
    return subprocess.run(
        [sys.executable, "-m", "memwrap.cli", *argv],
        capture_output=True,
        text=True,
        env=env,
        stdin=subprocess.DEVNULL,
        timeout=300,
    )


@pytest.fixture
def in_process(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The environment `run` gives a process, for `run_here`: stdin empty (DEVNULL there), COLUMNS=80."""
    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.delenv("MEMWRAP_DEBUG", raising=False)
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    yield


def run_here(argv: list[str], home: Path) -> subprocess.CompletedProcess[str]:
    """`run`, in this process: main's return value or SystemExit's code, what it printed, and an exception that
    escapes main printed as a process would (a traceback on stderr, status 1). Needs the `in_process` fixture."""
    out, err = io.StringIO(), io.StringIO()
    previous = os.environ.get("MEMWRAP_HOME")
    os.environ["MEMWRAP_HOME"] = str(home)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                status = main(argv)
            except SystemExit as exc:
                code = exc.code
                status = code if isinstance(code, int) else (0 if code is None else 1)
                if code is not None and not isinstance(code, int):
                    print(code, file=sys.stderr)
            except BaseException:  # noqa: BLE001 - what a process would show as a traceback, kept as one
                traceback.print_exc()
                status = 1
    finally:
        if previous is None:
            os.environ.pop("MEMWRAP_HOME", None)
        else:
            os.environ["MEMWRAP_HOME"] = previous
    return subprocess.CompletedProcess(["memwrap", *argv], status, out.getvalue(), err.getvalue())


def assert_refused(argv: list[str], done: subprocess.CompletedProcess[str], *, says: str = "") -> None:
    shown = f"memwrap {' '.join(argv)}\nstdout: {done.stdout}\nstderr: {done.stderr}"
    assert "Traceback" not in done.stderr + done.stdout, shown
    assert done.returncode != 0, shown
    message = [line for line in done.stderr.splitlines() if "error" in line]
    assert len(message) == 1, shown  # one line says what is wrong (argparse's usage line may come before it)
    assert says.lower() in message[0].lower(), shown


def test_every_command_refuses_bad_arguments_without_a_traceback(
    fresh_home: Path, in_process: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    found = commands()
    assert {"retain", "recall", "list", "jobs", "reembed", "import-memories", "export-bank", "spool"} <= set(found)
    cases = [case for name, parser in found.items() for case in parse_cases(name, parser)]
    # main() builds its parser on every call (a fraction of a second each: the verbs' generated help); here one
    # parser, built as main builds it, reads every case (parse_args keeps nothing from one call to the next).
    parser = build_parser()
    monkeypatch.setattr(cli, "build_parser", lambda: parser)
    for argv in cases:
        done = run_here(argv, fresh_home)
        assert_refused(argv, done)
        assert done.returncode == 2  # argparse's code for a command line it cannot read
    print(f"{len(found)} commands, {len(cases)} bad command lines")  # noqa: T201 - the report quotes it
    assert len(cases) >= 2 * len(found)


def test_a_misspelt_command_or_option_gets_a_suggestion(fresh_home: Path) -> None:
    done = run(["recal", "alice", "x"], fresh_home)
    assert_refused(["recal"], done, says="did you mean recall")
    done = run(["retain", "alice", "x", "--tagz", "a"], fresh_home)
    assert_refused(["retain", "--tagz"], done, says="did you mean --tags")
    done = run(["import", "x.jsonl"], fresh_home)  # a JSONL file of memories, most likely
    assert_refused(["import"], done, says="did you mean import-memories or import-bank or import-mem0")


@pytest.fixture(scope="module")
def home_with_a_bank() -> Iterator[Path]:
    import tempfile

    home = Path(tempfile.mkdtemp(prefix="memwrap-bad-input-"))
    done = run(["retain", "alice", "Alice keeps the spare key under the blue flowerpot."], home)  # a real process
    assert done.returncode == 0, done.stderr
    yield home
    stop_embedded_server(home / "pg")  # the in-process cases' server: stopped with the module, not at exit


def test_files_and_directories_that_are_not_there(home_with_a_bank: Path, tmp_path: Path, in_process: None) -> None:
    """Checked before the engine starts: one line naming the path and what to do."""
    missing = tmp_path / "nowhere" / "memories.jsonl"
    a_file = tmp_path / "a-file"
    a_file.write_text("not a directory")
    for argv, says in (
        (["export", str(a_file / "markdown")], f"{a_file} is a file"),
        (["import-memories", "alice", str(missing)], f"{missing}: no such file"),
        (["import-bank", "alice", str(missing)], f"{missing}: no such file"),
        (["import-memories", "alice", str(tmp_path)], "not a file"),
        (["import-mem0", "alice", str(missing)], f"{missing}: no such file"),
        (["export-bank", "alice", str(missing)], f"{missing.parent}: no such directory"),
        (["export-bank", "alice", str(tmp_path)], "is a directory"),
    ):
        assert_refused(argv, run_here(argv, home_with_a_bank), says=says)


def test_input_only_the_engine_can_refuse(home_with_a_bank: Path, tmp_path: Path, in_process: None) -> None:
    not_jsonl = tmp_path / "notes.jsonl"
    not_jsonl.write_text("this is not JSON\n")
    not_mem0 = tmp_path / "mem0.json"
    not_mem0.write_text('{"results": [{"nothing": 1}]}')
    unknown_operator = '{"metadata": {"source": {"equals": "cli"}}}'
    for argv, says in (
        (["recall", "alice", "key", "--filters", unknown_operator], "'equals' is not an operator"),
        (["list", "alice", "--filters", '{"metadata": {"key": "source", "like": "c%"}}'], "eq, ne, in, not_in"),
        (["list", "nobody"], "there is no bank 'nobody'"),
        (["get", "alice", ABSENT_ID], ABSENT_ID),
        (["retain", "bad bank", "x"], "invalid bank id"),
        (["import-memories", "alice", str(not_jsonl)], "line 1"),
        (["import-mem0", "alice", str(not_mem0)], str(not_mem0)),
        (["delete-mental-model", "alice", "no-such-model"], "no-such-model"),
    ):
        assert_refused(argv, run_here(argv, home_with_a_bank), says=says)
