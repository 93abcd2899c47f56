"""`memwrap reembed` of a 10k bank from one embedding model to the other: how long it takes, and whether recall
on the moved store is the recall of a store built afresh with the new model.

    .venv/bin/python -m bench.multilingual.reembed                      # all-MiniLM-L6-v2 -> multilingual-e5-small
    .venv/bin/python -m bench.multilingual.reembed --source multilingual-e5-small --target all-MiniLM-L6-v2

The bank: the multilingual set with its MemoryBank distractors, then synthetic chat turns (bench/synthetic.py) up
to --size. Store A is built with the source model and re-embedded in place (`Memory.reembed`, what the CLI runs);
store B is built with the target model. Both answer the set's questions and --queries synthetic ones
(max_tokens=2048); the report counts questions whose ranked lists are identical, and the largest difference
between the two stores' vectors.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench.multilingual.evaluate import NOW, RECALL_MAX_TOKENS, load_set, set_items
from bench.synthetic import generate_queries, generate_turns


def _items(size: int) -> list[Any]:
    from memwrap import RetainItem

    items = set_items(load_set())
    extra = max(0, size - len(items))
    items += [
        RetainItem(content=t.content, document_id=t.document_id, timestamp=t.timestamp) for t in generate_turns(extra)
    ]
    return items[:size]


def _memory(home: Path, model: str) -> Any:
    from memwrap import Memory
    from memwrap.config import load_settings

    return Memory(settings=load_settings(home=home, embedding_model=model, worker="off"))


def _build(home: Path, model: str, items: list[Any]) -> float:
    with _memory(home, model) as mem:
        t0 = time.perf_counter()
        for i in range(0, len(items), 500):
            mem.retain_many("bank", items[i : i + 500])
        return time.perf_counter() - t0


def _answers(home: Path, model: str, questions: list[str]) -> tuple[list[list[str]], dict[str, np.ndarray]]:
    with _memory(home, model) as mem:
        rankings = [
            [
                str(m.id) if m.document_id is None else m.document_id
                for m in mem.recall("bank", q, now=NOW, token_budget=RECALL_MAX_TOKENS).memories
            ]
            for q in questions
        ]
        engine = mem._run(mem.aio._get_engine())
        rows = mem._run(
            engine.store.pool.fetch("SELECT document_id, embedding FROM memory_units WHERE bank_id = 'bank'")
        )
        return rankings, {r["document_id"]: r["embedding"].to_numpy() for r in rows}


def _recall_at_5(questions: list[Any], rankings: list[list[str]]) -> float:
    shares = [
        len(set(q.evidence) & set(ranked[:5])) / len(q.evidence) for q, ranked in zip(questions, rankings, strict=True)
    ]
    return round(sum(shares) / len(shares), 3)


def main(argv: list[str] | None = None) -> int:
    from memwrap.config import ENGLISH_EMBEDDING_MODEL, MULTILINGUAL_EMBEDDING_MODEL
    from memwrap.store.embedded_pg import stop_embedded_server

    parser = argparse.ArgumentParser(
        prog="python -m bench.multilingual.reembed",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--source", default=ENGLISH_EMBEDDING_MODEL)
    parser.add_argument("--target", default=MULTILINGUAL_EMBEDDING_MODEL)
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=50, help="synthetic questions besides the set's own")
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parents[1] / "results" / "reembed.json")
    parser.add_argument(
        "--exact-scan",
        action="store_true",
        help="search the bank exactly (no HNSW index), so that equal vectors must give equal lists",
    )
    args = parser.parse_args(argv)
    if args.exact_scan:
        from memwrap.engine.recall import arms

        arms.EXACT_SCAN_MAX = args.size + 1  # the two stores' indexes are built differently: approximate search differs

    items = _items(args.size)
    set_questions = load_set().questions
    questions = [q.text for q in set_questions] + generate_queries(args.queries, seed=31)
    moved, fresh = (Path(tempfile.mkdtemp(prefix="memwrap-reembed-")) for _ in range(2))
    try:
        build_source_s = _build(moved, args.source, items)
        with _memory(moved, args.target) as mem:
            t0 = time.perf_counter()
            count = mem.reembed()
            reembed_s = time.perf_counter() - t0
        build_target_s = _build(fresh, args.target, items)
        moved_rankings, moved_vectors = _answers(moved, args.target, questions)
        fresh_rankings, fresh_vectors = _answers(fresh, args.target, questions)
    finally:
        for home in (moved, fresh):
            stop_embedded_server(home / "pg")
            shutil.rmtree(home, ignore_errors=True)
    diffs = [float(np.abs(moved_vectors[k] - v).max()) for k, v in fresh_vectors.items()]
    report = {
        "source": args.source,
        "target": args.target,
        "memories": len(items),
        "reembedded": count,
        "reembed_s": round(reembed_s, 1),
        "reembed_items_per_s": round(count / reembed_s, 1),
        "build_source_s": round(build_source_s, 1),
        "build_target_s": round(build_target_s, 1),
        "questions": len(questions),
        "identical_rankings": sum(a == b for a, b in zip(moved_rankings, fresh_rankings, strict=True)),
        "identical_top5": sum(a[:5] == b[:5] for a, b in zip(moved_rankings, fresh_rankings, strict=True)),
        "max_vector_difference": max(diffs) if diffs else None,
        "exact_scan": args.exact_scan,
        # The set's questions, scored as bench.recall_at_k scores them: the same quality either way?
        "set_recall_at_5_moved": _recall_at_5(set_questions, moved_rankings),
        "set_recall_at_5_fresh": _recall_at_5(set_questions, fresh_rankings),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
