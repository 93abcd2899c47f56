"""The precision set (bench/precision): its files hold together, its scores mean what bench/README.md says, and
`python -m bench.precision` runs end to end on a slice in a temporary home. Engine quality is not asserted here
(the figures are in bench/README.md)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from memwrap.config import DEFAULT_EMBEDDING_MODEL

_REPO = Path(__file__).resolve().parent.parent
if str(_REPO) not in sys.path:
    sys.path.insert(0, str(_REPO))

from bench.precision.data import (  # noqa: E402 - after sys.path
    CATEGORIES,
    HERE,
    SPLITS,
    PrecisionSetError,
    Question,
    load,
    parse_span,
    render_exchange,
)
from bench.precision.score import (  # noqa: E402 - after sys.path
    METRICS,
    chance_scores,
    distinct,
    score_question,
    summarise,
)

# One small held-out scenario per category: 49 memories, 26 questions.
SLICE = ("t-zh-2", "r-en-4", "s-zh-3", "n-en-4")


def test_every_category_has_twenty_questions_per_split() -> None:
    scenarios = load()
    for category in CATEGORIES:
        for split in SPLITS:
            questions = sum(len(s.questions) for s in scenarios if s.category == category and s.split == split)
            assert questions >= 20, (category, split, questions)
    languages = {(s.category, s.language) for s in scenarios}
    for category in CATEGORIES:
        assert (category, "en") in languages and (category, "zh") in languages, category


def test_items_look_like_what_apps_and_wrappers_retain() -> None:
    scenarios = {s.id: s for s in load()}
    exchange = scenarios["t-en-1"].item("m01")
    assert exchange.content.startswith("user: I finally signed up") and "\nassistant: " in exchange.content
    assert exchange.document_id.startswith("chat-") and exchange.document_id.endswith(":turn-1")
    assert exchange.metadata["session_id"] == exchange.document_id.rsplit(":", 1)[0]
    turn = scenarios["s-en-1"].item("alice-lactose")
    assert turn.content.startswith("Alice: ") and turn.speaker == "Alice" and turn.document_id.startswith("D1:")
    note = scenarios["r-en-4"].item("h01")
    assert note.content == "The project uses PostgreSQL 14 on RDS." and note.document_id == "h01"
    assert render_exchange(" hi ", "hello") == "user: hi\nassistant: hello"
    background = [i for i in scenarios["r-en-1"].items if i.background]
    assert len(background) == 24 and all(i.content.startswith("user: ") for i in background)
    said = sorted(i.timestamp for i in scenarios["r-en-1"].items)
    assert all(said[0] <= i.timestamp <= said[-1] for i in background)
    for scenario in scenarios.values():
        assert len(scenario.by_document) == len(scenario.items), scenario.id  # document ids map back one to one


def test_spans_and_ranges() -> None:
    assert str(parse_span("2026")) == "2026-01-01..2026-12-31"
    assert str(parse_span("2024-02")) == "2024-02-01..2024-02-29"
    assert str(parse_span("2026-03..2026-05")) == "2026-03-01..2026-05-31"
    with pytest.raises(PrecisionSetError, match="ends before"):
        parse_span("2026-05..2026-03")
    t = {s.id: s for s in load(["time"])}["t-en-1"]
    q2 = next(q for q in t.questions if q.id == "q2")  # "in August", asked in November 2026
    # Said in September about August: inside. Said in August 2025 about August: outside.
    assert "m23" in t.relevant(q2) and "m08" not in t.relevant(q2)


def test_a_broken_file_is_refused_with_its_place(tmp_path: Path) -> None:
    for name in ("background.json", "replaced_facts.json", "speakers.json", "entities.json"):
        shutil.copy(HERE / name, tmp_path / name)
    raw = json.loads((HERE / "time_scoped.json").read_text(encoding="utf-8"))
    raw["scenarios"][0]["questions"][0]["expected"] = ["m01"]  # a 2025 memory for a 2026 range
    (tmp_path / "time_scoped.json").write_text(json.dumps(raw), encoding="utf-8")
    with pytest.raises(PrecisionSetError, match=r"t-en-1 q1: expected memories \['m01'\] are outside"):
        load(directory=tmp_path)
    raw["scenarios"][0]["questions"][0]["expected"] = ["nope"]
    (tmp_path / "time_scoped.json").write_text(json.dumps(raw), encoding="utf-8")
    with pytest.raises(PrecisionSetError, match="unknown memory ids"):
        load(directory=tmp_path)


def test_scores_follow_the_rankings() -> None:
    scenarios = {s.id: s for s in load()}
    time_s = scenarios["t-en-1"]
    q1 = time_s.questions[0]  # last spring 2026: m15-m18
    assert score_question(time_s, q1, ["m15", "m01", "m16", "m17"], {"m15", "m01"}) == {
        "top3_in_range": 2 / 3,
        "first_in_range": 1.0,
        "block_in_range": 0.5,
    }
    assert score_question(time_s, q1, [], set())["top3_in_range"] == 0.0
    q8 = time_s.questions[7]  # one memory answers: out of min(3, 1)
    assert score_question(time_s, q8, ["m01", "m02", "m25"], set())["top3_in_range"] == 1.0

    replaced = scenarios["r-en-1"]
    editor = replaced.questions[0]  # newer a12, older a01
    assert score_question(replaced, editor, ["a01", "a12"], {"a12"}) == {
        "newer_above_older": 0.0,
        "newer_first": 0.0,
        "block_has_newer": 1.0,
    }
    assert score_question(replaced, editor, [None, "a12"], set())["newer_above_older"] == 1.0  # older not found
    assert score_question(replaced, editor, ["bg01"], set())["newer_above_older"] == 0.0  # neither found

    chat = scenarios["s-en-2"]
    allergy = chat.questions[0]  # expected s-allergy, restated a-allergy / a-allergy2
    scores = score_question(chat, allergy, ["a-allergy", None, None, "s-allergy"], set())
    assert scores == {"first": 0.0, "r@3": 0.0, "r@5": 1.0, "block_has_expected": 0.0, "user_above_assistant": 0.0}
    no_restatement = Question(id="q", text="Where do I work?", expected=("s-job",))
    assert "user_above_assistant" not in score_question(chat, no_restatement, ["s-job"], set())
    assert distinct(["a", None, "a", "b", None]) == ["a", None, "b", None]


def test_chance_is_what_a_random_order_scores() -> None:
    scenarios = {s.id: s for s in load()}
    time_s = scenarios["t-en-1"]  # 28 memories; "last year" holds 12 of them, "in October" 1
    assert chance_scores(time_s, time_s.questions[2]) == {"top3_in_range": 3 * 12 / 28 / 3, "first_in_range": 12 / 28}
    assert chance_scores(time_s, time_s.questions[7])["top3_in_range"] == 3 / 28
    replaced = scenarios["r-zh-2"]  # q1: one newer, two older statements
    assert chance_scores(replaced, replaced.questions[0])["newer_above_older"] == 1 / 3
    chat = scenarios["s-en-2"]  # 24 turns; one expected, two restatements
    chance = chance_scores(chat, chat.questions[0])
    assert chance["first"] == 1 / 24
    assert chance["r@3"] == pytest.approx(3 / 24) and chance["r@5"] == pytest.approx(5 / 24)
    assert chance["user_above_assistant"] == 1 / 3


def test_summary_keeps_splits_apart() -> None:
    hit = {"first": 1.0, "r@3": 1.0, "r@5": 1.0, "block_has_expected": 1.0}
    miss = {"first": 0.0, "r@3": 1.0, "r@5": 1.0, "block_has_expected": 0.0}
    rows = [
        {"category": "entities", "split": "dev", "scores": hit},
        {"category": "entities", "split": "heldout", "scores": miss},
    ]
    summary = summarise(rows)["entities"]
    assert summary["dev"]["first"] == 1.0 and summary["heldout"]["first"] == 0.0 and summary["all"]["first"] == 0.5
    assert summary["all"]["n"] == 2 and "user_above_assistant" not in summary["all"]


def test_the_bench_runs_end_to_end_on_a_slice() -> None:
    home = Path(tempfile.mkdtemp(prefix="memwrap-precision-test-"))  # not tmp_path: see conftest._new_home
    out = home / "result.json"
    # A configured LLM must not be used: the set measures the default, no-LLM mode.
    env = {**os.environ, "MEMWRAP_LLM_PROVIDER": "openai", "HF_HUB_OFFLINE": "1"}
    env.pop("MEMWRAP_HOME", None)
    try:
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "bench.precision",
                "--split",
                "heldout",
                "--scenarios",
                ",".join(SLICE),
                "--home",
                str(home / "memwrap"),
                "--out",
                str(out),
                "--json",
            ],
            cwd=_REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        result = json.loads(done.stdout)
        assert json.loads(out.read_text(encoding="utf-8")) == result
    finally:
        shutil.rmtree(home, ignore_errors=True)

    scenarios = {s.id: s for s in load() if s.id in SLICE}
    meta = result["meta"]
    assert meta["llm_provider"] == "none" and meta["embedding_model"] == DEFAULT_EMBEDDING_MODEL
    assert meta["questions"] == sum(len(s.questions) for s in scenarios.values()) == len(result["questions"])
    assert meta["memories"] == sum(len(s.items) for s in scenarios.values())
    for row in result["questions"]:
        scenario = scenarios[row["scenario"]]
        known = {i.id for i in scenario.items}
        assert set(row["scores"]) <= set(METRICS[row["category"]])
        assert all(0.0 <= v <= 1.0 for v in row["scores"].values()), row
        assert row["ranked"] and all(m is None or m in known for m in row["ranked"]), row
        assert set(row["block"]) <= known and 0 < row["block_tokens"] <= 120, row
    for category in CATEGORIES:
        cell = result["summary"][category]["heldout"]
        assert "dev" not in result["summary"][category]
        assert cell["n"] == sum(len(s.questions) for s in scenarios.values() if s.category == category)
        assert all(0.0 <= cell[m] <= 1.0 for m in METRICS[category] if m in cell)
