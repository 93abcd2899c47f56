"""`python -m bench.qa`: retain each conversation, then per question recall → answer → judge, one JSON line each.

Resumable: questions already in --out are skipped, and retaining a conversation again is free (retain knows
its items). --limit takes the first N questions (after --categories), so a second run with a higher limit goes
on where the first stopped; --per-category N takes the first N of each category instead (file order kept), so a
small run covers every category. The summary (accuracy per category, tokens and seconds per question) is printed
and written next to --out as `<out>.summary.json`; it covers every question in --out.

Retain runs without an LLM by default (--ingest raw: the turns are stored as they are); --ingest extract uses
the MEMWRAP_LLM_* settings of the environment for extraction, as an application would.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.qa.data import QAItem, locomo_items, longmemeval_items
from bench.qa.prompts import ANSWER_SYSTEM, JUDGE_SYSTEM, Verdict, answer_prompt, judge_prompt

RETAIN_BATCH = 256


@dataclass
class QAConfig:
    dataset: str
    out: Path
    data: Path | None
    limit: int | None
    per_category: int | None
    categories: list[str] | None
    budget: int
    answer_base_url: str | None
    answer_model: str | None
    answer_api_key: str | None
    judge_base_url: str | None
    judge_model: str | None
    judge_api_key: str | None
    answer_tokens: int
    timeout: float
    home: Path | None
    database_url: str | None
    ingest: str
    max_sessions: int | None


def parse_args(argv: Sequence[str] | None = None) -> QAConfig:
    p = argparse.ArgumentParser(prog="python -m bench.qa", description=__doc__.splitlines()[0])
    p.add_argument("--dataset", choices=["locomo", "longmemeval"], default="locomo")
    p.add_argument("--data", type=Path, help="the data file (default: ../shared/data/...)")
    p.add_argument("--out", type=Path, default=Path("qa-results.jsonl"), help="results, one JSON line per question")
    p.add_argument("--limit", type=int, help="the first N questions (after --categories)")
    p.add_argument("--per-category", type=int, help="the first N questions of each category (after --categories)")
    p.add_argument("--categories", help="comma-separated categories (LoCoMo: multi-hop,temporal,open-domain,single-hop)")
    p.add_argument("--budget", type=int, default=1024, help="recall's token_budget (the memories the answerer reads)")
    p.add_argument("--answer-base-url", help="OpenAI-compatible endpoint of the answerer (default: OpenAI)")
    p.add_argument("--answer-model", help="default: MEMWRAP_LLM_MODEL or gpt-4o-mini")
    p.add_argument("--answer-api-key")
    p.add_argument("--judge-base-url", help="default: the answerer's")
    p.add_argument("--judge-model", help="default: the answerer's")
    p.add_argument("--judge-api-key", help="default: the answerer's")
    p.add_argument("--answer-tokens", type=int, default=96, help="max_tokens of an answer")
    p.add_argument("--timeout", type=float, default=300.0, help="seconds per LLM request")
    p.add_argument("--home", type=Path, help="memwrap home (default: <out>.home, kept for resuming)")
    p.add_argument("--database-url", help="an external PostgreSQL instead of the embedded one")
    p.add_argument("--ingest", choices=["raw", "extract"], default="raw")
    p.add_argument("--max-sessions", type=int, help="LoCoMo: retain only the first N sessions (and their questions)")
    a = p.parse_args(argv)
    return QAConfig(
        dataset=a.dataset, out=a.out, data=a.data, limit=a.limit, per_category=a.per_category,
        categories=[c.strip() for c in a.categories.split(",")] if a.categories else None, budget=a.budget,
        answer_base_url=a.answer_base_url, answer_model=a.answer_model, answer_api_key=a.answer_api_key,
        judge_base_url=a.judge_base_url or a.answer_base_url, judge_model=a.judge_model or a.answer_model,
        judge_api_key=a.judge_api_key or a.answer_api_key, answer_tokens=a.answer_tokens, timeout=a.timeout,
        home=a.home, database_url=a.database_url, ingest=a.ingest, max_sessions=a.max_sessions,
    )


def select(config: QAConfig) -> list[QAItem]:
    if config.dataset == "locomo":
        items = list(locomo_items(config.data, max_sessions=config.max_sessions))
    else:
        items = list(longmemeval_items(config.data))
    if config.categories:
        items = [i for i in items if i.category in config.categories]
    if config.per_category is not None:
        taken: dict[str, int] = defaultdict(int)
        kept = []
        for item in items:
            if taken[item.category] < config.per_category:
                taken[item.category] += 1
                kept.append(item)
        items = kept
    return items[: config.limit] if config.limit is not None else items


def done_ids(out: Path) -> set[str]:
    if not out.exists():
        return set()
    ids = set()
    for line in out.read_text(encoding="utf-8").splitlines():
        if line.strip():
            try:
                ids.add(json.loads(line)["id"])
            except (json.JSONDecodeError, KeyError):
                continue  # a line cut by a crash: that question is asked again
    return ids


def _llm(base_url: str | None, model: str | None, api_key: str | None, timeout: float) -> Any:
    from memwrap.config import Settings
    from memwrap.engine.llm import LLM

    settings = Settings(
        llm_provider="openai", llm_base_url=base_url, llm_model=model, llm_api_key=api_key, llm_timeout=timeout,
        llm_max_retries=2, llm_tool_protocol="native",
    )
    return LLM.from_settings(settings)


async def run(config: QAConfig, *, log: Any = print) -> dict[str, Any]:
    from memwrap import AsyncMemory
    from memwrap.config import Settings

    started = time.perf_counter()
    questions = select(config)
    finished = done_ids(config.out)
    todo = [q for q in questions if q.id not in finished]
    log(f"{len(questions)} question(s) selected, {len(questions) - len(todo)} already scored, {len(todo)} to go")
    home = config.home or config.out.with_suffix(".home")
    overrides: dict[str, Any] = {"home": home, "database_url": config.database_url, "worker": "off"}
    if config.ingest == "raw":
        overrides["llm_provider"] = "none"
    settings = Settings(**{k: v for k, v in overrides.items() if v is not None})
    answerer = _llm(config.answer_base_url, config.answer_model, config.answer_api_key, config.timeout)
    judge = _llm(config.judge_base_url, config.judge_model, config.judge_api_key, config.timeout)
    config.out.parent.mkdir(parents=True, exist_ok=True)
    try:
        async with AsyncMemory(settings=settings) as memory:
            retained: set[str] = set()
            for item in todo:
                if item.bank not in retained:
                    seconds = await _retain(memory, item)
                    retained.add(item.bank)
                    log(f"retained {len(item.items)} turns in {item.bank} in {seconds:.1f}s")
                row = await _score(memory, answerer, judge, item, config)
                with config.out.open("a", encoding="utf-8") as fh:
                    fh.write(json.dumps(row, ensure_ascii=False) + "\n")
                log(f"{item.id} [{item.category}] {'correct' if row['correct'] else 'wrong'} in {row['seconds']:.1f}s")
    finally:
        await answerer.aclose()
        await judge.aclose()
    summary = summarise(config.out)
    summary["run_seconds"] = round(time.perf_counter() - started, 1)
    summary["scored_this_run"] = len(todo)
    config.out.with_suffix(".summary.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    return summary


async def _retain(memory: Any, item: QAItem) -> float:
    started = time.perf_counter()
    for start in range(0, len(item.items), RETAIN_BATCH):
        await memory.retain_many(item.bank, item.items[start : start + RETAIN_BATCH])
    return time.perf_counter() - started


async def _score(memory: Any, answerer: Any, judge: Any, item: QAItem, config: QAConfig) -> dict[str, Any]:
    t0 = time.perf_counter()
    recall = await memory.recall(item.bank, item.question, token_budget=config.budget, now=item.asked_at)
    t1 = time.perf_counter()
    answer, answer_usage = await answerer.complete(
        ANSWER_SYSTEM, answer_prompt(item.question, recall.context, item.asked_at), role="reflect",
        max_tokens=config.answer_tokens, continuations=1,
    )
    t2 = time.perf_counter()
    verdict, judge_usage = await judge.structured(
        JUDGE_SYSTEM, judge_prompt(item.question, item.gold, answer.strip()), Verdict, role="reflect", max_tokens=16,
    )
    t3 = time.perf_counter()
    return {
        "id": item.id, "dataset": item.dataset, "category": item.category, "question": item.question,
        "gold": item.gold, "answer": answer.strip(), "correct": verdict.correct,
        "recall_tokens": recall.tokens, "answer_usage": answer_usage.model_dump(), "judge_usage": judge_usage.model_dump(),
        "seconds": round(t3 - t0, 3), "recall_seconds": round(t1 - t0, 3), "answer_seconds": round(t2 - t1, 3),
        "judge_seconds": round(t3 - t2, 3),
    }


def summarise(out: Path) -> dict[str, Any]:
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines() if line.strip()] if out.exists() else []
    by_category: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        by_category[row["category"]].append(row)
    by_category["overall"] = rows

    def stats(group: list[dict[str, Any]]) -> dict[str, Any]:
        if not group:
            return {"questions": 0}
        tokens = [
            r["answer_usage"]["prompt_tokens"] + r["answer_usage"]["completion_tokens"]
            + r["judge_usage"]["prompt_tokens"] + r["judge_usage"]["completion_tokens"] for r in group
        ]
        return {
            "questions": len(group), "accuracy": round(sum(r["correct"] for r in group) / len(group), 4),
            "tokens_per_question": round(statistics.mean(tokens), 1),
            "recall_tokens_per_question": round(statistics.mean(r["recall_tokens"] for r in group), 1),
            "seconds_per_question_median": round(statistics.median(r["seconds"] for r in group), 2),
            "seconds_per_question_mean": round(statistics.mean(r["seconds"] for r in group), 2),
        }

    return {"categories": {name: stats(group) for name, group in sorted(by_category.items())}}


def render(summary: dict[str, Any]) -> str:
    lines = [f"{'category':<28}{'n':>5}{'accuracy':>10}{'tokens/q':>10}{'s/q (median)':>14}"]
    for name, s in summary["categories"].items():
        if s["questions"]:
            lines.append(f"{name:<28}{s['questions']:>5}{s['accuracy']:>10.1%}{s['tokens_per_question']:>10.0f}"
                         f"{s['seconds_per_question_median']:>14.1f}")
    if "run_seconds" in summary:
        lines.append(f"run: {summary['run_seconds']:.0f}s, {summary['scored_this_run']} question(s) scored this run")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    config = parse_args(argv)
    summary = asyncio.run(run(config, log=lambda message: print(message, file=sys.stderr, flush=True)))
    print(render(summary))
    return 0


__all__ = ["QAConfig", "main", "parse_args", "run", "select", "summarise"]
