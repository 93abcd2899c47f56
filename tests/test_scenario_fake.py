"""bench.scenario's checks on the fake server, replaying what the local model (Qwen2.5-Coder-1.5B Q4_K_M)
really answered to the scenario's eight exchanges: the Chinese fact without 上海, the assistant's Museum Island
tip typed world and cited to the user's turn, no fact at all for the team lead, an untouched "I prefer". With
memwrap's checks the scenario still ends with nothing lost, speakers right, dates from our calendar, and reflect
(the JSON "next action" protocol) citing ids that exist.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from extract_support import fact
from fakes.llm_server import FakeLLMServer, RecordedRequest, Reply
from llm_fixtures import fake_fixture

_REPO = str(Path(__file__).resolve().parent.parent)
if _REPO not in sys.path:
    sys.path.insert(0, _REPO)

from bench.scenario import EXCHANGES, QUESTIONS, run_scenario  # noqa: E402 - after sys.path
from memwrap import AsyncMemory  # noqa: E402 - after sys.path
from memwrap.config import Settings  # noqa: E402 - after sys.path

# The local model's facts per exchange (its texts, types, cited turns and time phrases, as it gave them).
LOCAL_MODEL: dict[str, list[dict[str, Any]]] = {
    "Lumen Labs last month": [
        fact("Started a new job at Lumen Labs last month", "world", [1], ["Lumen Labs"], when="last month"),
        fact("five years at Contoso", "world", [1], ["Contoso"]),
    ],
    "Zhang Wei": [],
    "I prefer React": [fact("For front-end work I prefer React.", "world", [1], ["React"])],
    "prefer Vue": [
        fact(
            "Since last week, the user prefers Vue over React.", "world", [1], ["Vue", "React"], when="since last week"
        )
    ],
    "surprise party": [
        fact("The surprise party for Mei is on December 12.", "world", [1], ["Mei"], when="12 December")
    ],
    "上海": [fact("用户计划下周三出差。", "world", [1], [], when="下周三")],
    "peanuts": [fact("user is allergic to peanuts", "world", [1])],
    "Berlin": [
        fact(
            "The user plans to fly to Berlin next Tuesday for a conference.",
            "world",
            [1],
            ["Berlin"],
            when="next Tuesday",
        ),
        fact(
            "The assistant recommends the Museum Island in Berlin if the user has a free evening.",
            "world",
            [1],
            ["Museum Island", "Berlin"],
        ),
    ],
}


def local_model(request: RecordedRequest) -> Reply:
    body = request.body
    schema = ((body.get("response_format") or {}).get("json_schema") or {}).get("name", "")
    prompt = body["messages"][-1]["content"]
    if schema == "next_action":
        if "Result:" not in prompt:  # first turn: look the question up
            question = next(q for q in QUESTIONS if q in json.dumps(body["messages"], ensure_ascii=False))
            return Reply(json={"action": "recall", "query": question})
        return Reply(json={"action": "done", "answer": "From memory [F1].", "memory_ids": ["F1"]})
    turns = prompt.split("Turns:", 1)[-1]
    for key, facts in LOCAL_MODEL.items():
        if key in turns:
            return Reply(json={"facts": facts, "entities": []})
    return Reply(json={"facts": [], "entities": []})


fake = fake_fixture(local_model)


async def test_the_scenario_with_the_local_models_replies(memwrap_home: Path, fake: FakeLLMServer, bank: str) -> None:
    settings = Settings(
        home=memwrap_home,
        worker="off",
        llm_provider="openai",
        llm_base_url=fake.openai_base_url,
        llm_model="qwen2.5-coder-1.5b",
        llm_api_key="local",
        llm_tool_protocol="json",
        llm_max_retries=0,
        reflect_max_iterations=4,
    )
    async with AsyncMemory(settings=settings) as memory:
        report = await run_scenario(memory, bank, model="fake", extraction_wait=60)
    assert len(report.items) == len(EXCHANGES)
    assert report.lost == 0, [i for i in report.items if not i["kept"]]
    assert report.wrong_speakers == 0, [i for i in report.items if not i["speaker_ok"]]
    assert report.wrong_dates == 0, [i for i in report.items if not i["dates_ok"]]
    assert report.reflect_ok == len(QUESTIONS), report.reflect
    assert all(not r["forced"] and r["tool_calls"][0] == "recall" for r in report.reflect)
    texts = {m["text"]: m for m in report.memories}
    assert texts["user: 我下周三要去上海出差。"]["type"] == "raw"  # the fact lost 上海: the sentence is kept raw
    assert texts["user: 我下周三要去上海出差。"]["occurred"] == ["2026-12-09", "2026-12-09"]
    museum = next(m for m in report.memories if "Museum Island" in m["text"])
    assert museum["type"] == "experience"
