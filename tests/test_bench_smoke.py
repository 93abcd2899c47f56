"""Smoke test of the benchmark's plumbing (`python -m bench --quick` on a tiny slice), plus its scoring rules."""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

# `bench/` lives at the repository root, next to `memwrap/`, but is not an installed package.
_REPO = str(Path(__file__).resolve().parent.parent)
if _REPO not in sys.path:
    sys.path.insert(0, _REPO)

from bench.locomo import (  # noqa: E402 - after sys.path
    Ranked,
    canonical_dia_id,
    default_data_path,
    normalise_evidence,
    parse_session_datetime,
    walk_budget,
)


def test_session_dates_parse() -> None:
    assert parse_session_datetime("1:56 pm on 8 May, 2023") == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    assert parse_session_datetime("12:19 am on 4 January, 2024") == datetime(2024, 1, 4, 0, 19, tzinfo=UTC)


def test_evidence_ids_are_normalised() -> None:
    known = {k: k for k in ("D8:6", "D9:17", "D11:26", "D30:5")}
    assert canonical_dia_id("D30:05") == "D30:5"
    assert normalise_evidence(["D8:6; D9:17", "D:11:26", "D30:05", "D", "D99:1", "D8:6"], known) == [
        "D8:6",
        "D9:17",
        "D11:26",
        "D30:5",
    ]


def test_budget_walk_skips_what_does_not_fit_and_continues() -> None:
    ranked = [Ranked("D1:1", 100), Ranked("D1:2", 200), Ranked(None, 10), Ranked("D1:3", 50)]
    assert walk_budget(ranked, 160) == {"D1:1", "D1:3"}
    assert walk_budget(ranked, 60) == {"D1:3"}  # the unnamed 10 + 50
    assert walk_budget(ranked, 1000) == {"D1:1", "D1:2", "D1:3"}


@pytest.mark.skipif(not default_data_path().exists(), reason="LoCoMo data not available")
def test_quick_suite_plumbing(tmp_path) -> None:
    from bench.run import parse_args, run_suite

    out = tmp_path / "out"
    # No --home: like `--quick`, the suite makes a fresh temporary home (embedded PostgreSQL), stops its server
    # and removes it when done.
    config = parse_args(
        [
            "--quick",
            "--out", str(out),
            "--max-sessions", "2",
            "--max-questions", "10",
            "--sizes", "200",
            "--repetitions", "1",
            "--queries", "5",
            "--warmup", "1",
            "--max-distractors", "40",
            "--time-budget", "0",
            "--no-progress",
            "--skip-long",  # its own smoke test: tests/test_bench_long_session.py
        ]
    )  # fmt: skip
    results = run_suite(config)

    for name in ("results.json", "report.md", "recall_vs_budget.png", "per_question.json"):
        assert (out / name).stat().st_size > 0, name
    assert (out / "recall_vs_budget.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    on_disk = json.loads((out / "results.json").read_text())
    assert on_disk["meta"]["run_id"] == results["meta"]["run_id"]

    locomo = on_disk["locomo"]
    assert locomo["questions"] == 10
    assert set(locomo["per_system"]) == {"memwrap", "bm25", "dense", "dense+bm25"}
    for cells_by_group in locomo["per_system"].values():
        assert set(cells_by_group) == {"overall", "1", "2", "3", "4"}
        for by_budget in cells_by_group.values():
            assert set(by_budget) == {"256", "512", "1024", "2048"}
            for cell in by_budget.values():
                assert 0.0 <= cell["recall"] <= 1.0
                assert 0.0 <= cell["all_found"] <= 1.0
    overall = locomo["per_system"]["memwrap"]["overall"]
    assert overall["2048"]["recall"] >= overall["256"]["recall"]  # a bigger budget never finds less

    latency = on_disk["latency"]
    (size,) = latency["sizes"]
    assert size["size"] == 200 and size["skipped"] is None
    assert size["retain_items_per_s"] > 0
    assert size["probes"]["recall"]["stats_ms"]["p50"] > 0
    assert "wrapper_overhead" in latency["planned_probes"]

    markdown = (out / "report.md").read_text()
    assert "LoCoMo evidence recall" in markdown and "Latency and throughput" in markdown
