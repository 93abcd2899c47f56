"""Evidence recall of the block on long conversations (LongMemEval's s_3q), per question type and token budget.

    python -m bench.long_quality                          # a fresh temporary home
    python -m bench.long_quality --home /tmp/lq --json out.json

Each of the file's three items goes into its own bank of one home, as a new user would retain a chat in the
default mode (no LLM): every message one item (content as written, metadata role = the speaker, document_id
"<session>:<turn>", metadata session_id, the session's date). Each question is then recalled at every budget
(`now` = the question's date) and scored on what the block holds:

* evidence recall: the share of the question's evidence messages (`has_answer`) with a memory in the block
  (any chunk of a long message counts);
* session recall: the share of its answer sessions with a memory in the block.

The data is read in place (`<repo>/../shared/data/longmemeval/s_3q.json`), never copied.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "longmemeval" / "s_3q.json"
BUDGETS = (512, 1024, 2048)


def _when(text: str) -> datetime:
    """LongMemEval's "2023/07/12 (Wed) 10:14" as an aware datetime (UTC)."""
    day, _weekday, clock = text.split(" ")
    return datetime.strptime(f"{day} {clock}", "%Y/%m/%d %H:%M").replace(tzinfo=UTC)


def items_of(entry: dict[str, Any]) -> tuple[list[Any], set[str]]:
    """(the entry's messages as RetainItems, the document ids of its evidence messages)."""
    from memwrap import RetainItem

    items: list[Any] = []
    evidence: set[str] = set()
    for session_id, date, turns in zip(
        entry["haystack_session_ids"], entry["haystack_dates"], entry["haystack_sessions"], strict=True
    ):
        when = _when(date)
        for index, turn in enumerate(turns):
            document = f"{session_id}:{index}"
            if turn.get("has_answer"):
                evidence.add(document)
            items.append(
                RetainItem(
                    content=turn["content"],
                    timestamp=when,
                    document_id=document,
                    metadata={"role": turn["role"], "session_id": session_id},
                )
            )
    return items, evidence


def run(home: Path, data: Path, budgets: tuple[int, ...]) -> list[dict[str, Any]]:
    from memwrap import Memory
    from memwrap.config import load_settings

    entries = json.loads(data.read_text())
    rows: list[dict[str, Any]] = []
    with Memory(settings=load_settings(home=home, worker="off")) as memory:
        have = {b.bank_id for b in memory.banks()}
        for entry in entries:
            bank = f"lme-{entry['question_id']}"
            items, evidence = items_of(entry)
            if bank not in have:
                started = time.perf_counter()
                for i in range(0, len(items), 100):
                    memory.retain_many(bank, items[i : i + 100])
                print(f"[long] {bank}: {len(items)} messages retained in {time.perf_counter() - started:.1f}s")
            answer_sessions = set(entry["answer_session_ids"])
            now = _when(entry["question_date"])
            for budget in budgets:
                recall = memory.recall(bank, entry["question"], token_budget=budget, now=now)
                documents = {m.document_id for m in recall.memories if m.document_id}
                sessions = {d.rsplit(":", 1)[0] for d in documents}
                rows.append(
                    {
                        "type": entry["question_type"],
                        "budget": budget,
                        "evidence": len(evidence & documents) / len(evidence),
                        "sessions": len(answer_sessions & sessions) / len(answer_sessions),
                        "distinct_sessions": len(sessions),
                        "ms": recall.timings_ms.get("total", 0.0),
                    }
                )
    return rows


def summary(rows: list[dict[str, Any]]) -> dict[str, dict[int, dict[str, float]]]:
    grouped: dict[str, dict[int, list[dict[str, Any]]]] = defaultdict(lambda: defaultdict(list))
    for row in rows:
        grouped[row["type"]][row["budget"]].append(row)
        grouped["all"][row["budget"]].append(row)
    return {
        kind: {
            budget: {
                key: round(sum(r[key] for r in members) / len(members), 3)
                for key in ("evidence", "sessions", "distinct_sessions")
            }
            | {"n": len(members)}
            for budget, members in sorted(by_budget.items())
        }
        for kind, by_budget in sorted(grouped.items())
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--home", type=Path, help="memwrap home (default: a temporary one); banks are reused")
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--budgets", default=",".join(map(str, BUDGETS)))
    parser.add_argument("--json", type=Path, help="write the per-question rows and the summary here")
    args = parser.parse_args()
    budgets = tuple(int(b) for b in args.budgets.split(","))
    with tempfile.TemporaryDirectory(prefix="memwrap-long-") as scratch:
        rows = run(args.home or Path(scratch), args.data, budgets)
    result = summary(rows)
    print("type                 budget  evidence  sessions  distinct sessions in block  (n)")
    for kind, by_budget in result.items():
        for budget, s in by_budget.items():
            print(
                f"{kind:20} {budget:6}  {s['evidence']:8.3f}  {s['sessions']:8.3f}  "
                f"{s['distinct_sessions']:26.1f}  ({s['n']})"
            )
    if args.json:
        args.json.write_text(json.dumps({"rows": rows, "summary": result}, indent=2))


if __name__ == "__main__":
    main()
