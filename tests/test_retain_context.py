"""Which text a unit's vector is computed from (embed/unit_text.py): a short turn with the end of the unit before
it in its session, a long unit alone (issue 36: the previous unit's context cost long retains half the embedding
model's speed). The texts handed to the embedder are checked, not how long it took."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pytest

from memwrap import Memory, RetainItem
from memwrap.engine.embed.unit_text import CONTEXT_FREE_CHARS, PREVIOUS_CONTEXT_CHARS, embedding_text

START = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
QUESTION = "user: How does the retry loop in worker/queue.py back off?"
LONG_ANSWER = (
    "assistant: The retry loop in worker/queue.py retries a failed job five times before giving up. "
    "Each attempt waits twice as long as the one before, starting at 200 ms and capped at 30 seconds, "
    "so a dead database does not stall the queue forever. The jitter is drawn from the full interval, "
    "which keeps a thousand workers from retrying in lockstep after an outage. If you need a different policy "
    "per job type, pass `backoff=` to `enqueue`; the default lives in worker/settings.py."
)
SHORT_REPLY = "user: Yes, that works for me!"


def test_a_long_unit_is_embedded_alone() -> None:
    long_text = "x" * CONTEXT_FREE_CHARS
    assert embedding_text(long_text, "the turn before") == long_text
    assert embedding_text(long_text + " more", "the turn before") == long_text + " more"


def test_a_short_unit_is_embedded_after_the_end_of_the_unit_before() -> None:
    short = "x" * (CONTEXT_FREE_CHARS - 1)
    previous = "p" * 1000
    assert embedding_text(short, previous) == f"{previous[-PREVIOUS_CONTEXT_CHARS:]}\n{short}"
    assert embedding_text("Yes, it was amazing!", None) == "Yes, it was amazing!"
    assert embedding_text("Yes, it was amazing!", "") == "Yes, it was amazing!"


@pytest.fixture
def embedded(memory: Memory, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every text the engine's embedder is asked to embed while the test runs."""
    engine: Any = memory._run(memory.aio._get_engine())  # the embedded Engine, whose embedder is spied on
    texts: list[str] = []
    real = engine.embedder.embed

    async def spy(batch: Sequence[str]) -> np.ndarray:
        texts.extend(batch)
        return await real(batch)

    monkeypatch.setattr(engine.embedder, "embed", spy)
    return texts


def test_retain_embeds_a_long_answer_alone_and_the_short_reply_after_it(
    memory: Memory, bank: str, embedded: list[str]
) -> None:
    assert len(LONG_ANSWER) >= CONTEXT_FREE_CHARS > len(QUESTION)
    memory.retain_many(
        bank,
        [
            RetainItem(content=text, document_id=f"s1:{i}", timestamp=START + timedelta(minutes=i))
            for i, text in enumerate([QUESTION, LONG_ANSWER, SHORT_REPLY])
        ],
    )
    assert QUESTION in embedded  # the first turn of its session has no unit before it
    assert LONG_ANSWER in embedded  # alone: not after the question
    assert not any(text.endswith(LONG_ANSWER) and text != LONG_ANSWER for text in embedded)
    assert f"{LONG_ANSWER[-PREVIOUS_CONTEXT_CHARS:]}\n{SHORT_REPLY}" in embedded  # after the answer's end


def test_a_later_retain_takes_the_context_of_a_short_turn_from_the_stored_session(
    memory: Memory, bank: str, embedded: list[str]
) -> None:
    memory.retain_many(bank, [RetainItem(content=QUESTION, document_id="s2:0", timestamp=START)])
    memory.retain_many(
        bank,
        [
            RetainItem(content=LONG_ANSWER, document_id="s2:1", timestamp=START + timedelta(minutes=1)),
            RetainItem(content=SHORT_REPLY, document_id="s2:2", timestamp=START + timedelta(minutes=2)),
        ],
    )
    memory.retain_many(
        bank, [RetainItem(content="user: ok", document_id="s2:3", timestamp=START + timedelta(minutes=3))]
    )
    assert LONG_ANSWER in embedded
    assert f"{QUESTION}\n{LONG_ANSWER}" not in embedded
    assert f"{SHORT_REPLY}\nuser: ok" in embedded  # the stored unit before it, read back from the bank
