"""The two checks extraction makes on a model's facts, without a model: coverage of each sentence, and dates."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pytest

from memwrap.engine.llm.prompt_echo import EchoGuard
from memwrap.engine.retain.coverage import informative, lexically_covered, uncovered
from memwrap.engine.retain.dating import fact_span

TUESDAY = datetime(2026, 12, 1, 9, 30, tzinfo=UTC)


def day(y: int, m: int, d: int, last: int | None = None) -> tuple[datetime, datetime]:
    return (datetime(y, m, d, tzinfo=UTC), datetime(y, m, last or d, 23, 59, 59, 999999, tzinfo=UTC))


@pytest.mark.parametrize(
    ("sentence", "facts", "covered"),
    [
        ("I'm allergic to peanuts.", "The user is allergic to peanuts.", True),  # "allergic" ~ "allergy" stems
        ("I'm allergic to peanuts.", "The user has a peanut allergy.", True),
        ("I'm allergic to peanuts.", "The user started a new job.", False),
        ("My team lead is Zhang Wei; we call him 老张.", "The user's team lead is Zhang Wei.", False),  # key 老张 lost
        ("My team lead is Zhang Wei; we call him 老张.", "The user's team lead is Zhang Wei (老张).", True),
        ("My locker code is 4417.", "The user has a locker code.", False),  # the number is a key term
        ("我下周三要去上海出差。", "用户下周三要去上海出差。", True),
        ("我下周三要去上海出差。", "The user will travel to Shanghai for work.", False),
        ("我下周三要去上海出差。", "用户计划下周三出差。", False),  # the real model's fact: 上海 is gone
        ("我下周三要去上海出差。", "用户下周三将去上海出差。", True),
        ("I'm flying to Berlin next Tuesday.", "The user is flying to Berlin on 2026-12-08.", True),  # time words
    ],
)
def test_a_sentence_is_covered_only_with_its_content_and_key_terms(sentence: str, facts: str, covered: bool) -> None:
    assert lexically_covered(sentence, facts)[0] is covered


@pytest.mark.parametrize(
    ("sentence", "role", "expected"),
    [
        ("Thanks, sounds good!", "user", False),
        ("Hi there!", "user", False),
        ("How are you feeling about the move?", "assistant", False),  # the assistant's questions tell nothing
        ("Which city did you move to?", "user", True),
        ("I moved to Lisbon.", "user", True),
    ],
)
def test_filler_is_not_informative(sentence: str, role: str, expected: bool) -> None:
    assert informative(sentence, role) is expected


def test_the_quoted_phrase_wins_and_the_model_only_narrows() -> None:
    turns = [("I found a flat the other day and signed the lease.", TUESDAY)]
    assert fact_span("the other day", "2026-11-28", None, "The user signed the lease.", turns)[0] == day(2026, 11, 28)
    wide = fact_span("the other day", "2026-10-01", None, "The user signed the lease.", turns)[0]
    assert wide is not None and wide[0] <= day(2026, 11, 28)[0] and wide != day(2026, 10, 1)


def test_a_phrase_the_turns_do_not_contain_is_not_trusted() -> None:
    turns = [("I'm flying to Berlin next Tuesday.", TUESDAY)]
    # The model quotes a phrase that is not there and dates it wrong: the turn's own phrase decides.
    span, text = fact_span("tomorrow", "2026-12-02", None, "The user is flying to Berlin.", turns)
    assert span == day(2026, 12, 8) and text == "The user is flying to Berlin."


@pytest.mark.parametrize(
    ("turn", "phrase", "expected"),
    [
        ("I moved to Lisbon in March.", "in March", day(2026, 3, 1, 31)),  # said in December: the March behind
        ("I started a new job in May.", "in May", day(2026, 5, 1, 31)),
        ("I'll visit Tokyo in March.", "in March", day(2027, 3, 1, 31)),  # future tense: the March ahead
        ("我三月搬到了里斯本。", "三月", day(2026, 3, 1, 31)),
    ],
)
def test_a_quoted_bare_month_takes_the_tense_of_its_turn(turn: str, phrase: str, expected: object) -> None:
    # The model quotes only "in March": cut out of its sentence it has no tense, the turn's clause gives it one.
    assert fact_span(phrase, None, None, "The user moved.", [(turn, TUESDAY)])[0] == expected


def test_a_wrong_date_in_the_fact_is_corrected() -> None:
    turns = [("I'm flying to Berlin next Tuesday.", TUESDAY)]
    span, text = fact_span(None, "2026-12-02", None, "The user flies to Berlin on 2026-12-02.", turns)
    assert span == day(2026, 12, 8) and text == "The user flies to Berlin on 2026-12-08."


def test_a_fact_from_an_undated_clause_stays_undated() -> None:
    turns = [("I started at Lumen Labs last month, and I'm allergic to peanuts.", TUESDAY)]
    assert fact_span(None, None, None, "The user started at Lumen Labs.", turns)[0] == day(2026, 11, 1, 30)
    assert fact_span(None, "2026-12-01", "2026-12-01", "The user is allergic to peanuts.", turns)[0] is None


def test_an_echo_of_the_prompt_is_recognised() -> None:
    guard = EchoGuard('Write the state as "Since <when> <the current state> (before that: <what it replaced>)".')
    assert guard.echoes("Since <when> the user prefers Vue")
    assert guard.echoes("Write the state as since when, please")  # a run of six of the prompt's words
    assert not guard.echoes("Since April 2026 the user prefers Vue (before that: React).")


async def test_a_chinese_sentence_is_not_taken_as_carried_by_embedding_similarity() -> None:
    """The default embedding model reads no Chinese: even when it rates every pair as alike, a Chinese sentence
    whose place name the fact dropped stays uncovered (kept raw); an English paraphrase may still pass."""

    async def alike(texts: list[str]) -> np.ndarray:
        return np.ones((len(texts), 4), dtype=np.float32)

    turns = [("a", "user", "user", "我下周三要去上海出差。"), ("b", "user", "user", "I have a peanut allergy.")]
    facts = {"a": ["用户计划下周三出差。"], "b": ["Peanuts make the user ill."]}
    missing = await uncovered(turns, facts, alike)
    assert missing == {"a": [("user", "我下周三要去上海出差。")]}


@pytest.mark.parametrize(
    ("fact", "expected"),
    [
        ("Started a new job at Lumen Labs last month", "The user started a new job at Lumen Labs last month"),
        ("user is allergic to peanuts", "The user is allergic to peanuts"),
        ("five years at Contoso", "five years at Contoso"),  # no "I five" in the turn: left alone
        ("Lumen Labs hired the user", "Lumen Labs hired the user"),
    ],
)
def test_a_fact_without_its_subject_gets_the_user_back(fact: str, expected: str) -> None:
    from memwrap.engine.language.speakers import with_subject

    said = ["I started a new job at Lumen Labs last month, after five years at Contoso.", "I'm allergic to peanuts."]
    assert with_subject(fact, said) == expected
