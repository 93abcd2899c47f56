"""`python -m bench.qa`: retain each conversation, then per question and system: block → answer → judge, one
JSON line each.

Systems (--systems, default all four; bench/qa/systems.py): `none` (no memory), `recent` (the conversation's last
turns within the budget), `rrf` (the bench's dense+BM25 baseline packed into the budget), `memwrap`. Every system
answers the same questions with the same answerer, the same prompts, the same judge and the same budget. Each
answer gets the judge's verdict and LoCoMo's token F1 (bench/qa/scoring.py).

Resumable: (system, question) pairs already in --out are skipped, and retaining a conversation again is free
(retain knows its items). --limit takes the first N questions (after --categories), so a second run with a higher
limit goes on where the first stopped; --per-category N takes N of each category spread over the conversations
(seeded, the same every time; a larger N keeps the questions of a smaller one). The summary (per system and
category: accuracy, token F1, evidence in the block, tokens and seconds per question) is printed and written next
to --out as `<out>.summary.json`; it covers every line in --out. --summarise prints it without asking anything.

Retain runs without an LLM by default (--ingest raw: the turns are stored as they are); --ingest extract uses
the MEMWRAP_LLM_* settings of the environment for extraction, as an application would.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.qa.data import QAItem, locomo_items, longmemeval_items, per_category_sample
from bench.qa.prompts import ANSWER_SYSTEM, JUDGE_SYSTEM, Verdict, answer_prompt, judge_prompt
from bench.qa.scoring import locomo_f1
from bench.qa.summary import read_rows, render, render_markdown, summarise
from bench.qa.systems import SYSTEMS, Systems
from memwrap.engine.llm.client import OutputTruncatedError

RETAIN_BATCH = 256


@dataclass
class QAConfig:
    dataset: str
    out: Path
    data: Path | None
    limit: int | None
    per_category: int | None
    seed: int
    categories: list[str] | None
    systems: list[str]
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
    concurrency: int = 1
    summarise_only: bool = False
    markdown: bool = False


def _systems(text: str) -> list[str]:
    names = [name.strip() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in SYSTEMS]
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"unknown system(s) {', '.join(unknown) or '(none given)'}; choose from {','.join(SYSTEMS)}"
        )
    return list(dict.fromkeys(names))


def parse_args(argv: Sequence[str] | None = None) -> QAConfig:
    p = argparse.ArgumentParser(prog="python -m bench.qa", description=__doc__.splitlines()[0])
    p.add_argument("--dataset", choices=["locomo", "longmemeval"], default="locomo")
    p.add_argument("--data", type=Path, help="the data file (default: ../shared/data/...)")
    p.add_argument("--out", type=Path, default=Path("qa-results.jsonl"), help="results, one JSON line per answer")
    p.add_argument(
        "--systems",
        type=_systems,
        default=list(SYSTEMS),
        help=f"comma-separated, from {','.join(SYSTEMS)} (default: all)",
    )
    p.add_argument("--limit", type=int, help="the first N questions (after --categories)")
    p.add_argument(
        "--per-category",
        type=int,
        help="N questions of each category, spread over the conversations (after --categories)",
    )
    p.add_argument("--seed", type=int, default=0, help="the --per-category sample's seed")
    p.add_argument(
        "--categories", help="comma-separated categories (LoCoMo: multi-hop,temporal,open-domain,single-hop)"
    )
    p.add_argument(
        "--budget", type=int, default=1024, help="the memory block's tokens, for every system (memwrap's token_budget)"
    )
    p.add_argument("--answer-base-url", help="OpenAI-compatible endpoint of the answerer (default: OpenAI)")
    p.add_argument("--answer-model", help="default: MEMWRAP_LLM_MODEL or gpt-4o-mini")
    p.add_argument("--answer-api-key")
    p.add_argument("--judge-base-url", help="default: the answerer's")
    p.add_argument("--judge-model", help="default: the answerer's")
    p.add_argument("--judge-api-key", help="default: the answerer's")
    p.add_argument("--answer-tokens", type=int, default=96, help="max_tokens of an answer")
    p.add_argument(
        "--timeout",
        type=float,
        default=900.0,
        help="seconds per LLM request (a 1,300-token prompt on a busy 2-core machine can take minutes)",
    )
    p.add_argument("--home", type=Path, help="memwrap home (default: <out>.home, kept for resuming)")
    p.add_argument("--database-url", help="an external PostgreSQL instead of the embedded one")
    p.add_argument("--ingest", choices=["raw", "extract"], default="raw")
    p.add_argument("--max-sessions", type=int, help="LoCoMo: retain only the first N sessions (and their questions)")
    p.add_argument(
        "--concurrency",
        type=int,
        default=1,
        help="answers in flight at once (a llama.cpp server with 2 slots decodes 2 at once)",
    )
    p.add_argument("--summarise", action="store_true", help="only print the summary of --out (no model needed)")
    p.add_argument("--markdown", action="store_true", help="print the summary as Markdown tables")
    a = p.parse_args(argv)
    if a.budget < 1:
        p.error("--budget must be at least 1")
    if a.concurrency < 1:
        p.error("--concurrency must be at least 1")
    return QAConfig(
        dataset=a.dataset,
        out=a.out,
        data=a.data,
        limit=a.limit,
        per_category=a.per_category,
        seed=a.seed,
        categories=[c.strip() for c in a.categories.split(",")] if a.categories else None,
        systems=a.systems,
        budget=a.budget,
        answer_base_url=a.answer_base_url,
        answer_model=a.answer_model,
        answer_api_key=a.answer_api_key,
        judge_base_url=a.judge_base_url or a.answer_base_url,
        judge_model=a.judge_model or a.answer_model,
        judge_api_key=a.judge_api_key or a.answer_api_key,
        answer_tokens=a.answer_tokens,
        timeout=a.timeout,
        home=a.home,
        database_url=a.database_url,
        ingest=a.ingest,
        max_sessions=a.max_sessions,
        concurrency=a.concurrency,
        summarise_only=a.summarise,
        markdown=a.markdown,
    )


def select(config: QAConfig) -> list[QAItem]:
    if config.dataset == "locomo":
        items = list(locomo_items(config.data, max_sessions=config.max_sessions))
    else:
        items = list(longmemeval_items(config.data))
    if config.categories:
        items = [i for i in items if i.category in config.categories]
    if config.per_category is not None:
        items = per_category_sample(items, config.per_category, seed=config.seed)
    return items[: config.limit] if config.limit is not None else items


def done_pairs(out: Path) -> set[tuple[str, str]]:
    """(system, question id) of every answer already scored in `out`."""
    return {(row["system"], row["id"]) for row in read_rows(out)}


def _llm(base_url: str | None, model: str | None, api_key: str | None, timeout: float) -> Any:
    from memwrap.config import Settings
    from memwrap.engine.llm.client import LLM

    settings = Settings(
        llm_provider="openai",
        llm_base_url=base_url,
        llm_model=model,
        llm_api_key=api_key,
        llm_timeout=timeout,
        llm_max_retries=2,
        llm_tool_protocol="native",
    )
    return LLM.from_settings(settings)


async def run(config: QAConfig, *, log: Any = print) -> dict[str, Any]:
    from memwrap import AsyncMemory
    from memwrap.config import Settings

    started = time.perf_counter()
    questions = select(config)
    finished = done_pairs(config.out)
    todo = [(q, s) for q in questions for s in config.systems if (s, q.id) not in finished]
    total = len(questions) * len(config.systems)
    log(
        f"{len(questions)} question(s) x {len(config.systems)} system(s) ({','.join(config.systems)}): "
        f"{total - len(todo)} answer(s) already scored, {len(todo)} to go"
    )
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
            systems = Systems(memory, budget=config.budget)
            retained: set[str] = set()
            retaining: dict[str, asyncio.Lock] = defaultdict(asyncio.Lock)
            slots = asyncio.Semaphore(config.concurrency)

            async def answer(item: QAItem, system: str) -> None:
                async with slots:
                    async with retaining[item.bank]:
                        if item.bank not in retained:
                            seconds = await _retain(memory, item)
                            retained.add(item.bank)
                            log(f"retained {len(item.items)} turns in {item.bank} in {seconds:.1f}s")
                    row = await _score(systems, answerer, judge, item, system, config)
                    with config.out.open("a", encoding="utf-8") as fh:
                        fh.write(json.dumps(row, ensure_ascii=False) + "\n")
                    log(
                        f"{item.id} [{item.category}] {system}: {'correct' if row['correct'] else 'wrong'}, "
                        f"F1 {row['f1']:.2f}, in {row['seconds']:.1f}s"
                    )

            async with asyncio.TaskGroup() as group:  # a failure cancels the rest; what was written stays
                for item, system in todo:
                    group.create_task(answer(item, system))
    finally:
        await answerer.aclose()
        await judge.aclose()
    summary = _summary(config)
    summary["run_seconds"] = round(time.perf_counter() - started, 1)
    summary["scored_this_run"] = len(todo)
    config.out.with_suffix(".summary.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    return summary


def _summary(config: QAConfig) -> dict[str, Any]:
    return {
        **summarise(config.out),
        "settings": {
            "dataset": config.dataset,
            "budget": config.budget,
            "per_category": config.per_category,
            "seed": config.seed,
            "limit": config.limit,
            "categories": config.categories,
            "ingest": config.ingest,
            "answer_model": config.answer_model,
            "judge_model": config.judge_model,
            "concurrency": config.concurrency,
        },
    }


async def _retain(memory: Any, item: QAItem) -> float:
    started = time.perf_counter()
    for start in range(0, len(item.items), RETAIN_BATCH):
        await memory.retain_many(item.bank, item.items[start : start + RETAIN_BATCH])
    return time.perf_counter() - started


async def _score(
    systems: Systems, answerer: Any, judge: Any, item: QAItem, system: str, config: QAConfig
) -> dict[str, Any]:
    t0 = time.perf_counter()
    order = [turn["document_id"] for turn in item.items if turn.get("document_id")]
    block = await systems.block(system, item.bank, item.question, item.asked_at, order)
    t1 = time.perf_counter()
    answer, answer_usage = await answerer.complete(
        ANSWER_SYSTEM,
        answer_prompt(item.question, block.context, item.asked_at),
        role="reflect",
        max_tokens=config.answer_tokens,
        continuations=1,
    )
    answer = answer.strip()
    t2 = time.perf_counter()
    verdict, judge_usage = await _verdict(judge, item, answer)
    t3 = time.perf_counter()
    in_block = set(block.documents)
    return {
        "system": system,
        "id": item.id,
        "dataset": item.dataset,
        "category": item.category,
        "question": item.question,
        "gold": item.gold,
        "answer": answer,
        "correct": verdict.correct,
        "f1": round(locomo_f1(answer, item.gold, item.category if item.dataset == "locomo" else None), 4),
        "recall_tokens": block.tokens,
        "documents": block.documents,
        "evidence": list(item.evidence),
        "evidence_found": (
            round(sum(e in in_block for e in item.evidence) / len(item.evidence), 4) if item.evidence else None
        ),
        "answer_usage": answer_usage.model_dump(),
        "judge_usage": judge_usage.model_dump(),
        "seconds": round(t3 - t0, 3),
        "recall_seconds": round(t1 - t0, 3),
        "answer_seconds": round(t2 - t1, 3),
        "judge_seconds": round(t3 - t2, 3),
    }


async def _verdict(judge: Any, item: QAItem, answer: str) -> tuple[Verdict, Any]:
    """The judge's verdict. A small local judge sometimes pads its JSON with whitespace past a tight limit (a
    llama.cpp grammar allows it): asked again with more room, as a careful reader would re-read."""
    for max_tokens in (16, 64, 256):
        try:
            return await judge.structured(
                JUDGE_SYSTEM,
                judge_prompt(item.question, item.gold, answer),
                Verdict,
                role="reflect",
                max_tokens=max_tokens,
            )
        except OutputTruncatedError:
            if max_tokens == 256:
                raise
    raise AssertionError("unreachable")


def main(argv: Sequence[str] | None = None) -> int:
    config = parse_args(argv)
    if config.summarise_only:
        if not config.out.exists():
            print(f"no results at {config.out}", file=sys.stderr)
            return 1
        summary = _summary(config)
    else:
        summary = asyncio.run(run(config, log=lambda message: print(message, file=sys.stderr, flush=True)))
    print(render_markdown(summary) if config.markdown else render(summary))
    return 0


__all__ = ["QAConfig", "done_pairs", "main", "parse_args", "run", "select", "summarise"]
