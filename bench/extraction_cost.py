"""Extraction cost: prompt and completion tokens per retained turn, on LoCoMo, against a token-counting fake LLM.

    .venv/bin/python -m bench.extraction_cost                 # all 5 dev conversations, < 1 min, no database
    .venv/bin/python -m bench.extraction_cost --json out.json --conversations 1

Every LoCoMo turn is retained as the benchmark retains it (content "Speaker: text", document_id = dia_id,
timestamp = its session's), goes through memwrap's own extraction code (memory defense, chunking at turn
boundaries, the prompt, the real OpenAI SDK) and reaches the fake server of the test suite, which counts what
it receives with tiktoken (the encoding of the configured model: o200k_base for gpt-4o-mini when it is cached,
else cl100k_base): system and user messages plus the JSON schema sent as response_format, plus OpenAI's
per-message framing (3 tokens a message, 3 to prime the reply). The fake answers with one fact per turn that
carries information (five words or more, not a greeting), restating the turn, so the completion figure is an
estimate of a real model's output; the prompt figure is exact for what memwrap sends.

Two ways of retaining are measured:
* batched: the benchmark's retain_many of whole sessions (extraction_turns_per_call turns per call);
* per exchange: what a wrapper sends after each chat call, two turns (one exchange) per call.

`measure(...)` returns the figures as a dict for bench/run.py; the target is <= 800 prompt tokens per turn.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
import threading
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.locomo import default_data_path, load_locomo

TARGET_PROMPT_TOKENS_PER_TURN = 800
MODEL = "gpt-4o-mini"

_TURN_LINE = re.compile(r"^\[(\d+)\] ([^:]+): (.*)$")
_GREETING = re.compile(r"^(hi|hey|hello|thanks|thank you|bye|good (morning|night)|see you)\b", re.IGNORECASE)


@dataclass
class CostFigure:
    mode: str
    turns: int
    calls: int
    prompt_tokens: int
    completion_tokens: int
    max_prompt_tokens_per_call: int
    fixed_prompt_tokens_per_call: int  # system prompt + schema + framing: the part provider prompt caching can serve
    encoding: str = ""

    @property
    def prompt_per_turn(self) -> float:
        return self.prompt_tokens / max(1, self.turns)

    @property
    def completion_per_turn(self) -> float:
        return self.completion_tokens / max(1, self.turns)

    def as_dict(self) -> dict[str, Any]:
        return {
            **asdict(self),
            "prompt_tokens_per_turn": round(self.prompt_per_turn, 1),
            "completion_tokens_per_turn": round(self.completion_per_turn, 1),
            "target_prompt_tokens_per_turn": TARGET_PROMPT_TOKENS_PER_TURN,
            "meets_target": self.prompt_per_turn <= TARGET_PROMPT_TOKENS_PER_TURN,
        }


class _Counter:
    """The fake LLM's brain: counts each request with tiktoken and answers with plausible facts."""

    def __init__(self, model: str) -> None:
        from memwrap.tokens import encoding_for_model

        self.encoding = encoding_for_model(model)
        self.lock = threading.Lock()
        self.calls = 0
        self.prompt = 0
        self.completion = 0
        self.max_prompt = 0

    def count(self, text: str) -> int:
        return len(self.encoding.encode(text, disallowed_special=()))

    def __call__(self, request: Any) -> Any:
        from fakes.llm_wire import Reply  # type: ignore[import-not-found]  # tests/ is on sys.path here

        body = request.body
        messages = body.get("messages", [])
        prompt = 3 + sum(3 + self.count(str(m.get("content") or "")) for m in messages)
        schema = body.get("response_format")
        if schema:
            prompt += self.count(json.dumps(schema, ensure_ascii=False))
        facts = []
        for line in str(messages[-1].get("content", "")).split("Turns:", 1)[-1].splitlines():
            match = _TURN_LINE.match(line)
            if match is None:
                continue
            number, speaker, text = int(match.group(1)), match.group(2), match.group(3)
            if len(text.split()) < 5 or _GREETING.match(text):
                continue
            facts.append(
                {
                    "text": f"{speaker} said: {text}",
                    "fact_type": "world",
                    "turns": [number],
                    "entities": [speaker],
                    "when": None,
                    "start": None,
                    "end": None,
                    "caused_by": [],
                }
            )
        content = json.dumps({"facts": facts, "entities": []}, ensure_ascii=False)
        with self.lock:
            self.calls += 1
            self.prompt += prompt
            self.completion += self.count(content)
            self.max_prompt = max(self.max_prompt, prompt)
        return Reply(text=content)


def _fake_server() -> Any:
    tests = Path(__file__).resolve().parent.parent / "tests"
    if str(tests) not in sys.path:
        sys.path.insert(0, str(tests))
    from fakes.llm_server import FakeLLMServer  # type: ignore[import-not-found]  # tests/ is on sys.path here

    return FakeLLMServer()


async def _run(
    mode: str, conversations: Sequence[Any], turns_per_call: int, tokens_per_call: int, base_url: str
) -> None:
    from memwrap.config import Settings
    from memwrap.engine.llm.client import LLM
    from memwrap.engine.retain.extract import extract_chunk, plan_chunks
    from memwrap.engine.retain.prepare import prepare_item
    from memwrap.models import RetainItem

    settings = Settings(
        llm_provider="none",
        extraction_provider="openai",
        extraction_model=MODEL,
        extraction_base_url=base_url,
        extraction_api_key="unused",
        llm_max_retries=0,
    )
    llm = LLM.from_settings(settings)
    now = datetime.now(UTC)
    chunks = []
    for conv in conversations:
        prepared = [
            prepare_item(
                RetainItem(
                    content=turn.content,
                    timestamp=turn.timestamp,
                    document_id=turn.dia_id,
                    metadata={"speaker": turn.speaker, "session": turn.session, "dia_id": turn.dia_id},
                ),
                now=now,
                defense_policy="redact",
            )
            for turn in conv.turns
        ]
        if mode == "batched":
            chunks += plan_chunks(prepared, now=now, max_turns=turns_per_call, max_tokens=tokens_per_call)
        else:  # one call per exchange; the previous exchange is the context, as it is for a live wrapper
            for start in range(0, len(prepared), 2):
                earlier = [p.source.content for p in prepared[max(0, start - 2) : start] if p.source]
                document_id: str = prepared[start].source.document_id  # type: ignore[union-attr]  # each item has one
                chunks += plan_chunks(
                    prepared[start : start + 2],
                    now=now,
                    max_turns=2,
                    max_tokens=tokens_per_call,
                    earlier={document_id.rsplit(":", 1)[0]: earlier},
                )
    semaphore = asyncio.Semaphore(8)

    async def one(chunk: Any) -> None:
        async with semaphore:
            await extract_chunk(llm, chunk)

    await asyncio.gather(*(one(c) for c in chunks))
    await llm.aclose()


def measure(
    data: str | Path | None = None,
    *,
    conversations: int | None = None,
    turns_per_call: int | None = None,
    tokens_per_call: int | None = None,
    modes: Sequence[str] = ("batched", "per_exchange"),
) -> list[dict[str, Any]]:
    """Run the extraction over LoCoMo against the counting fake; one figure per mode."""
    from memwrap.config import Settings
    from memwrap.engine.llm.types import strict_schema
    from memwrap.engine.retain.extract import SYSTEM_PROMPT, Extraction

    defaults = Settings()
    turns_per_call = turns_per_call or defaults.extraction_turns_per_call
    tokens_per_call = tokens_per_call or defaults.extraction_tokens_per_call
    convs = load_locomo(data or default_data_path(), conversations=conversations)
    turns = sum(len(c.turns) for c in convs)
    figures = []
    for mode in modes:
        counter = _Counter(MODEL)
        server = _fake_server()
        server.responder = counter
        with server:
            asyncio.run(_run(mode, convs, turns_per_call, tokens_per_call, server.openai_base_url))
        schema = {
            "type": "json_schema",
            "json_schema": {"name": "extraction", "schema": strict_schema(Extraction), "strict": True},
        }
        fixed = 3 + 3 + counter.count(SYSTEM_PROMPT) + counter.count(json.dumps(schema)) + 3
        figures.append(
            CostFigure(
                mode,
                turns,
                counter.calls,
                counter.prompt,
                counter.completion,
                counter.max_prompt,
                fixed,
                counter.encoding.name,
            ).as_dict()
        )
    return figures


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.extraction_cost", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--data", default=None, help="LoCoMo file (default: <repo>/../shared/data/locomo/locomo_dev5.json)"
    )
    parser.add_argument("--conversations", type=int, default=None, help="first N conversations (default: all)")
    parser.add_argument("--turns-per-call", type=int, default=None)
    parser.add_argument("--tokens-per-call", type=int, default=None)
    parser.add_argument("--json", default=None, help="also write the figures to this file")
    args = parser.parse_args(argv)
    figures = measure(
        args.data,
        conversations=args.conversations,
        turns_per_call=args.turns_per_call,
        tokens_per_call=args.tokens_per_call,
    )
    print(
        f"{'mode':<14}{'turns':>7}{'calls':>7}{'prompt/turn':>13}{'completion/turn':>17}"
        f"{'max prompt/call':>17}{'fixed/call':>12}"
    )
    for f in figures:
        print(
            f"{f['mode']:<14}{f['turns']:>7}{f['calls']:>7}{f['prompt_tokens_per_turn']:>13}"
            f"{f['completion_tokens_per_turn']:>17}{f['max_prompt_tokens_per_call']:>17}"
            f"{f['fixed_prompt_tokens_per_call']:>12}"
        )
    print(
        f"target: <= {TARGET_PROMPT_TOKENS_PER_TURN} prompt tokens per retained turn (tokens: {figures[0]['encoding']})"
    )
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2), encoding="utf-8")
    return 0 if all(f["meets_target"] for f in figures) else 1


if __name__ == "__main__":
    sys.exit(main())
