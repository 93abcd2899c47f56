"""memwrap.testing: the in-memory engine apps test with (docs/testing.md). Its example runs here as the page
shows it; the double keeps the engine's face (every declared verb, recorded) and the block's frame."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import pytest

from memwrap import testing
from memwrap.block.format import CLOSE_TAG, OPEN_TAG
from memwrap.declare import VERBS
from memwrap.errors import InvalidBankIdError, MemoryNotFoundError

DOC = Path(__file__).resolve().parents[1] / "docs" / "testing.md"


def test_the_documented_example_runs_as_written() -> None:
    [example] = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.DOTALL)
    scope: dict[str, Any] = {}
    exec(compile(example, str(DOC), "exec"), scope)  # noqa: S102 - our own documentation's example
    scope["test_the_app_remembers_the_users_dog"]()


def test_every_declared_verb_is_recorded_then_answered_or_refused_by_name() -> None:
    engine = testing.TestEngine()
    assert all(callable(getattr(engine, name)) for name in VERBS)
    with pytest.raises(NotImplementedError, match="reflect"):
        asyncio.run(engine.reflect("b", "what?"))
    assert engine.calls == [("reflect", engine.called("reflect")[0])]
    assert engine.called("reflect")[0]["query"] == "what?"


def test_recall_finds_by_shared_words_renders_the_block_and_keeps_the_budget() -> None:
    engine = testing.TestEngine()
    with testing.memory(engine) as memory:
        bees, _ = memory.retain_many(
            "b", [{"content": "Alice keeps bees.", "tags": ["home"]}, "Bob drinks green tea every morning."]
        )
        found = memory.recall("b", "Who keeps the bees?")
        assert [m.id for m in found.memories] == [bees]
        assert found.context.startswith(OPEN_TAG + "\n") and found.context.endswith(CLOSE_TAG + "\n")
        assert "- [" in found.context and "Alice keeps bees." in found.context
        assert found.tokens <= found.token_budget
        assert memory.recall("b", "bees", tags=["work"]).memories == []
        assert memory.recall("b", "nothing shared").context == ""
        assert memory.recall("b", "Alice, bees and tea", top_k=1).memories[0].text == "Alice keeps bees."
        assert memory.retain("b", "Alice keeps bees.", tags=["home"]) == [bees]  # the same content: the same id


def test_recall_puts_each_memorys_id_on_its_line_when_asked() -> None:
    with testing.memory() as memory:
        bees, tea = memory.retain_many("b", ["Alice keeps bees.", "Alice drinks green tea every morning."])
        plain = memory.recall("b", "Alice")
        named = memory.recall("b", "Alice", ids_in_block=True)
        lines = named.context.splitlines()[2:-1]
        assert [line.split(")", 1)[0] for line in lines] == [f"- (id {m.id}" for m in named.memories]
        assert {m.id for m in named.memories} == {bees, tea}
        assert re.sub(r"\(id [0-9a-f-]{36}\) ", "", named.context) == plain.context
        assert named.tokens > plain.tokens  # the ids are counted in the budget
        tight = memory.recall("b", "Alice", ids_in_block=True, token_budget=plain.tokens)
        assert len(tight.memories) < 2 and tight.tokens <= plain.tokens


def test_the_catalog_and_errors_are_the_engines() -> None:
    with testing.memory() as memory:
        [memory_id] = memory.retain("b", "The user's dog is Biscuit.")
        assert memory.get("b", memory_id).text == "The user's dog is Biscuit."
        assert memory.update("b", memory_id, text="The user's dog is Rex.").text == "The user's dog is Rex."
        assert [b.bank_id for b in memory.banks()] == ["b"] and memory.bank_stats("b").memories == 1
        memory.delete("b", memory_id)
        with pytest.raises(MemoryNotFoundError):
            memory.get("b", memory_id)
        with pytest.raises(InvalidBankIdError):
            memory.retain("not a bank id!", "x")
        assert memory.jobs("b") == [] and memory.wait_for_jobs("b") is True
        assert memory.delete_bank("b") == 0


async def test_async_memory_on_the_double() -> None:
    engine = testing.TestEngine()
    async with testing.async_memory(engine) as memory:
        await memory.retain("b", "Carol plays the cello.")
        assert (await memory.recall("b", "cello")).memories[0].text == "Carol plays the cello."
    assert [name for name, _ in engine.calls] == ["retain", "recall", "close"]
