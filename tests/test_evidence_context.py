"""Chunks of a long message are embedded without the session's context and give none (issue 36).

A short statement inside a long prompt ("Staging is reachable on :8443." after pasted code) or right after a long
answer's last chunk was embedded after 300 characters of that code or prose, and its vector moved away from the
questions it answers (bench/long_session/diagnose.py). The texts handed to the embedder are checked."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from test_retain_context import embedded  # noqa: F401 - the fixture: every text the embedder is asked

from memwrap import Memory, RetainItem
from memwrap.engine.embed.unit_text import CONTEXT_FREE_CHARS
from memwrap.engine.retain.prepare import prepare_item

START = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
CODE = "\n".join(f"    result_{i} = compute_value(data_{i}, retries=3, timeout=30)  # step {i}" for i in range(15))
STATEMENT = "By the way, staging is reachable on port 8443 now."
LONG_PROMPT = (
    f"user: Here is the loader:\n```python\ndef load():\n{CODE}\n```\n"
    f"It times out on the big tenants, every retry waits the full thirty seconds. {STATEMENT}"
)
LONG_ANSWER = "assistant: " + " ".join(
    f"Step {i} of the migration copies the table in batches of {i}00 rows and checks the counts." for i in range(30)
)
SHORT_REPLY = "user: Thanks, that works."
SHORT_QUESTION = "user: Which port is staging on?"


def _item(text: str, turn: int) -> RetainItem:
    return RetainItem(content=text, document_id=f"s1:{turn}", timestamp=START + timedelta(minutes=turn))


def _chunks(text: str) -> list[str]:
    """The stored texts of a message's units, as retain prepares them."""
    return [u.text for u in prepare_item(RetainItem(content=text), now=START, defense_policy="off").units]


def test_the_chunks_of_a_long_message_are_embedded_alone(memory: Memory, bank: str, embedded: list[str]) -> None:
    chunks = _chunks(LONG_PROMPT)
    assert len(chunks) > 1 and chunks[-1].endswith(STATEMENT) and len(chunks[-1]) < CONTEXT_FREE_CHARS
    memory.retain_many(bank, [_item(SHORT_QUESTION, 0), _item(LONG_PROMPT, 1)])
    for chunk in chunks:
        assert chunk in embedded  # alone: not after the chunk (or the turn) before it
    assert not any(text.endswith(chunks[-1]) and text != chunks[-1] for text in embedded)


def test_a_short_turn_after_a_long_message_takes_no_context_from_its_last_chunk(
    memory: Memory, bank: str, embedded: list[str]
) -> None:
    assert len(_chunks(LONG_ANSWER)) > 1
    memory.retain_many(bank, [_item(LONG_ANSWER, 0), _item(SHORT_REPLY, 1)])
    assert SHORT_REPLY in embedded
    # Also when the long message was stored by an earlier retain (the context is read back from the bank).
    memory.retain_many(bank, [_item(SHORT_QUESTION, 2)])
    memory.retain_many(bank, [_item(LONG_ANSWER.replace("Step", "Phase"), 3)])
    memory.retain_many(bank, [_item(SHORT_REPLY.replace("Thanks", "Great"), 4)])
    assert SHORT_REPLY.replace("Thanks", "Great") in embedded


def test_a_short_reply_to_a_short_turn_keeps_its_context(memory: Memory, bank: str, embedded: list[str]) -> None:
    memory.retain_many(bank, [_item(SHORT_QUESTION, 0), _item(SHORT_REPLY, 1)])
    assert f"{SHORT_QUESTION}\n{SHORT_REPLY}" in embedded


def test_reembed_and_import_embed_each_unit_as_retain_did(
    memory: Memory, bank: str, embedded: list[str], tmp_path: Any
) -> None:
    """One rule for every writer of vectors (unit_text.embedding_text / context_of): a reembedded or imported long
    bank must not get back the context its chunks were retained without."""
    memory.retain_many(bank, [_item(SHORT_QUESTION, 0), _item(LONG_PROMPT, 1), _item(SHORT_REPLY, 2)])
    at_retain = sorted(embedded)
    assert SHORT_REPLY in at_retain and len(at_retain) == len(_chunks(LONG_PROMPT)) + 2
    embedded.clear()
    memory.reembed()  # every bank of the home: this bank's texts are among them, as retain embedded them
    assert set(at_retain) <= set(embedded)
    embedded.clear()
    path = tmp_path / "bank.jsonl"
    memory.export_bank(bank, path, include_embeddings=False)
    memory.import_bank(f"{bank}-copy", path)
    assert sorted(embedded) == at_retain
