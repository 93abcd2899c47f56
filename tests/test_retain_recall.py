"""Retain and recall on the real embedded PostgreSQL: the behaviours a user relies on."""

from __future__ import annotations

import asyncio
import threading
from datetime import UTC, datetime

import pytest
from database import Database

from memwrap import AsyncMemory, Memory, MemoryNotFoundError, RetainItem
from memwrap.tokens import count_tokens

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


def test_retain_then_recall_finds_it_first(memory: Memory, bank: str) -> None:
    memory.retain_many(
        bank,
        [
            "Alice joined Google in March 2026.",
            "Bob is learning to play the violin.",
            "The weather in Paris was rainy all week.",
            "Alice's favourite food is sushi.",
        ],
    )
    recall = memory.recall(bank, "Where does Alice work?", now=NOW)
    assert recall.memories[0].text == "Alice joined Google in March 2026."
    assert "Alice joined Google in March 2026." in recall.context
    assert recall.tokens == count_tokens(recall.context) <= 1024
    assert "semantic" in recall.memories[0].arms


def test_retain_records_fields(memory: Memory, bank: str) -> None:
    said = datetime(2026, 4, 2, 10, 0, tzinfo=UTC)
    ids = memory.retain(
        bank,
        "Alice joined Google in March 2026.",
        timestamp=said,
        context="chat with Alice",
        document_id="conv-1:turn-3",
        metadata={"k": "v"},
        tags=["work"],
    )
    assert len(ids) == 1
    record = memory.get(bank, ids[0])
    assert record.text == "Alice joined Google in March 2026."
    assert record.type == "raw"
    assert record.document_id == "conv-1:turn-3"
    assert record.context == "chat with Alice"
    assert record.metadata == {"k": "v"}
    assert record.tags == ["work"]
    assert record.mentioned_at == said
    assert record.occurred_start is not None and record.occurred_start.date().isoformat() == "2026-03-01"
    assert {"Alice", "Google"} <= set(record.entities)


def test_same_item_twice_is_not_duplicated(memory: Memory, bank: str) -> None:
    first = memory.retain(bank, "I love hiking in the Alps.", document_id="d1")
    second = memory.retain(bank, "I love hiking in the Alps.", document_id="d1")
    batch = memory.retain_many(bank, [{"content": "I love hiking in the Alps.", "document_id": "d1"}] * 3)
    assert first == second == batch[:1] == batch[1:2]
    assert len(memory.list(bank)) == 1
    other_document = memory.retain(bank, "I love hiking in the Alps.", document_id="d2")
    assert other_document != first
    assert len(memory.list(bank)) == 2


def test_long_item_is_split_into_units(memory: Memory, bank: str) -> None:
    sentences = [f"Sentence number {i} talks about topic {i} in some detail to take up room." for i in range(60)]
    ids = memory.retain(bank, " ".join(sentences), document_id="long-doc")
    assert len(ids) > 1
    texts = [memory.get(bank, i).text for i in ids]
    assert all(t.endswith(".") for t in texts)
    assert " ".join(texts) == " ".join(sentences)


def test_chinese_recall(memory: Memory, bank: str) -> None:
    memory.retain_many(
        bank,
        [
            "李娜喜欢在周末去西湖边跑步。",
            "张伟于2021年加入阿里巴巴，负责杭州的云计算项目。",
            "王芳的女儿今年上小学一年级。",
            "The team meeting moved to Thursday.",
        ],
    )
    recall = memory.recall(bank, "张伟在哪家公司？", now=NOW)
    assert recall.memories[0].text == "张伟于2021年加入阿里巴巴，负责杭州的云计算项目。"
    assert "keyword" in recall.memories[0].arms
    record = memory.get(bank, recall.memories[0].id)
    assert "张伟" in record.entities


def test_temporal_recall_prefers_the_right_year(memory: Memory, bank: str) -> None:
    memory.retain_many(
        bank,
        [
            RetainItem(
                content="Alice went hiking in the mountains with friends.", timestamp=datetime(2025, 4, 12, tzinfo=UTC)
            ),
            RetainItem(
                content="Alice went hiking in the mountains with her dog.", timestamp=datetime(2026, 4, 12, tzinfo=UTC)
            ),
            RetainItem(content="Alice bought a new laptop.", timestamp=datetime(2026, 9, 1, tzinfo=UTC)),
        ],
    )
    recall = memory.recall(bank, "what did Alice do last spring", now=NOW)
    assert recall.time_window is not None
    assert recall.time_window.start.date().isoformat() == "2026-03-01"
    assert recall.time_window.end.date().isoformat() == "2026-05-31"
    texts = [m.text for m in recall.memories]
    assert texts.index("Alice went hiking in the mountains with her dog.") < texts.index(
        "Alice went hiking in the mountains with friends."
    )
    assert "temporal" in recall.memories[0].arms


def test_graph_arm_adds_hits_in_a_small_bank(memory: Memory, bank: str) -> None:
    memory.retain_many(
        bank,
        [
            "Priya moved to Toronto last year.",
            "Priya's brother Arjun works as a pilot.",
            "Arjun flies Boeing 787s for Air Canada.",
            "The bakery on Queen Street sells great croissants.",
            "Quantum computers use qubits.",
        ],
    )
    recall = memory.recall(bank, "Tell me about Priya's family", now=NOW, neighbours=False)
    by_arm = {m.text: m.arms for m in recall.memories}
    graph_hits = [text for text, arms in by_arm.items() if "graph" in arms]
    assert "Arjun flies Boeing 787s for Air Canada." in graph_hits


def test_neighbours_are_attached(memory: Memory, bank: str) -> None:
    turns = [
        "Maya: Guess what, I adopted a puppy!",
        "Sam: No way! What's its name?",
        "Maya: Biscuit. He is a golden retriever.",
        "Sam: Haha, lovely.",  # embedded with the end of the Biscuit turn: the semantic arm finds it
        "Sam: I'm going to the gym later.",  # embedded with "Haha, lovely.": no arm finds it
    ]
    memory.retain_many(bank, [RetainItem(content=t, document_id=f"s1:{i}") for i, t in enumerate(turns)])
    question = "What is the name of Maya's puppy?"
    without = [m.text for m in memory.recall(bank, question, now=NOW, neighbours=False).memories]
    assert "Maya: Biscuit. He is a golden retriever." in without and turns[4] not in without
    recall = memory.recall(bank, question, now=NOW, neighbours=True)
    ids = {m.text: m.id for m in recall.memories}
    attached = [(m.text, m.neighbour_of, m.arms) for m in recall.memories if m.neighbour_of is not None]
    assert attached == [(turns[4], ids[turns[3]], {})]  # only its session neighbour, the turn before, brings it
    assert [m.text for m in recall.memories][-1] == turns[4]  # neighbours only fill what ranked hits leave


def test_type_and_tag_filters(memory: Memory, bank: str) -> None:
    memory.retain(bank, "Work: the launch is on Friday.", tags=["work"])
    memory.retain(bank, "Home: the plumber comes on Friday.", tags=["home"])
    recall = memory.recall(bank, "What happens on Friday?", tags=["work"], now=NOW)
    assert [m.text for m in recall.memories] == ["Work: the launch is on Friday."]
    assert memory.recall(bank, "What happens on Friday?", types=["observation"], now=NOW).memories == []
    assert len(memory.list(bank, tags=["home"])) == 1


def test_list_get_delete(memory: Memory, bank: str) -> None:
    ids = memory.retain_many(bank, ["one fact about apples", "two facts about pears", "three facts about plums"])
    listed = memory.list(bank)
    assert [r.id for r in listed] == ids
    assert [r.id for r in memory.list(bank, limit=1, offset=1)] == ids[1:2]
    memory.delete(bank, ids[0])
    with pytest.raises(MemoryNotFoundError):
        memory.get(bank, ids[0])
    with pytest.raises(MemoryNotFoundError):
        memory.delete(bank, ids[0])
    assert ids[0] not in [m.id for m in memory.recall(bank, "apples", now=NOW).memories]
    # Deleted, then retained again: it comes back.
    again = memory.retain(bank, "one fact about apples")
    assert len(again) == 1 and again[0] != ids[0]
    info = {b.bank_id: b for b in memory.banks()}[bank]
    assert info.memories == 3
    assert memory.delete_bank(bank) == 3
    assert bank not in {b.bank_id for b in memory.banks()}
    assert memory.recall(bank, "apples", now=NOW).memories == []


def test_recall_on_unknown_bank_is_empty(memory: Memory, bank: str) -> None:
    recall = memory.recall(bank, "anything at all?", now=NOW)
    assert recall.memories == [] and recall.context == "" and recall.tokens == 0


def test_memory_from_threads(memory: Memory, bank: str) -> None:
    errors: list[BaseException] = []

    def work(n: int) -> None:
        try:
            memory.retain(bank, f"Thread {n} remembers the number {n * 7}.", document_id=f"t{n}")
            memory.recall(bank, f"What does thread {n} remember?", now=NOW)
        except BaseException as exc:  # noqa: BLE001 - every failure of a thread is collected and checked
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len(memory.list(bank)) == 8


def test_sync_memory_inside_a_running_event_loop(memory: Memory, bank: str) -> None:
    async def handler() -> list[str]:
        # What a FastAPI handler or a Jupyter cell does: call the sync API while a loop runs on this thread.
        memory.retain(bank, "Carol keeps bees on her roof.")
        return [m.text for m in memory.recall(bank, "Who keeps bees?", now=NOW).memories]

    assert asyncio.run(handler())[0] == "Carol keeps bees on her roof."


async def test_async_memory(memwrap_home, bank: str) -> None:
    async with AsyncMemory(home=memwrap_home) as mem:
        await mem.retain_many(bank, ["Dan plays chess every Tuesday.", "Erin bakes sourdough bread."])
        recall = await mem.recall(bank, "What game does Dan play?", now=NOW)
        assert recall.memories[0].text == "Dan plays chess every Tuesday."


def test_create_bank_once(memory: Memory, bank: str) -> None:
    import asyncio

    from memwrap import BankExistsError

    assert memory.create_bank(bank, defense_policy="block") == {"defense_policy": "block"}
    with pytest.raises(BankExistsError):
        memory.create_bank(bank)
    assert memory.bank_config(bank) == {"defense_policy": "block"}  # the failed create changed nothing

    async def race(name: str) -> list[object]:
        return await asyncio.gather(*(memory.aio.create_bank(name) for _ in range(6)), return_exceptions=True)

    outcomes = memory._run(race(f"{bank}-race"))
    assert sum(o == {} for o in outcomes) == 1
    assert sum(isinstance(o, BankExistsError) for o in outcomes) == 5


def test_temporal_arm_finds_intervals_that_overlap_the_window(memory: Memory, db: Database, bank: str) -> None:
    """Started before the window and still running, inside it, after it, a reversed interval, undated but said
    in the window: the overlap is decided per interval, through the GiST index on (bank_id, interval)."""
    utc = UTC
    texts = {
        "spring": (datetime(2026, 3, 1, tzinfo=utc), datetime(2026, 5, 31, tzinfo=utc)),  # spans April
        "april": (datetime(2026, 4, 10, tzinfo=utc), None),  # a day inside
        "last year": (datetime(2025, 4, 1, tzinfo=utc), datetime(2025, 4, 30, tzinfo=utc)),  # a year early
        "june": (datetime(2026, 6, 2, tzinfo=utc), datetime(2026, 6, 5, tzinfo=utc)),  # after
        "reversed": (datetime(2026, 4, 20, tzinfo=utc), datetime(2026, 4, 1, tzinfo=utc)),  # end before start
    }
    ids = dict(zip(texts, memory.retain_many(bank, [f"Note about {k}." for k in texts]), strict=True))
    undated = memory.retain(bank, "Undated remark.", timestamp=datetime(2026, 4, 15, tzinfo=utc))[0]
    for key, (start, end) in texts.items():
        db.blocking.execute(
            "UPDATE memory_units SET occurred_start = $3, occurred_end = $4 WHERE bank_id = $1 AND id = $2",
            bank,
            ids[key],
            start,
            end,
        )
    recall = memory.recall(bank, "what happened in April", now=NOW)
    assert recall.time_window is not None and recall.time_window.start == datetime(2026, 4, 1, tzinfo=utc)
    found = {m.id for m in recall.memories if "temporal" in m.arms}
    assert found == {ids["spring"], ids["april"], ids["reversed"], undated}
