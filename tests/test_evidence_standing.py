"""Standing instructions of a coding session come back for the requests they apply to (issue 36).

On generated long technical sessions none of four came back: retain did not recognise "Tests are pytest only,
never unittest classes." or "For logging use structlog, not print." as instructions, "How do I paginate the audit
endpoint?" was no task, and a task whose words name no domain ("Add some diagnostics to the sync daemon.") read
only the instructions of no domain, not the bank's code instructions."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from memwrap import Memory, RetainItem
from memwrap.engine.language.instructions import standing_domain, task_domains

START = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
NOW = datetime(2026, 9, 1, 9, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "domain"),
    [
        ("Tests are pytest only, never unittest classes.", "code"),
        ("For logging use structlog, not print or the bare logging module.", "code"),
        ("Use type hints everywhere, including return types.", "code"),
        ("Stick with pnpm rather than npm for the packages.", "code"),
        ("Keep your answers short.", "any"),
        ("English only, no emojis in my emails.", "writing"),
    ],
)
def test_more_forms_of_a_standing_instruction_are_recognised(text: str, domain: str) -> None:
    assert standing_domain(text, "user") == domain
    assert standing_domain(text, "assistant") is None


@pytest.mark.parametrize(
    "text",
    [
        "We use Postgres, not MySQL, in production.",  # a fact about the system, not a directive
        "I only eat fish, never meat.",  # a habit
        "The build failed twice yesterday.",
        "Caroline: I use a journal for every session.",
    ],
)
def test_statements_that_instruct_nobody_stay_plain(text: str) -> None:
    assert standing_domain(text, "user") is None


def test_asking_how_to_do_a_piece_of_work_is_a_task() -> None:
    assert task_domains("How do I paginate the audit endpoint?") == ["any"]
    assert task_domains("I need to parse ISO dates in the importer, how should I do it?") == ["any"]
    assert task_domains("Clean up this helper and give me the final file.") == ["any"]
    assert task_domains("How do I feel about it?") == []
    assert task_domains("How did Caroline get there?") == []


def _bank(memory: Memory, bank: str, instruction: str) -> None:
    items = [RetainItem(content=f"user: {instruction}", timestamp=START, document_id="prefs:0")]
    items += [
        RetainItem(
            content=f"user: Note {i}: the sync daemon restarted {i} times during the night shift.",
            timestamp=START + timedelta(days=i + 1),
            document_id=f"noise:{i}",
        )
        for i in range(30)
    ]
    memory.retain_many(bank, items)


def test_a_code_instruction_comes_back_for_a_task_whose_words_name_no_domain(memory: Memory, bank: str) -> None:
    instruction = "For logging use structlog, not print or the bare logging module."
    _bank(memory, bank, instruction)
    for request in ("Add some diagnostics to the sync daemon.", "How do I paginate the audit endpoint?"):
        recall = memory.recall(bank, request, token_budget=300, now=NOW)
        assert instruction in recall.context, request
        assert recall.memories[0].arms.get("standing") == 1
    question = memory.recall(bank, "How many times did the sync daemon restart?", token_budget=300, now=NOW)
    assert all("standing" not in m.arms for m in question.memories)


def test_a_writing_task_still_reads_only_its_own_domain(memory: Memory, bank: str) -> None:
    _bank(memory, bank, "Tests are pytest only, never unittest classes.")
    recall = memory.recall(bank, "Draft an email to the landlord about the heating.", token_budget=300, now=NOW)
    assert all("standing" not in m.arms for m in recall.memories)
