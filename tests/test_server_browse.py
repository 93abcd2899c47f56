"""The read-only routes behind the memory browser: a bank's stats, a memory's surroundings, entities and their
graph, and recall's explain option (over a real sidecar; the browser itself: tests/test_ui_browser.py)."""

from __future__ import annotations

import uuid

import httpx
from test_server_harness import *  # noqa: F403 - fixtures: sidecar, admin
from ui_support import seed


def test_stats_context_entities_and_explain(admin: httpx.Client) -> None:
    bank = f"browse-{uuid.uuid4().hex[:8]}"
    seeded = seed(admin, bank)
    first = seeded["ids"][0]
    admin.post(f"/v1/banks/{bank}/memories/{seeded['ids'][1]}/invalidate", json={"reason": "wrong"}).raise_for_status()

    stats = admin.get(f"/v1/banks/{bank}/stats").json()
    listed = admin.get(f"/v1/banks/{bank}/memories", params={"limit": 1000}).json()["items"]
    assert stats["memories"] == len(listed) == sum(stats["memories_by_type"].values())
    assert stats["invalidated"] >= 1  # the memory, and an observation it was the only other source of
    assert stats["observations"] == len(admin.get(f"/v1/banks/{bank}/observations").json()) > 0
    assert stats["mental_models"] == 1 and stats["entities"] > 3
    assert stats["last_activity_at"] >= stats["last_retain_at"]
    assert admin.get("/v1/banks/no-such-bank-here/stats").status_code == 404

    context = admin.get(f"/v1/banks/{bank}/memories/{first}/context").json()
    assert {"Alice", "Lisbon", "Google"} <= {e["name"] for e in context["entities"]}
    assert [link["kind"] for link in context["links"]] == ["next"]  # the next turn of its session
    invalidated = admin.get(f"/v1/banks/{bank}/memories/{seeded['ids'][1]}/context").json()
    assert invalidated["invalidated_at"] and invalidated["invalidation_reason"] == "wrong"
    assert admin.get(f"/v1/banks/{bank}/memories/{uuid.uuid4()}/context").json()["error"]["code"] == "memory_not_found"

    entities = admin.get(f"/v1/banks/{bank}/entities").json()
    assert entities[0]["name"] == "Alice"  # most mentioned first
    maya = admin.get(f"/v1/banks/{bank}/entities", params={"search": "may"}).json()
    assert [e["name"] for e in maya] == ["Maya"]
    zhang = admin.get(f"/v1/banks/{bank}/entities", params={"search": "Zhang Ailing"}).json()  # an alias finds it
    assert [e["name"] for e in zhang] == ["张爱玲"]
    graph = admin.get(f"/v1/banks/{bank}/entities/{maya[0]['id']}/graph").json()
    near = {n["entity"]["name"]: n for n in graph["neighbours"]}
    assert near["Alice"]["co_mentions"] == sum("Maya" in m["text"] and "Alice" in m["text"] for m in listed) >= 3
    assert all("Maya" in m["text"] for m in graph["memories"])
    missing = admin.get(f"/v1/banks/{bank}/entities/{uuid.uuid4()}/graph")
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "entity_not_found"
    one = admin.get(f"/v1/banks/{bank}/entities/{maya[0]['id']}/graph", params={"neighbours": 1}).json()
    assert one["neighbours"] == graph["neighbours"][:1]  # the closest only
    for path, params in (
        (f"/v1/banks/{bank}/entities", {"limit": 0}),
        (f"/v1/banks/{bank}/entities", {"limit": 501}),
        (f"/v1/banks/{bank}/entities", {"search": "x" * 201}),
        (f"/v1/banks/{bank}/entities/{maya[0]['id']}/graph", {"neighbours": 51}),
    ):
        refused = admin.get(path, params=params)
        assert refused.status_code == 422 and refused.json()["error"]["code"] == "invalid_request", (path, params)
    # A segment that is no UUID names no entity: no route takes it (as /memories/batch is not a memory id).
    missing = admin.get(f"/v1/banks/{bank}/entities/not-a-uuid/graph")
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "not_found"

    body = {"query": "Where did Alice move?", "token_budget": 120, "explain": True}
    explained = admin.post(f"/v1/banks/{bank}/recall", json=body).json()
    plain = admin.post(f"/v1/banks/{bank}/recall", json={**body, "explain": False}).json()
    assert plain["considered"] is None and plain["context"] == explained["context"]
    fit = [c["id"] for c in explained["considered"] if c["fit"]]
    assert fit == [m["id"] for m in explained["memories"]] and len(fit) < len(explained["considered"])
    legacy = admin.post(f"/v1/banks/{bank}/recall", json={"query": "Where did Alice move?", "max_tokens": 120}).json()
    assert legacy["token_budget"] == 120 and legacy["context"] == plain["context"]
