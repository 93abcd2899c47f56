"""The long-session bench: its generator and labels, the LongMemEval loader, the scoring, and the section's
plumbing in `python -m bench --quick` on tiny sizes (the report's shape, not its figures)."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

_REPO = str(Path(__file__).resolve().parent.parent)
if _REPO not in sys.path:
    sys.path.insert(0, _REPO)

from bench.long_session.evidence import EvidenceResult, summarise  # noqa: E402 - after sys.path
from bench.long_session.generator import QUESTION_TYPES, generate_bank  # noqa: E402
from bench.long_session.longmemeval import default_path, load_banks  # noqa: E402


def test_generated_bank_is_deterministic_and_labelled() -> None:
    bank = generate_bank(3, 60_000)
    again = generate_bank(3, 60_000)
    assert [m.content for m in bank.messages] == [m.content for m in again.messages]
    assert [q.question for q in bank.questions] == [q.question for q in again.questions]
    assert generate_bank(4, 60_000).messages[0].content != bank.messages[0].content

    assert 60_000 <= bank.tokens <= 90_000
    assert {q.type for q in bank.questions} == set(QUESTION_TYPES)
    by_id = {m.id: m for m in bank.messages}
    assert len(by_id) == len(bank.messages)
    for q in bank.questions:
        assert q.evidence and all(e in by_id for e in q.evidence), q
        assert q.asked_at > bank.messages[-1].timestamp
        times = [by_id[e].timestamp for e in q.evidence]
        assert times == sorted(times)  # a thread's statements come in order: updates, sequences, counts
        assert len({by_id[e].session for e in q.evidence}) == len(q.evidence)  # one session each
    assert sum("```" in m.text for m in bank.messages) > len(bank.messages) / 4  # fenced code is common
    assert len({m.session for m in bank.messages}) > 20


def test_evidence_messages_state_what_the_question_asks() -> None:
    bank = generate_bank(5, 40_000)
    by_id = {m.id: m for m in bank.messages}
    update = next(q for q in bank.questions if q.type == "knowledge-update" and re.fullmatch(r"[\d.]+", q.answer))
    newest = by_id[update.evidence[-1]].text
    assert update.answer in newest  # the newest statement holds the current value
    counting = next(q for q in bank.questions if q.type == "counting")
    assert counting.answer == str(len(counting.evidence))


@pytest.mark.skipif(not default_path().exists(), reason="LongMemEval data not available")
def test_longmemeval_banks_label_the_has_answer_turns() -> None:
    raw = json.loads(default_path().read_text(encoding="utf-8"))
    banks = load_banks(items=1)
    (bank,) = banks
    (question,) = bank.questions
    flagged = [
        f"{sid}:{t}"
        for sid, turns in zip(raw[0]["haystack_session_ids"], raw[0]["haystack_sessions"], strict=True)
        for t, turn in enumerate(turns)
        if turn.get("has_answer") and sid in raw[0]["answer_session_ids"]
    ]
    assert set(question.evidence) == set(flagged) and flagged
    assert len(bank.messages) == sum(len(s) for s in raw[0]["haystack_sessions"])
    times = [m.timestamp for m in bank.messages]
    assert times == sorted(times)
    cut = load_banks(items=1, other_sessions=1)[0]
    assert {m.session for m in cut.messages} >= set(raw[0]["answer_session_ids"])
    assert cut.sessions == len(raw[0]["answer_session_ids"]) + 1


def test_summary_is_a_micro_average_per_type_and_budget() -> None:
    rows = [
        EvidenceResult("memwrap", "d", "b", "q1", "temporal", 2, {512: 1, 1024: 2}, 1.0, {}, {512: False, 1024: True}),
        EvidenceResult("memwrap", "d", "b", "q2", "counting", 4, {512: 0, 1024: 1}, 1.0, {}, {512: False, 1024: True}),
        EvidenceResult("memwrap", "d", "b", "q3", "knowledge-update", 2, {512: 1, 1024: 1}, 1.0, {}, {512: True}),
    ]
    cells = summarise(rows, [512, 1024])["d"]["memwrap"]
    assert cells["temporal"]["512"] == {"recall": 0.5, "all_found": 0.0, "latest_found": 0.0, "n": 1}
    assert cells["temporal"]["1024"]["all_found"] == 1.0
    assert cells["overall"]["512"]["recall"] == pytest.approx((0.5 + 0.0 + 0.5) / 3, abs=1e-4)
    assert cells["overall"]["1024"]["recall"] == pytest.approx((1.0 + 0.25 + 0.5) / 3, abs=1e-4)
    # the newest evidence message: q3's at 512 only (a budget not looked at counts as not found)
    assert cells["knowledge-update"]["512"]["latest_found"] == 1.0
    assert cells["knowledge-update"]["1024"]["latest_found"] == 0.0
    assert cells["overall"]["1024"]["latest_found"] == pytest.approx(2 / 3, abs=1e-4)


def test_long_section_plumbing(tmp_path) -> None:
    from bench.run import parse_args, run_suite

    out = tmp_path / "out"
    config = parse_args(
        [
            "--quick", "--skip-locomo", "--skip-models", "--skip-latency",
            "--out", str(out),
            "--long-tokens", "3000", "--long-sizes", "60", "--long-others", "2", "--long-other-size", "20",
            "--long-queries", "3", "--load", "1", "--time-budget", "0", "--no-progress",
        ]
    )  # fmt: skip
    config.long.short_turns = 20
    results = run_suite(config)

    long = json.loads((out / "results.json").read_text())["long_session"]
    assert long == json.loads(json.dumps(results["long_session"], default=str))
    datasets = {"generated", "longmemeval"} if default_path().exists() else {"generated"}
    assert set(long["recall"]) == datasets
    for systems in long["recall"].values():
        assert set(systems) == {"memwrap", "dense+bm25"}
        for cells in systems.values():
            assert "overall" in cells
            for by_budget in cells.values():
                assert set(by_budget) == {"512", "1024", "2048"}
                assert all(0.0 <= c["recall"] <= 1.0 for c in by_budget.values())
    assert set(long["recall"]["generated"]["memwrap"]) == {*QUESTION_TYPES, "overall"}
    for name in (*datasets, "all"):
        row = long["throughput"][name]
        assert row["retain_tokens_per_s"] > 0 and row["embed_tokens_per_s"] > 0 and row["memories"] > 0
    assert long["short_turns"]["turns"] == 20 and long["short_turns"]["turns_per_s"] > 0
    assert long["short_turns"]["embed_turns_per_s"] > 0 and long["short_turns"]["retain_over_embed"] > 0

    latency = long["latency"]
    assert latency["others"] == 2 and latency["other_memories"] > 0
    (size,) = latency["sizes"]
    assert size["memories"] >= 1 and size["tail_messages"] > 0
    for condition in ("quiet", "loaded"):
        steps = size[condition]["steps_ms"]
        assert size[condition]["queries"] == 3
        assert {"wall", "total", "arm.graph", "arm.semantic", "arm.keyword", "pack"} <= set(steps)

    per_question = json.loads((out / "long_per_question.json").read_text())
    assert {r["system"] for r in per_question} == {"memwrap", "dense+bm25"}
    markdown = (out / "report.md").read_text()
    assert "## Long technical sessions" in markdown and "Recall latency per step" in markdown
    assert "Knowledge updates, the newest statement (the answer) in the block" in markdown
    assert "+1 busy loops" in markdown


def test_short_turns_time_the_model_on_the_texts_retain_embeds(memory: Any, bank: str, monkeypatch: Any) -> None:
    """The embedding-alone figure beside retain's short turns/s is taken on exactly what retain embedded (each turn
    after the end of the one before it in its session), not on the bare turns."""
    from bench.long_session.latency import short_turns

    engine = memory._run(memory.aio._get_engine())
    retained: list[str] = []
    real = engine.embedder.embed

    async def spy(texts: Any) -> Any:
        retained.extend(texts)
        return await real(texts)

    monkeypatch.setattr(engine.embedder, "embed", spy)

    class Alone:
        def __init__(self) -> None:
            self.texts: list[str] = []

        def encode(self, texts: list[str]) -> None:
            self.texts.extend(texts)

    alone = Alone()
    result = short_turns(memory, bank, 30, batch=10, embedder=alone)
    assert result["turns"] == 30 and result["embed_turns_per_s"] > 0
    assert alone.texts == retained
    assert sum("\n" in text for text in alone.texts) >= 20  # most turns carry the one before them
