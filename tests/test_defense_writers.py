"""Every field a person or an agent can write goes through the bank's memory defense, not only retain's: an
update's text, an invalidation's reason, a mental model's name, question and tags, a bank's disposition
directives; and the names and document ids a secret was redacted from still find what they name."""

from __future__ import annotations

import pytest

from memwrap import Memory
from memwrap.errors import SecretBlockedError

KEY = "sk-proj-" + "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z" * 2
CARD = "4539\u00a01488\u00a00343\u00a06467"  # NBSP between the groups
TOKEN = "ghp_" + "aB1cD2eF3gH4iJ5kL6mN7oP8qR9sT0uV1wX2"


def test_invalidation_reason_is_redacted(memory: Memory, bank: str) -> None:
    [memory_id] = memory.retain(bank, "Alice moved to Porto.", document_id="a:1")
    memory.invalidate(bank, memory_id, reason=f"wrong, and it held {KEY}")
    reason = memory.memory_context(bank, memory_id).invalidation_reason
    assert reason == "wrong, and it held [REDACTED:openai_key]"


def test_update_text_is_redacted(memory: Memory, bank: str) -> None:
    [memory_id] = memory.retain(bank, "Alice pays by card.", document_id="a:2")
    record = memory.update(bank, memory_id, text=f"Alice pays with {CARD}.", tags=[f"card {CARD}"])
    assert record.text == "Alice pays with [REDACTED:credit_card]." and record.tags == ["card [REDACTED:credit_card]"]


def test_mental_model_name_question_and_tags_are_redacted_and_the_name_still_finds_it(
    memory: Memory, bank: str
) -> None:
    name = f"deploys with {TOKEN}"
    model = memory.create_mental_model(bank, name, f"When was {KEY} last used?", tags=[f"t {CARD}"])
    assert model.name == "deploys with [REDACTED:github_token]"
    assert model.question == "When was [REDACTED:openai_key] last used?" and model.tags == ["t [REDACTED:credit_card]"]
    assert memory.get_mental_model(bank, name).id == model.id  # the name as written finds it
    assert memory.mental_model_history(bank, name) is not None
    memory.delete_mental_model(bank, name)
    assert memory.mental_models(bank) == []


def test_disposition_directives_are_redacted(memory: Memory, bank: str) -> None:
    config = memory.create_bank(bank, disposition={"directives": [f"Never repeat {CARD}", "Be brief."]})
    assert config["disposition"]["directives"] == ["Never repeat [REDACTED:credit_card]", "Be brief."]
    config = memory.configure_bank(bank, disposition={"empathy": 4, "directives": [f"Key is {KEY}"]})
    assert config["disposition"]["directives"] == ["Key is [REDACTED:openai_key]"]


def test_a_document_id_with_a_secret_still_lists_its_memories(memory: Memory, bank: str) -> None:
    document = f"ticket for card {CARD}"
    memory.retain(bank, "The refund was approved.", document_id=document)
    [record] = memory.list(bank, document_id=document)
    assert record.document_id == "ticket for card [REDACTED:credit_card]"


def test_block_refuses_every_writer(memory: Memory, bank: str) -> None:
    memory.create_bank(bank, defense_policy="block")
    [memory_id] = memory.retain(bank, "Alice moved to Porto.", document_id="b:1")
    with pytest.raises(SecretBlockedError):
        memory.invalidate(bank, memory_id, reason=f"it held {KEY}")
    with pytest.raises(SecretBlockedError):
        memory.create_mental_model(bank, "models", f"Who used {TOKEN}?")
    with pytest.raises(SecretBlockedError):
        memory.configure_bank(bank, disposition={"directives": [f"Never repeat {CARD}"]})
    assert memory.mental_models(bank) == [] and memory.memory_context(bank, memory_id).invalidated_at is None
