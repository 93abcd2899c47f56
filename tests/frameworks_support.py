"""What every framework test checks: the memory block reached the fake upstream, and the user's turn was
retained once (one exchange: the question with the final answer).

    from frameworks_support import FACT, assert_block, assert_retained_once, seeded  # noqa: F401 - fixture
"""

from __future__ import annotations

from typing import Any

import pytest
from conftest_wrappers import memory_block
from fakes.llm_server import FakeLLMServer

FACT = "Alice's dog is called Biscuit and is a beagle."
QUESTION = "What is my dog's name?"


@pytest.fixture
def seeded(warm_memory: Any, bank: str) -> str:
    """A bank that knows FACT."""
    warm_memory.retain(bank, FACT)
    return bank


def assert_block(server: FakeLLMServer, *, requests: int = 1) -> str:
    """The last `requests` upstream requests each carried the memory block with FACT (the same block)."""
    sent = server.requests[-requests:]
    assert len(sent) == requests, [r.path for r in server.requests]
    blocks = {memory_block(r) for r in sent}
    assert len(blocks) == 1, blocks
    (block,) = blocks
    assert "Biscuit" in block, block
    return block


def exchanges(memory: Any, bank: str) -> dict[str, str]:
    """document id -> the retained text of that exchange (FACT left out), whitespace collapsed."""
    items: dict[str, list[str]] = {}
    for record in memory.list(bank):
        if FACT not in record.text:
            items.setdefault(str(record.document_id), []).append(record.text)
    return {doc: " ".join(" ".join(parts).split()) for doc, parts in items.items()}


def assert_retained_once(memory: Any, bank: str, answer: str, question: str = QUESTION) -> str:
    """Exactly one exchange was retained, holding the question and the final answer (and no tool chatter)."""
    found = exchanges(memory, bank)
    assert len(found) == 1, found
    (text,) = found.values()
    assert f"user: {question}" in text and answer in text, text
    assert "tool result" not in text, text
    return text
