"""OpenTelemetry spans for retain, recall (each arm, fuse, pack), reflect, extraction, consolidation and one wrapped
SDK call, collected with the SDK's in-memory exporter; their attributes never carry memory text or the query.

One module: the API keeps the first tracer provider a process sets, so every span test shares this exporter."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from conftest_wrappers import fake_llm, llm_server, memory_block, openai_sdk, warm_memory  # noqa: F401 - fixtures
from extract_support import fact, reply
from extract_support import make_engine as make_extracting_engine
from fakes.llm_server import FakeLLMServer, Reply
from llm_fixtures import engine_fixture, fake_fixture
from reflect_support import DARK_MODE, NOW, call, done, make_engine, script_ran_out, turn

import memwrap
from memwrap.config import load_settings
from memwrap.engine.engine import Engine
from memwrap.engine.jobs import queue as jobs
from memwrap.engine.jobs.worker import Worker
from memwrap.engine.learn import consolidate
from memwrap.engine.learn.kinds import BUILTIN_KINDS
from memwrap.errors import InvalidBankIdError
from memwrap.instrumented_verbs import InstrumentedEngine
from memwrap.tokens import count_tokens

sdk = pytest.importorskip("opentelemetry.sdk.trace", reason="opentelemetry-sdk is not installed")
from opentelemetry import trace  # noqa: E402 - after importorskip
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402 - after importorskip
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (  # noqa: E402 - after importorskip
    InMemorySpanExporter,
)

fake = fake_fixture(script_ran_out)


def instrumented(make: Any) -> Any:
    """An engine as AsyncMemory uses it: its verbs' spans come from the engine's face (InstrumentedEngine)."""

    async def make_instrumented(*args: Any, **kwargs: Any) -> Any:
        return InstrumentedEngine(await make(*args, **kwargs))

    return make_instrumented


engine = engine_fixture(instrumented(make_engine))
# its extraction role talks to the module's fake server
extracting = engine_fixture(instrumented(make_extracting_engine))

SECRET_WORDS = "cerulean-walrus-7731"


@pytest.fixture(scope="module")
def exporter() -> Iterator[InMemorySpanExporter]:
    collected = InMemorySpanExporter()
    provider = sdk.TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(collected))
    trace.set_tracer_provider(provider)  # once per process: the API keeps the first provider it is given
    yield collected


def _attributes(spans: Any) -> list[Any]:
    """Every attribute value of the spans and of their events (a recorded exception's message included)."""
    values = [value for s in spans for value in (s.attributes or {}).values()]
    return values + [value for s in spans for e in s.events for value in (e.attributes or {}).values()]


def _one(spans: Any, name: str) -> Any:
    [found] = [s for s in spans if s.name == name]
    return found


def _step(spans: Any, step: str) -> Any:
    """The one span of a memory operation's step (`recall`, `wrapper.recall`, ...): named as the GenAI
    conventions say (`search_memory {bank}`), so found by its `memwrap.step`."""
    [found] = [s for s in spans if (s.attributes or {}).get("memwrap.step") == step]
    return found


def tree(spans: Any) -> str:
    """The spans as an indented tree, children in start order (docs/operations.md shows one)."""
    by_parent: dict[Any, list[Any]] = {}
    ids = {s.context.span_id for s in spans}
    for s in sorted(spans, key=lambda s: s.start_time):
        parent = s.parent.span_id if s.parent is not None and s.parent.span_id in ids else None
        by_parent.setdefault(parent, []).append(s)
    lines: list[str] = []

    def walk(parent: Any, depth: int) -> None:
        for s in by_parent.get(parent, []):
            kind = " (CLIENT)" if s.kind == trace.SpanKind.CLIENT else ""
            lines.append("  " * depth + s.name + kind)
            walk(s.context.span_id, depth + 1)

    walk(None, 0)
    return "\n".join(lines)


async def test_retain_and_recall_spans(engine: Engine, exporter: InMemorySpanExporter, bank: str) -> None:
    exporter.clear()
    await engine.retain_many(bank, [f"My locker code word is {SECRET_WORDS}.", "Maya likes the cello."])
    result = await engine.recall(bank, f"what is my locker code word {SECRET_WORDS} last week?", token_budget=300)
    spans = exporter.get_finished_spans()
    # Memory operations are named as the GenAI conventions say: `{gen_ai.operation.name} {gen_ai.memory.store.id}`.
    assert _step(spans, "retain").name == f"upsert_memory {bank}"
    assert _step(spans, "recall").name == f"search_memory {bank}"
    assert _step(spans, "recall").kind == trace.SpanKind.INTERNAL  # in process; the wrapper's is the CLIENT span
    assert _step(spans, "recall").attributes["gen_ai.provider.name"] == "memwrap"
    assert "gen_ai.memory.query.text" not in _step(spans, "recall").attributes  # content capture is off
    arms = sorted(s.attributes["memwrap.arm"] for s in spans if s.name == "memwrap.recall.arm")
    assert arms == ["graph", "keyword", "semantic", "temporal"]  # "last week": the temporal arm runs too
    recall = _step(spans, "recall")
    assert recall.attributes["memwrap.bank_id"] == bank
    assert recall.attributes["memwrap.tokens"] == result.tokens and recall.attributes["memwrap.memories"] == len(
        result.memories
    )
    assert recall.attributes["memwrap.token_budget"] == 300
    pack = next(s for s in spans if s.name == "memwrap.recall.pack")
    assert pack.parent.span_id == recall.context.span_id  # nested: the app's trace shows the steps in the recall
    assert all(s.parent.span_id == recall.context.span_id for s in spans if s.name == "memwrap.recall.arm")
    retain = _step(spans, "retain")
    assert retain.attributes["memwrap.items"] == 2
    assert not any(SECRET_WORDS in str(v) for v in _attributes(spans))

    # The GenAI conventions' memory operations, beside memwrap's own attributes.
    assert recall.attributes["gen_ai.operation.name"] == "search_memory"
    assert recall.attributes["gen_ai.memory.store.id"] == bank
    assert recall.attributes["gen_ai.memory.record.count"] == len(result.memories)
    assert retain.attributes["gen_ai.operation.name"] == "upsert_memory"
    assert retain.attributes["gen_ai.memory.record.count"] == 2
    # Each step's time, under the prefix (they were `ms.embed`, ...).
    assert recall.attributes["memwrap.timings_ms.total"] >= recall.attributes["memwrap.timings_ms.arms"] > 0
    [embedding] = [s for s in spans if s.name.startswith("embeddings ") and s.parent.span_id == recall.context.span_id]
    assert embedding.attributes["gen_ai.operation.name"] == "embeddings"
    assert embedding.name == f"embeddings {embedding.attributes['gen_ai.request.model']}"
    _only_our_names(spans)


def _only_our_names(spans: Any) -> None:
    """Every attribute is memwrap's (`memwrap.`) or the semantic conventions' (`gen_ai.`, `server.`, `error.`)."""
    keys = {key for s in spans for key in (s.attributes or {})}
    assert keys and all(key.startswith(("memwrap.", "gen_ai.", "server.", "error.")) for key in keys), keys


async def test_update_invalidate_and_delete_are_memory_operations(
    engine: Engine, exporter: InMemorySpanExporter, bank: str
) -> None:
    [first, second] = await engine.retain_many(bank, ["The user owns a red kayak.", "The user owns a blue canoe."])
    exporter.clear()
    await engine.update(bank, first, text="The user owns a green kayak.")
    await engine.invalidate(bank, second, "sold it")
    await engine.delete(bank, first)
    spans = exporter.get_finished_spans()
    operations = {
        s.attributes["memwrap.step"]: (
            s.name,
            s.attributes["gen_ai.operation.name"],
            s.attributes["gen_ai.memory.record.id"],
        )
        for s in spans
        if s.attributes.get("memwrap.step") in ("update", "invalidate", "delete")
    }
    assert operations == {
        "update": (f"update_memory {bank}", "update_memory", str(first)),
        "invalidate": (f"update_memory {bank}", "update_memory", str(second)),
        "delete": (f"delete_memory {bank}", "delete_memory", str(first)),
    }
    assert all(s.attributes["gen_ai.memory.store.id"] == bank for s in spans if s.name in operations)
    _only_our_names(spans)


async def test_the_warm_up_traces_nothing(
    memwrap_home: Any, fake: FakeLLMServer, exporter: InMemorySpanExporter
) -> None:
    exporter.clear()
    fresh = await make_engine(memwrap_home, fake)  # its warm-up runs every recall arm once
    try:
        assert fresh.startup_ms["first_query"] > 0
        assert exporter.get_finished_spans() == ()
    finally:
        await fresh.close()


async def test_background_jobs_trace_on_their_own_and_only_for_banks_this_process_served(
    engine: Engine, exporter: InMemorySpanExporter, bank: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMWRAP_TRACE_BACKGROUND", "served")  # the default of a process that embeds the engine
    elsewhere = f"{bank}-other-process"
    await engine.retain_many(bank, list(DARK_MODE))  # served here: its consolidation is queued
    # A bank only another process wrote to: its job sits in the shared queue, and this process's worker runs it.
    pool = engine.store.pool
    await engine.create_bank(elsewhere)  # (creating a bank traces nothing, so it does not make it served)
    await jobs.enqueue(pool, consolidate.KIND, bank_id=elsewhere, serial_key=consolidate.lock_key(elsewhere))
    await pool.execute("UPDATE jobs SET run_after = now() WHERE bank_id = ANY($1::text[])", [bank, elsewhere])
    exporter.clear()
    with trace.get_tracer("the-app").start_as_current_span("app.request") as app:  # current while the worker runs
        await Worker(engine.parts, worker_id="trace-test", registry=BUILTIN_KINDS).drain(timeout=60)
    spans = exporter.get_finished_spans()
    job_spans = {s.attributes.get("memwrap.bank_id"): s for s in spans if s.name == "memwrap.job"}
    assert elsewhere not in job_spans and not any(s.attributes.get("memwrap.bank_id") == elsewhere for s in spans)
    served_job = job_spans[bank]
    assert served_job.parent is None  # the root of its own trace, not a child of the app's span
    assert served_job.context.trace_id != app.get_span_context().trace_id
    assert served_job.attributes["memwrap.job_kind"] == consolidate.KIND
    consolidation = next(
        s for s in spans if s.name == "memwrap.consolidate" and s.attributes["memwrap.bank_id"] == bank
    )
    assert consolidation.parent.span_id == served_job.context.span_id
    _only_our_names(spans)


async def test_a_failed_recall_is_an_error_span(engine: Engine, exporter: InMemorySpanExporter) -> None:
    exporter.clear()
    with pytest.raises(InvalidBankIdError):
        await engine.recall("bad bank id!", "x")
    # Validation fails before the recall starts: no span. An error inside it is recorded on the span.
    assert [s.name for s in exporter.get_finished_spans()] == []


async def test_reflect_span(engine: Engine, fake: FakeLLMServer, exporter: InMemorySpanExporter, bank: str) -> None:
    await engine.retain_many(bank, [f"The user prefers dark mode ({SECRET_WORDS})."])
    exporter.clear()
    fake.script([turn(call("recall", query="editor theme")), done("Dark mode [F1].", "F1")])
    result = await engine.reflect(bank, f"Which theme? {SECRET_WORDS}", now=NOW)
    spans = exporter.get_finished_spans()
    reflect = next(s for s in spans if s.name == "memwrap.reflect")
    assert reflect.attributes["memwrap.bank_id"] == bank
    assert reflect.attributes["memwrap.iterations"] == result.iterations == 2
    assert reflect.attributes["memwrap.llm_calls"] == result.usage.calls
    assert reflect.attributes["memwrap.prompt_tokens"] == result.usage.prompt_tokens > 0
    # The recall the agent ran is inside the reflect's span.
    assert _step(spans, "recall").parent.span_id == reflect.context.span_id
    assert not any(SECRET_WORDS in str(v) for v in _attributes(spans))


def test_a_wrapped_call_nests_its_memory_steps_in_the_app_span(
    llm_server: FakeLLMServer, warm_memory: Any, exporter: InMemorySpanExporter, bank: str
) -> None:
    warm_memory.retain(bank, f"The user's locker code word is {SECRET_WORDS}.")
    client = memwrap.wrap_openai(openai_sdk(llm_server), bank_id=bank, memory=warm_memory, recall_timeout=30)
    llm_server.script([Reply(text=f"Your code word is {SECRET_WORDS}.")])
    exporter.clear()
    with trace.get_tracer("the-app").start_as_current_span("app.request") as app:
        client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": f"What is my locker code word {SECRET_WORDS}?"}]
        )
    block = memory_block(llm_server.last())
    assert SECRET_WORDS in block  # the memory did reach the model: the spans below describe a real injection
    spans = exporter.get_finished_spans()
    app_id = app.get_span_context().span_id

    # The app's span → the wrapper's three steps → the engine's recall → its arms, fusion and packing.
    print(tree(spans))  # the tree docs/operations.md shows
    wrapper_recall = _step(spans, "wrapper.recall")
    inject, retain = (_one(spans, f"memwrap.wrapper.{n}") for n in ("inject", "retain"))
    assert all(s.parent.span_id == app_id for s in (wrapper_recall, inject, retain))
    recall = _step(spans, "recall")
    assert recall.parent.span_id == wrapper_recall.context.span_id
    # The wrapper's recall is the app's call to its memory, by the GenAI conventions: a CLIENT search_memory span.
    assert wrapper_recall.name == recall.name == f"search_memory {bank}"
    assert wrapper_recall.kind == trace.SpanKind.CLIENT
    assert {
        "gen_ai.operation.name": "search_memory",
        "gen_ai.memory.store.id": bank,
        "gen_ai.provider.name": "memwrap",
        "gen_ai.memory.record.count": recall.attributes["gen_ai.memory.record.count"],
    }.items() <= wrapper_recall.attributes.items()
    steps = [s for s in spans if s.parent is not None and s.parent.span_id == recall.context.span_id]
    # The query's embedding: the GenAI conventions' embeddings span, named by the model.
    model = f"embeddings {load_settings().embedding_model}"
    assert {s.name for s in steps} == {model, "memwrap.recall.arm", "memwrap.recall.fuse", "memwrap.recall.pack"}
    assert {s.attributes["memwrap.arm"] for s in steps if s.name == "memwrap.recall.arm"} >= {"semantic", "keyword"}
    assert {s.context.trace_id for s in spans} == {app.get_span_context().trace_id}

    common = {"memwrap.bank_id": bank, "memwrap.provider": "openai.chat"}
    assert common.items() <= wrapper_recall.attributes.items()
    assert common.items() <= inject.attributes.items() and common.items() <= retain.attributes.items()
    assert wrapper_recall.attributes["memwrap.outcome"] == "found"
    assert wrapper_recall.attributes["memwrap.token_budget"] == 1024
    assert wrapper_recall.attributes["memwrap.memories"] == recall.attributes["memwrap.memories"] >= 1
    assert wrapper_recall.attributes["memwrap.tokens"] == recall.attributes["memwrap.tokens"] > 0
    assert wrapper_recall.attributes["memwrap.query_tokens"] > 0
    assert inject.attributes["memwrap.injected"] is True and inject.attributes["memwrap.reused"] is False
    assert inject.attributes["memwrap.block_tokens"] == count_tokens(block, "gpt-4o-mini")
    assert retain.attributes["memwrap.outcome"] == "queued" and retain.attributes["memwrap.turns"] == 2
    assert retain.attributes["memwrap.turn"] == 0 and retain.attributes["memwrap.content_tokens"] > 0

    # The hand-off is all the call waits for; the engine's retain runs later, from the spool, in its own trace.
    _only_our_names(spans)
    assert client.memwrap.flush(30)
    delivered = _step(exporter.get_finished_spans(), "retain")
    assert delivered.parent is None and delivered.attributes["memwrap.items"] == 1
    assert not any(SECRET_WORDS in str(v) for v in _attributes(exporter.get_finished_spans()))


def test_trace_content_puts_the_query_on_the_wrapper_span_only_when_asked(
    llm_server: FakeLLMServer,
    warm_memory: Any,
    exporter: InMemorySpanExporter,
    bank: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    client = memwrap.wrap_openai(
        openai_sdk(llm_server), bank_id=bank, memory=warm_memory, recall_timeout=30, retain=False
    )
    monkeypatch.delenv("MEMWRAP_TRACE_CONTENT", raising=False)
    monkeypatch.delenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", raising=False)

    def queries() -> list[Any]:
        exporter.clear()
        client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": "Which city, again?"}]
        )
        spans = exporter.get_finished_spans()
        assert _step(spans, "wrapper.recall").parent is None  # no app span: the wrapper's spans are roots
        assert _one(spans, "memwrap.wrapper.inject").attributes["memwrap.injected"] is False
        assert not any("memwrap.query" in s.attributes for s in spans)  # the conventions' name only
        return [_step(spans, step).attributes.get("gen_ai.memory.query.text") for step in ("wrapper.recall", "recall")]

    assert queries() == [None, None]  # by default: no content
    # The GenAI conventions' standard switch turns it on (spans: true, SPAN_ONLY, SPAN_AND_EVENT) ...
    for value in ("true", "SPAN_ONLY", "span_and_event"):
        monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", value)
        assert queries() == ["Which city, again?"] * 2, value
    for value in ("false", "EVENT_ONLY", "NO_CONTENT"):
        monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", value)
        assert queries() == [None, None], value
    # ... and memwrap's own setting, when set, decides either way.
    monkeypatch.setenv("MEMWRAP_TRACE_CONTENT", "1")
    assert queries() == ["Which city, again?"] * 2
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true")
    monkeypatch.setenv("MEMWRAP_TRACE_CONTENT", "0")
    assert queries() == [None, None]


async def test_extraction_span(
    extracting: Engine, fake: FakeLLMServer, exporter: InMemorySpanExporter, bank: str
) -> None:
    said = f"user: I named my new boat {SECRET_WORDS} last Friday."
    fake.script([reply([fact(f"The user named the new boat {SECRET_WORDS}.", "world", [1])])])
    exporter.clear()
    # The extraction runs right after the retain, which waits for it (tests/test_extract.py).
    await extracting.retain_many(bank, [{"content": said, "document_id": "chat-1:1", "timestamp": NOW}])
    spans = exporter.get_finished_spans()
    extract = _one(spans, "memwrap.extract")
    assert extract.attributes["memwrap.bank_id"] == bank and extract.attributes["memwrap.items"] == 1
    assert extract.attributes["memwrap.chunks"] == 1 and extract.attributes["memwrap.llm_calls"] == 1
    assert extract.attributes["memwrap.prompt_tokens"] > 0 and extract.attributes["memwrap.completion_tokens"] > 0
    assert extract.attributes["memwrap.memories"] == 1 and extract.attributes["memwrap.items_failed"] == 0
    chunk = _one(spans, "memwrap.extract.chunk")
    assert chunk.parent.span_id == extract.context.span_id
    assert chunk.attributes["memwrap.turns"] == 1 and chunk.attributes["memwrap.facts"] == 1
    # Started by the retain: the extraction shows under it in the same trace.
    assert extract.context.trace_id == _step(spans, "retain").context.trace_id
    assert not any(SECRET_WORDS in str(v) for v in _attributes(spans))

    # The LLM request: the GenAI conventions' inference span, a CLIENT span under the chunk it extracts.
    [chat] = [s for s in spans if s.name.startswith("chat ")]
    assert chat.kind == trace.SpanKind.CLIENT and chat.parent.span_id == chunk.context.span_id
    model = chat.attributes["gen_ai.request.model"]
    assert chat.name == f"chat {model}"
    assert chat.attributes["gen_ai.operation.name"] == "chat" and chat.attributes["gen_ai.provider.name"] == "openai"
    assert chat.attributes["gen_ai.usage.input_tokens"] == extract.attributes["memwrap.prompt_tokens"]
    assert chat.attributes["gen_ai.usage.output_tokens"] == extract.attributes["memwrap.completion_tokens"]
    assert chat.attributes["gen_ai.response.finish_reasons"] == ("stop",)
    assert chat.attributes["server.address"] == "127.0.0.1" and chat.attributes["server.port"] == fake.port
    assert chat.attributes["memwrap.llm_role"] == "extraction"
    _only_our_names(spans)


async def test_consolidation_span(engine: Engine, exporter: InMemorySpanExporter, bank: str) -> None:
    await engine.retain_many(bank, [f"{text} ({SECRET_WORDS})" for text in DARK_MODE])
    exporter.clear()
    report = await engine.consolidate(bank)
    consolidate = _one(exporter.get_finished_spans(), "memwrap.consolidate")
    attributes = consolidate.attributes
    assert attributes["memwrap.bank_id"] == bank and attributes["memwrap.mode"] == "heuristic"
    assert attributes["memwrap.memories"] == report.units == len(DARK_MODE)
    assert attributes["memwrap.observations_created"] == report.created >= 1
    assert attributes["memwrap.llm_calls"] == 0 and attributes["memwrap.parked"] is False
    assert not any(SECRET_WORDS in str(v) for v in _attributes(exporter.get_finished_spans()))
