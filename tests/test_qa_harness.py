"""`python -m bench.qa` end to end on the fake server: four systems (no memory, the last turns, the RRF baseline,
memwrap) answering the same questions, the judge's verdict and LoCoMo's token F1 per system and category, the
per-category sample, and resuming per (system, question)."""

from __future__ import annotations

import json
import re
import sys
from collections import Counter
from pathlib import Path

import pytest
from fakes.llm_server import FakeLLMServer, RecordedRequest, Reply

_REPO = str(Path(__file__).resolve().parent.parent)
if _REPO not in sys.path:
    sys.path.insert(0, _REPO)

from bench.baselines import HybridRetriever, baseline_embedder  # noqa: E402 - after sys.path
from bench.qa.data import DATA, QAItem, locomo_items, per_category_sample  # noqa: E402 - after sys.path
from bench.qa.run import main, parse_args, select  # noqa: E402 - after sys.path
from bench.qa.scoring import locomo_f1, normalise, token_f1  # noqa: E402 - after sys.path
from bench.qa.summary import render_markdown, summarise  # noqa: E402 - after sys.path
from memwrap.tokens import count_tokens  # noqa: E402 - after sys.path

needs_data = pytest.mark.skipif(not (DATA / "locomo").exists(), reason="evaluation data not available")

SESSIONS = 2
BUDGET = 300  # two sessions hold ~1,500 tokens of turns: every system has to choose
_LINE = re.compile(r"^- \[(\d{4}-\d{2}-\d{2})(?:, about [^\]]+)?\] (.*)$")


def _collapse(text: str) -> str:
    return " ".join(text.split())


def _items() -> dict[str, QAItem]:
    """The questions of the test's slice by their text (unique in it: the fake answerer finds them by it)."""
    items = list(locomo_items(max_sessions=SESSIONS))
    by_question = {item.question: item for item in items}
    assert len(by_question) == len(items)
    return by_question


def knowing_answerer(items: dict[str, QAItem]):
    """The answerer gives the gold answer when an evidence turn is in its prompt, "I do not know." otherwise;
    the judge calls an answer correct when it is the gold answer."""

    def respond(request: RecordedRequest) -> Reply:
        prompt = request.body["messages"][-1]["content"]
        if "response_format" in request.body:  # the judge
            gold = re.search(r"Correct answer: (.*)", prompt).group(1).strip()  # type: ignore[union-attr]  # present
            answer = re.search(r"Answer to grade: (.*)", prompt).group(1).strip()  # type: ignore[union-attr]  # present
            return Reply(json={"correct": answer.casefold() == gold.casefold()})
        assert request.body["max_tokens"] == 96
        question = re.search(r"Question: (.*)", prompt).group(1).strip()  # type: ignore[union-attr]  # always there
        item = items[question]
        contents = {turn["document_id"]: turn["content"] for turn in item.items}
        seen = any(_collapse(contents[e]) in _collapse(prompt) for e in item.evidence)
        return Reply(text=item.gold if seen else "I do not know.")

    return respond


def run_args(fake: FakeLLMServer, out: Path, home: Path, *extra: str) -> list[str]:
    return [
        "--out",
        str(out),
        "--home",
        str(home),
        "--answer-base-url",
        fake.openai_base_url,
        "--answer-model",
        "fake-answerer",
        "--answer-api-key",
        "k",
        "--dataset",
        "locomo",
        "--max-sessions",
        str(SESSIONS),
        "--budget",
        str(BUDGET),
        *extra,
    ]


def _answer_prompts(fake: FakeLLMServer) -> list[RecordedRequest]:
    return [r for r in fake.requests if "response_format" not in r.body]


def _block_lines(prompt: str) -> list[tuple[str, str]]:
    """(date said, text) of each memory line in an answer prompt."""
    return [(m[1], m[2]) for line in prompt.splitlines() if (m := _LINE.match(line))]


@needs_data
def test_four_systems_same_questions_blocks_and_resume(
    fake: FakeLLMServer, memwrap_home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    items = _items()
    fake.responder = knowing_answerer(items)
    out = tmp_path / "locomo.jsonl"

    # First run: two systems only.
    assert main(run_args(fake, out, memwrap_home, "--per-category", "1", "--systems", "none,memwrap")) == 0
    first = [json.loads(line) for line in out.read_text().splitlines()]
    questions = sorted({r["id"] for r in first})
    assert len(questions) == 4 and len(first) == 8 and len(fake.requests) == 16  # an answer and a verdict each
    assert {r["category"] for r in first} == {"multi-hop", "temporal", "open-domain", "single-hop"}
    first_prompts = len(_answer_prompts(fake))

    # Second run, all four systems, two answers in flight: only recent and rrf are asked, nothing twice.
    assert main(run_args(fake, out, memwrap_home, "--per-category", "1", "--concurrency", "2")) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert rows[:8] == first and len(rows) == 16 and len(fake.requests) == 32
    assert Counter((r["system"], r["id"]) for r in rows) == Counter(
        {(s, q): 1 for s in ("none", "recent", "rrf", "memwrap") for q in questions}
    )
    assert {r["system"] for r in rows[8:]} == {"recent", "rrf"}
    # A third run finds nothing to do.
    assert main(run_args(fake, out, memwrap_home, "--per-category", "1")) == 0
    assert len(fake.requests) == 32

    prompts = _answer_prompts(fake)
    assert {p.body["messages"][0]["content"] for p in prompts} == {prompts[0].body["messages"][0]["content"]}
    assert first_prompts == 8 and len(prompts) == len(rows)
    by_id = {item.id: item for item in items.values()}
    for row in rows:
        item = by_id[row["id"]]
        contents = {turn["document_id"]: turn["content"] for turn in item.items}
        order = [turn["document_id"] for turn in item.items]
        # The prompt this row was answered from: its question, and a block of exactly the documents it reports.
        expected = [_collapse(contents[d]) for d in row["documents"]]
        [prompt] = {
            p.body["messages"][-1]["content"]
            for p in prompts
            if f"Question: {item.question}\n" in p.body["messages"][-1]["content"]
            and [text for _, text in _block_lines(p.body["messages"][-1]["content"])] == expected
        }
        lines = _block_lines(prompt)
        # The answer follows from what was in the block (the fake knows only that): the row says the same.
        assert row["correct"] == (row["evidence_found"] > 0), row
        assert row["f1"] == pytest.approx(locomo_f1(row["answer"], row["gold"], row["category"]), abs=1e-4)
        assert row["recall_tokens"] <= BUDGET
        if row["system"] == "none":
            assert "Memories:\n(none)" in prompt and lines == [] and row["documents"] == []
            assert row["recall_tokens"] == 0 and row["f1"] == 0.0 and not row["correct"]
            continue
        block = prompt[prompt.index("<memwrap_memories>") : prompt.index("</memwrap_memories>\n") + 20]
        assert count_tokens(block) == row["recall_tokens"]
        if row["system"] == "recent":
            n = len(row["documents"])
            assert row["documents"] == order[-n:]  # the conversation's last turns, oldest first
            assert [d for d, _ in lines] == sorted(d for d, _ in lines)
            longest = max(count_tokens(c) for c in contents.values()) + 24  # a line: "- [date, about ...] " + text
            assert BUDGET - row["recall_tokens"] < longest  # filled: the next older turn would not have fit
        elif row["system"] == "rrf":
            retriever = HybridRetriever(baseline_embedder())
            retriever.index([contents[d] for d in order])
            ranking = [order[i] for i in retriever.search(item.question, len(order))]
            kept = set(row["documents"])
            assert row["documents"][0] == ranking[0] and row["documents"] == [d for d in ranking if d in kept]

    summary = json.loads(out.with_suffix(".summary.json").read_text())
    assert list(summary["systems"]) == ["none", "recent", "rrf", "memwrap"]
    assert summary["settings"]["budget"] == BUDGET and summary["settings"]["per_category"] == 1
    for system, figures in summary["systems"].items():
        mine = [r for r in rows if r["system"] == system]
        overall = figures["categories"]["overall"]
        assert overall["questions"] == 4
        assert overall["accuracy"] == pytest.approx(sum(r["correct"] for r in mine) / 4, abs=1e-4)
        assert overall["f1"] == pytest.approx(sum(r["f1"] for r in mine) / 4, abs=1e-4)
        assert overall["evidence_in_block"] == pytest.approx(sum(r["evidence_found"] for r in mine) / 4, abs=1e-4)
        assert set(figures["categories"]) == {"multi-hop", "temporal", "open-domain", "single-hop", "overall"}
    assert summary["systems"]["none"]["categories"]["overall"]["accuracy"] == 0.0
    assert {k: v for k, v in summary.items() if k != "settings"} == {
        **summarise(out),
        "run_seconds": summary["run_seconds"],
        "scored_this_run": 0,
    }
    printed = capsys.readouterr().out
    assert "overall" in printed and "memwrap" in printed and "rrf" in printed

    # A second run writing into the same file by mistake, and a line cut by a crash, count for nothing.
    before = summarise(out)
    with out.open("a") as fh:
        fh.write(json.dumps({**rows[0], "correct": not rows[0]["correct"]}) + "\n" + '{"system": "rrf", "id": "loc')
    assert summarise(out) == before
    # --summarise reads the file alone (no model, no database) and can print Markdown for the README.
    assert main(["--out", str(out), "--summarise", "--markdown"]) == 0
    table = capsys.readouterr().out
    assert table == render_markdown({**summarise(out)}) + "\n"
    assert "| **overall** | 4 |" in table and "none: accuracy / F1" in table


@needs_data
def test_longmemeval_four_systems(fake: FakeLLMServer, memwrap_home: Path, tmp_path: Path) -> None:
    fake.responder = lambda request: (
        Reply(json={"correct": False}) if "response_format" in request.body else Reply(text="I do not know.")
    )
    out = tmp_path / "lme.jsonl"
    data = DATA / "longmemeval" / "oracle_2q.json"
    assert (
        main(
            [
                "--out",
                str(out),
                "--home",
                str(memwrap_home),
                "--answer-base-url",
                fake.openai_base_url,
                "--answer-model",
                "m",
                "--answer-api-key",
                "k",
                "--dataset",
                "longmemeval",
                "--data",
                str(data),
                "--limit",
                "1",
            ]
        )
        == 0
    )
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["system"] for r in rows] == ["none", "recent", "rrf", "memwrap"]
    assert all(r["id"].startswith("longmemeval:") and r["answer"] == "I do not know." for r in rows)
    assert all(r["evidence"] for r in rows)  # the turns marked has_answer
    assert rows[0]["evidence_found"] == 0.0 and rows[1]["recall_tokens"] > 0 and rows[3]["recall_tokens"] > 0
    summary = json.loads(out.with_suffix(".summary.json").read_text())
    assert summary["systems"]["memwrap"]["categories"]["overall"]["accuracy"] == 0.0


# --------------------------------------------------------------------------------------- LoCoMo's token F1


@pytest.mark.parametrize(
    ("answer", "gold", "category", "expected"),
    [
        ("7 May 2023", "7 May 2023", "temporal", 1.0),
        ("On 7 May, 2023.", "7 May 2023", "temporal", 2 * 0.75 * 1.0 / 1.75),  # "on" is extra: P 3/4, R 1
        ("She painted a sunrise", "sunrise", "single-hop", 0.5),  # P 1/3 (she, paint, sunris), R 1
        ("paintings", "Painting", "single-hop", 1.0),  # Porter stems both to "paint"
        ("The beach and the lake", "lake", "single-hop", 2 * 0.5 * 1.0 / 1.5),  # articles and "and" dropped
        ("cat cat", "cat", "single-hop", 2 * 0.5 * 1.0 / 1.5),  # a token counts as often as both sides have it
        ("", "Sweden", "single-hop", 0.0),
        ("I do not know.", "Sweden", "single-hop", 0.0),
        # multi-hop: each gold part takes its best answer part; the mean over gold parts
        ("pottery and camping", "pottery, camping, painting, swimming", "multi-hop", (2 / 3 + 2 / 3) / 4),
        ("camping, pottery", "pottery, camping, painting, swimming", "multi-hop", 0.5),
        ("pottery, camping, painting, swimming", "pottery, camping, painting, swimming", "multi-hop", 1.0),
        # open-domain: only the gold answer's first ";" part counts
        ("Probably not", "Probably not; she is scared of dogs", "open-domain", 1.0),
        ("she is scared of dogs", "Probably not; she is scared of dogs", "open-domain", 0.0),
        # other categories do not split the gold answer on ";": P 1, R 2/7
        ("Probably not", "Probably not; she is scared of dogs", "single-hop", 2 * 1.0 * (2 / 7) / (1 + 2 / 7)),
    ],
)
def test_locomo_f1_hand_computed(answer: str, gold: str, category: str, expected: float) -> None:
    assert locomo_f1(answer, gold, category) == pytest.approx(expected, abs=1e-9)


def test_f1_normalisation_follows_locomo() -> None:
    assert normalise("The Beach, and a lake!") == "beach lake"
    assert normalise("An apple-pie; THE END.") == "applepie end"  # punctuation removed, not split on
    assert token_f1("Sweden", "sweden.") == 1.0
    assert locomo_f1("x", "y", None) == 0.0


# --------------------------------------------------------------------------------------- the sample


@needs_data
def test_per_category_sample_spreads_over_conversations_and_grows_by_extension() -> None:
    everything = select(parse_args(["--dataset", "locomo"]))
    small = select(parse_args(["--dataset", "locomo", "--per-category", "2"]))
    large = select(parse_args(["--dataset", "locomo", "--per-category", "8"]))
    assert Counter(i.category for i in small) == {c: 2 for c in ("multi-hop", "temporal", "open-domain", "single-hop")}
    assert Counter(i.category for i in large) == {c: 8 for c in ("multi-hop", "temporal", "open-domain", "single-hop")}
    assert len({i.bank for i in small}) == 5  # each category starts at another conversation
    for category in ("multi-hop", "temporal", "open-domain", "single-hop"):
        banks = Counter(i.bank for i in large if i.category == category)
        having = {i.bank for i in everything if i.category == category}  # conv-30 has no open-domain question
        assert max(banks.values()) - min(banks.values()) <= 1 and set(banks) == having  # 8 over 5: 2,2,2,1,1
    assert {i.id for i in small} <= {i.id for i in large}  # a larger run keeps (and resumes) a smaller one
    assert [i.id for i in large] == [i.id for i in everything if i in large]  # file order
    assert [i.id for i in large] == [i.id for i in select(parse_args(["--dataset", "locomo", "--per-category", "8"]))]
    other_seed = select(parse_args(["--dataset", "locomo", "--per-category", "8", "--seed", "1"]))
    assert {i.id for i in other_seed} != {i.id for i in large}
    # Not "the first N": the sample reaches into the later sessions' questions.
    firsts = [i for i in everything if i.category == "temporal"][:8]
    assert {i.id for i in large if i.category == "temporal"} != {i.id for i in firsts}
    one = select(parse_args(["--dataset", "locomo", "--per-category", "2", "--categories", "temporal"]))
    assert {i.category for i in one} == {"temporal"} and len(one) == 2


def test_per_category_sample_takes_what_a_small_category_has() -> None:
    def item(n: int, bank: str, category: str) -> QAItem:
        return QAItem(id=f"q{n}", dataset="x", category=category, question="?", gold="", bank=bank, asked_at=None)  # type: ignore[arg-type]  # None, on purpose

    items = [item(0, "a", "rare"), item(1, "a", "common"), item(2, "b", "common"), item(3, "b", "common")]
    picked = per_category_sample(items, 2)
    assert Counter(i.category for i in picked) == {"rare": 1, "common": 2}
    assert {i.bank for i in picked if i.category == "common"} == {"a", "b"}


def test_unknown_system_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        parse_args(["--systems", "memwrap,bm25"])
    assert "unknown system(s) bm25; choose from none,recent,rrf,memwrap" in capsys.readouterr().err
