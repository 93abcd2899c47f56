"""Reflect's options: none mode, disposition (per bank and per call), structured output, expand, tag scope, and
models that answer without `done` or call it wrongly. The fake server is the model, as in test_reflect.py."""

from __future__ import annotations

import pytest
from fakes.llm_server import FakeLLMServer, Reply
from llm_fixtures import engine_fixture, fake_fixture
from pydantic import BaseModel
from reflect_support import (
    NOW,
    START,
    call,
    done,
    last_turn_results,
    make_engine,
    script_ran_out,
    system_of,
    three_layers,
    tool_names,
    turn,
)

from memwrap import Memory
from memwrap.engine.engine import Engine
from memwrap.errors import InvalidInputError, LLMNotConfiguredError

QUESTION = "Which theme does the user like in their editor?"


fake = fake_fixture(script_ran_out)
engine = engine_fixture(make_engine)
claude = engine_fixture(make_engine, "anthropic")


def test_none_mode_says_how_to_configure_an_llm(memory: Memory, bank: str) -> None:
    memory.retain(bank, "I prefer dark mode in my code editor.")
    with pytest.raises(LLMNotConfiguredError) as raised:
        memory.reflect(bank, QUESTION)
    message = str(raised.value)
    assert "MEMWRAP_LLM_PROVIDER=openai or anthropic" in message and "MEMWRAP_REFLECT_PROVIDER" in message
    assert "use_llm" in message and raised.value.code == "llm_not_configured"


async def test_disposition_is_stored_per_bank_and_overridden_per_call(
    engine: Engine, fake: FakeLLMServer, bank: str
) -> None:
    stored = await engine.configure_bank(bank, disposition={"skepticism": 5, "directives": ["Answer in one sentence."]})
    assert stored["disposition"] == {"skepticism": 5, "directives": ["Answer in one sentence."]}
    await engine.retain_many(bank, ["I prefer dark mode in my code editor."])

    # (an answer before any lookup would be refused: the bank is not empty; so would an uncited one after it)
    fake.script([turn(call("recall", query="editor theme")), done("Dark mode [F1].", "F1")])
    result = await engine.reflect(bank, QUESTION, disposition={"empathy": 1, "literalism": 5})
    system = system_of(fake.requests[0])
    assert "Skepticism 5/5: Treat every memory as a claim" in system
    assert "Literalism 5/5: Answer exactly what was asked" in system
    assert "Empathy 1/5: Be matter-of-fact" in system and "- Answer in one sentence." in system
    assert result.disposition.model_dump() == {
        "skepticism": 5,
        "literalism": 5,
        "empathy": 1,
        "directives": ["Answer in one sentence."],
    }
    assert result.answer == "Dark mode [F1]." and len(result.memory_ids) == 1 and not result.forced

    # Neutral traits say nothing: the default prompt has no disposition section at all.
    await engine.configure_bank(bank, disposition=None)
    fake.script([turn(call("recall", query="editor theme")), done("Dark mode [F1].", "F1")])
    await engine.reflect(bank, QUESTION)
    assert "Disposition" not in system_of(fake.requests[2])


async def test_bad_options_are_refused_before_any_llm_call(engine: Engine, fake: FakeLLMServer, bank: str) -> None:
    with pytest.raises(InvalidInputError, match="skepticism"):
        await engine.configure_bank(bank, disposition={"skepticism": 9})
    with pytest.raises(InvalidInputError, match="Invalid disposition"):
        await engine.reflect(bank, QUESTION, disposition={"curiosity": 4})
    with pytest.raises(InvalidInputError, match="max_iterations"):
        await engine.reflect(bank, QUESTION, max_iterations=0)
    with pytest.raises(InvalidInputError, match="response_schema"):
        await engine.reflect(bank, QUESTION, response_schema=str)
    with pytest.raises(InvalidInputError, match="not a valid JSON schema"):
        await engine.reflect(bank, QUESTION, response_schema={"type": "banana"})
    with pytest.raises(InvalidInputError, match="cannot hold reflect's own prompt"):
        await engine.reflect(bank, QUESTION, context_budget=300)
    assert fake.requests == []


class Theme(BaseModel):
    name: str
    since: str | None = None


class EditorAnswer(BaseModel):
    theme: Theme
    confidence: float


async def test_a_pydantic_response_schema_is_validated_and_a_bad_one_sent_back(
    engine: Engine, fake: FakeLLMServer, bank: str
) -> None:
    await three_layers(engine, bank)
    fake.script(
        [
            turn(call("search_observations", query="editor theme")),
            done("Dark mode [O1].", "O1", structured={"theme": {"name": "dark"}}),  # confidence missing
            done(
                "Dark mode [O1].", "O1", structured={"theme": {"name": "dark", "since": "January"}, "confidence": 0.9}
            ),
        ]
    )
    result = await engine.reflect(bank, QUESTION, response_schema=EditorAnswer, now=NOW)
    assert result.structured == EditorAnswer(theme=Theme(name="dark", since="January"), confidence=0.9)
    assert result.iterations == 3 and len(result.memory_ids) == 1

    done_tool = next(t for t in fake.requests[0].body["tools"] if t["function"]["name"] == "done")["function"]
    parameters = done_tool["parameters"]
    assert parameters["required"] == ["answer", "memory_ids", "structured"]
    assert parameters["properties"]["structured"]["properties"]["theme"] == {"$ref": "#/$defs/Theme"}
    assert "Theme" in parameters["$defs"]  # hoisted to the root, where the reference points
    [rejected] = last_turn_results(fake.requests[2])
    assert rejected.startswith("`done` was not accepted: `structured` does not fit the schema (confidence")
    assert [e.error is not None for e in result.trace if e.name == "done"] == [True, False]


async def test_a_json_response_schema_with_anthropic(claude: Engine, fake: FakeLLMServer, bank: str) -> None:
    await three_layers(claude, bank)
    schema = {
        "type": "object",
        "properties": {"theme": {"type": "string", "enum": ["dark", "light"]}},
        "required": ["theme"],
    }
    fake.script(
        [
            turn(call("recall", query="editor theme")),
            done("Dark mode [F1]? Memory does not say since when.", "O9", structured={"theme": "dark"}),
        ]
    )
    result = await claude.reflect(bank, QUESTION, response_schema=schema, now=NOW)
    assert result.structured == {"theme": "dark"}
    assert result.unknown_ids == ["O9"] and result.citations.keys() == {"F1"}  # O9 was never shown
    request = fake.requests[0]
    [done_tool] = [t for t in request.body["tools"] if t["name"] == "done"]
    assert done_tool["input_schema"]["properties"]["structured"]["properties"]["theme"]["enum"] == ["dark", "light"]


async def test_a_plain_text_answer_and_a_malformed_call(engine: Engine, fake: FakeLLMServer, bank: str) -> None:
    await three_layers(engine, bank)
    fake.script(
        [
            turn(
                call("search_observations", query="editor theme"), call("remember", text="x"), call("expand", id="F42")
            ),
            Reply(text="The user prefers dark mode (O1)."),
        ]
    )
    result = await engine.reflect(bank, QUESTION, now=NOW)
    unknown_tool, bad_ref = last_turn_results(fake.requests[1])[1:]
    assert unknown_tool.startswith("There is no tool 'remember'")
    assert bad_ref.startswith("Unknown reference 'F42'")
    assert result.answer == "The user prefers dark mode (O1)." and not result.forced
    assert len(result.memory_ids) == 1 and result.citations.keys() == {"O1"}  # cited inline
    errors = [e for e in result.trace if e.kind == "tool" and e.error]
    assert [e.name for e in errors] == ["remember", "expand"]


async def test_expand_shows_a_fact_in_its_conversation_within_the_tag_scope(
    engine: Engine, fake: FakeLLMServer, bank: str
) -> None:
    turns = [
        "user: We adopted a puppy called Biscuit!",
        "assistant: Congratulations! What breed is Biscuit?",
        "user: A beagle, and he already chewed my slippers.",
        "user: Also, work is busy this week.",
    ]
    await engine.retain_many(
        bank,
        [
            {"content": text, "document_id": f"chat-7:{i}", "timestamp": START, "tags": ["home" if i < 3 else "work"]}
            for i, text in enumerate(turns)
        ],
    )
    fake.script(
        [
            turn(call("recall", query="breed of the puppy")),
            turn(call("expand", id="F1")),
            done("Biscuit is a beagle [F1].", "F1"),
        ]
    )
    result = await engine.reflect(bank, "What breed is the user's dog?", tags=["home"], now=NOW)
    [facts] = last_turn_results(fake.requests[1])
    assert "work is busy" not in facts
    [conversation] = last_turn_results(fake.requests[2])
    lines = conversation.splitlines()
    assert lines[0] == "F1 in its conversation, in order (→ marks it):"
    assert [line.split("] ", 2)[-1] for line in lines[1:]] == turns[:3]  # the tagged turns, in order
    assert sum(line.startswith("→ [F1]") for line in lines) == 1
    assert result.memory_ids and tool_names(fake.requests[0])
