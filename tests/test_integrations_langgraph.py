"""memwrap.integrations.langgraph: the behaviours LangGraph's own stores are held to (its InMemoryStore and
PostgresStore tests: put/get/update/delete, namespaces by prefix, suffix, wildcards and depth, search with filters
and pages, semantic search, batches in order, the async twins), run on memwrap's embedded engine, plus what memwrap
adds: an item is a memory, an update keeps its history, the bank can come from the namespace."""

from __future__ import annotations

import asyncio
import importlib.util
import os
import subprocess
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from conftest_wrappers import *  # noqa: F403 - fixtures
from conftest_wrappers import system_text
from extract_support import fact, reply
from test_server_harness import *  # noqa: F403 - fixtures (sidecar)
from test_server_harness import ADMIN_KEY

pytest.importorskip("langgraph.store.base")

from langgraph.store.base import (  # noqa: E402 - after the importorskip
    GetOp,
    InvalidNamespaceError,
    ListNamespacesOp,
    MatchCondition,
    PutOp,
    SearchOp,
)

from memwrap import Memory  # noqa: E402
from memwrap.config import Settings  # noqa: E402
from memwrap.errors import InvalidInputError  # noqa: E402
from memwrap.integrations.langgraph import MemwrapStore  # noqa: E402
from memwrap.store.embedded_pg import embedded_database_url  # noqa: E402

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "langgraph_memory.py"


@pytest.fixture
def store(memory: Memory, bank: str) -> MemwrapStore:
    return MemwrapStore(memory, bank_id=bank)


def units(memory: Memory, bank: str) -> list[Any]:
    return memory.list(bank, tags=["langgraph"])


# --- put, get, update, delete ---------------------------------------------------------------------------------


def test_put_then_get_returns_the_value_whole_with_real_times(store: MemwrapStore) -> None:
    before = datetime.now().astimezone()
    value = {"text": "Alice is vegetarian", "tags": ["food"], "nested": {"level": 2, "ok": True}}
    store.put(("users", "alice"), "diet", value)
    item = store.get(("users", "alice"), "diet")
    assert item is not None
    assert (item.namespace, item.key, item.value) == (("users", "alice"), "diet", value)
    assert item.created_at == item.updated_at
    assert before <= item.created_at <= datetime.now().astimezone()
    assert store.get(("users", "alice"), "other") is None
    assert store.get(("users", "bob"), "diet") is None
    assert store.get(("users",), "diet") is None


def test_an_item_is_one_memory_with_its_text_metadata_and_tag(memory: Memory, bank: str, store: MemwrapStore) -> None:
    store.put(("users", "alice"), "diet", {"text": "Alice is vegetarian"})
    (record,) = units(memory, bank)
    assert record.text == "Alice is vegetarian"
    assert record.tags == ["langgraph"]
    assert record.document_id == "langgraph/users/alice/diet"
    stored = record.metadata["langgraph"]
    assert stored["namespace"] == ["users", "alice"] and stored["key"] == "diet"
    assert stored["value"] == {"text": "Alice is vegetarian"}


def test_put_on_an_existing_key_updates_that_memory_and_keeps_history(
    memory: Memory, bank: str, store: MemwrapStore
) -> None:
    store.put(("users", "alice"), "city", {"text": "Alice lives in Porto"})
    first = store.get(("users", "alice"), "city")
    (record,) = units(memory, bank)
    store.put(("users", "alice"), "city", {"text": "Alice moved to Lisbon"})
    second = store.get(("users", "alice"), "city")
    assert first is not None and second is not None
    assert second.value == {"text": "Alice moved to Lisbon"}
    assert second.created_at == first.created_at
    assert second.updated_at > first.updated_at
    (after,) = units(memory, bank)
    assert after.id == record.id and after.text == "Alice moved to Lisbon"
    texts = [v.text for v in memory.history(bank, record.id)]
    assert texts[0] == "Alice lives in Porto" and texts[-1] == "Alice moved to Lisbon"


def test_delete_frees_the_key_and_the_same_value_can_be_put_again(
    memory: Memory, bank: str, store: MemwrapStore
) -> None:
    store.put(("users", "alice"), "pet", {"text": "Alice has a cat called Miso"})
    store.delete(("users", "alice"), "pet")
    assert store.get(("users", "alice"), "pet") is None
    assert units(memory, bank) == []
    assert store.search(("users",)) == []
    store.delete(("users", "alice"), "pet")  # deleting what is not there is no error
    store.put(("users", "alice"), "pet", {"text": "Alice has a cat called Miso"})
    item = store.get(("users", "alice"), "pet")
    assert item is not None and item.value == {"text": "Alice has a cat called Miso"}
    assert len(units(memory, bank)) == 1


def test_an_item_invalidated_in_memwrap_is_hidden_and_a_put_brings_it_back(
    memory: Memory, bank: str, store: MemwrapStore
) -> None:
    store.put(("users", "alice"), "pet", {"text": "Alice has a cat called Miso"})
    (record,) = units(memory, bank)
    memory.invalidate(bank, record.id, reason="the user said it was wrong")
    assert store.get(("users", "alice"), "pet") is None
    assert store.search(("users",)) == []
    again = {"text": "Alice has a cat called Miso", "age": 3}  # the same text again, another value
    store.put(("users", "alice"), "pet", again, index=["text"])
    item = store.get(("users", "alice"), "pet")
    assert item is not None and item.value == again
    assert [r.id for r in units(memory, bank)] == [record.id]


def test_keys_and_labels_with_separators_stay_apart(store: MemwrapStore) -> None:
    store.put(("a/b", "c"), "d", {"text": "one"})
    store.put(("a", "b/c"), "d", {"text": "two"})
    store.put(("a", "b"), "c/d", {"text": "three"})
    store.put(("a", "b"), "session:1", {"text": "four"})
    got = [store.get(ns, key) for ns, key in [(("a/b", "c"), "d"), (("a", "b/c"), "d"), (("a", "b"), "c/d")]]
    assert [i.value["text"] for i in got if i] == ["one", "two", "three"]
    item = store.get(("a", "b"), "session:1")
    assert item is not None and item.value == {"text": "four"}


def test_memory_defense_applies_to_the_value_and_a_secret_key_is_refused(memory: Memory, bank: str) -> None:
    store = MemwrapStore(memory, bank_id=bank)
    secret = "sk-proj-" + "Abcdefghijklmnopqrstuvwxyz0123456789ABCD"
    store.put(("u",), "k1", {"text": f"my openai key is {secret}"})
    item = store.get(("u",), "k1")
    assert item is not None and secret not in str(item.value) and "REDACTED" in item.value["text"]
    with pytest.raises(InvalidInputError, match="looks like a secret"):
        store.put(("u",), secret, {"text": "a key that is a secret"})
    with pytest.raises(InvalidInputError, match="looks like a secret"):
        store.put(("u", secret), "k2", {"text": "a label that is a secret"})
    assert [r.metadata["langgraph"]["key"] for r in units(memory, bank)] == ["k1"]  # nothing else was stored


def test_namespaces_are_validated_as_langgraph_does(store: MemwrapStore) -> None:
    for bad in [(), ("the", "thing.about"), ("some", "fun", ""), ("langgraph", "foo")]:
        with pytest.raises(InvalidNamespaceError):
            store.put(bad, "foo", {"foo": "bar"})


# --- search: prefix, filter, pages, semantic ------------------------------------------------------------------


def test_search_without_query_lists_under_the_prefix_with_pages(store: MemwrapStore) -> None:
    for i in range(5):
        store.put(("docs", "team"), f"doc{i}", {"text": f"document number {i}", "n": i})
    store.put(("docs", "other"), "x", {"text": "elsewhere", "n": 9})
    store.put(("notes",), "y", {"text": "not a doc", "n": 9})
    assert [i.key for i in store.search(("docs", "team"))] == [f"doc{i}" for i in range(5)]
    assert {i.key for i in store.search(("docs",))} == {f"doc{i}" for i in range(5)} | {"x"}
    assert len(store.search(())) == 7
    assert [i.key for i in store.search(("docs", "team"), limit=2, offset=2)] == ["doc2", "doc3"]
    assert store.search(("docs", "team"), offset=5) == []
    assert store.search(("doc",)) == []  # a prefix is whole labels, not the start of one
    assert all(i.score is None for i in store.search(("docs",)))


def test_search_filters_on_value_fields(store: MemwrapStore) -> None:
    docs = [
        ("doc1", {"text": "red apple", "color": "red", "score": 4.5, "meta": {"shop": "north"}}),
        ("doc2", {"text": "red car", "color": "red", "score": 3.0, "meta": {"shop": "south"}}),
        ("doc3", {"text": "green apple", "color": "green", "score": 4.0, "meta": {"shop": "north"}}),
        ("doc4", {"text": "blue car", "color": "blue", "score": 3.5}),
    ]
    for key, value in docs:
        store.put(("test",), key, value)

    def keys(**filters: Any) -> set[str]:
        return {i.key for i in store.search(("test",), filter=filters)}

    assert keys(color="red") == {"doc1", "doc2"}
    assert keys(score={"$gt": 3.2}) == {"doc1", "doc3", "doc4"}
    assert keys(score={"$gte": 4.0}, color="green") == {"doc3"}
    assert keys(score={"$lt": 3.5}) == {"doc2"}
    assert keys(score={"$lte": 3.5}) == {"doc2", "doc4"}
    assert keys(color={"$ne": "red"}) == {"doc3", "doc4"}
    assert keys(color={"$in": ["green", "blue"]}) == {"doc3", "doc4"}
    assert keys(**{"meta.shop": "north"}) == {"doc1", "doc3"}
    assert keys(meta={"shop": "south"}) == {"doc2"}
    assert keys(color="purple") == set()
    with pytest.raises(ValueError, match=r"\$regex"):
        store.search(("test",), filter={"color": {"$regex": "r.*"}})


def test_comparisons_are_numeric_for_numbers_and_textual_for_strings(store: MemwrapStore) -> None:
    for key, score in [("a", 2), ("b", 9), ("c", 10), ("d", 11), ("e", 9.5)]:
        store.put(("scores",), key, {"score": score})
    for key, name in [("a", "apple"), ("b", "banana")]:
        store.put(("names",), key, {"name": name})

    def scores(filters: dict[str, Any]) -> list[float]:
        return sorted(i.value["score"] for i in store.search(("scores",), filter=filters))

    assert scores({"score": {"$gte": 10}}) == [10, 11]  # not "9" >= "10"
    assert scores({"score": {"$gt": 9}}) == [9.5, 10, 11]
    assert scores({"score": {"$lt": 10}}) == [2, 9, 9.5]
    assert scores({"score": {"$gt": 2, "$lte": 9.5}}) == [9, 9.5]
    assert [i.value["name"] for i in store.search(("names",), filter={"name": {"$gt": "apple"}})] == ["banana"]


def test_semantic_search_ranks_by_meaning_within_the_filter(store: MemwrapStore) -> None:
    docs = [
        ("doc1", {"text": "red apple", "color": "red", "score": 4.5}),
        ("doc2", {"text": "red car", "color": "red", "score": 3.0}),
        ("doc3", {"text": "green apple", "color": "green", "score": 4.0}),
        ("doc4", {"text": "blue car", "color": "blue", "score": 3.5}),
    ]
    for key, value in docs:
        store.put(("test",), key, value, index=["text"])
    results = store.search(("test",), query="apple", filter={"color": "red"})
    assert [r.key for r in results] == ["doc1", "doc2"]
    assert results[0].score is not None and results[0].score > (results[1].score or 0)
    assert store.search(("test",), query="car", filter={"color": "red"})[0].key == "doc2"
    assert store.search(("test",), query="apple", filter={"score": {"$gte": 4.0}, "color": "green"})[0].key == "doc3"
    assert store.search(("test",), query="vehicle")[0].key in {"doc2", "doc4"}


def test_semantic_search_pages_and_odd_queries(store: MemwrapStore) -> None:
    for i in range(5):
        store.put(("test",), f"doc{i}", {"text": f"test document number {i}"})
    page1 = store.search(("test",), query="test document", limit=2)
    page2 = store.search(("test",), query="test document", limit=2, offset=2)
    assert len(page1) == 2 and len(page2) == 2
    assert not {r.key for r in page1} & {r.key for r in page2}
    assert len(store.search(("test",), query="test document", limit=10)) == 5
    assert len(store.search(("test",), query="")) == 5  # no query: a listing
    assert store.search(("test",), query="test " * 100, limit=1)
    assert store.search(("test",), query="test!@#$%^&*()", limit=1)


def test_an_update_moves_the_item_in_semantic_search(store: MemwrapStore) -> None:
    store.put(("test",), "doc1", {"text": "zany zebra Xerxes"})
    store.put(("test",), "doc2", {"text": "something about dogs"})
    store.put(("test",), "doc3", {"text": "text about birds"})
    before = store.search(("test",), query="Zany Xerxes")
    assert before[0].key == "doc1"
    store.put(("test",), "doc1", {"text": "new text about puppies and dogs"})
    after = store.search(("test",), query="Zany Xerxes")
    assert (next((r.score for r in after if r.key == "doc1"), None) or 0.0) < (before[0].score or 0)
    dogs = store.search(("test",), query="puppies", limit=1)
    assert dogs[0].key == "doc1" and dogs[0].value == {"text": "new text about puppies and dogs"}


def test_index_false_and_index_fields(memory: Memory, bank: str, store: MemwrapStore) -> None:
    store.put(("test",), "hidden", {"text": "new text about dogs"}, index=False)
    store.put(("test",), "shown", {"text": "a dog story", "title": "Dogs"})
    store.put(("test",), "titled", {"title": "Cats at home", "body": "long body text"}, index=["title"])
    # index=False: no semantic match, but still ranked (last, no score): LangGraph's stores fill a page with them
    ranked = store.search(("test",), query="new text about dogs")
    assert ranked[-1].key == "hidden" and ranked[-1].score is None and ranked[0].score is not None
    assert "hidden" not in {r.key for r in store.search(("test",), query="new text about dogs", limit=2)}
    assert "hidden" in {r.key for r in store.search(("test",))}  # listing still finds it
    text_of = {r.metadata["langgraph"]["key"]: r.text for r in units(memory, bank)}
    assert text_of["titled"] == "Cats at home"
    assert text_of["shown"] == "text: a dog story; title: Dogs"
    field_store = MemwrapStore(memory, bank_id=bank, index=["body"])
    field_store.put(("test",), "bodied", {"title": "ignored", "body": "the body is remembered"})
    assert {r.metadata["langgraph"]["key"]: r.text for r in units(memory, bank)}["bodied"] == ("the body is remembered")


def test_a_langgraph_index_config_gives_its_fields(memory: Memory, bank: str) -> None:
    store = MemwrapStore(memory, bank_id=bank, index={"dims": 384, "embed": "openai:unused", "fields": ["title"]})
    store.put(("test",), "k", {"title": "Only the title", "body": "not this"})
    assert [r.text for r in units(memory, bank)] == ["Only the title"]


def test_a_long_value_split_into_several_memories_is_still_one_item(
    memory: Memory, bank: str, store: MemwrapStore
) -> None:
    long_text = " ".join(f"Sentence {i} of the long travel diary about Kyoto temples and gardens." for i in range(80))
    store.put(("diary",), "kyoto", {"text": long_text})
    assert len(units(memory, bank)) > 1  # memwrap split it into units
    item = store.get(("diary",), "kyoto")
    assert item is not None and item.value == {"text": long_text}
    assert [i.key for i in store.search(("diary",))] == ["kyoto"]
    assert [i.key for i in store.search(("diary",), query="Kyoto temples", limit=10)] == ["kyoto"]
    assert store.list_namespaces() == [("diary",)]
    store.put(("diary",), "kyoto", {"text": "Short now: Kyoto was lovely."})
    assert [r.text for r in units(memory, bank)] == ["Short now: Kyoto was lovely."]
    store.delete(("diary",), "kyoto")
    assert units(memory, bank) == []


@pytest.fixture(scope="module")
def extracting_memory(memwrap_home: Path, server: Any) -> Any:
    """A Memory whose retains are extracted into facts by an LLM (the module's fake server)."""
    settings = Settings(
        home=memwrap_home,
        llm_provider="none",
        extraction_provider="openai",
        extraction_model="fake-extractor",
        extraction_base_url=server.openai_base_url,
        extraction_api_key="sk-test",
        llm_max_retries=1,
        llm_backoff=0.01,
        extraction_retry_interval=3600.0,
        worker="off",
    )
    with Memory(settings=settings) as memory:
        yield memory


def test_an_item_extracted_into_facts_is_still_one_item(extracting_memory: Memory, fake: Any, bank: str) -> None:
    store = MemwrapStore(extracting_memory, bank_id=bank)
    fake.script(
        [reply([fact("The user is vegetarian.", "world", [1]), fact("The user lives in Porto.", "world", [1])])]
    )
    store.put(("users", "sam"), "about", {"text": "I'm vegetarian and I live in Porto."})
    facts = units(extracting_memory, bank)
    assert sorted(r.text for r in facts) == ["The user is vegetarian.", "The user lives in Porto."]
    assert all(r.metadata["langgraph"]["key"] == "about" for r in facts)  # each fact carries the item
    item = store.get(("users", "sam"), "about")
    assert item is not None and item.value == {"text": "I'm vegetarian and I live in Porto."}
    assert [i.key for i in store.search(("users",))] == ["about"]
    hits = store.search(("users",), query="Where does the user live?")
    assert [h.key for h in hits] == ["about"]
    assert hits[0].value == {"text": "I'm vegetarian and I live in Porto."}
    store.put(("users", "sam"), "about", {"text": "I moved to Lisbon."})
    after = units(extracting_memory, bank)
    assert [r.text for r in after] == ["I moved to Lisbon."]  # the old facts do not outlive the new value
    assert store.get(("users", "sam"), "about").value == {"text": "I moved to Lisbon."}  # type: ignore[union-attr]


# --- namespaces -------------------------------------------------------------------------------------------------

NAMESPACES = [
    ("a", "b", "c"),
    ("a", "b", "d", "e"),
    ("a", "b", "d", "i"),
    ("a", "b", "f"),
    ("a", "c", "f"),
    ("b", "a", "f"),
    ("users", "123"),
    ("users", "456", "settings"),
    ("admin", "users", "789"),
]


def test_list_namespaces_by_prefix_suffix_wildcards_depth_and_pages(store: MemwrapStore) -> None:
    assert store.list_namespaces() == []
    for i, ns in enumerate(NAMESPACES):
        store.put(ns, f"id_{i}", {"data": f"value_{i:02d}"})
    store.put(("a", "b", "c"), "second", {"data": "same namespace"})
    ab = [("a", "b", "c"), ("a", "b", "d", "e"), ("a", "b", "d", "i"), ("a", "b", "f")]
    assert store.list_namespaces() == sorted(NAMESPACES)
    assert store.list_namespaces(prefix=("a", "b")) == ab
    assert store.list_namespaces(suffix=("f",)) == [("a", "b", "f"), ("a", "c", "f"), ("b", "a", "f")]
    assert store.list_namespaces(prefix=("a",), suffix=("f",)) == [("a", "b", "f"), ("a", "c", "f")]
    assert store.list_namespaces(prefix=("a", "b"), max_depth=3) == [("a", "b", "c"), ("a", "b", "d"), ("a", "b", "f")]
    assert store.list_namespaces(max_depth=2) == [
        ("a", "b"),
        ("a", "c"),
        ("admin", "users"),
        ("b", "a"),
        *[
            ("users", "123"),
            ("users", "456"),
        ],
    ]
    assert store.list_namespaces(prefix=("a", "b"), limit=2) == ab[:2]
    assert store.list_namespaces(prefix=("a", "b"), offset=2) == ab[2:]
    assert store.list_namespaces(prefix=("a", "*", "f")) == [("a", "b", "f"), ("a", "c", "f")]
    assert store.list_namespaces(suffix=("*", "f")) == [("a", "b", "f"), ("a", "c", "f"), ("b", "a", "f")]
    assert store.list_namespaces(prefix=("users", "*")) == [("users", "123"), ("users", "456", "settings")]
    assert store.list_namespaces(prefix=("*", "users"), suffix=("*", "settings")) == []
    assert store.list_namespaces(prefix=("nonexistent",)) == []
    assert store.list_namespaces(prefix=("users", "123")) == [("users", "123")]
    store.delete(("users", "123"), "id_6")
    assert store.list_namespaces(prefix=("users",)) == [("users", "456", "settings")]


def test_list_namespaces_pagination(store: MemwrapStore) -> None:
    for i in range(20):
        store.put(("namespace", f"sub_{i:02d}"), f"id_{i:02d}", {"data": f"value_{i:02d}"})
    for offset in (0, 5, 15):
        expected = [("namespace", f"sub_{i:02d}") for i in range(offset, offset + 5)]
        assert store.list_namespaces(prefix=("namespace",), limit=5, offset=offset) == expected


# --- batch and async ----------------------------------------------------------------------------------------------


def test_batch_runs_every_op_type_with_results_in_order(store: MemwrapStore) -> None:
    store.put(("test", "foo"), "key1", {"data": "value1"})
    store.put(("test", "bar"), "key2", {"data": "value2"})
    results = store.batch(
        [
            GetOp(("test", "foo"), "key1"),
            PutOp(("test", "bar"), "key2", {"data": "value2b"}),
            SearchOp(("test",), filter={"data": "value1"}),
            ListNamespacesOp(match_conditions=(MatchCondition("prefix", ("test",)),)),
            GetOp(("test",), "key3"),
            PutOp(("test",), "key3", {"data": "first"}),
            PutOp(("test", "foo"), "key1", None),
            PutOp(("test",), "key3", {"data": "last"}),
            GetOp(("test", "bar"), "key2"),  # reads see the store as the batch found it, as LangGraph's do
        ]
    )
    assert len(results) == 9
    assert [results[i] for i in (1, 5, 6, 7)] == [None] * 4
    assert results[0] is not None and (results[0].key, results[0].value) == ("key1", {"data": "value1"})
    assert [i.key for i in results[2]] == ["key1"]
    assert results[3] == [("test", "bar"), ("test", "foo")]
    assert results[4] is None
    assert results[8] is not None and results[8].value == {"data": "value2"}
    # then the writes, in order; of two puts to one key the last stands
    assert store.get(("test", "bar"), "key2").value == {"data": "value2b"}  # type: ignore[union-attr]
    assert store.get(("test", "foo"), "key1") is None
    assert store.get(("test",), "key3").value == {"data": "last"}  # type: ignore[union-attr]
    assert store.list_namespaces() == [("test",), ("test", "bar")]


async def test_async_twins_share_the_core(store: MemwrapStore) -> None:
    await store.aput(("users", "alice"), "a", {"text": "Alice likes green tea"})
    item = await store.aget(("users", "alice"), "a")
    assert item is not None and item.value == {"text": "Alice likes green tea"}
    assert store.get(("users", "alice"), "a") == item  # the sync twin reads what the async one wrote
    found = await store.asearch(("users",), query="what does Alice drink?")
    assert [r.key for r in found] == ["a"]
    assert await store.alist_namespaces(prefix=("users",)) == [("users", "alice")]
    await store.adelete(("users", "alice"), "a")
    assert await store.aget(("users", "alice"), "a") is None
    with pytest.raises(InvalidNamespaceError):
        await store.aput(("langgraph", "foo"), "bar", {"x": 1})


async def test_concurrent_async_calls_each_get_their_own_result(store: MemwrapStore) -> None:
    docs = [(f"doc{i}", {"text": f"item {i}", "index": i, "color": ["red", "blue"][i % 2]}) for i in range(12)]
    await asyncio.gather(*[store.aput(("test",), key, value) for key, value in docs])
    got = await asyncio.gather(*[store.aget(("test",), key) for key, _ in docs])
    assert [g.value if g else None for g in got] == [value for _, value in docs]
    reds, late = await asyncio.gather(
        store.asearch(("test",), filter={"color": "red"}, limit=20),
        store.asearch(("test",), filter={"index": {"$gt": 8}}, limit=20),
    )
    assert {r.key for r in reds} == {f"doc{i}" for i in range(0, 12, 2)}
    assert {r.key for r in late} == {"doc9", "doc10", "doc11"}


# --- the bank from the namespace ----------------------------------------------------------------------------------


def test_bank_from_the_first_label_is_what_a_wrapped_model_recalls(memory: Memory, bank: str) -> None:
    store = MemwrapStore(memory, bank_id=None)
    store.put((bank, "memories"), "food", {"text": "Sam is allergic to peanuts"})
    store.put((bank, "settings"), "theme", {"theme": "dark"}, index=False)
    # A plain recall on the bank, as memwrap.wrap_openai(..., bank_id=bank) makes before each call.
    recalled = memory.recall(bank, "what is Sam allergic to?")
    assert "peanuts" in recalled.context
    assert store.get((bank, "memories"), "food") is not None
    assert store.list_namespaces(prefix=(bank,)) == [(bank, "memories"), (bank, "settings")]
    assert (bank, "memories") in store.list_namespaces(suffix=("memories",), limit=1000)
    hits = store.search((bank,), query="peanut allergy")
    assert [h.key for h in hits] == ["food", "theme"] and hits[1].score is None  # unindexed: ranked last


def test_a_search_over_more_banks_than_one_recall_reads(memory: Memory, bank: str) -> None:
    store = MemwrapStore(memory, bank_id=None)
    assert store.search((f"{bank}-none",), query="anything") == []  # no such bank: nothing, no error
    assert store.get((f"{bank}-none", "x"), "k") is None
    banks = [f"{bank}-{i:02d}" for i in range(20)]
    for i, name in enumerate(banks[:-1]):
        store.put((name, "notes"), "n", {"text": f"Shopping list number {i}: bread, milk and eggs"})
    store.put((banks[-1], "notes"), "n", {"text": "The lighthouse keeper feeds the seagulls at dawn"})
    hits = store.search((), query="who feeds the seagulls at the lighthouse?", limit=3)
    assert hits[0].namespace == (banks[-1], "notes")
    assert {(b, "notes") for b in banks} <= set(store.list_namespaces(suffix=("notes",), limit=10_000))


# --- the example: a graph that remembers a user across threads ------------------------------------------------------


def test_example_second_thread_knows_what_the_first_was_told(
    llm_server: Any, warm_memory: Memory, bank: str, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", llm_server.openai_base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    monkeypatch.setenv("MEMWRAP_BANK", bank)
    spec = importlib.util.spec_from_file_location("example_langgraph_memory", EXAMPLE)
    assert spec and spec.loader
    example = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, example)  # its dataclass looks its module up while it is defined
    spec.loader.exec_module(example)
    example.main([])
    first, second = llm_server.requests[-2:]
    assert "teal" not in system_text(first)
    assert "teal" in system_text(second) and "Porto" in system_text(second)
    # the second thread's own messages are only its question: what it knows came from the store
    assert [m["role"] for m in second.body["messages"]] == ["system", "user"]
    out = capsys.readouterr().out
    assert "thread thread-2:" in out and "recalled: ['Hi! My favourite colour is teal" in out
    recalled = warm_memory.recall(bank, "favourite colour", tags=["langgraph"])
    assert "teal" in recalled.context


def test_example_run_as_two_processes(llm_server: Any, memory: Memory, bank: str, tmp_path: Path) -> None:
    env = {
        **os.environ,
        "OPENAI_BASE_URL": llm_server.openai_base_url,
        "OPENAI_API_KEY": "test",
        "MEMWRAP_BANK": bank,
        "MEMWRAP_HOME": str(tmp_path),
        "MEMWRAP_DATABASE_URL": embedded_database_url(memory.settings.pgdata),
    }
    runs = []
    for thread, said in [("monday", "I'm vegetarian and I live in Porto."), ("friday", "What should I cook?")]:
        done = subprocess.run(
            [sys.executable, str(EXAMPLE), "--thread", thread, said],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr[-4000:]
        runs.append(done.stdout)
    assert "recalled: []" in runs[0]
    assert 'recalled: ["I\'m vegetarian and I live in Porto."]' in runs[1]
    assert "vegetarian" in system_text(llm_server.requests[-1])


# --- through a sidecar ----------------------------------------------------------------------------------------------


async def test_the_store_on_a_sidecar(sidecar: Any, bank: str) -> None:
    store = MemwrapStore(sidecar.url, bank_id=None, api_key=ADMIN_KEY)
    await store.aput((bank, "memories"), "drink", {"text": "Bob drinks oolong tea", "rank": 3, "meta": {"src": "chat"}})
    store.put((bank, "prefs"), "theme", {"theme": "dark"}, index=False)
    got = store.get((bank, "memories"), "drink")
    assert got is not None and got.value == {"text": "Bob drinks oolong tea", "rank": 3, "meta": {"src": "chat"}}
    assert [i.key for i in await store.asearch((bank,), query="which tea does Bob like?")] == ["drink", "theme"]
    assert [i.key for i in store.search((bank,), filter={"rank": {"$gte": 3}, "meta.src": "chat"})] == ["drink"]
    assert store.list_namespaces(prefix=(bank,)) == [(bank, "memories"), (bank, "prefs")]
    store.put((bank, "memories"), "drink", {"text": "Bob switched to green tea"})
    after = await store.aget((bank, "memories"), "drink")
    assert after is not None and after.value == {"text": "Bob switched to green tea"}
    assert after.updated_at > after.created_at == got.created_at
    store.delete((bank, "prefs"), "theme")
    assert await store.alist_namespaces(prefix=(bank,)) == [(bank, "memories")]
