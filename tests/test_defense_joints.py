"""A secret split over two turns of a session (issue 37): each half alone passes the memory defense, so the two
stored turns spelled the key between them. Retain reads the end of the session's previous turn and the start of
the next one together (engine/retain/joints.py) and redacts both halves: across two calls (the stored turn is
mended in place) and within one.
"""

from __future__ import annotations

import json
import random
import string

import pytest

from memwrap import Memory
from memwrap.engine.retain.joints import split_secret
from memwrap.errors import SecretBlockedError

_rng = random.Random(3737)
TOKEN = "ghp_" + "".join(_rng.choices(string.ascii_letters + string.digits, k=36))
CARD = "4111 1111 1111 1111"


def _texts(memory: Memory, bank: str) -> str:
    return "\n".join(r.text for r in memory.list(bank, limit=100))


def _clean(text: str, secret: str) -> None:
    """No run of 8 characters of the secret is left (either half is longer than that)."""
    bare = secret.replace(" ", "")
    squeezed = text.replace(" ", "")
    for start in range(len(bare) - 7):
        assert bare[start : start + 8] not in squeezed, (bare[start : start + 8], text)


def test_split_secret_finds_what_crosses_the_joint_only() -> None:
    assert split_secret("my token is " + TOKEN[:14], TOKEN[14:] + " thanks") == (12, 26, 0, 26, "github_token")
    assert split_secret("card 4111 1111\n", "  1111 1111 please")[4] == "credit_card"
    assert split_secret("my token is " + TOKEN, " and that is all") is None  # whole in one turn: its own defense
    assert split_secret("I was born in 1990", "2 kids later we moved") is None
    assert split_secret("", TOKEN) is None


@pytest.mark.parametrize("secret", [TOKEN, CARD])
def test_a_secret_split_over_two_retains_is_redacted_in_both(memory: Memory, bank: str, secret: str) -> None:
    cut = len(secret) // 2
    meta = {"session_id": "chat-1"}
    memory.retain(bank, f"here is what you asked for: {secret[:cut]}", metadata=meta)
    before = _texts(memory, bank)
    assert secret[:cut].replace(" ", "") in before.replace(" ", "")  # alone, half a secret is stored as written
    memory.retain(bank, f"{secret[cut:]} and that is the rest", metadata=meta)
    stored = _texts(memory, bank)
    _clean(stored, secret)
    assert stored.count("[REDACTED:") == 2, stored
    recalled = json.dumps([r.model_dump(mode="json") for r in memory.recall(bank, "what you asked for").memories])
    _clean(recalled, secret)
    _clean(" ".join(e.name for e in memory.entities(bank)), secret)  # the half was read as a name: gone too


def test_a_secret_split_within_one_call_is_redacted_in_both(memory: Memory, bank: str) -> None:
    cut = 17
    items = [
        {"content": f"token part one {TOKEN[:cut]}", "document_id": "chat-2:1"},
        {"content": f"{TOKEN[cut:]} part two", "document_id": "chat-2:2"},
        {"content": f"another chat {TOKEN[:cut]}", "document_id": "chat-3:1"},  # another session: not joined
    ]
    memory.retain_many(bank, items)
    stored = _texts(memory, bank)
    assert stored.count("[REDACTED:github_token]") == 2, stored
    assert f"another chat {TOKEN[:cut]}" in stored


def test_block_refuses_the_turn_that_completes_a_secret(memory: Memory, bank: str) -> None:
    memory.create_bank(bank, defense_policy="block")
    meta = {"session_id": "chat-4"}
    memory.retain(bank, f"key: {TOKEN[:15]}", metadata=meta)
    with pytest.raises(SecretBlockedError):
        memory.retain(bank, f"{TOKEN[15:]}", metadata=meta)
