"""LangGraph's own store test suites, adapted to run against `MemwrapStore` (memwrap.integrations.langgraph).

Source (MIT, LangChain, Inc.), read at these commits and rewritten here test by test as the scenarios they check
(same data, same assertions), with their fixtures pointed at MemwrapStore on the embedded engine:
- I = libs/checkpoint/tests/test_store.py @ 01b4d15aca3c732db878b50d2acb028a08f0431d (InMemoryStore)
- P = libs/checkpoint-postgres/tests/test_store.py @ 15874cab8a85bf3604adabfdb6b0f5849c24a277 (PostgresStore)
Each test names the upstream test(s) it stands for. What cannot apply is listed in NOT_APPLICABLE with its reason
(and, where an upstream test mixes both, only that assertion is left out, said in a comment beside it).
Upstream parametrizations over PostgresStore's connection modes (default/pipe/pool) and vector column types and
distances (vector/halfvec × l2/inner_product/cosine) choose PostgresStore internals: each test runs once here.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest

pytest.importorskip("langgraph.store.base")

from langgraph.store.base import (  # noqa: E402 - after the importorskip
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    PutOp,
    SearchOp,
)

from memwrap import Memory  # noqa: E402
from memwrap.integrations.langgraph import MemwrapStore  # noqa: E402

# Upstream tests that do not apply to MemwrapStore, with the reason (counted in the report, not run).
NOT_APPLICABLE = {
    "I::test_async_batch_store": "tests LangGraph's AsyncBatchedBaseStore (a mock store), not a store",
    "I::test_async_batch_store_deduplication": "spies on InMemoryStore.batch under AsyncBatchedBaseStore",
    "P::test_scores": "exact cosine/inner-product/L2 of the fake CharacterEmbeddings vectors; memwrap's scores are "
    "recall's fused scores from its own model",
    "P::test_nonnull_migrations": "PostgresStore.MIGRATIONS internals",
}
TTL_SECONDS = 6  # P's own figure: the item lives 6 s unless a read refreshes it


@pytest.fixture
def store(memory: Memory, bank: str) -> MemwrapStore:
    return MemwrapStore(memory, bank_id=bank, index={"dims": 500, "fields": ["$"]}, ttl={"refresh_on_read": True})


class Calls:
    """One store's verbs through its sync or its async path (upstream has a twin test for each)."""

    def __init__(self, store: MemwrapStore, mode: str) -> None:
        self.store, self.mode = store, mode

    def __getattr__(self, name: str) -> Callable[..., Any]:
        if self.mode == "sync":
            return getattr(self.store, name)
        coroutine = getattr(self.store, "a" + name)
        return lambda *args, **kwargs: asyncio.run(coroutine(*args, **kwargs))


@pytest.fixture(params=["sync", "async"])
def calls(store: MemwrapStore, request: pytest.FixtureRequest) -> Calls:
    return Calls(store, request.param)


# --- list_namespaces (I) --------------------------------------------------------------------------------------


def test_list_namespaces_basic(store: MemwrapStore) -> None:  # I::test_list_namespaces_basic
    spaces = [
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
    for i, ns in enumerate(spaces):
        store.put(ns, f"id_{i}", {"data": f"value_{i:02d}"})
    under_ab = [("a", "b", "c"), ("a", "b", "d", "e"), ("a", "b", "d", "i"), ("a", "b", "f")]
    assert sorted(store.list_namespaces(prefix=("a", "b"))) == under_ab
    assert sorted(store.list_namespaces(suffix=("f",))) == [("a", "b", "f"), ("a", "c", "f"), ("b", "a", "f")]
    assert sorted(store.list_namespaces(prefix=("a",), suffix=("f",))) == [("a", "b", "f"), ("a", "c", "f")]
    assert sorted(store.list_namespaces(prefix=("a", "b"), max_depth=3)) == [
        ("a", "b", "c"),
        ("a", "b", "d"),
        ("a", "b", "f"),
    ]
    assert store.list_namespaces(prefix=("a", "b"), limit=2) == under_ab[:2]
    assert store.list_namespaces(prefix=("a", "b"), offset=2) == under_ab[2:]
    assert sorted(store.list_namespaces(prefix=("a", "*", "f"))) == [("a", "b", "f"), ("a", "c", "f")]
    assert sorted(store.list_namespaces(suffix=("*", "f"))) == [("a", "b", "f"), ("a", "c", "f"), ("b", "a", "f")]
    assert store.list_namespaces(prefix=("nonexistent",)) == []
    assert store.list_namespaces(prefix=("users", "123")) == [("users", "123")]


def test_list_namespaces_with_wildcards(store: MemwrapStore) -> None:  # I::test_list_namespaces_with_wildcards
    spaces = [
        ("users", "123"),
        ("users", "456"),
        ("users", "789", "settings"),
        ("admin", "users", "789"),
        ("guests", "123"),
        ("guests", "456", "preferences"),
    ]
    for i, ns in enumerate(spaces):
        store.put(ns, f"id_{i}", {"data": f"value_{i:02d}"})
    assert sorted(store.list_namespaces(prefix=("users", "*"))) == spaces[:3]
    assert store.list_namespaces(suffix=("*", "preferences")) == [("guests", "456", "preferences")]
    assert store.list_namespaces(prefix=("*", "users"), suffix=("*", "settings")) == []


def test_list_namespaces_pagination(store: MemwrapStore) -> None:  # I::test_list_namespaces_pagination
    for i in range(20):
        store.put(("namespace", f"sub_{i:02d}"), f"id_{i:02d}", {"data": f"value_{i:02d}"})
    for offset in (0, 5, 15):
        page = store.list_namespaces(prefix=("namespace",), limit=5, offset=offset)
        assert page == [("namespace", f"sub_{i:02d}") for i in range(offset, offset + 5)]


def test_list_namespaces_max_depth(store: MemwrapStore) -> None:  # I::test_list_namespaces_max_depth
    for i, ns in enumerate([("a", "b", "c", "d"), ("a", "b", "c", "e"), ("a", "b", "f"), ("a", "g"), ("h", "i", "j")]):
        store.put(ns, f"id_{i}", {"data": f"value_{i:02d}"})
    assert sorted(store.list_namespaces(max_depth=2)) == [("a", "b"), ("a", "g"), ("h", "i")]


def test_list_namespaces_no_conditions(store: MemwrapStore) -> None:  # I::test_list_namespaces_no_conditions
    spaces = [("a", "b"), ("c", "d"), ("e", "f", "g")]
    for i, ns in enumerate(spaces):
        store.put(ns, f"id_{i}", {"data": f"value_{i:02d}"})
    assert sorted(store.list_namespaces()) == spaces


def test_list_namespaces_empty_store(store: MemwrapStore) -> None:  # I::test_list_namespaces_empty_store
    assert store.list_namespaces() == []


def test_cannot_put_empty_namespace(calls: Calls) -> None:  # I::test_cannot_put_empty_namespace (both halves)
    doc = {"foo": "bar"}
    for bad in [(), ("the", "thing.about"), ("some", "fun", ""), ("langgraph", "foo")]:
        with pytest.raises(InvalidNamespaceError):
            calls.put(bad, "foo", doc)
    ns = ("foo", "langgraph", "foo")
    calls.put(ns, "bar", doc)
    assert calls.get(ns, "bar").value == doc
    assert calls.search(ns)[0].value == doc
    calls.delete(ns, "bar")
    assert calls.get(ns, "bar") is None
    # Past the public put: a batch's PutOp is not validated, and the store keeps it as any other item.
    calls.batch([PutOp(("langgraph", "foo"), "bar", doc)])
    assert calls.get(("langgraph", "foo"), "bar").value == doc
    assert calls.search(("langgraph", "foo"))[0].value == doc
    calls.delete(("langgraph", "foo"), "bar")
    assert calls.get(("langgraph", "foo"), "bar") is None


# --- batches and basic operations (P) -------------------------------------------------------------------------


def test_batch_order(store: MemwrapStore) -> None:  # P::test_batch_order
    store.put(("test", "foo"), "key1", {"data": "value1"})
    store.put(("test", "bar"), "key2", {"data": "value2"})
    results = store.batch(
        [
            GetOp(("test", "foo"), "key1"),
            PutOp(("test", "bar"), "key2", {"data": "value2"}),
            SearchOp(("test",), filter={"data": "value1"}, limit=10, offset=0),
            ListNamespacesOp(match_conditions=None, max_depth=None, limit=10, offset=0),
            GetOp(("test",), "key3"),
        ]
    )
    assert len(results) == 5
    assert isinstance(results[0], Item) and results[0].value == {"data": "value1"} and results[0].key == "key1"
    assert results[1] is None
    assert isinstance(results[2], list) and len(results[2]) == 1
    assert isinstance(results[3], list) and len(results[3]) > 0
    assert results[4] is None
    again = store.batch(
        [
            SearchOp(("test",), filter=None, limit=5, offset=0),
            GetOp(("test", "bar"), "key2"),
            ListNamespacesOp(match_conditions=None, max_depth=None, limit=5, offset=0),
            PutOp(("test",), "key3", {"data": "value3"}),
            GetOp(("test", "foo"), "key1"),
        ]
    )
    assert len(again) == 5
    assert isinstance(again[0], list) and len(again[0]) >= 2
    assert isinstance(again[1], Item) and again[1].value == {"data": "value2"} and again[1].key == "key2"
    assert isinstance(again[2], list) and len(again[2]) > 0
    assert again[3] is None
    assert isinstance(again[4], Item) and again[4].value == {"data": "value1"}


def test_batch_get_ops(store: MemwrapStore) -> None:  # P::test_batch_get_ops
    store.put(("test",), "key1", {"data": "value1"})
    store.put(("test",), "key2", {"data": "value2"})
    got = store.batch([GetOp(("test",), "key1"), GetOp(("test",), "key2"), GetOp(("test",), "key3")])
    assert [g.key if g else None for g in got] == ["key1", "key2", None]


def test_batch_put_ops(store: MemwrapStore) -> None:  # P::test_batch_put_ops
    results = store.batch(
        [
            PutOp(("test",), "key1", {"data": "value1"}),
            PutOp(("test",), "key2", {"data": "value2"}),
            PutOp(("test",), "key3", None),
        ]
    )
    assert results == [None, None, None]
    assert store.get(("test",), "key1").value == {"data": "value1"}
    assert store.get(("test",), "key2").value == {"data": "value2"}
    assert store.get(("test",), "key3") is None


def test_batch_search_ops(store: MemwrapStore) -> None:  # P::test_batch_search_ops
    for ns, key, value in [
        (("test", "foo"), "key1", {"data": "value1", "tag": "a"}),
        (("test", "bar"), "key2", {"data": "value2", "tag": "a"}),
        (("test", "baz"), "key3", {"data": "value3", "tag": "b"}),
    ]:
        store.put(ns, key, value)
    tagged, first_two, foo = store.batch(
        [
            SearchOp(("test",), filter={"tag": "a"}, limit=10, offset=0),
            SearchOp(("test",), filter=None, limit=2, offset=0),
            SearchOp(("test", "foo"), filter=None, limit=10, offset=0),
        ]
    )
    assert len(tagged) == 2 and all(i.value["tag"] == "a" for i in tagged)
    assert len(first_two) == 2
    assert [i.namespace for i in foo] == [("test", "foo")]


def test_batch_list_namespaces_ops(store: MemwrapStore) -> None:  # P::test_batch_list_namespaces_ops
    data = [
        (("test", "documents", "public"), "doc1", {"content": "public doc"}),
        (("test", "documents", "private"), "doc2", {"content": "private doc"}),
        (("test", "images", "public"), "img1", {"content": "public image"}),
        (("prod", "documents", "public"), "doc3", {"content": "prod doc"}),
    ]
    for ns, key, value in data:
        store.put(ns, key, value)
    every, shallow, public = store.batch(
        [
            ListNamespacesOp(match_conditions=None, max_depth=None, limit=10, offset=0),
            ListNamespacesOp(match_conditions=None, max_depth=2, limit=10, offset=0),
            ListNamespacesOp(match_conditions=(MatchCondition("suffix", ("public",)),), max_depth=None, limit=10),
        ]
    )
    assert len(every) == len(data)
    assert all(len(ns) <= 2 for ns in shallow)
    assert public and all(ns[-1] == "public" for ns in public)


def test_basic_store_ops(store: MemwrapStore) -> None:  # P::test_basic_store_ops
    ns = ("test", "documents")
    store.put(ns, "doc1", {"title": "Test Document", "content": "Hello, World!"})
    item = store.get(ns, "doc1")
    assert item and (item.namespace, item.key) == (ns, "doc1")
    assert item.value == {"title": "Test Document", "content": "Hello, World!"}
    store.put(ns, "doc1", {"title": "Updated Document", "content": "Hello, Updated!"})
    updated = store.get(ns, "doc1")
    assert updated.value == {"title": "Updated Document", "content": "Hello, Updated!"}
    assert updated.updated_at > item.updated_at
    assert store.get(("test", "other_documents"), "doc1") is None
    store.delete(ns, "doc1")
    assert store.get(ns, "doc1") is None


def test_list_namespaces(store: MemwrapStore) -> None:  # P::test_list_namespaces
    spaces = [
        ("test", "documents", "public"),
        ("test", "documents", "private"),
        ("test", "images", "public"),
        ("test", "images", "private"),
        ("prod", "documents", "public"),
        ("prod", "documents", "private"),
    ]
    for ns in spaces:
        store.put(ns, "dummy", {"content": "dummy"})
    assert len(store.list_namespaces()) == len(spaces)
    under_test = store.list_namespaces(prefix=["test"])
    assert len(under_test) == 4 and all(ns[0] == "test" for ns in under_test)
    public = store.list_namespaces(suffix=["public"])
    assert len(public) == 3 and all(ns[-1] == "public" for ns in public)
    assert all(len(ns) <= 2 for ns in store.list_namespaces(max_depth=2))
    assert len(store.list_namespaces(limit=3)) == 3
    for ns in spaces:
        store.delete(ns, "dummy")
    assert store.list_namespaces() == []


def test_search(store: MemwrapStore) -> None:  # P::test_search
    data = [
        (("test", "docs"), "doc1", {"title": "First Doc", "author": "Alice", "tags": ["important"]}),
        (("test", "docs"), "doc2", {"title": "Second Doc", "author": "Bob", "tags": ["draft"]}),
        (("test", "images"), "img1", {"title": "Image 1", "author": "Alice", "tags": ["final"]}),
    ]
    for ns, key, value in data:
        store.put(ns, key, value)
    assert len(store.search(["test"])) == 3
    docs = store.search(["test", "docs"])
    assert len(docs) == 2 and all(i.namespace == ("test", "docs") for i in docs)
    alice = store.search(["test"], filter={"author": "Alice"})
    assert len(alice) == 2 and all(i.value["author"] == "Alice" for i in alice)
    assert len(store.search(["test"], limit=2)) == 2
    assert len(store.search(["test"], offset=2)) == 1


def test_numeric_comparison_filters(store: MemwrapStore) -> None:  # P::test_numeric_comparison_filters
    ns = ("test", "scores")
    for key, score in [("a", 2), ("b", 9), ("c", 10), ("d", 11)]:
        store.put(ns, key, {"score": score})

    def scores(where: dict[str, Any]) -> list[float]:
        return sorted(i.value["score"] for i in store.search(ns, filter=where))

    assert scores({"score": {"$gte": 10}}) == [10, 11]
    assert scores({"score": {"$gt": 9}}) == [10, 11]
    assert scores({"score": {"$lt": 10}}) == [2, 9]
    assert scores({"score": {"$lte": 9}}) == [2, 9]
    store.put(ns, "e", {"score": 9.5})
    assert scores({"score": {"$gt": 9}}) == [9.5, 10, 11]
    for key, name in [("a", "apple"), ("b", "banana")]:
        store.put(("test", "names"), key, {"name": name})
    assert [i.value["name"] for i in store.search(("test", "names"), filter={"name": {"$gt": "apple"}})] == ["banana"]


# --- semantic search (I and P) --------------------------------------------------------------------------------


def test_vector_store_initialization(store: MemwrapStore) -> None:  # I:: and P::test_vector_store_initialization
    assert store.index_config is not None
    assert store.index_config["dims"] == 500 and store.index_config["fields"] == ["$"]


def test_vector_insert_with_auto_embedding(calls: Calls) -> None:  # I:: (+async) and P::
    for key, value in [
        ("doc1", {"text": "short text"}),
        ("doc2", {"text": "longer text document"}),
        ("doc3", {"text": "longest text document here"}),
        ("doc4", {"description": "text in description field"}),
        ("doc5", {"content": "text in content field"}),
        ("doc6", {"body": "text in body field"}),
    ]:
        calls.put(("test",), key, value)
    keys = [r.key for r in calls.search(("test",), query="long text")]
    assert "doc2" in keys and "doc3" in keys


def test_vector_update_with_embedding(calls: Calls) -> None:  # I:: (+async) and P::test_vector_update_with_embedding
    calls.put(("test",), "doc1", {"text": "zany zebra Xerxes"})
    calls.put(("test",), "doc2", {"text": "something about dogs"})
    calls.put(("test",), "doc3", {"text": "text about birds"})
    initial = calls.search(("test",), query="Zany Xerxes")
    assert initial and initial[0].key == "doc1"
    calls.put(("test",), "doc1", {"text": "new text about dogs"})
    after = calls.search(("test",), query="Zany Xerxes")
    after_score = next((r.score for r in after if r.key == "doc1"), None) or 0.0
    assert after_score < initial[0].score
    for r in calls.search(("test",), query="new text about dogs"):
        if r.key == "doc1":
            assert r.score is not None and r.score > after_score
    calls.put(("test",), "doc4", {"text": "new text about dogs"}, index=False)
    assert not any(r.key == "doc4" for r in calls.search(("test",), query="new text about dogs", limit=3))


@pytest.mark.parametrize("refresh_ttl", [True, False])
def test_vector_search_with_filters(calls: Calls, refresh_ttl: bool) -> None:  # I:: (+async), P:: (both refresh_ttl)
    for key, value in [
        ("doc1", {"text": "red apple", "color": "red", "score": 4.5}),
        ("doc2", {"text": "red car", "color": "red", "score": 3.0}),
        ("doc3", {"text": "green apple", "color": "green", "score": 4.0}),
        ("doc4", {"text": "blue car", "color": "blue", "score": 3.5}),
    ]:
        calls.put(("test",), key, value)
    apples = calls.search(("test",), query="apple", filter={"color": "red"}, refresh_ttl=refresh_ttl)
    assert len(apples) == 2 and apples[0].key == "doc1"
    cars = calls.search(("test",), query="car", filter={"color": "red"}, refresh_ttl=refresh_ttl)
    assert len(cars) == 2 and cars[0].key == "doc2"
    high = calls.search(("test",), query="bbbbluuu", filter={"score": {"$gt": 3.2}}, refresh_ttl=refresh_ttl)
    assert {r.key for r in high} == {"doc1", "doc3", "doc4"}
    # Not applicable: upstream's `high[0].key == "doc4"` — "bbbbluuu" is nearest "blue car" only under the fake
    # character-count embedding; to a language model it is no word, and no order of the three is more right.
    green = calls.search(("test",), query="apple", filter={"score": {"$gte": 4.0}, "color": "green"})
    assert [r.key for r in green] == ["doc3"]


def test_async_batched_vector_search_concurrent(store: MemwrapStore) -> None:  # I::test_async_batched_vector_...
    colors, things, scores = (
        ["red", "blue", "green", "yellow", "purple"],
        ["apple", "car", "house", "book", "phone"],
        [
            3.0,
            3.5,
            4.0,
            4.5,
            5.0,
        ],
    )
    docs = [
        (
            f"doc{i}",
            {"text": f"{colors[i % 5]} {things[i % 5]}", "color": colors[i % 5], "score": scores[i % 5], "index": i},
        )
        for i in range(50)
    ]
    queries: list[tuple[str, dict[str, Any]]] = [
        ("apple", {"color": "red"}),
        ("car", {"color": "blue"}),
        ("house", {"color": "green"}),
        ("phone", {"score": {"$gt": 4.99}}),
        ("book", {"score": {"$lte": 3.5}}),
        ("apple", {"score": {"$gte": 3.0}, "color": "red"}),
        ("car", {"score": {"$lt": 5.1}, "color": "blue"}),
        ("house", {"index": {"$gt": 25}}),
        ("phone", {"index": {"$lte": 10}}),
    ]
    checks: dict[str, Callable[[float, float], bool]] = {
        "$gt": lambda a, b: a > b,
        "$gte": lambda a, b: a >= b,
        "$lt": lambda a, b: a < b,
        "$lte": lambda a, b: a <= b,
    }

    async def scenario() -> list[list[Any]]:
        # Upstream gathers put, delete, put of each key at once through AsyncBatchedBaseStore, which folds them into
        # one batch (the last put stands). MemwrapStore's abatch is the whole batch: the same ops as one batch.
        await store.abatch(
            [PutOp(("test",), k, v) for k, v in docs]
            + [PutOp(("test",), k, None) for k, _ in docs]
            + [PutOp(("test",), k, v) for k, v in docs]
        )
        return await asyncio.gather(*[store.asearch(("test",), query=q, filter=f) for q, f in queries])

    for results, (query, where) in zip(asyncio.run(scenario()), queries, strict=True):
        assert results, f"no results for {query!r} with {where}"
        for r in results:
            if "color" in where:
                assert r.value["color"] == where["color"]
            for field in ("score", "index"):
                for op, operand in where.get(field, {}).items():
                    assert checks[op](r.value[field], operand)


def test_vector_search_pagination(calls: Calls) -> None:  # I:: (+async) and P::test_vector_search_pagination
    for i in range(5):
        calls.put(("test",), f"doc{i}", {"text": f"test document number {i}"})
    first = calls.search(("test",), query="test", limit=2)
    second = calls.search(("test",), query="test", limit=2, offset=2)
    assert len(first) == 2 and len(second) == 2 and first[0].key != second[0].key
    assert not {r.key for r in first} & {r.key for r in second}
    assert len(calls.search(("test",), query="test", limit=10)) == 5


def test_vector_search_edge_cases(calls: Calls) -> None:  # I:: (+async) and P::test_vector_search_edge_cases
    calls.put(("test",), "doc1", {"text": "test document"})
    for query in ["", None, "test " * 100, "test!@#$%^&*()"]:
        assert len(calls.search(("test",), query=query)) == 1


def test_embed_with_path(memory: Memory, bank: str) -> None:  # P::test_embed_with_path_sync
    store = MemwrapStore(memory, bank_id=bank, index=["key0", "key1", "key3"])
    store.put(("test",), "doc1", {"key1": "xxx", "key2": "yyy", "key3": "zzz"})  # no key0: no error
    store.put(("test",), "doc2", {"key0": "uuu", "key1": "vvv", "key2": "www", "key3": "xxx"})
    both = store.search(("test",), query="xxx")
    assert len(both) == 2 and both[0].key != both[1].key
    # Not applicable: upstream's score equalities (`approx(..., abs=1e-3)`) between items: PostgresStore keeps a
    # vector per field and takes the best, memwrap embeds an item's indexed fields as one text.
    for query, best in [("uuu", "doc2"), ("zzz", "doc1")]:
        found = store.search(("test",), query=query)
        assert len(found) == 2 and found[0].key == best
        assert found[1].score is None or found[0].score > found[1].score
    assert len(store.search(("test",), query="www")) == 2  # an unindexed field: both items still listed


def test_embed_with_path_operation_config(memory: Memory, bank: str) -> None:  # P::test_embed_with_path_op...
    store = MemwrapStore(memory, bank_id=bank, index=["key17"])
    store.put(("test",), "doc3", {"key0": "aaa", "key1": "bbb", "key2": "ccc", "key3": "ddd"}, index=["key0", "key1"])
    store.put(("test",), "doc4", {"key0": "eee", "key1": "bbb", "key2": "fff", "key3": "ggg"}, index=["key1", "key3"])
    for query, best in [("aaa", "doc3"), ("ggg", "doc4")]:
        found = store.search(("test",), query=query)
        assert len(found) == 2 and found[0].key == best and len({r.key for r in found}) == 2
        assert found[1].score is None or found[0].score > found[1].score
    assert len({r.key for r in store.search(("test",), query="bbb")}) == 2
    # Not applicable: "bbb" scoring both alike within 1e-3 and "ccc" scoring under 0.9 (fake-embedding figures).
    assert len(store.search(("test",), query="ccc")) == 2
    store.put(("test",), "doc5", {"key0": "hhh", "key1": "iii"}, index=False)
    listed = store.search(("test",))
    assert len(listed) == 3 and all(r.score is None for r in listed) and any(r.key == "doc5" for r in listed)
    # Upstream leaves this as a TODO ("we don't fill in additional results"); memwrap does: every item is ranked.
    found = store.search(("test",), query="hhh")
    assert len(found) == 3 and next(r for r in found if r.key == "doc5").score is None


def test_non_ascii(store: MemwrapStore) -> None:  # P::test_non_ascii
    texts = {"1": "这是中文", "2": "これは日本語です", "3": "이건 한국어야", "4": "Это русский", "5": "यह रूसी है"}
    for key, text in texts.items():
        store.put(("user_123", "memories"), key, {"text": text})
    for key, text in texts.items():
        assert store.search(("user_123", "memories"), query=text)[0].key == key


# --- TTL (P::test_store_ttl, and the refresh rules of BaseStore) ----------------------------------------------


def test_store_ttl(memory: Memory, bank: str) -> None:  # P::test_store_ttl (its timeline, its 6 s TTL)
    store = MemwrapStore(memory, bank_id=bank, ttl={"default_ttl": TTL_SECONDS / 60, "refresh_on_read": True})
    assert store.supports_ttl is True
    ns = ("foo",)
    store.put(ns, key="item1", value={"foo": "bar"}, ttl=TTL_SECONDS / 60)
    time.sleep(TTL_SECONDS - 2)
    assert store.get(ns, key="item1", refresh_ttl=True) is not None
    time.sleep(TTL_SECONDS - 2)
    assert len(store.search(ns, query="foo", refresh_ttl=True)) == 1
    time.sleep(TTL_SECONDS - 2)
    assert store.get(ns, key="item1", refresh_ttl=False) is not None
    time.sleep(TTL_SECONDS - 1)
    assert store.search(ns, query="bar", refresh_ttl=False) == []
    assert store.get(ns, key="item1") is None and store.list_namespaces() == []
    store.put(ns, key="item1", value={"foo": "again"})  # the key is free again: a new item, no ttl (default 0.1)
    item = store.get(ns, key="item1")
    assert item is not None and item.value == {"foo": "again"} and item.created_at == item.updated_at


def test_ttl_sets_memwraps_expiry_and_reads_refresh_it(memory: Memory, bank: str) -> None:
    store = MemwrapStore(memory, bank_id=bank, ttl={"refresh_on_read": False})
    store.put(("u",), "kept", {"text": "no ttl: never expires"})
    store.put(("u",), "short", {"text": "expires in an hour"}, ttl=60)

    def expiry(key: str) -> datetime | None:
        (record,) = [r for r in memory.list(bank, include_expired=True) if r.metadata["langgraph"]["key"] == key]
        return record.expires_at

    assert expiry("kept") is None
    first = expiry("short")
    assert first is not None and 59 * 60 < (first - datetime.now(UTC)).total_seconds() <= 3600
    store.get(("u",), "short")  # refresh_on_read False: unchanged
    assert expiry("short") == first
    store.get(("u",), "short", refresh_ttl=True)
    refreshed = expiry("short")
    assert refreshed is not None and refreshed > first
    store.search(("u",), query="expires", refresh_ttl=True)
    assert expiry("short") >= refreshed and expiry("kept") is None
    store.put(("u",), "short", {"text": "no ttl any more"}, ttl=None)
    assert expiry("short") is None
    with pytest.raises(ValueError, match="positive number of minutes"):
        store.put(("u",), "bad", {"text": "x"}, ttl=-1)


# --- beyond the suites: the contract points this store had broken ---------------------------------------------


def test_a_query_search_ranks_every_matching_item(store: MemwrapStore) -> None:
    """Recall's relevance cut never hides a matching item: a query search returns what a listing would."""
    for i in range(12):
        store.put(("notes",), f"n{i}", {"text": f"unrelated note number {i} about gardening", "kind": "note"})
    store.put(("notes",), "target", {"text": "the quarterly budget review is on Friday", "kind": "note"})
    listed = store.search(("notes",), filter={"kind": "note"}, limit=50)
    ranked = store.search(("notes",), query="budget review", filter={"kind": "note"}, limit=50)
    assert ranked[0].key == "target"
    assert sorted(r.key for r in ranked) == sorted(r.key for r in listed) and len(ranked) == 13
    page = store.search(("notes",), query="budget review", filter={"kind": "note"}, limit=5, offset=10)
    assert [r.key for r in page] == [r.key for r in ranked[10:15]]


def test_a_store_without_bank_shows_only_items_under_their_own_banks_label(memory: Memory, bank: str) -> None:
    """Issue 37: a store with a bank of its own may write ("alice", ...) into its bank; a `bank_id=None` store
    reads the first label as the bank and must not report that item as Alice's."""
    other = f"{bank}-other"
    MemwrapStore(memory, bank_id=other).put((bank, "memories"), "k", {"text": "written into another bank"})
    own = MemwrapStore(memory, bank_id=None)
    own.put((bank, "memories"), "mine", {"text": "written into my own bank"})
    assert [i.key for i in own.search((bank,))] == ["mine"]
    assert [i.key for i in own.search((bank,), query="written into a bank")] == ["mine"]
    everywhere = own.search((), query="written into another bank", limit=100)
    assert all(i.key != "k" for i in everywhere)
    assert all(i.key != "k" for i in own.search((), limit=1000))
    assert (bank, "memories") in own.list_namespaces()
    assert own.get((bank, "memories"), "k") is None
