"""Statements of change and what they replace (memwrap/engine/language/changes.py), read without an LLM."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memwrap.engine.language.changes import Statement, asks_past, asks_present, replaces, states_change

EARLY, LATE = datetime(2026, 1, 10, tzinfo=UTC), datetime(2026, 11, 20, tzinfo=UTC)


def said(text: str, when: datetime) -> Statement:
    speaker = text.split(":", 1)[0] if ":" in text[:12] else None
    return Statement(text, speaker, when)


@pytest.mark.parametrize(
    ("older", "newer"),
    [
        ("user: I use Neovim for all my coding", "user: Actually I switched to VS Code last week"),
        ("user: I use Neovim and prefer Python over Go", "user: Actually I switched to VS Code last week"),
        ("user: I live in Lisbon", "user: I moved to Berlin in October"),
        ("user: I'm vegetarian", "user: I'm no longer vegetarian, I eat fish now"),
        ("user: I drink coffee every morning", "user: I stopped drinking coffee, only tea now"),
        ("user: I drink coffee every morning", "user: I don't drink coffee anymore"),
        ("user: I play tennis on weekends", "user: I switched from tennis to padel"),
        ("Alice: I work at Google", "Alice: I left Google and joined a startup"),
        ("user: I work at Google on the Cloud team", "user: Good news, I got a new job at Stripe!"),
        ("user: I prefer React for frontend work", "user: These days I prefer Vue for frontend work."),
        ("The user lives in Leeds.", "The user moved to York in March."),
        ("user: 我住在上海", "user: 我上个月搬到北京了"),
        ("user: 我用微信支付", "user: 我现在改用支付宝了"),
        ("user: 我每天喝咖啡", "user: 我不再喝咖啡了"),
    ],
)
def test_a_newer_statement_of_change_replaces_the_older(older: str, newer: str) -> None:
    assert replaces(said(newer, LATE), said(older, EARLY))
    assert not replaces(said(older, LATE), said(newer, EARLY))  # the change must be the newer one
    assert not replaces(said(newer, EARLY), said(older, EARLY))  # and said later


@pytest.mark.parametrize(
    ("older", "newer"),
    [
        ("user: My sister lives in Berlin", "user: I moved to Berlin in October"),  # another subject
        ("user: I love hiking in the mountains", "user: Actually I switched to VS Code last week"),  # another topic
        ("user: I drink coffee every morning", "user: I'm no longer vegetarian, I eat fish now"),
        ("user: My favourite colour is teal", "user: I switched to a standing desk"),
        ("user: 我每天喝咖啡", "user: 我上个月搬到北京了"),
        ("Alice: I work at Google", "Bob: I left Google and joined a startup"),  # another speaker
    ],
)
def test_a_change_of_something_else_replaces_nothing(older: str, newer: str) -> None:
    assert not replaces(said(newer, LATE), said(older, EARLY))


@pytest.mark.parametrize(
    "text",
    [
        # Chat tells of change all the time without stating one: narration, habits, plans, present states.
        "Caroline: I've known these friends for 4 years, since I moved from my home country.",
        "Joanna: I used to have a dog back in Michigan with that name.",
        "Tim: I'm currently reading a fantasy novel. It's really good!",
        "Tim: I had a tough exam last week, but instead of giving up, I studied harder.",
        "John: We're planning to take a team trip to explore a new city next month.",
        "Maria: Last week I dropped off the stuff I baked at the shelter.",
        "Nate: Any more tips for dairy-free baking?",
    ],
)
def test_narration_is_no_statement_of_change(text: str) -> None:
    assert not states_change(text)


def test_questions_about_now_and_about_before() -> None:
    assert asks_present("Which editor do I use now?") and asks_present("我现在住在哪里？")
    assert asks_past("Which editor did I use before?") and asks_past("我以前住在哪里？")
    assert not asks_present("What did I do last spring?") and not asks_past("Who is my cello teacher?")


def test_every_change_rule_matches_its_example_and_names_itself() -> None:
    from memwrap.engine.language.change_rules import CHANGE_RULES, change_rules

    assert len({rule.name for rule in CHANGE_RULES}) == len(CHANGE_RULES) >= 30
    for rule in CHANGE_RULES:
        assert rule.name in change_rules(rule.example), rule
