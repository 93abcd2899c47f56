"""import_bank at scale (issue 39): the file's vectors are kept when its model is the store's, what the bank holds
already is neither embedded nor sent again, the shared vector index stays up, and a malformed vector is embedded
again instead of failing the load."""

from __future__ import annotations

import argparse
import json
import uuid
from typing import Any

import pytest
from database import Database
from test_bank_transfer import _export, engine

from memwrap import Memory, validate
from memwrap.cli.verb_call import one_shot_settings
from memwrap.store.vector_index import VECTOR_INDEX

TURNS = [f"Alice Berg met Omar Khan in Lisbon about budget item {i}." for i in range(12)]


def _import(memory: Memory, bank: str, lines: list[str]) -> Any:
    return memory._run(engine(memory).import_stream(bank, lines))


def _stored_vectors(memory: Memory, bank: str) -> dict[str, list[float]]:
    lines = _export(memory, bank)
    return {r["id"]: r["embedding"] for r in map(json.loads, lines) if r["record"] == "memory"}


@pytest.fixture(scope="module")
def source(memory: Memory) -> str:
    bank = f"xv-{uuid.uuid4().hex[:8]}"
    memory.retain_many(bank, [{"content": t, "document_id": f"chat-{i // 4}"} for i, t in enumerate(TURNS)])
    return bank


def test_the_files_vectors_are_kept_and_a_second_import_embeds_and_writes_nothing(
    memory: Memory, db: Database, source: str
) -> None:
    lines = _export(memory, source)
    index_before = db.blocking.fetchval("SELECT to_regclass($1)::oid", VECTOR_INDEX)
    copy = f"xv-copy-{uuid.uuid4().hex[:8]}"
    first = _import(memory, copy, lines)
    assert first.embedded == 0 and first.written["memory"] == len(TURNS)
    assert _stored_vectors(memory, copy) == _stored_vectors(memory, source)  # the same bits, not re-embedded
    # The shared index was neither dropped nor built again (a new build is a new relation).
    assert db.blocking.fetchval("SELECT to_regclass($1)::oid", VECTOR_INDEX) == index_before
    again = _import(memory, copy, lines)
    assert again.embedded == 0 and sum(again.written.values()) == 0
    assert again.read["memory"] == len(TURNS)


def test_without_vectors_only_what_the_bank_lacks_is_embedded(memory: Memory, source: str) -> None:
    lines = _export(memory, source, include_embeddings=False)
    copy = f"xv-bare-{uuid.uuid4().hex[:8]}"
    first = _import(memory, copy, lines)
    assert first.embedded == len(TURNS) == first.written["memory"]
    again = _import(memory, copy, lines)  # duplicates are found before the model runs
    assert again.embedded == 0 and again.written["memory"] == 0
    # One memory deleted from the copy: a third import embeds that one and writes it back.
    gone = memory.list(copy, limit=100)[3].id
    memory.delete(copy, gone)
    third = _import(memory, copy, lines)
    assert third.embedded == 1 and third.written["memory"] == 1
    assert gone in {m.id for m in memory.list(copy, limit=100)}


def test_another_models_vectors_or_malformed_ones_are_embedded_again(memory: Memory, source: str) -> None:
    lines = _export(memory, source)
    header = json.loads(lines[0])
    other = [json.dumps({**header, "embedding_model": "some-other-model"}), *lines[1:]]
    report = _import(memory, f"xv-other-{uuid.uuid4().hex[:8]}", other)
    assert report.embedded == len(TURNS) == report.written["memory"]

    records = [json.loads(line) for line in lines]
    memories = [r for r in records if r["record"] == "memory"]
    memories[0]["embedding"] = memories[0]["embedding"][:-1]  # one number short
    memories[1]["embedding"][5] = "0.5"  # a string among the numbers
    memories[2]["embedding"][7] = None
    memories[3]["embedding"][0] = [0.1]  # nested
    broken = [json.dumps(r) for r in records]
    copy = f"xv-broken-{uuid.uuid4().hex[:8]}"
    report = _import(memory, copy, broken)
    assert report.embedded == 4 and report.written["memory"] == len(TURNS)
    assert memory.recall(copy, "Omar Khan budget").memories  # each stored with a vector recall can use


def test_a_list_of_numbers_is_one_level_deep_and_nesting_is_still_counted() -> None:
    assert validate.nesting_depth({"embedding": [0.1] * 384}, 30) == 2
    assert validate.nesting_depth([1, "a", None, True, 2.5], 30) == 1
    assert validate.nesting_depth([1.0, [2.0, [3.0]]], 30) == 3
    assert validate.nesting_depth([{"a": [[[]]]}], 30) == 5
    deep: Any = 0.5
    for _ in range(50):
        deep = [0.1, deep]
    assert validate.nesting_depth(deep, 30) == 31  # stops one past the limit


def test_one_shot_commands_without_a_bank_run_no_worker() -> None:
    """`memwrap reembed` (every bank, no bank of its own) opens its engine with no worker: like every one-shot
    command, it never runs queued jobs of banks it was not asked about."""
    from memwrap.cli import reembed

    args = argparse.Namespace(home=None, database_url=None)
    assert one_shot_settings(args, None).worker == "off"
    assert reembed.reembed_settings(args).worker == "off"
