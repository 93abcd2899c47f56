"""Reflect: the tool loop over real SDKs (OpenAI and Anthropic) against the scripted fake server.

The scripted replies stand for the model's decisions; the tests check our part: the tools it is offered, what
each tool returns (references, staleness, evidence), the budget split among the calls of a turn *before* they
run (measured in what the server received), the limits that end in a forced synthesis, and the cited ids.
"""

from __future__ import annotations

from typing import Any

import pytest
from fakes.llm_server import FakeLLMServer, Reply
from llm_fixtures import engine_fixture, fake_fixture
from reflect_support import (
    DARK_MODE,
    NOW,
    START,
    call,
    done,
    last_turn_results,
    make_engine,
    request_size,
    script_ran_out,
    system_of,
    three_layers,
    tokens,
    tool_names,
    tool_results,
    turn,
    user_texts,
)

from memwrap.engine.engine import Engine

QUESTION = "Which theme does the user like in their editor?"
TOOLS = {"search_mental_models", "search_observations", "recall", "expand", "done"}


fake = fake_fixture(script_ran_out)
engine = engine_fixture(make_engine)
claude = engine_fixture(make_engine, "anthropic")


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
async def test_the_loop_walks_mental_models_observations_expand_done(
    engine: Engine, claude: Engine, fake: FakeLLMServer, bank: str, provider: str
) -> None:
    eng = engine if provider == "openai" else claude
    layers = await three_layers(eng, bank)
    fake.script(
        [
            turn(call("search_mental_models", query="editor theme")),
            turn(call("search_observations", query="editor theme")),
            turn(call("expand", id="O1")),
            done(
                "The user prefers dark mode in their code editor [O1], said again and again since January [F1].",
                "M1",
                "O1",
                "F1",
                "F99",
            ),
        ]
    )
    result = await eng.reflect(bank, QUESTION, now=NOW)

    assert not result.forced and result.iterations == 4
    assert result.answer.startswith("The user prefers dark mode")
    observation, model = layers["observation"], layers["model"]
    assert result.mental_model_ids == [model.id]
    assert result.memory_ids[0] == observation.id and result.memory_ids[1] in layers["facts"]
    assert result.unknown_ids == ["F99"]  # cited, never shown: dropped and flagged
    assert set(result.citations) == {"M1", "O1", "F1"}
    for memory_id in result.memory_ids:  # the cited ids exist in the bank
        assert (await eng.get(bank, memory_id)).bank_id == bank
    assert (await eng.get_mental_model(bank, "editor")).id == model.id

    # What the model was offered and shown, request by request.
    requests = fake.requests
    assert len(requests) == 4 and {r.provider for r in requests} == {
        "openai.chat" if provider == "openai" else "anthropic.messages"
    }
    assert set(tool_names(requests[0])) == TOOLS
    system = system_of(requests[0])
    assert system.index("search_mental_models") < system.index("search_observations") < system.index("3. recall")
    assert "stale" in system and "does not say" in system
    assert QUESTION in user_texts(requests[0])
    [models_shown] = last_turn_results(requests[1])
    assert models_shown.startswith("Mental models closest to") and "[M1] editor — Which theme" in models_shown
    [observations_shown] = last_turn_results(requests[2])
    assert "[O1] (trend " in observations_shown and "4 sources" in observations_shown
    assert "I prefer dark mode in my code editor." in observations_shown
    [sources] = last_turn_results(requests[3])
    assert sources.startswith("Sources of O1, newest first (4 sources")
    assert sources.count("[F") == 4 and sources.index(DARK_MODE[3]) < sources.index(DARK_MODE[0])

    # The trace: every tool call with its arguments, result size and latency; every LLM turn with its size.
    tools = [e for e in result.trace if e.kind == "tool"]
    assert [(e.name, e.arguments) for e in tools] == [
        ("search_mental_models", {"query": "editor theme"}),
        ("search_observations", {"query": "editor theme"}),
        ("expand", {"id": "O1"}),
        ("done", {"answer": result.answer, "memory_ids": ["M1", "O1", "F1", "F99"]}),
    ]
    for entry, shown in zip(tools[:3], [models_shown, observations_shown, sources], strict=True):
        assert entry.result_chars == len(shown) and entry.result_tokens == tokens(shown)
        assert entry.latency_ms > 0 and entry.cap_tokens and entry.result_tokens <= entry.cap_tokens
    turns = [e for e in result.trace if e.kind == "llm"]
    assert len(turns) == 4 and all(e.request_tokens and e.latency_ms > 0 for e in turns)
    assert result.usage.calls == 4 and result.usage.tool_calls == 4 and result.usage.prompt_tokens > 0
    assert result.usage.latency_ms >= result.usage.llm_ms > 0


async def test_a_stale_observation_says_so(engine: Engine, fake: FakeLLMServer, bank: str) -> None:
    await three_layers(engine, bank)
    fake.script([turn(call("search_observations", query="editor theme")), done("Dark mode, long ago [O1].", "O1")])
    result = await engine.reflect(bank, QUESTION, now=NOW.replace(year=2027))  # no evidence for a year
    [shown] = last_turn_results(fake.requests[1])
    assert "[O1] (STALE — check raw facts; trend stale" in shown
    assert len(result.memory_ids) == 1 and not result.forced


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
async def test_the_iteration_limit_ends_in_a_forced_synthesis(
    engine: Engine, claude: Engine, fake: FakeLLMServer, bank: str, provider: str
) -> None:
    eng = engine if provider == "openai" else claude
    await three_layers(eng, bank)
    fake.script(
        [
            turn(call("recall", query="editor")),
            turn(call("recall", query="sister")),
            done("Dark mode [F1]; memory does not say which editor.", "F1"),
        ]
    )
    result = await eng.reflect(bank, QUESTION, max_iterations=2, now=NOW)
    assert result.forced and result.forced_reason == "iterations" and result.iterations == 2
    assert result.answer == "Dark mode [F1]; memory does not say which editor."
    assert len(result.memory_ids) == 1
    synthesis = fake.requests[2]
    assert tool_names(synthesis) == ["done"]  # a fresh conversation that can only answer
    choice = synthesis.body["tool_choice"]
    assert choice in ({"type": "function", "function": {"name": "done"}}, {"type": "tool", "name": "done"})
    gathered = user_texts(synthesis)
    assert "Gathered from memory:" in gathered and "Maya lives in Lisbon" in gathered and DARK_MODE[0] in gathered
    assert "step limit" in system_of(synthesis)
    # Two turns, each with its tool call; the limit; the synthesis turn, and its `done` call accepted.
    assert [(e.kind, e.name) for e in result.trace] == [
        ("llm", ""),
        ("tool", "recall"),
        ("llm", ""),
        ("tool", "recall"),
        ("limit", "iterations"),
        ("synthesis", ""),
        ("tool", "done"),
    ]
    assert result.trace[-2].error is None and result.trace[-1].error is None


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
async def test_a_context_overflow_from_the_provider_ends_in_a_forced_synthesis(
    engine: Engine, claude: Engine, fake: FakeLLMServer, bank: str, provider: str
) -> None:
    eng = engine if provider == "openai" else claude
    await three_layers(eng, bank)
    overflow = "This model's maximum context length is 8192 tokens. However, your messages resulted in 9001 tokens."
    fake.script(
        [
            turn(call("search_observations", query="editor theme")),
            Reply(status=400, error=overflow),
            done("The user prefers dark mode [O1].", "O1"),
        ]
    )
    result = await eng.reflect(bank, QUESTION, now=NOW)
    assert result.forced and result.forced_reason == "context_overflow"
    assert result.answer == "The user prefers dark mode [O1]." and len(result.memory_ids) == 1
    assert "I prefer dark mode" in user_texts(fake.requests[2])  # the synthesis answers from what was gathered
    failed = [e for e in result.trace if e.kind == "llm" and e.error]
    assert len(failed) == 1 and "context overflow" in failed[0].error


async def test_a_synthesis_that_keeps_overflowing_lists_what_was_gathered(
    engine: Engine, fake: FakeLLMServer, bank: str
) -> None:
    layers = await three_layers(engine, bank)
    overflow = Reply(status=400, error="prompt is too long: 210000 tokens > 200000 maximum")
    fake.script([turn(call("search_observations", query="editor theme"))] + [overflow] * 4)
    result = await engine.reflect(bank, QUESTION, now=NOW)
    assert result.forced and result.forced_reason == "context_overflow"
    assert result.answer.startswith("No answer could be synthesised (the provider's context window overflowed)")
    assert "I prefer dark mode in my code editor." in result.answer
    assert result.memory_ids == [layers["observation"].id]
    sizes = [len(user_texts(r)) for r in fake.requests[2:]]
    assert len(sizes) == 3 and sizes[0] >= sizes[1] >= sizes[2]  # each attempt gets half the room (never more)


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
async def test_several_calls_in_one_turn_share_the_budget_before_they_run(
    engine: Engine, claude: Engine, fake: FakeLLMServer, bank: str, provider: str
) -> None:
    engine = engine if provider == "openai" else claude
    topics = ["hiking in the Alps", "baking sourdough bread", "learning the cello"]
    items = [
        {
            "content": f"Note {i} on {topic}: the user spent the whole weekend on {topic}, wrote down every detail of "
            f"what went well and what did not, and plans to try again with friends next month ({i}).",
            "timestamp": START,
            "document_id": f"notes-{t}:{i}",
        }
        for t, topic in enumerate(topics)
        for i in range(25)
    ]
    await engine.retain_many(bank, items)
    budget = 1800
    raw = [await engine.recall(bank, topic, token_budget=4000, types=["raw"]) for topic in topics]
    assert all(r.tokens > budget for r in raw)  # each alone would overflow the whole budget

    fake.script(
        [turn(*[call("recall", query=topic) for topic in topics]), done("Memory holds notes on all three [F1].", "F1")]
    )
    result = await engine.reflect(bank, "What are the user's hobbies?", context_budget=budget, now=NOW)
    assert not result.forced

    second = fake.requests[1]
    results = last_turn_results(second)
    assert len(results) == 3 and all(r.startswith("Facts for") for r in results)
    entries = [e for e in result.trace if e.kind == "tool" and e.name == "recall"]
    caps = {e.cap_tokens for e in entries}
    assert len(caps) == 1 and all(e.truncated for e in entries)  # one equal share each, all of them cut
    [cap] = caps
    assert all(tokens(r) <= cap for r in results)
    # The request the server received fits the budget: the prompt, the tools, the calls and their results.
    first_turn = result.trace[0].request_tokens
    assert first_turn is not None
    assert sum(tokens(r) for r in tool_results(second)) <= budget - first_turn
    assert request_size(second) <= budget
    assert request_size(second) <= (result.trace[4].request_tokens or 0) <= budget
    assert [e.kind for e in result.trace][:5] == ["llm", "tool", "tool", "tool", "llm"]


async def test_the_context_budget_ends_in_a_forced_synthesis(engine: Engine, fake: FakeLLMServer, bank: str) -> None:
    items = [
        {
            "content": f"Fact {i}: the user's project Orion needs part number {1000 + i} from the Zurich supplier "
            f"before the spring release, and the user wants it tracked closely ({i}).",
            "document_id": f"orion:{i}",
        }
        for i in range(60)
    ]
    await engine.retain_many(bank, items)
    queries = iter(["Orion parts", "Zurich supplier", "spring release", "part numbers", "tracking"] * 3)

    def greedy(request: Any) -> Reply:  # a model that never stops searching, until it can only answer
        if tool_names(request) == ["done"]:
            return done("Orion needs many parts [F1].", "F1")
        return turn(call("recall", query=next(queries)))

    fake.responder = greedy
    result = await engine.reflect(bank, "What does project Orion need?", context_budget=1500, now=NOW)
    assert result.forced and result.forced_reason == "context_budget"
    assert result.answer == "Orion needs many parts [F1]." and len(result.memory_ids) == 1
    assert 2 <= result.iterations < 8
    synthesis = fake.requests[-1]
    assert tool_names(synthesis) == ["done"] and "Orion" in user_texts(synthesis)
    assert all(e.request_tokens is None or e.request_tokens <= 1500 for e in result.trace)


async def test_the_clock_ends_in_a_forced_synthesis(engine: Engine, fake: FakeLLMServer, bank: str) -> None:
    await three_layers(engine, bank)
    fake.script(
        [
            turn(call("search_observations", query="editor theme")),
            Reply(text="too late", delay=3.0),
            done("Dark mode [O1].", "O1"),
        ]
    )
    result = await engine.reflect(bank, QUESTION, timeout=1.5, now=NOW)
    assert result.forced and result.forced_reason == "timeout"
    assert result.answer == "Dark mode [O1]." and len(result.memory_ids) == 1
    assert any(e.kind == "llm" and e.error == "timeout" for e in result.trace)
