"""export_bank / import_bank: JSONL round trip → the same list and the same recall results; idempotent re-import;
bad files store nothing."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pytest

from memwrap import Memory
from memwrap.errors import InvalidInputError

START = datetime(2026, 3, 2, 9, tzinfo=UTC)
TURNS = [
    "I moved to Lisbon in March.",
    "Maya's birthday picnic is on Saturday.",
    "I prefer dark mode in my code editor.",
    "I really prefer dark mode in my code editor.",
    "The cello lesson moved to Thursday.",
    "Zhang Wei leads the Apollo project.",
    "We hiked the Alps last summer.",
    "My dentist is Dr. Ortiz.",
    "I still prefer dark mode in my code editor.",
    "Budget review with Bob next week.",
    "I started a new job in May.",
    "我三月搬到了里斯本。",
]
# 50 questions: names, topics, dates (eight of them open a time window, so the temporal arm runs), Chinese.
QUERIES = [
    "where do I live",
    "what editor theme",
    "Maya",
    "music lessons",
    "who leads Apollo",
    "last summer",
    "dentist",
    "budget",
    "new job",
    "里斯本",
    "March",
    "Saturday picnic",
    "where did I move",
    "which city",
    "Lisbon",
    "dark mode",
    "code editor settings",
    "birthday",
    "picnic",
    "cello",
    "Thursday",
    "Zhang Wei",
    "Apollo project",
    "hiking",
    "the Alps",
    "Dr. Ortiz",
    "Bob",
    "next week",
    "job",
    "May",
    "搬家",
    "what happened in spring",
    "what do I like",
    "preferences",
    "who is Maya",
    "appointments",
    "work",
    "projects",
    "mountains",
    "health",
    "schedule changes",
    "meetings",
    "last month",
    "this year",
    "what did I do in March",
    "family",
    "teeth",
    "music",
    "travel",
    "colleagues",
]


def engine(memory: Memory) -> Any:
    return memory._run(memory.aio._get_engine())


def _export(memory: Memory, bank: str, **options: Any) -> list[str]:
    eng = engine(memory)

    async def collect() -> list[str]:
        return [line async for line in eng.export_stream(bank, **options)]

    return memory._run(collect())


def _fill(memory: Memory, bank: str) -> None:
    memory.retain_many(
        bank,
        [
            {
                "content": t,
                "timestamp": START + timedelta(days=i),
                "document_id": f"chat-{i // 4}:{i}",
                "metadata": {"n": i, "lang": "zh" if i == 11 else "en"},
                "tags": ["b" if i == 5 else "a"],
            }
            for i, t in enumerate(TURNS)
        ],
    )
    assert memory.consolidate(bank).created >= 1
    ids = [m.id for m in memory.list(bank, types=["raw"])]
    memory._run(
        engine(memory).update(
            bank, ids[0], text="I moved to Lisbon in March 2026.", metadata={"n": 0, "lang": "en", "checked": True}
        )
    )
    memory.invalidate(bank, ids[6], reason="wrong")
    memory.create_mental_model(bank, "editor", "Which editor settings does the user like?")


def _vectors(lines: list[str]) -> dict[str, np.ndarray]:
    records = [json.loads(line) for line in lines]
    return {r["id"]: np.array(r["embedding"]) for r in records if r["record"] == "memory"}


def _recalls(memory: Memory, bank: str) -> list[list[tuple[Any, str, float]]]:
    now = START + timedelta(days=40)
    out = []
    for query in QUERIES:
        result = memory._run(engine(memory).recall(bank, query, top_k=10, now=now))
        out.append([(m.id, m.text, round(m.score, 9)) for m in result.memories] + [result.context])
    return out


def _listing(memory: Memory, bank: str) -> list[dict[str, Any]]:
    return [m.model_dump(exclude={"bank_id", "created_at"}) for m in memory.list(bank, limit=1000)]


@pytest.mark.parametrize("include_embeddings", [True, False], ids=["with-vectors", "re-embedded"])
def test_export_delete_import_gives_the_same_list_and_recall(memory: Memory, include_embeddings: bool) -> None:
    bank = f"xfer-{uuid.uuid4().hex[:8]}"
    _fill(memory, bank)
    listing, recalls = _listing(memory, bank), _recalls(memory, bank)
    observations = [(o.id, o.text, o.proof_count) for o in memory.observations(bank)]
    history = memory._run(engine(memory).history(bank, listing[0]["id"]))
    vectors = _vectors(_export(memory, bank))
    lines = _export(memory, bank, include_embeddings=include_embeddings)
    header = json.loads(lines[0])
    assert (
        observations and header["record"] == "header" and header["counts"]["memory"] == len(listing) + 1
    )  # + invalidated
    kinds = {json.loads(line)["record"] for line in lines}
    assert {
        "memory",
        "entity",
        "unit_entity",
        "link",
        "observation",
        "evidence",
        "mental_model",
        "memory_version",
        "invalidation",
        "retained_item",
        "unit_learning",
    } <= kinds
    assert ("embedding" in json.loads(next(li for li in lines if '"record":"memory"' in li))) == include_embeddings

    memory.delete_bank(bank)
    assert memory.list(bank) == []
    report = memory._run(engine(memory).import_stream(bank, lines))
    assert report.written["memory"] == header["counts"]["memory"]
    assert report.embedded == (0 if include_embeddings else header["counts"]["memory"])

    assert _listing(memory, bank) == listing
    if include_embeddings:
        # The same memories in the same order, the same scores and the same block, for every query: every step
        # of recall orders totally (ties by id), never by where the rows happen to be stored.
        assert len(recalls) == 50 and _recalls(memory, bank) == recalls
    else:
        # The embedding model's output depends a little on what else is in its batch (dynamic quantisation), so
        # re-embedded vectors are the same texts' vectors, not the same bits: recall is exact with vectors only.
        # (An observation's vector is its first fact's, which was embedded with the turn before it: compared loosely.)
        now = _vectors(_export(memory, bank, include_embeddings=True))
        observation_ids = {str(o[0]) for o in observations}
        for memory_id, vector in vectors.items():
            assert float(np.dot(vector, now[memory_id])) > (0.9 if memory_id in observation_ids else 0.98), memory_id
    assert [(o.id, o.text, o.proof_count) for o in memory.observations(bank)] == observations
    assert memory._run(engine(memory).history(bank, listing[0]["id"])) == history
    assert [m.name for m in memory.mental_models(bank)] == ["editor"]
    assert memory.get(bank, listing[6]["id"]).model_dump() and memory.list(bank, limit=1000)  # invalidated stays out
    assert memory.consolidate(bank).units == 0  # what was learnt stays learnt: nothing pending again

    again = memory._run(engine(memory).import_stream(bank, lines))  # idempotent
    assert sum(again.written.values()) == 0 and _listing(memory, bank) == listing


def test_import_into_another_bank_and_recall_both(memory: Memory) -> None:
    source, copy = f"xsrc-{uuid.uuid4().hex[:8]}", f"xcopy-{uuid.uuid4().hex[:8]}"
    memory.retain_many(source, TURNS[:6])
    lines = _export(memory, source)
    memory._run(engine(memory).import_stream(copy, lines))
    assert _listing(memory, copy) == _listing(memory, source)
    both = memory._run(engine(memory).recall([source, copy], "who leads Apollo", top_k=4))
    # The same ids live in both banks: each memory says its bank, and both copies are there.
    assert {m.bank_id for m in both.memories} == {source, copy}
    assert both.memories[0].id == both.memories[1].id and both.memories[0].bank_id != both.memories[1].bank_id


@pytest.mark.parametrize(
    "bad",
    [
        [],
        ['{"record":"memory","id":"x"}'],
        ['{"record":"header","format":"memwrap.bank","version":99}'],
        ['{"record":"header","format":"memwrap.bank","version":1}', "not json"],
        ['{"record":"header","format":"memwrap.bank","version":1}', '{"record":"sql","text":"drop"}'],
        [
            '{"record":"header","format":"memwrap.bank","version":1}',
            '{"record":"memory","id":"00000000-0000-0000-0000-000000000001","text":"ok","fact_type":"raw",'
            '"item_hash":"h",'
            '"mentioned_at":"2026-01-01T00:00:00+00:00"}',
            '{"record":"memory","id":"not-a-uuid","text":"bad","fact_type":"raw","item_hash":"h2",'
            '"mentioned_at":"2026-01-01T00:00:00+00:00"}',
        ],
    ],
)
def test_a_bad_file_stores_nothing(memory: Memory, bad: list[str]) -> None:
    bank = f"xbad-{uuid.uuid4().hex[:8]}"
    with pytest.raises(InvalidInputError):
        memory._run(engine(memory).import_stream(bank, bad))
    assert bank not in {b.bank_id for b in memory.banks()}
