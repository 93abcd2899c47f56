"""Run the precision set against memwrap and print its table: `python -m bench.precision`.

    python -m bench.precision                                  # both splits, the default embedding model
    python -m bench.precision --split dev                      # what to tune on
    python -m bench.precision --model multilingual-e5-small --out e5.json
    python -m bench.precision --scenarios t-en-1,r-en-1 --json # a slice, machine-readable

Each scenario is retained into a fresh bank (deleted first when --home is reused) through the public API
(`Memory.retain_many`), with no LLM (provider "none", whatever MEMWRAP_LLM_PROVIDER says) and learning off (no
background consolidation competing or changing what is ranked). Each question is asked twice with the scenario's
fixed `now`: at token_budget 2048, whose `.memories` order is the ranked list, and at a tight budget (default 120
tokens, about two or three short memories after the block's header), whose `.memories` are the block. Scores:
bench/precision/score.py; the set: bench/precision/data.py and bench/README.md.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench.precision.data import CATEGORIES, SPLITS, PrecisionSetError, Scenario, load
from bench.precision.score import METRICS, chance_scores, score_question, summarise

if TYPE_CHECKING:
    from memwrap import Memory, RetainItem

RANKED_BUDGET = 2048
TIGHT_BUDGET = 120
BANK_PREFIX = "precision-"
CATEGORY_TITLES = {
    "time": "time-scoped questions",
    "replaced": "replaced facts",
    "speakers": "speaker-heavy chats",
    "entities": "entity names (en/zh)",
}


def retain_items(scenario: Scenario) -> list[RetainItem]:
    from memwrap import RetainItem

    return [
        RetainItem(
            content=i.content,
            timestamp=i.timestamp,
            document_id=i.document_id,
            context=i.context,
            metadata=dict(i.metadata),
        )
        for i in scenario.items
    ]


def run_scenario(memory: Memory, scenario: Scenario, tight_budget: int) -> list[dict[str, Any]]:
    """Retain the scenario into its own fresh bank, ask every question, score it; one row per question."""
    bank = BANK_PREFIX + scenario.id
    memory.delete_bank(bank)
    memory.retain_many(bank, retain_items(scenario))
    rows = []
    for question in scenario.questions:
        full = memory.recall(bank, question.text, token_budget=RANKED_BUDGET, now=scenario.now)
        tight = memory.recall(bank, question.text, token_budget=tight_budget, now=scenario.now)
        ranked = [scenario.by_document.get(m.document_id or "") for m in full.memories]
        block = {scenario.by_document[m.document_id] for m in tight.memories if m.document_id in scenario.by_document}
        rows.append(
            {
                "scenario": scenario.id,
                "question": question.id,
                "text": question.text,
                "category": scenario.category,
                "split": scenario.split,
                "language": scenario.language,
                "shape": scenario.shape,
                "scores": score_question(scenario, question, ranked, block),
                "chance": chance_scores(scenario, question),
                "ranked": ranked[:10],
                "block": sorted(block),
                "block_tokens": tight.tokens,
                "time_window": full.time_window.expression if full.time_window else None,
            }
        )
    return rows


def select(split: str, scenario_ids: Sequence[str] | None, categories: Sequence[str]) -> list[Scenario]:
    scenarios = [s for s in load(categories) if split in ("all", s.split)]
    if scenario_ids:
        known = {s.id for s in scenarios}
        unknown = [s for s in scenario_ids if s not in known]
        if unknown:
            raise SystemExit(f"no such scenario in --split {split}: {', '.join(unknown)}")
        scenarios = [s for s in scenarios if s.id in scenario_ids]
    return scenarios


def engine_commit() -> str:
    """The checkout's commit, "+dirty" when memwrap/ has uncommitted changes (the figures are of that code)."""
    import memwrap

    root = Path(memwrap.__file__).resolve().parents[1]
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--", "memwrap"], cwd=root, capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("+dirty" if dirty else "")


def evaluate(
    scenarios: Sequence[Scenario],
    *,
    model: str | None,
    home: Path | None,
    tight_budget: int = TIGHT_BUDGET,
    progress: bool = True,
) -> dict[str, Any]:
    from memwrap import Memory
    from memwrap.config import load_settings

    created = None
    if home is None:
        home = created = Path(tempfile.mkdtemp(prefix="memwrap-precision-"))
    load_start = os.getloadavg()
    started = time.perf_counter()
    settings = load_settings(home=home, embedding_model=model, worker="off", llm_provider="none")
    rows: list[dict[str, Any]] = []
    memory = Memory(settings=settings)
    try:
        for n, scenario in enumerate(scenarios, start=1):
            if progress:
                print(
                    f"[{n}/{len(scenarios)}] {scenario.id}: {len(scenario.items)} memories, "
                    f"{len(scenario.questions)} questions",
                    file=sys.stderr,
                )
            rows += run_scenario(memory, scenario, tight_budget)
            memory.delete_bank(BANK_PREFIX + scenario.id)
        used_model, provider = memory.settings.embedding_model, memory.settings.llm_provider
    finally:
        memory.close()
        if created is not None:
            from memwrap.store.embedded_pg import stop_embedded_server

            stop_embedded_server(settings.pgdata)
            shutil.rmtree(created, ignore_errors=True)
    return {
        "meta": {
            "date": datetime.now(UTC).isoformat(timespec="seconds"),
            "engine_commit": engine_commit(),
            "embedding_model": used_model,
            "llm_provider": provider,
            "ranked_budget": RANKED_BUDGET,
            "tight_budget": tight_budget,
            "scenarios": len(scenarios),
            "memories": sum(len(s.items) for s in scenarios),
            "questions": len(rows),
            "seconds": round(time.perf_counter() - started, 1),
            "cpus": os.cpu_count(),
            "loadavg_start": [round(x, 2) for x in load_start],
            "loadavg_end": [round(x, 2) for x in os.getloadavg()],
        },
        "summary": summarise(rows),
        "questions": rows,
    }


def table(result: dict[str, Any]) -> str:
    """The per-category table, dev and held-out side by side, with a random order's scores (markdown)."""
    summary = result["summary"]
    lines = ["| category | score | dev | held-out | random order (dev / held-out) |", "|---|---|---|---|---|"]
    for category, metrics in METRICS.items():
        if category not in summary:
            continue
        cells = summary[category]
        for metric, title in metrics.items():
            values, chance = [], []
            for split in SPLITS:
                cell = cells.get(split, {})
                values.append(f"{cell[metric]:.3f} ({cell[f'n_{metric}']})" if metric in cell else "-")
                chance.append(f"{cell[f'chance_{metric}']:.3f}" if f"chance_{metric}" in cell else "-")
            reference = " / ".join(chance) if any(c != "-" for c in chance) else "-"
            lines.append(f"| {CATEGORY_TITLES[category]} | {title} | {values[0]} | {values[1]} | {reference} |")
    return "\n".join(lines)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.precision", description=__doc__.split("\n")[0])
    parser.add_argument("--split", choices=(*SPLITS, "all"), default="all", help="which half of the set (default: all)")
    parser.add_argument("--model", help="embedding model: multilingual-e5-small (default) or all-MiniLM-L6-v2")
    parser.add_argument("--home", type=Path, help="memwrap home to use (default: a fresh temporary one, removed after)")
    parser.add_argument("--out", type=Path, help="write the full result (every question's ranking and scores) here")
    parser.add_argument("--json", action="store_true", help="print the result as JSON instead of the table")
    parser.add_argument("--scenarios", help="only these scenario ids, comma-separated (a slice)")
    parser.add_argument("--categories", default=",".join(CATEGORIES), help=f"some of {','.join(CATEGORIES)}")
    parser.add_argument(
        "--tight-budget", type=int, default=TIGHT_BUDGET, help=f"tokens of the tight block (default {TIGHT_BUDGET})"
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    categories = [c.strip() for c in args.categories.split(",") if c.strip()]
    scenario_ids = [s.strip() for s in args.scenarios.split(",") if s.strip()] if args.scenarios else None
    try:
        scenarios = select(args.split, scenario_ids, categories)
    except PrecisionSetError as exc:
        print(f"the precision set does not hold together: {exc}", file=sys.stderr)
        return 2
    result = evaluate(
        scenarios, model=args.model, home=args.home, tight_budget=args.tight_budget, progress=not args.json
    )
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    if args.json:
        print(json.dumps(result, ensure_ascii=False, indent=1))
        return 0
    meta = result["meta"]
    print(
        f"memwrap {meta['engine_commit']}, {meta['embedding_model']}, no LLM: {meta['questions']} questions over "
        f"{meta['memories']} memories in {meta['scenarios']} banks, {meta['seconds']} s "
        f"(load {meta['loadavg_start'][0]} -> {meta['loadavg_end'][0]} on {meta['cpus']} CPUs); ranked list at "
        f"{meta['ranked_budget']} tokens, tight block at {meta['tight_budget']}"
    )
    print(table(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
