"""The command line: demo, retain, recall, banks, list, stats, entities — for people and (--json) for scripts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memwrap.cli import main
from memwrap.demo import DEMO_SESSIONS


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
    assert "invalid_bank_id" in capsys.readouterr().out


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
    assert "cli-views" in capsys.readouterr().out
