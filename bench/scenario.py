"""A real model on a small life story: is anything lost, are speakers and dates right, does reflect look things up?

Eight exchanges about one user, said on Tuesday 2026-12-01 (a job change with a relative date, a team lead
named two ways in two languages, a preference that changes, a secret, a Chinese sentence, an allergy, a trip
"next Tuesday"), retained one exchange at a time as the wrappers do, then checked:

* items lost: an item counts as kept when a recall about its content returns a memory holding its key words;
* speakers: a memory of what the assistant said is typed `experience` or says "assistant"; one of what the user
  said is not typed `experience`; raw memories keep their "user:"/"assistant:" labels;
* dates: every memory of the exchange that holds the item's key words and was said by the item's speaker is
  dated exactly as memwrap's calendar resolves the item's time phrase; the undated allergy stays undated. (The
  memories of an exchange are told by the `exchange` number retain gets in its metadata: "Since last week I
  prefer Vue over React" holds "react" but is not the undated React item; the assistant's Museum Island tip holds
  "berlin" but not the user's "next Tuesday".)
* reflect: each question cites at least one existing memory id, or ends forced=True with a reason.

    MEMWRAP_LLM_PROVIDER=openai MEMWRAP_LLM_BASE_URL=http://127.0.0.1:8089/v1 MEMWRAP_LLM_MODEL=qwen2.5-coder-1.5b \
        .venv/bin/python -m bench.scenario [--home DIR] [--out report.json]

tests/test_real_llm.py runs the same checks when MEMWRAP_TEST_LLM_BASE_URL is set.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

SAID = datetime(2026, 12, 1, 9, 30, tzinfo=UTC)  # a Tuesday


@dataclass(frozen=True)
class Exchange:
    user: str
    assistant: str
    # (recall query, words one recalled memory must hold); "上海|shanghai": either spelling holds the word
    probes: tuple[tuple[str, tuple[str, ...]], ...]
    phrase: str | None = None  # the time phrase whose span dated memories must have (None: undated)
    speaker: str = "user"  # who said what the probes look for


EXCHANGES: tuple[Exchange, ...] = (
    Exchange(
        "I started a new job at Lumen Labs last month, after five years at Contoso.",
        "Congratulations on the new role at Lumen Labs!",
        (("Where does the user work now?", ("lumen",)),),
        "last month",
    ),
    Exchange(
        "My team lead there is Zhang Wei; everyone calls him 老张.",
        "Noted: Zhang Wei, also called 老张, is your team lead.",
        (("Who is the user's team lead?", ("zhang wei",)), ("Who is 老张?", ("zhang wei",))),
    ),
    Exchange(
        "For front-end work I prefer React.",
        "Good to know, React for front-end work.",
        (("Which front-end framework did the user prefer before?", ("react",)),),
    ),
    Exchange(
        "Since last week I prefer Vue over React.",
        "Got it: Vue is your choice now.",
        (("Which front-end framework does the user prefer now?", ("vue",)),),
        "since last week",
    ),
    Exchange(
        "Keep this secret: the surprise party for my sister Mei is on 12 December.",
        "Your secret is safe with me.",
        (("When is the surprise party for Mei?", ("party",)),),
        "12 December",
    ),
    Exchange("我下周三要去上海出差。", "祝你出差顺利！", (("上海出差", ("上海|shanghai",)),), "下周三"),
    Exchange(
        "I'm allergic to peanuts.",
        "Thanks, I will never suggest food with peanuts.",
        (("What is the user allergic to?", ("peanut",)),),
    ),
    Exchange(
        "I'm flying to Berlin next Tuesday for a conference.",
        "I recommend the Museum Island in Berlin if you have a free evening.",
        (
            ("When is the user's trip to Berlin?", ("berlin",)),
            ("What did the assistant recommend in Berlin?", ("museum",)),
        ),
        "next Tuesday",
    ),
)

QUESTIONS = (
    "Where does the user work, and who leads their team?",
    "Which front-end framework does the user prefer now?",
    "What food should be avoided when suggesting a restaurant to the user?",
)


@dataclass
class Report:
    model: str
    steps: dict[str, float] = field(default_factory=dict)  # step → seconds
    retain_seconds: list[float] = field(default_factory=list)
    items: list[dict[str, Any]] = field(default_factory=list)
    reflect: list[dict[str, Any]] = field(default_factory=list)
    memories: list[dict[str, Any]] = field(default_factory=list)

    @property
    def lost(self) -> int:
        return sum(1 for item in self.items if not item["kept"])

    @property
    def wrong_speakers(self) -> int:
        return sum(1 for item in self.items if not item["speaker_ok"])

    @property
    def wrong_dates(self) -> int:
        return sum(1 for item in self.items if not item["dates_ok"])

    @property
    def reflect_ok(self) -> int:
        return sum(1 for r in self.reflect if r["cited_existing"] or (r["forced"] and r["forced_reason"]))

    def to_json(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "items_lost": self.lost,
            "wrong_speakers": self.wrong_speakers,
            "wrong_dates": self.wrong_dates,
            "reflect_ok": f"{self.reflect_ok}/{len(self.reflect)}",
            "steps_seconds": {k: round(v, 1) for k, v in self.steps.items()},
            "retain_seconds": [round(s, 2) for s in self.retain_seconds],
            "items": self.items,
            "reflect": self.reflect,
            "memories": self.memories,
        }


def _expected_span(phrase: str) -> tuple[datetime, datetime] | None:
    from memwrap.engine.language.timeparse import extract_occurred

    return extract_occurred(phrase, SAID)


async def run_scenario(memory: Any, bank: str, *, model: str = "", extraction_wait: float = 3600.0) -> Report:
    """Retain the exchanges one by one, wait for their facts, then probe recall and reflect."""
    report = Report(model=model)
    started = time.perf_counter()
    for index, exchange in enumerate(EXCHANGES):
        t0 = time.perf_counter()
        await memory.retain(
            bank,
            f"user: {exchange.user}\nassistant: {exchange.assistant}",
            timestamp=SAID,
            metadata={"exchange": index},
        )
        report.retain_seconds.append(time.perf_counter() - t0)
    report.steps["retain (8 calls)"] = time.perf_counter() - started
    t0 = time.perf_counter()
    engine = await memory._get_engine()  # the facts land in the background: wait for them before probing
    if engine.reextractor is not None:
        await engine.reextractor.wait_inline(extraction_wait)
    report.steps["extraction after the last retain returned"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    records = await memory.list(bank, limit=200, types=["raw", "world", "experience"])
    report.memories = [
        {
            "id": str(m.id),
            "exchange": m.metadata.get("exchange"),
            "type": m.type,
            "text": m.text,
            "occurred": [
                m.occurred_start.date().isoformat() if m.occurred_start else None,
                m.occurred_end.date().isoformat() if m.occurred_end else None,
            ],
        }
        for m in records
    ]
    for index, exchange in enumerate(EXCHANGES):
        mine = [m for m in records if m.metadata.get("exchange") == index]
        report.items.append(await _check_item(memory, bank, exchange, mine))
    report.steps["recall checks"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    for question in QUESTIONS:
        q0 = time.perf_counter()
        result = await memory.reflect(bank, question, now=SAID)
        existing = {str(m.id) for m in await memory.list(bank, limit=500)}
        report.reflect.append(
            {
                "question": question,
                "answer": result.answer,
                "memory_ids": [str(i) for i in result.memory_ids],
                "cited_existing": any(str(i) in existing for i in result.memory_ids),
                "forced": result.forced,
                "forced_reason": result.forced_reason,
                "iterations": result.iterations,
                "tool_calls": [e.name for e in result.trace if e.kind == "tool"],
                "seconds": round(time.perf_counter() - q0, 1),
            }
        )
    report.steps["reflect (3 questions)"] = time.perf_counter() - t0
    report.steps["total"] = time.perf_counter() - started
    return report


async def _check_item(memory: Any, bank: str, exchange: Exchange, records: list[Any]) -> dict[str, Any]:
    kept = True
    found: list[Any] = []
    for query, words in exchange.probes:
        recall = await memory.recall(bank, query, token_budget=400, now=SAID, types=["raw", "world", "experience"])
        hits = [m for m in recall.memories[:5] if _holds(m.text, words)]
        kept = kept and bool(hits)
        found += hits
    # Speakers and dates are checked on every stored memory of the exchange holding the item's key words, not only
    # the hits; dates on those said by the item's speaker (the other side's reply has no time phrase of its own).
    words = exchange.probes[0][1]
    holding = [m for m in records if _holds(m.text, words)]
    speaker_ok = all(_speaker_ok(m, exchange) for m in holding)
    expected = _expected_span(exchange.phrase) if exchange.phrase else None
    stated = [m for m in holding if _said_by(m) == exchange.speaker]
    dates_ok = all(_dated_as(m, expected) for m in stated if m.type != "raw" or expected is not None)
    return {
        "user": exchange.user,
        "kept": kept,
        "speaker_ok": speaker_ok,
        "dates_ok": dates_ok,
        "expected_dates": [expected[0].date().isoformat(), expected[1].date().isoformat()] if expected else None,
        "memories": [
            {
                "type": m.type,
                "text": m.text,
                "occurred": [
                    m.occurred_start.date().isoformat() if m.occurred_start else None,
                    m.occurred_end.date().isoformat() if m.occurred_end else None,
                ],
            }
            for m in holding
        ],
        "found_by_recall": [m.text for m in found],
    }


def _holds(text: str, words: tuple[str, ...]) -> bool:
    """Every word in the text, a word being any of its "|"-separated spellings (a fact may translate 上海)."""
    folded = text.casefold()
    return all(any(spelling in folded for spelling in word.split("|")) for word in words)


def _said_by(memory: Any) -> str:
    text = memory.text.casefold()
    if memory.type == "raw":
        return "assistant" if text.startswith("assistant:") else "user"
    return "assistant" if memory.type == "experience" or text.startswith("the assistant") else "user"


def _speaker_ok(memory: Any, exchange: Exchange) -> bool:
    text = memory.text.casefold()
    if memory.type == "raw":
        return text.startswith(("user:", "assistant:"))
    if memory.type == "experience":
        return "assistant" in text or exchange.speaker == "assistant" or "museum" in text
    return not text.startswith("the assistant")


def _dated_as(memory: Any, expected: tuple[datetime, datetime] | None) -> bool:
    if expected is None:
        return memory.occurred_start is None
    return memory.occurred_start == expected[0] and memory.occurred_end == expected[1]


async def _main(args: argparse.Namespace) -> int:
    from memwrap import AsyncMemory
    from memwrap.config import load_settings

    home = Path(args.home) if args.home else Path(tempfile.mkdtemp(prefix="memwrap-scenario-"))
    settings = load_settings(home=home, worker="off")
    if settings.llm_provider == "none":
        print("Set MEMWRAP_LLM_PROVIDER/_BASE_URL/_MODEL (see ../shared/tools/local-llm serve).", file=sys.stderr)
        return 2
    async with AsyncMemory(settings=settings) as memory:
        bank = f"scenario-{uuid.uuid4().hex[:8]}"
        report = await run_scenario(memory, bank, model=settings.llm_model or "")
    data = report.to_json()
    text = json.dumps(data, indent=2, ensure_ascii=False)
    if args.out:
        Path(args.out).write_text(text + "\n", encoding="utf-8")
    print(text)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.scenario", description=__doc__.splitlines()[0])
    parser.add_argument("--home", help="memwrap home (default: a new temporary one)")
    parser.add_argument("--out", help="write the report (JSON) here too")
    return asyncio.run(_main(parser.parse_args(argv)))


if __name__ == "__main__":
    sys.exit(main())
