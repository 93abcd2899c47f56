"""Nothing lost, nothing duplicated: every extraction fault stores the turn raw (recalled meanwhile), queues it,
and a later pass replaces the raw unit by its facts; unchanged items are never sent to the LLM twice."""

from __future__ import annotations

import asyncio
import re
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from extract_support import fact, make_engine, prompt_of, queued, reply, retained, units
from fakes.llm_server import FakeLLMServer, RecordedRequest, Reply
from llm_fixtures import engine_fixture

from memwrap.engine.engine import Engine

WHEN = datetime(2026, 5, 4, 18, 30, tzinfo=UTC)
TURN = {
    "content": "user: I moved the nightly backup of the billing database to 3 am.",
    "document_id": "ops:7",
    "timestamp": WHEN,
}
FACT = "The user moved the nightly backup of the billing database to 3 am."
GOOD = [fact(FACT, "world", [1], ["billing database"])]


engine = engine_fixture(make_engine, llm_timeout=0.4, llm_background_timeout=0.4, llm_max_retries=1)


async def bank_count(engine: Engine, bank: str) -> int:
    return next(b.memories for b in await engine.banks() if b.bank_id == bank)


async def assert_kept_raw(engine: Engine, bank: str, ids: list[Any], reason: str) -> None:
    [row] = await units(engine, bank)
    assert row["fact_type"] == "raw" and row["text"] == TURN["content"] and ids == [row["id"]]
    [entry] = await queued(engine, bank)
    assert entry["attempts"] == 1 and reason in entry["last_error"]
    recall = await engine.recall(bank, "When does the billing backup run?", token_budget=300)
    assert [m.id for m in recall.memories][:1] == [row["id"]]  # found meanwhile


async def assert_converted(engine: Engine, bank: str) -> list[Any]:
    rows = await units(engine, bank)
    assert [(r["text"], r["fact_type"]) for r in rows] == [(FACT, "world")]
    assert rows[0]["document_id"] == "ops:7" and rows[0]["metadata"]["source_ids"] == ["ops:7"]
    assert rows[0]["mentioned_at"] == WHEN  # when it was said, not when it was converted
    assert await queued(engine, bank) == []
    assert list((await retained(engine, bank)).values()) == [[rows[0]["id"]]]
    assert await bank_count(engine, bank) == 1
    return [rows[0]["id"]]


FAULTS = {
    "malformed JSON": (["{not json", '{"facts": [ oops'], "LLMOutputError"),
    "missing fields": ([{"facts": [{"text": FACT}]}, {"facts": [{"text": FACT, "turns": [1]}]}], "fact_type"),
    "429 with Retry-After": (
        [Reply(status=429, error="rate limited", headers={"retry-after": "0.2"})] * 2,
        "rate limited",
    ),
    "timeout": ([Reply(json={"facts": []}, delay=1.2)] * 2, "Timeout"),
    "server error": ([Reply(status=503, error="upstream down")] * 2, "upstream down"),
}


@pytest.mark.parametrize("fault", list(FAULTS))
async def test_a_fault_keeps_the_turn_raw_then_converts_it(
    engine: Engine, fake: FakeLLMServer, bank: str, fault: str
) -> None:
    script, reason = FAULTS[fault]
    fake.script(script)
    ids = await engine.retain_many(bank, [TURN])
    assert fake.pending == 0  # first try and its retry (or re-ask) were both spent
    await assert_kept_raw(engine, bank, ids, reason)

    # Retaining the unchanged item again does no LLM work, whatever state it is in.
    calls = len(fake.requests)
    assert await engine.retain_many(bank, [TURN]) == ids and len(fake.requests) == calls

    fake.script([reply(GOOD)])
    assert await engine.retry_extractions(bank) == 1
    fact_ids = await assert_converted(engine, bank)
    _, user = prompt_of(fake.last())
    assert "[1] user: I moved the nightly backup" in user  # rebuilt from the raw unit, roles kept

    # Converted once: another pass finds nothing, and retaining the item again returns the facts, no LLM call.
    calls = len(fake.requests)
    assert await engine.retry_extractions(bank) == 0
    assert await engine.retain_many(bank, [TURN]) == fact_ids and len(fake.requests) == calls


async def test_provider_down_then_back(memwrap_home: Path, fake: FakeLLMServer, bank: str) -> None:
    down = await make_engine(memwrap_home, None, llm_max_retries=1)
    try:
        ids = await down.retain_many(bank, [TURN])
        await assert_kept_raw(down, bank, ids, "Connection")
        assert await down.retry_extractions(bank) == 0  # still down: pushed back, still raw
        [entry] = await queued(down, bank)
        assert entry["attempts"] == 2 and entry["status"] == "queued"  # due again after its backoff
        assert entry["run_after"] > datetime.now(UTC)
    finally:
        await down.close()
    up = await make_engine(memwrap_home, fake)  # the provider is back (or another process that reaches it)
    try:
        fake.script([reply(GOOD)])
        assert await up.retry_extractions(bank) == 1
        await assert_converted(up, bank)
    finally:
        await up.close()


async def test_429_retry_after_within_the_retain(engine: Engine, fake: FakeLLMServer, bank: str) -> None:
    fake.script([Reply(status=429, error="slow down", headers={"retry-after": "1"}), reply(GOOD)])
    started = time.monotonic()
    await engine.retain_many(bank, [TURN])
    assert time.monotonic() - started >= 0.95
    await assert_converted(engine, bank)


async def test_a_reask_that_succeeds_needs_no_retry(engine: Engine, fake: FakeLLMServer, bank: str) -> None:
    fake.script(['{"facts": [{"text": "half a fact"}]}', reply(GOOD)])
    await engine.retain_many(bank, [TURN])
    await assert_converted(engine, bank)
    assert len(fake.requests) == 2


async def test_only_the_failed_chunk_is_kept_raw(memwrap_home: Path, fake: FakeLLMServer, bank: str) -> None:
    eng = await make_engine(memwrap_home, fake, extraction_turns_per_call=1)
    items = [
        {"content": "Ann: I bought a red bike.", "document_id": "p:1", "timestamp": WHEN},
        {"content": "Ben: I sold my old car.", "document_id": "p:2", "timestamp": WHEN},
    ]
    healthy = {"value": False}

    def respond(request: RecordedRequest) -> Any:
        _, user = prompt_of(request)
        if "] Ann:" in user:  # her turn, not the "Earlier:" context of the next chunk
            return reply([fact("Ann bought a red bike.", "world", [1], ["Ann"])])
        if healthy["value"]:
            return reply([fact("Ben sold his old car.", "world", [1], ["Ben"])])
        return Reply(status=500, error="flaky")

    fake.responder = respond
    try:
        await eng.retain_many(bank, items)
        assert sorted((r["text"], r["fact_type"]) for r in await units(eng, bank)) == [
            ("Ann bought a red bike.", "world"),
            ("Ben: I sold my old car.", "raw"),
        ]
        healthy["value"] = True
        assert await eng.retry_extractions(bank) == 1
        assert sorted((r["text"], r["fact_type"], r["document_id"]) for r in await units(eng, bank)) == [
            ("Ann bought a red bike.", "world", "p:1"),
            ("Ben sold his old car.", "world", "p:2"),
        ]
        assert await bank_count(eng, bank) == 2
    finally:
        await eng.close()


async def test_a_chunk_of_several_items_converts_together(engine: Engine, fake: FakeLLMServer, bank: str) -> None:
    items = [
        {"content": "Melanie: Where did you go?", "document_id": "D2:1", "timestamp": WHEN},
        {"content": "Caroline: To the lake, with my dog.", "document_id": "D2:2", "timestamp": WHEN},
    ]
    fake.script([Reply(status=500, error="down")] * 2)
    raw_ids = await engine.retain_many(bank, items)
    assert len(raw_ids) == 2 and len(await queued(engine, bank)) == 2
    fake.script([reply([fact("Caroline went to the lake with her dog.", "world", [1, 2], ["Caroline"])])])
    assert await engine.retry_extractions(bank) == 2
    [row] = await units(engine, bank)
    assert row["metadata"]["source_ids"] == ["D2:1", "D2:2"] and row["document_id"] == "D2:1"
    assert await engine.retain_many(bank, items) == [row["id"]]  # owned by the first item, the second made none
    assert await bank_count(engine, bank) == 1


async def test_the_worker_retries_the_extraction_on_its_own(memwrap_home: Path, fake: FakeLLMServer, bank: str) -> None:
    eng = await make_engine(
        memwrap_home,
        fake,
        extraction_retry_interval=0.2,
        worker="inline",
        worker_poll_seconds=0.05,
        worker_start_delay_seconds=0.0,
    )
    try:
        fake.script([Reply(status=503, error="down")] * 2)
        # The worker may also take other tests' due extraction jobs: every later request gets the good reply.
        fake.responder = lambda request: reply(GOOD)
        await eng.retain_many(bank, [TURN])
        deadline = time.monotonic() + 15
        # Converted, and the job settled: the worker marks it done just after the facts are committed.
        while time.monotonic() < deadline and (
            [r["fact_type"] for r in await units(eng, bank)] != ["world"] or await queued(eng, bank)
        ):
            await asyncio.sleep(0.1)
        await assert_converted(eng, bank)
        [job] = await eng.jobs(bank, kind="extract")
        assert job.status == "done" and job.attempts == 2  # the retain's own attempt, then the worker's
    finally:
        await eng.close()


async def test_gives_up_after_max_attempts_and_keeps_the_raw_memory(
    memwrap_home: Path, fake: FakeLLMServer, bank: str
) -> None:
    eng = await make_engine(memwrap_home, fake, extraction_max_attempts=2)
    try:
        fake.script([Reply(status=500, error="down")] * 4)
        await eng.retain_many(bank, [TURN])  # attempt 1
        assert await eng.reextractor.run_once(bank_id=bank, force=True) == 0  # type: ignore[union-attr]  # attempt 2
        [entry] = await queued(eng, bank)
        assert entry["attempts"] == 2 and entry["status"] == "failed"  # dead: its attempts are used up
        assert await eng.reextractor.run_once(bank_id=bank) == 0  # type: ignore[union-attr]  # set here
        assert fake.pending == 0 and len(fake.requests) == 4  # a parked row is not claimed by the schedule
        assert [r["fact_type"] for r in await units(eng, bank)] == ["raw"]
    finally:
        await eng.close()


async def test_concurrent_passes_convert_once(memwrap_home: Path, fake: FakeLLMServer, bank: str) -> None:
    first = await make_engine(memwrap_home, fake)
    second = await make_engine(memwrap_home, fake)
    try:
        fake.script([Reply(status=500, error="down")] * 2)
        await first.retain_many(bank, [TURN])
        fake.responder = lambda request: Reply(json={"facts": GOOD, "entities": []}, delay=0.3)
        done = await asyncio.gather(first.retry_extractions(bank), second.retry_extractions(bank))
        assert sum(done) == 1
        await assert_converted(first, bank)
    finally:
        await first.close()
        await second.close()


async def test_a_raw_memory_deleted_before_its_retry_stays_deleted(
    engine: Engine, fake: FakeLLMServer, bank: str
) -> None:
    fake.script([Reply(status=500, error="down")] * 2)
    [raw_id] = await engine.retain_many(bank, [TURN])
    await engine.delete(bank, raw_id)
    assert await engine.retry_extractions(bank) == 0
    assert await units(engine, bank) == [] and await queued(engine, bank) == []
    assert fake.pending == 0 and len(fake.requests) == 2


async def test_a_reply_cut_at_the_output_limit_is_redone_in_halves(
    engine: Engine, fake: FakeLLMServer, bank: str
) -> None:
    items = [
        {"content": f"Dana: Note number {i} about the garden.", "document_id": f"g:{i}", "timestamp": WHEN}
        for i in range(1, 5)
    ]

    def respond(request: RecordedRequest) -> Any:
        _, user = prompt_of(request)
        numbers = [int(n) for n in re.findall(r"^\[(\d+)\]", user.split("Turns:", 1)[1], re.MULTILINE)]
        notes = re.findall(r"Note number (\d+)", user.split("Turns:", 1)[1])
        facts = [
            fact(f"Dana wrote garden note {note}.", "world", [n], ["Dana"])
            for n, note in zip(numbers, notes, strict=False)
        ]
        if len(numbers) > 2:  # too much output for one reply: cut off after the first fact
            return Reply(json={"facts": facts[:1], "entities": []}, finish_reason="length")
        return reply(facts)

    fake.responder = respond
    ids = await engine.retain_many(bank, items)
    rows = await units(engine, bank)
    assert [(r["text"], r["document_id"]) for r in rows] == [
        (f"Dana wrote garden note {i}.", f"g:{i}") for i in range(1, 5)
    ]
    assert ids == [r["id"] for r in rows] and await queued(engine, bank) == []
    assert len(fake.requests) == 3  # the cut reply, then two halves
