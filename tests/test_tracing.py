"""OpenTelemetry spans for retain, recall (each arm, fuse, pack) and reflect, collected with the SDK's in-memory
exporter; their attributes never carry memory text or the query."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fakes.llm_server import FakeLLMServer
from llm_fixtures import engine_fixture, fake_fixture
from reflect_support import NOW, call, done, make_engine, script_ran_out, turn

from memwrap.engine.engine import Engine

sdk = pytest.importorskip("opentelemetry.sdk.trace", reason="opentelemetry-sdk is not installed")
from opentelemetry import trace  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402

fake = fake_fixture(script_ran_out)
engine = engine_fixture(make_engine)

SECRET_WORDS = "cerulean-walrus-7731"


@pytest.fixture(scope="module")
def exporter() -> Iterator[InMemorySpanExporter]:
    collected = InMemorySpanExporter()
    provider = sdk.TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(collected))
    trace.set_tracer_provider(provider)  # once per process: the API keeps the first provider it is given
    yield collected


def _attributes(spans: Any) -> list[Any]:
    return [value for s in spans for value in (s.attributes or {}).values()]


async def test_retain_and_recall_spans(engine: Engine, exporter: InMemorySpanExporter, bank: str) -> None:
    exporter.clear()
    await engine.retain_many(bank, [f"My locker code word is {SECRET_WORDS}.", "Maya likes the cello."])
    result = await engine.recall(bank, f"what is my locker code word {SECRET_WORDS} last week?", token_budget=300)
    spans = exporter.get_finished_spans()
    names = [s.name for s in spans]
    assert "memwrap.retain" in names and "memwrap.recall" in names
    arms = sorted(s.attributes["memwrap.arm"] for s in spans if s.name == "memwrap.recall.arm")
    assert arms == ["graph", "keyword", "semantic", "temporal"]  # "last week": the temporal arm runs too
    recall = next(s for s in spans if s.name == "memwrap.recall")
    assert recall.attributes["memwrap.bank_id"] == bank
    assert recall.attributes["memwrap.tokens"] == result.tokens and recall.attributes["memwrap.memories"] == len(result.memories)
    assert recall.attributes["memwrap.token_budget"] == 300
    pack = next(s for s in spans if s.name == "memwrap.recall.pack")
    assert pack.parent.span_id == recall.context.span_id  # nested: the app's trace shows the steps in the recall
    assert all(s.parent.span_id == recall.context.span_id for s in spans if s.name == "memwrap.recall.arm")
    retain = next(s for s in spans if s.name == "memwrap.retain")
    assert retain.attributes["memwrap.items"] == 2
    assert not any(SECRET_WORDS in str(v) for v in _attributes(spans))


async def test_a_failed_recall_is_an_error_span(engine: Engine, exporter: InMemorySpanExporter) -> None:
    exporter.clear()
    with pytest.raises(Exception):
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
    assert any(s.name == "memwrap.recall" and s.parent.span_id == reflect.context.span_id for s in spans)
    assert not any(SECRET_WORDS in str(v) for v in _attributes(spans))
