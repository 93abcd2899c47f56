"""`python -m bench.qa` end to end on the fake server: retain, recall, answer, judge, per-category accuracy, and
resuming where a run stopped (questions already scored are not asked again)."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
from fakes.llm_server import FakeLLMServer, RecordedRequest, Reply

_REPO = str(Path(__file__).resolve().parent.parent)
if _REPO not in sys.path:
    sys.path.insert(0, _REPO)

from bench.qa.data import DATA  # noqa: E402
from bench.qa.run import main, parse_args, render, select, summarise  # noqa: E402

pytestmark = pytest.mark.skipif(not (DATA / "locomo").exists(), reason="evaluation data not available")


def scripted(request: RecordedRequest) -> Reply:
    """The answerer repeats the first memory's date for "When" questions; the judge compares with the gold."""
    messages = request.body["messages"]
    prompt = messages[-1]["content"]
    if "response_format" in request.body:  # the judge
        gold = re.search(r"Correct answer: (.*)", prompt).group(1).strip().casefold()  # type: ignore[union-attr]
        answer = re.search(r"Answer to grade: (.*)", prompt).group(1).strip().casefold()  # type: ignore[union-attr]
        return Reply(json={"correct": bool(answer) and (gold in answer or answer in gold)})
    assert "Memories:" in prompt and "Question:" in prompt and request.body["max_tokens"] == 96
    return Reply(text="7 May 2023" if "support group" in prompt else "I do not know.")


def args(fake: FakeLLMServer, out: Path, home: Path, *extra: str) -> list[str]:
    return ["--out", str(out), "--home", str(home), "--answer-base-url", fake.openai_base_url,
            "--answer-model", "fake-answerer", "--answer-api-key", "k", *extra]


def test_locomo_end_to_end_and_resume(fake: FakeLLMServer, memwrap_home: Path, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    fake.responder = scripted
    out = tmp_path / "locomo.jsonl"
    assert main(args(fake, out, memwrap_home, "--dataset", "locomo", "--max-sessions", "2", "--limit", "2")) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 2 and len(fake.requests) == 4  # an answer and a verdict per question
    first = rows[0]
    assert first["id"].startswith("locomo:conv-") and first["id"].endswith(":0")
    assert first["gold"] == "7 May 2023" and first["category"] == "temporal"
    assert first["answer"] == "7 May 2023" and first["correct"] is True and first["recall_tokens"] > 0
    assert first["answer_usage"]["calls"] == 1 and first["seconds"] >= first["answer_seconds"]
    printed = capsys.readouterr().out
    assert "overall" in printed and "accuracy" in printed

    # A second run with a higher limit scores only the question it has not seen.
    assert main(args(fake, out, memwrap_home, "--dataset", "locomo", "--max-sessions", "2", "--limit", "3")) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["id"] for r in rows][:2] == [first["id"], rows[1]["id"]] and len(rows) == 3 and len(fake.requests) == 6
    summary = json.loads(out.with_suffix(".summary.json").read_text())
    overall = summary["categories"]["overall"]
    assert overall["questions"] == 3 and overall["accuracy"] == pytest.approx(sum(r["correct"] for r in rows) / 3, abs=1e-4)
    assert summary["scored_this_run"] == 1 and summary == {**summarise(out), **{k: summary[k] for k in ("run_seconds", "scored_this_run")}}
    assert "overall" in render(summary)


def test_longmemeval_end_to_end(fake: FakeLLMServer, memwrap_home: Path, tmp_path: Path) -> None:
    fake.responder = scripted
    out = tmp_path / "lme.jsonl"
    data = DATA / "longmemeval" / "oracle_2q.json"
    assert main(args(fake, out, memwrap_home, "--dataset", "longmemeval", "--data", str(data), "--limit", "1")) == 0
    [row] = [json.loads(line) for line in out.read_text().splitlines()]
    assert row["id"].startswith("longmemeval:") and row["correct"] is False and row["answer"] == "I do not know."
    assert json.loads(out.with_suffix(".summary.json").read_text())["categories"]["overall"]["accuracy"] == 0.0


def test_per_category_takes_the_first_questions_of_each_category() -> None:
    everything = select(parse_args(["--dataset", "locomo", "--max-sessions", "4"]))
    picked = select(parse_args(["--dataset", "locomo", "--max-sessions", "4", "--per-category", "2"]))
    categories = {i.category for i in everything}
    assert len(categories) > 1
    expected = [i for c in categories for i in [j for j in everything if j.category == c][:2]]
    assert sorted(i.id for i in picked) == sorted(i.id for i in expected)
    assert [i.id for i in picked] == [i.id for i in everything if i in picked]  # file order kept
    one = select(parse_args(["--dataset", "locomo", "--max-sessions", "4", "--per-category", "2",
                             "--categories", "temporal"]))
    assert {i.category for i in one} == {"temporal"} and 0 < len(one) <= 2
