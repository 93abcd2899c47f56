"""The summary of a bench.qa results file, per system and category, and its tables (terminal and Markdown).

Every figure is recomputed from the JSONL lines, so a summary always covers everything in the file, whichever
runs wrote it. Lines written before bench.qa compared systems carry no "system": they are memwrap's.
"""

from __future__ import annotations

import json
import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any

from bench.qa.scoring import locomo_f1
from bench.qa.systems import SYSTEMS

OVERALL = "overall"
_CATEGORY_ORDER = ("multi-hop", "temporal", "open-domain", "single-hop")


def read_rows(out: Path) -> list[dict[str, Any]]:
    """The scored lines of a results file, one per (system, question): the first one written counts (two runs
    on the same file by mistake must not count an answer twice). A line cut by a crash is skipped: that answer
    is asked again."""
    if not out.exists():
        return []
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    for line in out.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(row, dict) and "id" in row:
            row.setdefault("system", "memwrap")
            rows.setdefault((row["system"], row["id"]), row)
    return list(rows.values())


def row_f1(row: dict[str, Any]) -> float:
    if "f1" in row:
        return float(row["f1"])
    category = row["category"] if row.get("dataset") == "locomo" else None
    return locomo_f1(row.get("answer", ""), row.get("gold", ""), category)


def _stats(group: list[dict[str, Any]]) -> dict[str, Any]:
    if not group:
        return {"questions": 0}
    llm_tokens = [
        r["answer_usage"]["prompt_tokens"]
        + r["answer_usage"]["completion_tokens"]
        + r["judge_usage"]["prompt_tokens"]
        + r["judge_usage"]["completion_tokens"]
        for r in group
    ]
    with_evidence = [r["evidence_found"] for r in group if r.get("evidence_found") is not None]
    return {
        "questions": len(group),
        "accuracy": round(sum(bool(r["correct"]) for r in group) / len(group), 4),
        "f1": round(statistics.mean(row_f1(r) for r in group), 4),
        "evidence_in_block": round(statistics.mean(with_evidence), 4) if with_evidence else None,
        "tokens_per_question": round(statistics.mean(llm_tokens), 1),
        "recall_tokens_per_question": round(statistics.mean(r["recall_tokens"] for r in group), 1),
        "seconds_per_question_median": round(statistics.median(r["seconds"] for r in group), 2),
        "seconds_per_question_mean": round(statistics.mean(r["seconds"] for r in group), 2),
    }


def _category_key(name: str) -> tuple[int, str]:
    if name == OVERALL:
        return (len(_CATEGORY_ORDER) + 1, name)
    return (_CATEGORY_ORDER.index(name), name) if name in _CATEGORY_ORDER else (len(_CATEGORY_ORDER), name)


def _system_key(name: str) -> tuple[int, str]:
    return (SYSTEMS.index(name), name) if name in SYSTEMS else (len(SYSTEMS), name)


def summarise(out: Path) -> dict[str, Any]:
    """{"systems": {system: {"categories": {category or "overall": figures}}}} over every line of `out`."""
    by_system: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in read_rows(out):
        by_system[row["system"]].append(row)
    systems: dict[str, Any] = {}
    for system in sorted(by_system, key=_system_key):
        rows = by_system[system]
        by_category: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for row in rows:
            by_category[row["category"]].append(row)
        by_category[OVERALL] = rows
        systems[system] = {
            "categories": {name: _stats(by_category[name]) for name in sorted(by_category, key=_category_key)}
        }
    return {"systems": systems}


def _categories(summary: dict[str, Any]) -> list[str]:
    names = {name for s in summary["systems"].values() for name in s["categories"]}
    return sorted(names, key=_category_key)


def _cell(summary: dict[str, Any], system: str, category: str) -> dict[str, Any]:
    return summary["systems"][system]["categories"].get(category, {"questions": 0})


def _evidence(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def render(summary: dict[str, Any]) -> str:
    """The terminal table: per category, each system's questions, judge accuracy, token F1, evidence in block."""
    systems = list(summary["systems"])
    if not systems:
        return "no scored questions yet"
    width = 24
    lines = [
        f"{'':<14}" + "".join(f"{s:>{width}}" for s in systems),
        f"{'category':<14}" + "".join(f"{'n':>4}{'acc':>7}{'F1':>6}{'evid':>7}" for _ in systems),
    ]
    for category in _categories(summary):
        cells = []
        for system in systems:
            c = _cell(summary, system, category)
            cells.append(
                f"{c['questions']:>4}{c['accuracy']:>7.1%}{c['f1']:>6.2f}{_evidence(c['evidence_in_block']):>7}"
                if c["questions"]
                else f"{0:>4}{'':>20}"
            )
        lines.append(f"{category:<14}" + "".join(cells))
    overall = [_cell(summary, s, OVERALL) for s in systems]
    lines.append(f"{'block tok/q':<14}" + "".join(f"{c['recall_tokens_per_question']:>{width}.0f}" for c in overall))
    lines.append(f"{'LLM tok/q':<14}" + "".join(f"{c['tokens_per_question']:>{width}.0f}" for c in overall))
    lines.append(f"{'s/q (median)':<14}" + "".join(f"{c['seconds_per_question_median']:>{width}.1f}" for c in overall))
    lines.append("acc: the judge's verdicts; F1: LoCoMo token F1; evid: share of the evidence turns in the block")
    if "run_seconds" in summary:
        lines.append(f"run: {summary['run_seconds']:.0f}s, {summary['scored_this_run']} answer(s) scored this run")
    return "\n".join(lines)


def render_markdown(summary: dict[str, Any]) -> str:
    """The same figures as two Markdown tables (for bench/README.md)."""
    systems = list(summary["systems"])
    if not systems:
        return "no scored questions yet"
    out = [
        "| category | n | " + " | ".join(f"{s}: accuracy / F1" for s in systems) + " |",
        "|---|---|" + "---|" * len(systems),
    ]
    for category in _categories(summary):
        cells = [_cell(summary, s, category) for s in systems]
        counts = sorted({c["questions"] for c in cells})
        n = str(counts[0]) if len(counts) == 1 else "/".join(str(c["questions"]) for c in cells)
        values = [f"{c['accuracy']:.1%} / {c['f1']:.3f}" if c["questions"] else "-" for c in cells]
        label = f"**{category}**" if category == OVERALL else category
        out.append(f"| {label} | {n} | " + " | ".join(values) + " |")
    out += [
        "",
        "| system | questions | accuracy | token F1 | evidence in block | block tokens/q | LLM tokens/q "
        "| s/q (median / mean) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for system in systems:
        c = _cell(summary, system, OVERALL)
        out.append(
            f"| {system} | {c['questions']} | {c['accuracy']:.1%} | {c['f1']:.3f} | "
            f"{_evidence(c['evidence_in_block'])} | {c['recall_tokens_per_question']:.0f} | "
            f"{c['tokens_per_question']:.0f} | {c['seconds_per_question_median']:.1f} / "
            f"{c['seconds_per_question_mean']:.1f} |"
        )
    return "\n".join(out)


__all__ = ["OVERALL", "read_rows", "render", "render_markdown", "row_f1", "summarise"]
