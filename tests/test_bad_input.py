"""Bad input gets a specific error a user can act on, and loses nothing already stored."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memwrap import (
    InvalidBankIdError,
    InvalidBudgetError,
    InvalidContentError,
    InvalidInputError,
    Memory,
    MemoryNotFoundError,
)

NOW = datetime(2026, 11, 30, tzinfo=UTC)


def _nested(depth: int) -> list:
    value: list = []
    for _ in range(depth):
        value = [value]
    return value


@pytest.fixture
def stored(memory: Memory, bank: str) -> list:
    return memory.retain_many(bank, ["Keep me safe.", "Me too."])


def _intact(memory: Memory, bank: str, stored: list) -> None:
    assert [r.id for r in memory.list(bank)] == stored


@pytest.mark.parametrize(
    ("content", "error", "words"),
    [
        ("", InvalidContentError, "empty"),
        ("   \n\t ", InvalidContentError, "empty"),
        ("x" * 1_048_576, InvalidContentError, "limit"),
        ("bad \x00 byte", InvalidContentError, "NUL"),
        ("lone \ud800 surrogate", InvalidContentError, "surrogate"),
        (12345, InvalidContentError, "string"),
        (None, InvalidContentError, "string"),
    ],
)
def test_bad_content(memory: Memory, bank: str, stored: list, content: object, error: type, words: str) -> None:
    with pytest.raises(error, match=words):
        memory.retain(bank, content)  # type: ignore[arg-type]  # a wrong type, on purpose
    # A bad item in a batch rejects the whole batch before anything is written.
    with pytest.raises(error, match="item 1"):
        memory.retain_many(bank, ["a fine new item", content])  # type: ignore[list-item]  # a wrong type, on purpose
    _intact(memory, bank, stored)


@pytest.mark.parametrize("bank_id", ["", "has space", "a/b", "x" * 200, "nul\x00", None, 42, "-leading-dash"])
def test_bad_bank_ids(memory: Memory, bank_id: object) -> None:
    with pytest.raises(InvalidBankIdError, match="bank id"):
        memory.retain(bank_id, "hello")  # type: ignore[arg-type]  # a wrong type, on purpose
    with pytest.raises(InvalidBankIdError):
        memory.recall(bank_id, "hello")  # type: ignore[arg-type]  # a wrong type, on purpose


@pytest.mark.parametrize("max_tokens", [0, -5, 2_000_001, 10**12, 1.5, "100", True])
def test_bad_budgets(memory: Memory, bank: str, stored: list, max_tokens: object) -> None:
    with pytest.raises(InvalidBudgetError, match="token_budget"):
        memory.recall(bank, "anything", token_budget=max_tokens, now=NOW)  # type: ignore[arg-type]  # on purpose
    _intact(memory, bank, stored)


def test_unknown_ids(memory: Memory, bank: str, stored: list) -> None:
    with pytest.raises(MemoryNotFoundError, match="No memory"):
        memory.get(bank, "00000000-0000-0000-0000-000000000000")
    with pytest.raises(MemoryNotFoundError, match="not a memory id"):
        memory.get(bank, "not-a-uuid")
    with pytest.raises(MemoryNotFoundError):
        memory.delete(bank, "00000000-0000-0000-0000-000000000000")
    _intact(memory, bank, stored)


def test_other_bad_arguments(memory: Memory, bank: str, stored: list) -> None:
    with pytest.raises(InvalidInputError, match="empty"):
        memory.recall(bank, "  ")
    with pytest.raises(InvalidInputError, match="type"):
        memory.recall(bank, "x", types=["opinion"])
    with pytest.raises(InvalidInputError, match="list"):
        memory.retain_many(bank, "not a list")  # type: ignore[arg-type]  # a wrong type, on purpose
    with pytest.raises(InvalidInputError, match="item 0"):
        memory.retain_many(bank, [{"content": "x", "unknown_field": 1}])
    with pytest.raises(InvalidInputError, match="limit"):
        memory.list(bank, limit=0)
    _intact(memory, bank, stored)


def test_errors_are_memwrap_errors_with_codes(memory: Memory, bank: str) -> None:
    from memwrap import MemwrapError

    with pytest.raises(MemwrapError) as info:
        memory.retain(bank, "")
    assert info.value.code == "invalid_content"


@pytest.mark.parametrize(
    ("item", "words"),
    [
        ({"content": "x", "metadata": {"k": float("nan")}}, "nan"),
        ({"content": "x", "metadata": {"k": [float("inf")]}}, "inf"),
        ({"content": "x", "metadata": {"k": "a\x00b"}}, "NUL"),
        ({"content": "x", "metadata": {"a\x00": 1}}, "NUL"),
        ({"content": "x", "metadata": {"k": object()}}, "object"),
        ({"content": "x", "metadata": {"a": _nested(40)}}, "nested"),
        ({"content": "x", "timestamp": datetime(1, 1, 1)}, "years"),
        ({"content": "x", "timestamp": datetime(9999, 12, 31)}, "years"),
    ],
)
def test_unstorable_metadata_and_dates_are_refused(
    memory: Memory, bank: str, stored: list, item: dict, words: str
) -> None:
    with pytest.raises(InvalidInputError, match=words):
        memory.retain_many(bank, [item])
    _intact(memory, bank, stored)


def test_bank_ids_are_matched_whole(memory: Memory) -> None:
    for bad in ("team-a\n", "team-a\r\n", "\nteam-a", "team a"):
        with pytest.raises(InvalidBankIdError):
            memory.recall(bad, "anything")


def test_traffic_is_made_storable_not_refused() -> None:
    from memwrap import validate

    item = {
        "content": "a\x00b \ud800 c",
        "document_id": "d\x00" + "x" * 600,
        "tags": ["t" * 300, "\x00ok", " "],
        "metadata": {"source": "memwrap.openai.chat", "note\x00": "v\x00"},
    }
    (fixed,) = validate.storable_items(item)
    assert fixed["content"] == "a\ufffdb \ufffd c"
    assert len(fixed["document_id"]) == validate.MAX_DOCUMENT_ID_CHARS and "\x00" not in fixed["document_id"]
    assert fixed["tags"] == ["t" * validate.MAX_TAG_CHARS, "\ufffdok"]
    assert fixed["metadata"] == {"source": "memwrap.openai.chat", "note\ufffd": "v\ufffd"}
    validate.retain_items([fixed])  # what the engine then accepts

    long = {"content": ("word " * 30_000 + "\n") * 4, "metadata": {"turn": 3}}
    parts = validate.storable_items(long)
    assert len(parts) == 2 and all(len(p["content"]) <= validate.MAX_CONTENT_CHARS for p in parts)
    assert [p["metadata"]["part"] for p in parts] == [1, 2] and parts[0]["metadata"]["parts"] == 2
    assert " ".join(p["content"] for p in parts).split() == long["content"].split()  # nothing lost
