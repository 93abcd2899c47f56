"""Reflect on servers whose model cannot make native tool calls: tool calls written as text, a refused named
tool_choice, the JSON-schema "next action" protocol, replies that violate the schema; and the rule that a final
answer before any lookup is refused (unless the bank is empty)."""

from __future__ import annotations

from typing import Any

from fakes.llm_server import FakeLLMServer, Reply, ToolCall
from llm_fixtures import fake_fixture
from reflect_support import DARK_MODE, NOW, START, call, done, make_engine, script_ran_out, turn

from memwrap.engine.engine import Engine

QUESTION = "Which theme does the user like in their editor?"
fake = fake_fixture(script_ran_out)

# What a small server answers to the capability probe: named tool_choice refused (the fake does that itself),
# the tool call written as text, the JSON schema followed.
PROBE = [Reply(tool_calls=[ToolCall("lookup", {"query": "weather"})]), Reply(json={"ok": True})]


async def facts(engine: Engine, bank: str) -> list[Any]:
    return await engine.retain_many(bank, [{"content": DARK_MODE[0], "timestamp": START}])


async def existing(engine: Engine, bank: str, ids: list[Any]) -> bool:
    found = [(await engine.get(bank, i)).bank_id for i in ids]
    return bool(ids) and found == [bank] * len(ids)


async def test_tool_calls_written_as_text_are_run(memwrap_home, fake: FakeLLMServer, bank: str) -> None:
    engine = await make_engine(memwrap_home, fake)  # native protocol (told), but the model writes calls as text
    try:
        await facts(engine, bank)
        fake.tools_as_text = True
        fake.script([turn(call("recall", query="editor theme")), done("Dark mode [F1].", "F1")])
        result = await engine.reflect(bank, QUESTION, now=NOW)
        assert (
            not result.forced and result.answer == "Dark mode [F1]." and await existing(engine, bank, result.memory_ids)
        )
        assert [e.name for e in result.trace if e.kind == "tool"] == ["recall", "done"]
        assert fake.requests[0].reply is not None and "recall" in (fake.requests[0].reply.text or "")  # it was text
    finally:
        await engine.close()


async def test_the_json_protocol_on_a_server_without_native_tools(memwrap_home, fake: FakeLLMServer, bank: str) -> None:
    engine = await make_engine(memwrap_home, fake, llm_tool_protocol="auto")
    try:
        await facts(engine, bank)
        fake.tools_as_text = fake.refuse_named_tool_choice = True
        fake.script(
            [
                *PROBE,
                {"action": "recall", "query": "editor theme"},
                {"nonsense": True},  # violates the schema: re-asked once
                {"action": "done", "answer": "The user prefers dark mode [F1].", "memory_ids": ["F1"]},
            ]
        )
        result = await engine.reflect(bank, QUESTION, now=NOW)
        assert not result.forced and result.answer == "The user prefers dark mode [F1]."
        assert await existing(engine, bank, result.memory_ids)
        loop = fake.requests[3:]  # after the probe (3 requests: named refused, auto, schema)
        assert all(
            "tools" not in r.body and r.body["response_format"]["json_schema"]["name"] == "next_action" for r in loop
        )
        schema = loop[0].body["response_format"]["json_schema"]["schema"]
        assert {b["properties"]["action"]["enum"][0] for b in schema["anyOf"]} == {
            "search_mental_models",
            "search_observations",
            "recall",
            "expand",
            "done",
        }
        second = loop[1].body["messages"]
        assert second[-2] == {"role": "assistant", "content": '{"action": "recall", "query": "editor theme"}'}
        assert second[-1]["role"] == "user" and "[F1]" in second[-1]["content"]
        assert "could not be used" in loop[2].body["messages"][-1]["content"]  # the re-ask
        assert [e.detail for e in result.trace if e.kind == "llm"] == ["json: recall", "json: done"]
    finally:
        await engine.close()


async def test_a_refused_named_tool_choice_still_ends_in_a_forced_synthesis(
    memwrap_home, fake: FakeLLMServer, bank: str
) -> None:
    engine = await make_engine(memwrap_home, fake, llm_tool_protocol="auto")
    try:
        await facts(engine, bank)
        fake.refuse_named_tool_choice = True  # native tool calls work, the named form does not
        fake.script(
            [
                Reply(tool_calls=[ToolCall("lookup", {"query": "weather"})]),
                Reply(json={"ok": True}),
                turn(call("recall", query="editor theme")),
                done("Dark mode [F1].", "F1"),  # the synthesis
            ]
        )
        result = await engine.reflect(bank, QUESTION, now=NOW, max_iterations=1)
        assert result.forced and result.forced_reason == "iterations"
        assert result.answer == "Dark mode [F1]." and await existing(engine, bank, result.memory_ids)
        assert fake.requests[-1].body["tool_choice"] == "required"
        assert [t["function"]["name"] for t in fake.requests[-1].body["tools"]] == ["done"]
    finally:
        await engine.close()


async def test_an_answer_before_any_lookup_is_refused(memwrap_home, fake: FakeLLMServer, bank: str) -> None:
    engine = await make_engine(memwrap_home, fake)
    try:
        await facts(engine, bank)
        fake.script(
            [
                done("The user likes light mode."),  # invented, nothing looked up: refused, told to look first
                Reply(text="Light mode."),  # again: the agent recalls the question itself
                done("Dark mode [F1].", "F1"),
            ]
        )
        result = await engine.reflect(bank, QUESTION, now=NOW)
        assert (
            not result.forced and result.answer == "Dark mode [F1]." and await existing(engine, bank, result.memory_ids)
        )
        tools = [(e.name, e.arguments.get("automatic"), bool(e.error)) for e in result.trace if e.kind == "tool"]
        assert tools == [("done", None, True), ("recall", True, False), ("done", None, False)]
        second = fake.requests[1].body["messages"]
        assert "nothing has been looked up yet" in second[-1]["content"]
    finally:
        await engine.close()


async def test_an_uncited_answer_after_a_lookup_is_refused(memwrap_home, fake: FakeLLMServer, bank: str) -> None:
    # The local model in run G: recall showed the answer, then `done` answered from its own guess, citing nothing.
    engine = await make_engine(memwrap_home, fake)
    try:
        await facts(engine, bank)
        fake.script([turn(call("recall", query="editor theme")), done("Light mode."), done("Dark mode [F1].", "F1")])
        result = await engine.reflect(bank, QUESTION, now=NOW)
        assert (
            not result.forced and result.answer == "Dark mode [F1]." and await existing(engine, bank, result.memory_ids)
        )
        tools = [(e.name, bool(e.error)) for e in result.trace if e.kind == "tool"]
        assert tools == [("recall", False), ("done", True), ("done", False)]
        assert "cites nothing" in str(fake.requests[2].body["messages"][-1]["content"])
        # "Cited" with what names nothing shown (run K: the model filled memory_ids with its own words): uncited.
        fake.script(
            [turn(call("recall", query="editor theme")), done("Light mode.", "React.js"), done("Dark mode [F1].", "F1")]
        )
        named = await engine.reflect(bank, QUESTION, now=NOW)
        assert not named.forced and named.answer == "Dark mode [F1]." and await existing(engine, bank, named.memory_ids)
        # A reference written in the answer that names nothing shown is no citation either.
        fake.script(
            [turn(call("recall", query="editor theme")), done("Light mode [F9]."), done("Dark mode [F1].", "F1")]
        )
        inline = await engine.reflect(bank, QUESTION, now=NOW)
        assert not inline.forced and inline.answer == "Dark mode [F1]."
        # Uncited twice (run H: "Their team leader is John Smith" after a recall showed Zhang Wei): a forced
        # synthesis answers from what was shown, and says why.
        fake.script(
            [
                turn(call("recall", query="editor theme")),
                Reply(text="Light mode."),
                Reply(text="Light mode."),
                done("Dark mode [F1].", "F1"),
            ]
        )
        again = await engine.reflect(bank, QUESTION, now=NOW)
        assert again.forced and again.forced_reason == "uncited" and again.answer == "Dark mode [F1]."
        assert await existing(engine, bank, again.memory_ids)
        assert "without citing" in str(fake.requests[-1].body["messages"][0]["content"])
    finally:
        await engine.close()


async def test_an_empty_bank_may_be_answered_at_once(memwrap_home, fake: FakeLLMServer, bank: str) -> None:
    engine = await make_engine(memwrap_home, fake)
    try:
        fake.script([done("Memory holds nothing about this yet.")])
        result = await engine.reflect(bank, QUESTION, now=NOW)
        assert result.answer == "Memory holds nothing about this yet." and result.iterations == 1 and not result.forced
    finally:
        await engine.close()


async def test_a_model_that_never_looks_ends_forced_with_its_reason(
    memwrap_home, fake: FakeLLMServer, bank: str
) -> None:
    engine = await make_engine(memwrap_home, fake)
    try:
        await facts(engine, bank)
        fake.script([done("A guess."), done("A guess."), done("Dark mode [F1].", "F1")])
        result = await engine.reflect(bank, QUESTION, now=NOW, max_iterations=2)
        assert result.forced and result.forced_reason == "iterations"
        assert await existing(engine, bank, result.memory_ids)  # the agent's own lookup gave it something to cite
    finally:
        await engine.close()


async def test_the_capability_probe_is_not_charged_to_the_question(
    memwrap_home, fake: FakeLLMServer, bank: str
) -> None:
    # A slow local server takes longer to answer the three probe requests than the whole loop may take: the
    # question still gets its own time (the probe is once per model, not this question's work).
    engine = await make_engine(memwrap_home, fake, llm_tool_protocol="auto", reflect_timeout=3.0)
    try:
        await facts(engine, bank)
        fake.tools_as_text = fake.refuse_named_tool_choice = True
        fake.script(
            [
                Reply(tool_calls=[ToolCall("lookup", {"query": "weather"})], delay=2.0),
                Reply(json={"ok": True}, delay=2.0),
                {"action": "recall", "query": "editor theme"},
                {"action": "done", "answer": "The user prefers dark mode [F1].", "memory_ids": ["F1"]},
            ]
        )
        result = await engine.reflect(bank, QUESTION, now=NOW)
        assert not result.forced and result.answer == "The user prefers dark mode [F1]."
        assert await existing(engine, bank, result.memory_ids)
    finally:
        await engine.close()


async def test_a_fallback_with_nothing_gathered_looks_the_question_up(
    memwrap_home, fake: FakeLLMServer, bank: str
) -> None:
    # The model spends the loop's time on one slow turn and the synthesis times out too: the answer lists what a
    # recall of the question finds, and cites it, instead of "nothing was found".
    engine = await make_engine(
        memwrap_home, fake, llm_tool_protocol="json", reflect_timeout=1.0, reflect_synthesis_timeout=1.0
    )
    try:
        await facts(engine, bank)
        fake.script(
            [
                Reply(json={"action": "expand", "id": "F9"}, delay=3.0),
                Reply(json={"action": "done", "answer": "late"}, delay=3.0),
            ]
        )
        result = await engine.reflect(bank, QUESTION, now=NOW)
        assert result.forced and result.forced_reason == "timeout"
        assert "dark mode" in result.answer and await existing(engine, bank, result.memory_ids)
        assert [(e.name, e.arguments.get("automatic")) for e in result.trace if e.kind == "tool"] == [("recall", True)]
    finally:
        await engine.close()


async def test_a_failed_lookup_does_not_count_as_looking(memwrap_home, fake: FakeLLMServer, bank: str) -> None:
    # The local model expanded an id it was never shown, then answered from nothing: refused, it looks, it cites.
    engine = await make_engine(memwrap_home, fake, llm_tool_protocol="json")
    try:
        await facts(engine, bank)
        fake.script(
            [
                {"action": "expand", "id": "F9"},
                {"action": "done", "answer": "The user has no preference.", "memory_ids": []},
                {"action": "recall", "query": "editor theme"},
                {"action": "done", "answer": "Dark mode [F1].", "memory_ids": ["F1"]},
            ]
        )
        result = await engine.reflect(bank, QUESTION, now=NOW)
        assert (
            not result.forced and result.answer == "Dark mode [F1]." and await existing(engine, bank, result.memory_ids)
        )
        tools = [(e.name, bool(e.error)) for e in result.trace if e.kind == "tool"]
        assert tools == [("expand", True), ("done", True), ("recall", False), ("done", False)]
    finally:
        await engine.close()


async def test_searching_empty_layers_is_not_looking(memwrap_home, fake: FakeLLMServer, bank: str) -> None:
    # The local model searched the mental models and observations (none yet: the bank has only facts) and then
    # answered from its general knowledge: refused; the second time the agent recalls the question itself.
    engine = await make_engine(memwrap_home, fake, llm_tool_protocol="json")
    try:
        await facts(engine, bank)
        fake.script(
            [
                {"action": "search_mental_models", "query": "editor theme"},
                {"action": "search_observations", "query": "editor theme"},
                {"action": "done", "answer": "Popular themes are light and dark.", "memory_ids": []},
                {"action": "done", "answer": "Popular themes are light and dark.", "memory_ids": []},
                {"action": "done", "answer": "Dark mode [F1].", "memory_ids": ["F1"]},
            ]
        )
        result = await engine.reflect(bank, QUESTION, now=NOW)
        assert (
            not result.forced and result.answer == "Dark mode [F1]." and await existing(engine, bank, result.memory_ids)
        )
        tools = [(e.name, e.arguments.get("automatic"), bool(e.error)) for e in result.trace if e.kind == "tool"]
        assert tools == [
            ("search_mental_models", None, False),
            ("search_observations", None, False),
            ("done", None, True),
            ("done", None, True),
            ("recall", True, False),
            ("done", None, False),
        ]
    finally:
        await engine.close()


async def test_a_synthesis_after_nothing_was_shown_answers_from_a_recall(
    memwrap_home, fake: FakeLLMServer, bank: str
) -> None:
    # The local model's path in the tier: a failed expand and an empty search until the iterations ran out, then a
    # synthesis that answered "avoid fast food" from general knowledge. Now the synthesis gets the question recalled.
    engine = await make_engine(memwrap_home, fake, llm_tool_protocol="json")
    try:
        await facts(engine, bank)
        fake.script(
            [
                {"action": "expand", "id": "F9"},
                {"action": "search_mental_models", "query": "editor theme"},
                {"action": "done", "answer": "Dark mode [F1].", "memory_ids": ["F1"]},  # the synthesis
            ]
        )
        result = await engine.reflect(bank, QUESTION, now=NOW, max_iterations=2)
        assert result.forced and result.forced_reason == "iterations"
        assert result.answer == "Dark mode [F1]." and await existing(engine, bank, result.memory_ids)
        synthesis = fake.requests[-1].body["messages"][-1]["content"]
        assert "dark mode" in synthesis.casefold() and "[F1]" in synthesis
    finally:
        await engine.close()
