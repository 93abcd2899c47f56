"""One recall over several banks: one budget, each memory names its bank, ranks merged by relevance."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from memwrap import Memory
from memwrap.errors import InvalidInputError


def engine(memory: Memory) -> Any:
    return memory._run(memory.aio._get_engine())


def test_a_user_bank_and_a_team_bank_in_one_recall(memory: Memory) -> None:
    alice, team = f"alice-{uuid.uuid4().hex[:6]}", f"team-kb-{uuid.uuid4().hex[:6]}"
    memory.retain_many(
        alice, ["I prefer dark mode in my code editor.", "My cat is called Miso.", "I am allergic to peanuts."]
    )
    # A busy shared bank: many memories, one of them the answer.
    memory.retain_many(
        team,
        ["The deploy runbook lives in the ops wiki under /runbooks/deploy."]
        + [f"Sprint {i} retro notes: we discussed ticket triage and standups." for i in range(40)],
    )
    eng = engine(memory)
    both = memory._run(eng.recall([alice, team], "where is the deploy runbook?", token_budget=400))
    assert both.bank_ids == [alice, team] and both.bank_id == alice
    assert both.memories[0].bank_id == team and "runbook" in both.memories[0].text
    assert both.tokens <= 400
    mine = memory._run(eng.recall([alice, team], "what is my cat called?", top_k=3))
    assert mine.memories[0].bank_id == alice and "Miso" in mine.memories[0].text  # the small bank is not crowded out
    assert {m.bank_id for m in memory._run(eng.recall([alice, team], "anything", top_k=50)).memories} == {alice, team}
    # One bank alone gives what it gave before (its memories tagged with the bank).
    solo = memory._run(eng.recall(alice, "what is my cat called?", top_k=3))
    assert [m.id for m in solo.memories] == [
        m.id for m in memory._run(eng.recall([alice], "what is my cat called?", top_k=3)).memories
    ]
    assert all(m.bank_id == alice for m in solo.memories)
    # A bank that holds nothing (or does not exist) adds nothing.
    assert [m.id for m in memory._run(eng.recall([alice, "nobody-here"], "my cat", top_k=3)).memories] == [
        m.id for m in memory._run(eng.recall(alice, "my cat", top_k=3)).memories
    ]


def test_bank_lists_are_checked(memory: Memory) -> None:
    eng = engine(memory)
    with pytest.raises(InvalidInputError):
        memory._run(eng.recall([], "x"))
    with pytest.raises(InvalidInputError):
        memory._run(eng.recall(["ok", "not ok!"], "x"))
    with pytest.raises(InvalidInputError):
        memory._run(eng.recall([f"b{i}" for i in range(17)], "x"))
