"""The "Embedding models" part of `python -m bench`: every model on the multilingual set, on LoCoMo (memwrap
only) and for query-embedding latency, in the same run (bench/multilingual/evaluate.py says how each is scored).

The configured model runs on the suite's own Memory (its LoCoMo figures are the suite's memwrap row); every other
model gets a Memory of its own on a fresh temporary home, removed afterwards.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Sequence
from typing import Any

from bench.locomo import QuestionResult, summarise
from bench.multilingual.data import CATEGORIES
from bench.multilingual.evaluate import (
    OVERALL,
    RECALL_AT,
    evaluate_set,
    load_set,
    open_memory_for,
    other_models,
    query_embedding_ms,
)

# (memory, system name) -> LoCoMo results of memwrap on that memory, scored under that name.
LocomoRunner = Callable[[Any, str], list[QuestionResult]]


def run_comparison(
    memory: Any,
    *,
    run_id: str,
    budgets: Sequence[int],
    count_tokens: Callable[[str], int],
    locomo_memwrap: dict[str, Any] | None,
    run_locomo: LocomoRunner | None,
    requested: Sequence[str] | None,
    log: Callable[[str], None],
    deadline: float | None = None,
    max_distractors: int | None = None,
) -> dict[str, Any]:
    """{"models": {name: {...}}, "skipped": {name: reason}}; the configured model first."""
    data = load_set()
    configured = memory.settings.embedding_model
    out: dict[str, Any] = {
        "models": {},
        "skipped": {},
        "set": {"memories": len(data.memories), "questions": len(data.questions)},
    }
    for model in [configured, *other_models(configured, requested)]:
        if deadline is not None and time.monotonic() > deadline:
            out["skipped"][model] = "the run's time budget was used up"
            log(f"[models] {model}: skipped, out of time")
            continue
        own, home = (memory, None) if model == configured else open_memory_for(model)
        t0 = time.perf_counter()
        try:
            own.banks()  # database and model start here, outside every timing
            entry: dict[str, Any] = {"backend": _backend(own), "start_s": round(time.perf_counter() - t0, 1)}
            bank = f"bench-{run_id}-multilingual"
            result = evaluate_set(own, bank, data, budgets, count_tokens, model=model, max_distractors=max_distractors)
            own.delete_bank(bank)
            entry["multilingual"] = result.to_json(budgets)
            log(f"[models] {model}: multilingual set recall@5 {_at5(entry['multilingual'])}")
            if model == configured:
                entry["locomo"] = locomo_memwrap
            elif run_locomo is not None:
                system = f"memwrap[{model}]"
                results = run_locomo(own, system)
                entry["locomo"] = summarise(results, budgets)[system].to_json() if results else None
            entry["query_embedding_p50_ms"] = query_embedding_ms(
                model, own.settings.embedding_backend, own.settings.home, data
            )
            log(f"[models] {model}: query embedding p50 {entry['query_embedding_p50_ms']} ms")
            entry["seconds"] = round(time.perf_counter() - t0, 1)
            out["models"][model] = entry
        finally:
            if home is not None:
                own.close()
                from memwrap.store.embedded_pg import stop_embedded_server

                stop_embedded_server(own.settings.pgdata)
                shutil.rmtree(home, ignore_errors=True)
    return out


def _backend(memory: Any) -> str:
    engine = memory._run(memory.aio._get_engine())
    return str(engine.embedder.backend)


def _at5(entry: dict[str, Any]) -> str:
    groups = entry["groups"]
    return ", ".join(f"{g} {groups[g]['recall_at']['5']:.2f}" for g in (*CATEGORIES, OVERALL) if g in groups)


# ------------------------------------------------------------------------------------------- report


CATEGORY_LABELS = {
    "zh": "Chinese",
    "cross": "cross-language",
    "es": "Spanish",
    "mixed": "mixed zh/en",
    OVERALL: "overall",
}


def model_rows(models: dict[str, Any], budgets: Sequence[int]) -> tuple[list[str], list[list[str]]]:
    """One row per model: multilingual recall@5 per category, LoCoMo evidence recall per budget, query embedding."""
    groups = [*CATEGORIES, OVERALL]
    header = [
        "model (engine)",
        *(f"{CATEGORY_LABELS[g]} R@5" for g in groups),
        *(f"LoCoMo @{b}" for b in budgets),
        "query embedding p50 ms (en / zh)",
        "retain items/s",
    ]
    rows = []
    for name, entry in models.items():
        multi = entry.get("multilingual", {}).get("groups", {})
        locomo = entry.get("locomo") or {}
        overall = locomo.get(OVERALL, {})
        q = entry.get("query_embedding_p50_ms", {})
        rows.append(
            [
                f"{name} ({entry.get('backend', '?')})",
                *(f"{multi[g]['recall_at']['5']:.2f}" if g in multi else "-" for g in groups),
                *(f"{100 * overall[str(b)]['recall']:.1f}" if str(b) in overall else "-" for b in budgets),
                f"{q.get('en', 0):.2f} / {q.get('zh', 0):.2f}" if q else "-",
                f"{entry['multilingual']['retain_items_per_s']:,.0f}" if entry.get("multilingual") else "-",
            ]
        )
    return header, rows


def category_rows(models: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    header = ["questions", "model", *(f"R@{k}" for k in RECALL_AT)]
    rows = []
    for group in (*CATEGORIES, OVERALL):
        for name, entry in models.items():
            cells = entry.get("multilingual", {}).get("groups", {}).get(group)
            if cells:
                rows.append(
                    [
                        f"{CATEGORY_LABELS[group]} (n={cells['n']})",
                        name,
                        *(f"{cells['recall_at'][str(k)]:.2f}" for k in RECALL_AT),
                    ]
                )
    return header, rows


def markdown_section(comparison: dict[str, Any], budgets: Sequence[int], md_table: Callable[..., str]) -> list[str]:
    models = comparison.get("models", {})
    if not models:
        return []
    header, rows = model_rows(models, budgets)
    cat_header, cat_rows = category_rows(models)
    set_info = comparison.get("set", {})
    parts = [
        "## Embedding models",
        "",
        f"The multilingual set (bench/multilingual: {set_info.get('memories', '?')} memories and "
        f"{set_info.get('questions', '?')} paraphrased questions of our own, plus MemoryBank distractors), LoCoMo "
        "evidence recall of memwrap (overall, %) and query embedding, per model, in this run.",
        "",
        md_table(header, rows),
        "",
        "### Multilingual set: recall@k per category",
        "",
        md_table(cat_header, cat_rows),
        "",
    ]
    parts += [f"- {model}: skipped ({reason})" for model, reason in comparison.get("skipped", {}).items()]
    return parts


def print_section(comparison: dict[str, Any], budgets: Sequence[int], console: Any) -> None:
    from rich.table import Table

    models = comparison.get("models", {})
    if not models:
        return
    for title, (header, rows) in (
        ("Embedding models", model_rows(models, budgets)),
        ("Multilingual set recall@k", category_rows(models)),
    ):
        table = Table(title=title)
        for column in header:
            table.add_column(column)
        for row in rows:
            table.add_row(*row)
        console.print(table)
