"""The command line: demo, retain, recall, banks, list, stats, entities — for people and (--json) for scripts."""

from __future__ import annotations

import io
import json
import os
import pty
import re
import subprocess
import sys
import threading
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from test_server_harness import *  # noqa: F403 - fixtures: sidecar, admin (a real `memwrap serve`)

from memwrap import Memory
from memwrap.cli import main
from memwrap.demo import DEMO_SESSIONS
from memwrap.store.embedded_pg import stop_embedded_server


def test_demo_chooses_and_puts_the_right_memory_first(memwrap_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """More was said than fits the budget: each block holds only part of the year, and its first memory is the one
    the question needs (the restaurant tip needs the diet, "last spring" something done in March-May, the
    teacher's name João)."""
    assert main(["demo", "--home", str(memwrap_home), "--json"]) == 0
    results = json.loads(capsys.readouterr().out)
    assert len(results) == 3
    said = sum(len(exchanges) * 2 for _when, exchanges in DEMO_SESSIONS)
    for result in results:
        assert result["context"].startswith("<memwrap_memories>")
        assert 0 < result["tokens"] <= result["token_budget"]
        assert 0 < result["context"].count("\n- ") < said / 3  # a choice, not everything
    first = [result["context"].split("\n- ", 2)[1] for result in results]
    assert "vegetarian" in first[0] and "peanuts" in first[0]
    assert first[1].startswith(("[2026-03", "[2026-04", "[2026-05")) and "user:" in first[1]
    assert "João" in first[2]


def test_retain_recall_banks_list(memwrap_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    home = ["--home", str(memwrap_home)]
    assert main(["retain", "cli-bank", "The spare key is under the blue flowerpot.", *home, "--json"]) == 0
    ids = json.loads(capsys.readouterr().out)
    assert len(ids) == 1
    assert main(["recall", "cli-bank", "Where is the spare key?", *home, "--json"]) == 0
    recall = json.loads(capsys.readouterr().out)
    assert recall["memories"][0]["id"] == ids[0]
    assert main(["banks", *home, "--json"]) == 0
    assert "cli-bank" in {b["bank_id"] for b in json.loads(capsys.readouterr().out)}
    assert main(["list", "cli-bank", *home]) == 0
    assert "flowerpot" in capsys.readouterr().out
    assert main(["recall", "cli-bank", "Where is the spare key?", *home]) == 0
    assert "flowerpot" in capsys.readouterr().out


def test_errors_are_readable(memwrap_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["retain", "bad bank", "x", "--home", str(memwrap_home)]) == 2
    assert "invalid_bank_id" in capsys.readouterr().err  # stderr: stdout is the command's data
    assert main(["retain", "bad bank", "x", "--home", str(memwrap_home), "--json"]) == 2
    assert json.loads(capsys.readouterr().out)["error"] == "invalid_bank_id"


def test_stats_and_entities_of_a_bank(memwrap_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    home = ["--home", str(memwrap_home)]
    assert main(["retain", "cli-views", "Alice met Maya in Lisbon.", *home, "--json"]) == 0
    capsys.readouterr()
    assert main(["stats", "cli-views", *home, "--json"]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["bank_id"] == "cli-views" and stats["memories"] == 1 and stats["entities"] >= 2
    assert main(["stats", "cli-views", *home]) == 0
    assert "last retain" in capsys.readouterr().out
    assert main(["entities", "cli-views", "--search", "may", *home, "--json"]) == 0
    [maya] = json.loads(capsys.readouterr().out)
    assert maya["name"] == "Maya"
    assert main(["entity-graph", "cli-views", maya["id"], "--neighbours", "5", *home, "--json"]) == 0
    assert "Alice" in {n["entity"]["name"] for n in json.loads(capsys.readouterr().out)["neighbours"]}
    assert main(["entities", "cli-views", *home]) == 0
    assert "Maya" in capsys.readouterr().out
    assert main(["entities", "cli-viewz", *home]) == 1  # no such bank: said, not an empty table
    assert "cli-views" in capsys.readouterr().err


# --- help, suggestions, lists of tags, tables, progress, reembed (issue 31) -----------------------------------

UUID_RE = re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b")


def memwrap(*argv: str, home: Path, columns: int = 80, **options: Any) -> subprocess.CompletedProcess[str]:
    """A fresh `memwrap` process, as a user runs it (stdout and stderr captured: not a terminal)."""
    env = {**os.environ, "MEMWRAP_HOME": str(home), "COLUMNS": str(columns)}
    streams = {"stdin": subprocess.DEVNULL, "stdout": subprocess.PIPE, "stderr": subprocess.PIPE}
    return subprocess.run(
        [sys.executable, "-m", "memwrap.cli", *argv], text=True, env=env, timeout=300, **(streams | options)
    )


def test_help_lists_commands_one_a_line_and_options_with_their_format(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--help"])
    listing = capsys.readouterr().out
    assert "{demo," not in listing and "Remember and ask:" in listing and "Move data:" in listing
    lines = {line.split()[0]: line for line in listing.splitlines() if line.startswith("  ")}
    for name in ("retain", "recall", "list", "jobs", "reembed", "import-memories", "serve"):
        assert len(lines[name].split()) > 2, name  # the command and its summary, on its own line
    with pytest.raises(SystemExit):
        main(["retain", "--help"])
    text = " ".join(capsys.readouterr().out.split())  # as read, whatever the terminal's width
    assert "default: None" not in text
    assert "--metadata JSON" in text and "a JSON object" in text and '{"project": "apollo"' in text
    assert "--timestamp TIME" in text and "ISO 8601" in text and "2026-05-01T09:30" in text
    assert "--tags TAG" in text and "--tags a,b = two" in text
    with pytest.raises(SystemExit):
        main(["list", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "default: 100" in text and "--ids" in text


def test_comma_separated_and_repeated_tags_are_the_same_tags(
    memwrap_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home = ["--home", str(memwrap_home)]
    assert main(["retain", "cli-tags", "Moved to Porto for the new job.", "--tags", "work,move", *home, "--json"]) == 0
    assert main(["retain", "cli-tags", "Started at the Porto office.", "--tags", "work", "--tag", "move", *home]) == 0
    assert main(["retain", "cli-tags", "Bought a bike.", "--tags", "hobby", *home]) == 0
    capsys.readouterr()
    assert main(["list", "cli-tags", *home, "--json"]) == 0
    assert [r["tags"] for r in json.loads(capsys.readouterr().out)] == [["work", "move"], ["work", "move"], ["hobby"]]
    assert main(["list", "cli-tags", "--tags", "move,hobby", *home, "--json"]) == 0
    assert len(json.loads(capsys.readouterr().out)) == 3


def test_retain_prints_its_ids_and_a_table_never_cuts_one(fresh_home: Path) -> None:
    """At 80 columns, with text long enough to wrap: every id `list` prints is whole and `get` takes it."""
    long_text = "The spare key is under the blue flowerpot by the door, " * 4
    retained = memwrap("retain", "a-bank-with-a-rather-long-name", long_text, home=fresh_home)
    assert retained.returncode == 0, retained.stderr
    [unit_id] = retained.stdout.split()  # without --json: the id, on stdout, alone
    assert UUID_RE.fullmatch(unit_id)
    shown = memwrap("list", "a-bank-with-a-rather-long-name", home=fresh_home)
    assert shown.returncode == 0, shown.stderr
    assert max(len(line) for line in shown.stdout.splitlines()) <= 80
    assert UUID_RE.findall(shown.stdout) == [unit_id]
    assert "…" not in shown.stdout and "flowerpot" in shown.stdout
    got = memwrap("get", "a-bank-with-a-rather-long-name", UUID_RE.findall(shown.stdout)[0], "--json", home=fresh_home)
    assert got.returncode == 0 and json.loads(got.stdout)["id"] == unit_id
    banks = memwrap("banks", home=fresh_home)
    assert "a-bank-with-a-rather-long-name" in banks.stdout  # a bank id is an id too: whole
    ids = memwrap("list", "a-bank-with-a-rather-long-name", "--ids", home=fresh_home)
    assert ids.stdout == f"{unit_id}\n"


def test_an_unknown_filter_operator_is_an_error_naming_the_known_ones(
    memwrap_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home = ["--home", str(memwrap_home)]
    assert main(["retain", "cli-ops", "From the CLI.", "--metadata", '{"source": "cli"}', *home, "--json"]) == 0
    capsys.readouterr()
    bad = '{"metadata": {"source": {"equals": "cli"}}}'
    assert main(["recall", "cli-ops", "where from?", "--filters", bad, *home]) == 2
    said = capsys.readouterr().err
    assert "'equals' is not an operator" in said and "eq, ne, in, not_in, gt, gte, lt, lte, exists" in said
    good = '{"metadata": {"source": {"eq": "cli"}}}'
    assert main(["recall", "cli-ops", "where from?", "--filters", good, *home, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["memories"]


def _jsonl(path: Path, rows: int, bank_word: str = "note") -> Path:
    path.write_text(
        "".join(json.dumps({"text": f"{bank_word} {i}: the meeting moved to room {i}."}) + "\n" for i in range(rows))
    )
    return path


def test_progress_goes_to_a_terminal_on_stderr_and_never_into_stdout(fresh_home: Path, tmp_path: Path) -> None:
    source = _jsonl(tmp_path / "notes.jsonl", 1100)  # two of the bar's batches of 1,000
    # stderr a terminal (a pseudo-terminal), stdout a pipe: the bar is drawn on the terminal, the count on stdout.
    leader, follower = pty.openpty()
    drawn: list[bytes] = []

    def read_terminal() -> None:  # as it is drawn: a full terminal buffer would stop the command
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the last writer closed it
                return
            if not chunk:
                return
            drawn.append(chunk)

    reader = threading.Thread(target=read_terminal)
    reader.start()
    done = memwrap("import-memories", "cli-progress", str(source), home=fresh_home, stderr=follower, columns=120)
    os.close(follower)
    reader.join(timeout=60)
    os.close(leader)
    drawn_text = b"".join(drawn)
    terminal = drawn_text.decode("utf-8", "replace")
    assert done.returncode == 0, terminal
    assert done.stdout.strip() == "1100"
    assert "1100/1100" in terminal and "memories/s" in terminal and "100%" in terminal
    # Not a terminal (a pipe), or --json: no bar at all.
    again = memwrap("import-memories", "cli-progress", str(source), home=fresh_home)
    assert again.returncode == 0 and again.stdout.strip() == "0"  # all there already
    assert "memories/s" not in again.stderr


def test_reembed_skips_what_the_model_already_embedded_and_asks_before_redoing_all(
    fresh_home: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # In this process (main, as `python -m memwrap.cli` runs it), stdin not a terminal as under a script: seven
    # processes each paid a Python start, memwrap's imports, the model's load and the database's start.
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    home = ["--home", str(fresh_home)]

    def memwrap_here(*argv: str) -> tuple[int, str, str]:
        status = main([*argv, *home])
        said = capsys.readouterr()
        return status, said.out, said.err

    try:
        _reembed_asks_and_skips(memwrap_here, fresh_home)
    finally:  # this process's server on the home, before the fixture removes the home
        stop_embedded_server(fresh_home / "pg")


def _reembed_asks_and_skips(memwrap_here: Callable[..., tuple[int, str, str]], fresh_home: Path) -> None:
    status, out, err = memwrap_here("retain", "cli-reembed", "Alice moved to Lisbon in March.")
    assert status == 0, err
    status, out, err = memwrap_here("reembed", "--json")
    assert status == 0, err
    assert json.loads(out)["reembedded"] == 0  # the model has not changed: nothing to do
    status, out, err = memwrap_here("reembed")
    assert "Nothing to re-embed" in out
    status, out, err = memwrap_here("reembed", "--force")  # no terminal to ask on, no --yes
    assert status == 1 and "--yes" in err and "Traceback" not in err
    status, out, err = memwrap_here("reembed", "--force", "--yes", "--json")
    assert status == 0, err
    assert json.loads(out)["reembedded"] == 1
    # A memory that lost its vector (an interrupted load) is embedded again on its own, without asking.
    with Memory(home=fresh_home) as mem:
        eng = mem._run(mem.aio._get_engine())
        mem._run(eng.store.pool.execute("UPDATE memory_units SET embedding = NULL"))
    status, out, err = memwrap_here("reembed", "--json")
    assert status == 0, err
    assert json.loads(out)["reembedded"] == 1
    status, out, err = memwrap_here("recall", "cli-reembed", "Where did Alice move?", "--json")
    assert json.loads(out)["memories"][0]["text"].startswith("Alice moved")


def test_rest_reads_tags_and_filter_operators_as_the_cli_does(admin: httpx.Client) -> None:
    """`?tags=a,b` is two tags, as `--tags a,b` and the browser's tag field; an unknown operator is a 422 naming
    the operators, in a query string and in a JSON body alike."""
    bank = f"cli-rest-{uuid.uuid4().hex[:8]}"
    for text, tags in (("Moved to Porto.", ["work", "move"]), ("Bought a bike.", ["hobby"]), ("Rainy day.", ["x"])):
        admin.post(f"/v1/banks/{bank}/memories", json={"content": text, "tags": tags}).raise_for_status()
    listed = admin.get(f"/v1/banks/{bank}/memories", params={"tags": "move,hobby"}).json()["items"]
    assert sorted(m["text"] for m in listed) == ["Bought a bike.", "Moved to Porto."]
    repeated = admin.get(f"/v1/banks/{bank}/memories", params=[("tags", "move"), ("tags", "hobby")]).json()["items"]
    assert len(repeated) == 2
    bad = {"metadata": {"source": {"equals": "cli"}}}
    refused = admin.get(f"/v1/banks/{bank}/memories", params={"filters": json.dumps(bad)})
    assert refused.status_code == 422 and "eq, ne, in, not_in" in refused.text
    refused = admin.post("/v1/recall", json={"bank_id": bank, "query": "where?", "filters": bad})
    assert refused.status_code == 422 and "'equals' is not an operator" in refused.text
