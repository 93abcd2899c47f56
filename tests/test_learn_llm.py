"""Consolidation and mental models with an LLM: the real OpenAI SDK against the scripted fake server.

A database of its own: no other engine's worker (LLM-free) may consolidate these banks. The worker is off;
tests drive consolidation explicitly. The fake answers like a diligent model, from what the prompt shows it.
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from uuid import uuid4

import pytest
from fakes.llm_server import FakeLLMServer, Reply
from llm_fixtures import fake_fixture

from memwrap import Memory
from memwrap.config import load_settings
from memwrap.engine.jobs.worker import Worker
from memwrap.engine.learn import reconcile
from memwrap.engine.learn.kinds import BUILTIN_KINDS
from memwrap.engine.learn.llm_consolidate import pick_related
from memwrap.engine.recall.fusion import reciprocal_rank

JAN = datetime(2026, 1, 5, 10, 0, tzinfo=UTC)
APRIL = datetime(2026, 4, 10, 10, 0, tzinfo=UTC)

DARK = [
    "I prefer dark mode in my code editor.",
    "I really prefer dark mode in my code editor.",
    "Honestly, I prefer dark mode in my code editor.",
    "Dark mode is what I prefer in my code editor.",
    "I like dark mode in my code editor best.",
]
FACT_LINE = re.compile(r"^\[F(\d+)\] (\d{4}-\d\d-\d\d) (.*)$", re.M)
OBSERVATION_LINE = re.compile(r"^\[O(\d+)\] (.*) \(\d+ sources", re.M)


def prompt(request: Any) -> tuple[str, str]:
    messages = request.body["messages"]
    return messages[0]["content"], messages[-1]["content"]


def diligent_model(request: Any) -> Reply:
    """What a good model would answer, from the prompt alone (so batching does not matter)."""
    system, user = prompt(request)
    if "standing answer" in system:
        return Reply(json={"content": "The user prefers dark mode [from M1].", "sources": ["M1", "M7"]})
    if "evidence behind an observation" in system:
        remaining = re.findall(r"^- (.*)$", user, re.M)
        return Reply(json={"action": "rewrite", "text": f"The user said: {remaining[0]}", "reason": "less evidence"})
    facts = FACT_LINE.findall(user)
    observations = OBSERVATION_LINE.findall(user)
    cited = [{"fact": f"F{n}", "quote": text.split(",")[0][:30]} for n, _day, text in facts]
    if observations:
        current = observations[0][1]
        vue = [(day, n) for n, day, text in facts if "Vue" in text]
        if vue and "React" in current:
            since = datetime.fromisoformat(min(vue)[0])
            return Reply(
                json={
                    "updates": [
                        {
                            "observation": "O1",
                            "text": f"Since {since:%B %Y} the user prefers Vue (before that: React).",
                            "change": "contradict",
                            "reason": "the user switched from React to Vue",
                            "evidence": cited,
                        }
                    ]
                }
            )
        return Reply(
            json={
                "updates": [
                    {"observation": "O1", "text": current, "change": "refine", "reason": "restated", "evidence": cited}
                ]
            }
        )
    text = (
        "The user prefers React for frontend work."
        if any("React" in f[2] for f in facts)
        else "The user prefers dark mode in their code editor."
    )
    return Reply(json={"creates": [{"text": text, "evidence": cited}]})


fake = fake_fixture(diligent_model)


@pytest.fixture(scope="module")
def mem(server: FakeLLMServer) -> Iterator[Memory]:
    home = Path(tempfile.mkdtemp(prefix="memwrap-learn-llm-"))
    settings = load_settings(
        home=home,
        worker="off",
        llm_provider="none",
        consolidation_provider="openai",
        consolidation_model="fake-consolidator",
        consolidation_base_url=server.openai_base_url,
        consolidation_api_key="sk-test",
        llm_backoff=0.01,
        llm_max_retries=1,
        llm_timeout=30.0,
        job_backoff_seconds=0.01,
        job_backoff_cap_seconds=0.05,
        worker_lease_seconds=5.0,
    )
    with Memory(settings=settings) as memory:
        yield memory
    shutil.rmtree(home, ignore_errors=True)


def engine(mem: Memory) -> Any:
    return mem._run(mem.aio._get_engine())


def drain(mem: Memory) -> int:
    e = engine(mem)

    async def go() -> int:
        return await Worker(e.parts, worker_id="test-worker", registry=BUILTIN_KINDS).drain(timeout=30)

    return mem._run(go())


def test_thirty_restatements_become_one_observation(mem: Memory, fake: FakeLLMServer, bank: str) -> None:
    ids = []
    for i in range(30):
        ids += mem.retain(bank, DARK[i % len(DARK)], timestamp=JAN + timedelta(days=i), document_id=f"chat-{i}:1")
        if i % 7 == 6 or i == 29:
            mem.consolidate(bank)  # batches of 7 and 2: what the worker would see in a busy conversation
    [observation] = mem.observations(bank)
    detail = mem.get_observation(bank, observation.id)
    assert (detail.proof_count, detail.evidence_count, detail.origin) == (30, 30, "llm")
    assert {e.memory_id for e in detail.evidence} == set(ids)
    assert detail.text == "The user prefers dark mode in their code editor."
    # Every call after the first was shown the observation, and only the first created one.
    users = [prompt(r)[1] for r in fake.requests]
    assert len(users) == 5 and "[O1]" not in users[0] and all("[O1] The user prefers dark mode" in u for u in users[1:])
    assert all(r.body["response_format"]["type"] == "json_schema" for r in fake.requests)


def test_a_changed_preference_updates_the_observation_and_keeps_its_history(
    mem: Memory, fake: FakeLLMServer, bank: str
) -> None:
    for i in range(6):  # React, January to March
        mem.retain(
            bank,
            f"I prefer React for frontend work{'!' * (i % 3)}",
            timestamp=JAN + timedelta(days=15 * i),
            document_id=f"react-{i}",
        )
    mem.consolidate(bank)
    mem.retain(bank, "These days I prefer Vue for frontend work.", timestamp=APRIL, document_id="vue-1")
    mem.retain(
        bank, "Vue is now my favourite frontend framework.", timestamp=APRIL + timedelta(days=3), document_id="vue-2"
    )
    mem.consolidate(bank)

    [observation] = mem.observations(bank, now=APRIL + timedelta(days=4))
    assert observation.text == "Since April 2026 the user prefers Vue (before that: React)."
    assert observation.proof_count == 2 and observation.evidence_count == 8 and observation.version == 2
    detail = mem.get_observation(bank, observation.id)
    assert sorted(e.stance for e in detail.evidence) == ["superseded"] * 6 + ["supports"] * 2
    history = mem.observation_history(bank, observation.id)
    assert [(v.version, v.action) for v in history] == [(1, "created"), (2, "contradicted")]
    assert history[0].text == "The user prefers React for frontend work." and history[0].valid_from == JAN
    assert history[1].valid_from == APRIL and history[1].reason == "the user switched from React to Vue"
    assert history[0].recorded_at <= history[1].recorded_at and len(history[1].evidence_ids) == 2

    question = "Which framework does the user prefer now?"
    later = APRIL + timedelta(days=5)
    preferred = mem.recall(bank, question, now=later, prefer_observations=True)
    assert preferred.memories[0].id == observation.id  # it stands in for all eight facts, React ones included
    assert [m.type for m in preferred.memories] == ["observation"]
    plain = mem.recall(bank, question, now=later)
    assert "Vue" in plain.memories[0].text and observation.id in {m.id for m in plain.memories[:3]}


@pytest.mark.parametrize("path", ["llm", "heuristic"])
def test_both_paths_record_a_changed_preference_alike(
    path: str, mem: Memory, memory: Memory, fake: FakeLLMServer, bank: str
) -> None:
    """The same conversation, consolidated by the LLM (the diligent fake) and without one (heuristic.py, on the
    run's LLM-free memory): the same change is recorded — the React statements superseded, Vue supporting the one
    observation — and recall answers the question about now with Vue first."""
    target = mem if path == "llm" else memory
    react = [
        target.retain(
            bank,
            f"I prefer React for frontend work{'!' * (i % 3)}",
            timestamp=JAN + timedelta(days=15 * i),
            document_id=f"react-{i}",
        )[0]
        for i in range(6)
    ]
    target.consolidate(bank)
    target.retain(bank, "These days I prefer Vue for frontend work.", timestamp=APRIL, document_id="vue-1")
    target.retain(
        bank, "Vue is now my favourite frontend framework.", timestamp=APRIL + timedelta(days=3), document_id="vue-2"
    )
    target.consolidate(bank)

    [observation] = target.observations(bank, now=APRIL + timedelta(days=4))
    assert "Vue" in observation.text
    evidence = {e.memory_id: e.stance for e in target.get_observation(bank, observation.id).evidence}
    assert [evidence.get(i) for i in react] == ["superseded"] * 6
    assert "supports" in evidence.values()
    recall = target.recall(bank, "Which framework does the user prefer now?", now=APRIL + timedelta(days=5))
    assert "Vue" in recall.memories[0].text


def test_a_create_that_twins_an_existing_observation_becomes_an_update(
    mem: Memory, fake: FakeLLMServer, bank: str
) -> None:
    mem.retain_many(bank, [{"content": DARK[0], "document_id": "a"}, {"content": DARK[1], "document_id": "b"}])
    mem.consolidate(bank)
    # A careless model creates the same observation again, although it was shown it.
    fake.script(
        [
            {
                "creates": [
                    {
                        "text": "The user prefers dark mode in their code editor!",
                        "evidence": [{"fact": "F1", "quote": "dark mode"}],
                    }
                ]
            }
        ]
    )
    mem.retain(bank, DARK[2], document_id="c")
    mem.consolidate(bank)
    [observation] = mem.observations(bank)
    assert observation.proof_count == 3


def test_unknown_references_are_dropped(mem: Memory, fake: FakeLLMServer, bank: str) -> None:
    fake.script(
        [
            {
                "creates": [{"text": "Made up.", "evidence": [{"fact": "F9", "quote": "?"}]}],
                "updates": [{"observation": "O4", "text": "Nope.", "change": "refine", "reason": "", "evidence": []}],
                "deletes": [{"observation": "O2", "reason": "?"}],
            }
        ]
    )
    mem.retain(bank, "I collect vintage fountain pens.", document_id="p")
    report = mem.consolidate(bank)
    assert (report.units, report.created, report.updated, report.deleted) == (1, 0, 0, 0)
    assert report.mode == "llm" and report.llm_calls == 1 and report.prompt_tokens > 0
    assert mem.observations(bank) == []


def test_a_failing_llm_is_retried_and_no_fact_is_stranded(mem: Memory, fake: FakeLLMServer, bank: str) -> None:
    e = engine(mem)
    fake.responder = lambda request: Reply(status=503, error="overloaded")
    mem.retain_many(bank, [{"content": DARK[0], "document_id": "x"}, {"content": DARK[1], "document_id": "y"}])
    mem._run(e.store.pool.execute("UPDATE jobs SET max_attempts = 2, run_after = now() WHERE bank_id = $1", bank))
    deadline = time.monotonic() + 20
    while mem.jobs(bank, kind="consolidate")[0].status != "failed" and time.monotonic() < deadline:
        drain(mem)
        time.sleep(0.02)
    job = mem.jobs(bank, kind="consolidate")[0]
    assert job.status == "failed" and job.attempts == 2 and "LLMUnavailableError" in job.last_error
    failed = mem._run(e.store.pool.fetch("SELECT status FROM unit_learning WHERE bank_id = $1", bank))
    assert [r["status"] for r in failed] == ["failed", "failed"]  # parked: later facts are not held up
    [parked] = mem.jobs(bank, kind="consolidate_parked")
    assert parked.status == "queued" and parked.run_after > datetime.now(UTC)  # waits out its backoff first
    units = mem._run(e.store.pool.fetch("SELECT unit_id FROM unit_learning WHERE bank_id = $1", bank))
    assert sorted(parked.payload["unit_ids"]) == sorted(str(r["unit_id"]) for r in units)
    assert mem._run(reconcile.run(e.parts)) == 0  # nothing stranded: the parked units have their job

    fake.responder = diligent_model
    # Time passes: the parked units' backoff is over.
    mem._run(e.store.pool.execute("UPDATE jobs SET run_after = now() WHERE id = $1", parked.id))
    drain(mem)
    assert [o.proof_count for o in mem.observations(bank)] == [2]
    assert [j.status for j in mem.jobs(bank, kind="consolidate_parked")] == ["done"]
    assert [j.status for j in mem.jobs(bank, kind="consolidate")] == ["failed"]


def test_deleting_evidence_has_the_llm_rewrite_the_observation(mem: Memory, fake: FakeLLMServer, bank: str) -> None:
    first, second = (
        mem.retain(bank, DARK[i], timestamp=JAN + timedelta(days=i), document_id=f"e{i}")[0] for i in range(2)
    )
    mem.consolidate(bank)
    [observation] = mem.observations(bank)
    mem.delete(bank, first)
    assert "revise_observations" in [j.kind for j in mem.jobs(bank, status="queued")]
    drain(mem)
    [revised] = mem.observations(bank)
    assert revised.id == observation.id and revised.text == f"The user said: {DARK[1]}" and revised.proof_count == 1
    assert [v.action for v in mem.observation_history(bank, revised.id)] == ["created", "rewritten"]
    assert second in {e.memory_id for e in mem.get_observation(bank, revised.id).evidence}


def test_the_llm_writes_the_mental_model(mem: Memory, fake: FakeLLMServer, bank: str) -> None:
    mem.retain_many(bank, [{"content": DARK[0], "document_id": "m1"}, {"content": DARK[1], "document_id": "m2"}])
    mem.consolidate(bank)
    mem.create_mental_model(bank, "editor", "How does the user like their editor?", max_answer_tokens=5)
    fake.reset()
    fake.responder = diligent_model
    model = mem.refresh_mental_model(bank, "editor")
    [observation] = mem.observations(bank)
    assert model.generator == "llm" and model.status == "fresh" and model.version == 1
    assert model.source_ids == [observation.id]  # M1; the unknown M7 is dropped
    assert model.content == "The user prefers dark mode"  # cut to max_answer_tokens=5
    _system, user = prompt(fake.requests[-1])
    assert "QUESTION: How does the user like their editor?" in user and "[M1]" in user and "(observation)" in user


def test_interleaving_keeps_a_twin_that_one_arm_ranks_first() -> None:
    twin, decoys = uuid4(), [uuid4() for _ in range(8)]
    # Decoys are found by both arms; the twin only by keyword, where it is first.
    results = {
        "semantic": [(d, 0.9 - i / 100) for i, d in enumerate(decoys)],
        "keyword": [(twin, 9.0)] + [(d, 5.0 - i) for i, d in enumerate(decoys)],
    }
    assert twin in pick_related([results], per_fact_limit=3)
    assert twin not in [f.id for f in reciprocal_rank(results, {"semantic": 1.0, "keyword": 1.0})[:3]]


def test_the_prompt_is_stable_first_and_small(mem: Memory, fake: FakeLLMServer, bank: str) -> None:
    mem.retain(bank, DARK[0], document_id="s")
    mem.consolidate(bank)
    body = fake.requests[-1].body
    assert body["messages"][0]["role"] == "system" and "observations" in body["messages"][0]["content"]
    assert len(json.dumps(body)) < 6000
