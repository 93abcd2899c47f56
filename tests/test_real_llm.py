"""The real-model tier: invariants any competent model must keep, checked against a real OpenAI-compatible server.

Run only when MEMWRAP_TEST_LLM_BASE_URL is set (never in CI), e.g. with the local model:

    ../shared/tools/local-llm serve
    MEMWRAP_TEST_LLM_BASE_URL=http://127.0.0.1:8089/v1 MEMWRAP_TEST_LLM_MODEL=qwen2.5-coder-1.5b \
        .venv/bin/python -m pytest -m real_llm -s tests/test_real_llm.py

No assertion depends on the model's wording: nothing lost (every item found by a recall about its content),
speakers kept, dates from memwrap's calendar, reflect citing ids that exist (or forced, with its reason).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

_REPO = str(Path(__file__).resolve().parent.parent)
if _REPO not in sys.path:
    sys.path.insert(0, _REPO)

from bench.scenario import EXCHANGES, SAID, run_scenario  # noqa: E402 - after sys.path
from memwrap import AsyncMemory  # noqa: E402 - after sys.path
from memwrap.config import Settings  # noqa: E402 - after sys.path

BASE_URL = os.environ.get("MEMWRAP_TEST_LLM_BASE_URL")
pytestmark = [
    pytest.mark.real_llm,
    pytest.mark.skipif(not BASE_URL, reason="MEMWRAP_TEST_LLM_BASE_URL is not set (the real-model tier is opt-in)"),
]


def real_settings(home: Path, **overrides: object) -> Settings:
    options: dict[str, object] = {
        "home": home,
        "worker": "off",
        "llm_provider": "openai",
        "llm_base_url": BASE_URL,
        "llm_model": os.environ.get("MEMWRAP_TEST_LLM_MODEL", "qwen2.5-coder-1.5b"),
        "llm_api_key": os.environ.get("MEMWRAP_TEST_LLM_API_KEY", "local"),
        "extraction_retry_interval": 3600.0,
        "reflect_timeout": 1800.0,
        "reflect_synthesis_timeout": 600.0,
        "llm_timeout": 600.0,
        "reflect_max_iterations": 4,
        "reflect_answer_tokens": 256,
    }
    options.update(overrides)
    return Settings(**options)  # type: ignore[arg-type]  # pydantic-settings validates each


async def test_nothing_lost_speakers_dates_and_reflect_on_a_real_model(memwrap_home: Path, bank: str) -> None:
    async with AsyncMemory(settings=real_settings(memwrap_home)) as memory:
        report = await run_scenario(memory, bank, model=os.environ.get("MEMWRAP_TEST_LLM_MODEL", ""))
    print(json.dumps(report.to_json(), indent=2, ensure_ascii=False))
    assert report.lost == 0, [i for i in report.items if not i["kept"]]
    assert report.wrong_speakers == 0, [i for i in report.items if not i["speaker_ok"]]
    assert report.wrong_dates == 0, [i for i in report.items if not i["dates_ok"]]
    assert report.reflect_ok == len(report.reflect), report.reflect


async def test_reextraction_keeps_who_said_what(memwrap_home: Path, bank: str) -> None:
    """Stored raw while the model was unreachable, extracted later from the raw units: both speakers survive."""
    exchange = EXCHANGES[-1]
    content = f"user: {exchange.user}\nassistant: {exchange.assistant}"
    down = real_settings(memwrap_home, llm_base_url="http://127.0.0.1:9/v1", llm_max_retries=0)
    async with AsyncMemory(settings=down) as memory:
        await memory.retain(bank, content, timestamp=SAID)
        [raw] = await memory.list(bank)
        assert raw.type == "raw" and raw.text.startswith("user: ") and "\nassistant: " in raw.text
    async with AsyncMemory(settings=real_settings(memwrap_home)) as memory:
        engine = await memory._get_engine()
        assert await engine.retry_extractions(bank) == 1
        memories = await memory.list(bank)
        assert all(m.type != "raw" or m.text.startswith(("user:", "assistant:")) for m in memories)
        for query, words in exchange.probes:
            recall = await memory.recall(bank, query, token_budget=400, now=SAID)
            assert any(all(w in m.text.casefold() for w in words) for m in recall.memories[:5]), (query, memories)
        by_assistant = [m for m in memories if "museum" in m.text.casefold()]
        assert by_assistant and all(
            m.type in ("experience", "raw") or "assistant" in m.text.casefold() for m in by_assistant
        ), memories
