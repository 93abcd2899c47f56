"""The REST API of a real `memwrap serve` process: retain → recall, paging, banks, errors with stable codes."""

from __future__ import annotations

import uuid

import httpx
from test_server_harness import *  # noqa: F403 - fixtures: sidecar, admin, upstream


def test_health_needs_no_key(sidecar: ServerProcess) -> None:
    response = httpx.get(sidecar.url + "/health")
    assert response.status_code == 200
    assert response.json()["status"] == "ok"


def test_retain_then_recall_round_trip(admin: httpx.Client, bank: str) -> None:
    created = admin.post(
        f"/v1/banks/{bank}/memories",
        json={
            "content": "Alice moved to Lisbon in March 2026 to work on the Cloud team at Google.",
            "timestamp": "2026-04-02T10:00:00Z",
            "document_id": "conv-1:turn-1",
            "tags": ["work"],
            "metadata": {"source": "test"},
        },
    )
    assert created.status_code == 201, created.text
    ids = created.json()["ids"]
    assert ids

    recall = admin.post(f"/v1/banks/{bank}/recall", json={"query": "Where does Alice work?", "token_budget": 200})
    assert recall.status_code == 200, recall.text
    body = recall.json()
    assert "Google" in body["context"] and body["tokens"] <= 200
    assert body["memories"][0]["id"] in ids
    assert body["memories"][0]["metadata"] == {"source": "test"}


def test_batch_list_paging_filters_get_delete(admin: httpx.Client, bank: str) -> None:
    items = [
        {
            "content": f"Note number {i} about gardening.",
            "document_id": f"s:{i}",
            "tags": ["even" if i % 2 == 0 else "odd"],
        }
        for i in range(5)
    ]
    created = admin.post(f"/v1/banks/{bank}/memories/batch", json={"items": items})
    assert created.status_code == 201, created.text
    ids = created.json()["ids"]
    assert len(ids) == 5
    # Retaining the same items again stores nothing new and answers with the same ids.
    assert admin.post(f"/v1/banks/{bank}/memories/batch", json={"items": items}).json()["ids"] == ids

    first = admin.get(f"/v1/banks/{bank}/memories", params={"limit": 2}).json()
    assert [m["id"] for m in first["items"]] == ids[:2] and first["next_offset"] == 2
    last = admin.get(f"/v1/banks/{bank}/memories", params={"limit": 2, "offset": 4}).json()
    assert [m["id"] for m in last["items"]] == ids[4:] and last["next_offset"] is None
    even = admin.get(f"/v1/banks/{bank}/memories", params={"tag": "even"}).json()["items"]
    assert len(even) == 3
    by_doc = admin.get(f"/v1/banks/{bank}/memories", params={"document_id": "s:3"}).json()["items"]
    assert [m["id"] for m in by_doc] == [ids[3]]

    one = admin.get(f"/v1/banks/{bank}/memories/{ids[0]}")
    assert one.status_code == 200 and one.json()["text"] == "Note number 0 about gardening."
    assert admin.delete(f"/v1/banks/{bank}/memories/{ids[0]}").status_code == 204
    gone = admin.get(f"/v1/banks/{bank}/memories/{ids[0]}")
    assert gone.status_code == 404 and gone.json()["error"]["code"] == "memory_not_found"
    assert admin.delete(f"/v1/banks/{bank}/memories/{ids[0]}").json()["error"]["code"] == "memory_not_found"


def test_banks_create_configure_delete(admin: httpx.Client, bank: str) -> None:
    created = admin.post("/v1/banks", json={"bank_id": bank, "defense_policy": "block"})
    assert created.status_code == 201, created.text
    assert created.json()["config"] == {"defense_policy": "block"}
    listed = next(b for b in admin.get("/v1/banks").json() if b["bank_id"] == bank)
    assert listed["config"] == admin.get(f"/v1/banks/{bank}").json()["config"] == {"defense_policy": "block"}
    again = admin.post("/v1/banks", json={"bank_id": bank})
    assert again.status_code == 409 and again.json()["error"]["code"] == "bank_exists"

    # The stored policy is the engine's: a secret is refused, with nothing stored.
    blocked = admin.post(
        f"/v1/banks/{bank}/memories", json={"content": "my key is sk-proj-abcdefghijklmnopqrstuvwxyz123456"}
    )
    assert blocked.status_code == 422 and blocked.json()["error"]["code"] == "secret_blocked"

    patched = admin.patch(f"/v1/banks/{bank}", json={"defense_policy": None})
    assert patched.status_code == 200 and patched.json()["config"] == {}
    assert admin.post(f"/v1/banks/{bank}/memories", json={"content": "Plain fact."}).status_code == 201
    shown = admin.get(f"/v1/banks/{bank}").json()
    assert shown["memories"] == 1 and shown["bank_id"] == bank
    assert bank in [b["bank_id"] for b in admin.get("/v1/banks").json()]

    deleted = admin.delete(f"/v1/banks/{bank}")
    assert deleted.json() == {"bank_id": bank, "deleted": 1}
    missing = admin.get(f"/v1/banks/{bank}")
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "bank_not_found"


def test_concurrent_creates_of_one_bank_have_one_winner(sidecar: ServerProcess, bank: str) -> None:
    import concurrent.futures

    def create(_: int) -> int:
        with httpx.Client(base_url=sidecar.url, headers={"Authorization": f"Bearer {ADMIN_KEY}"}, timeout=30) as c:
            return c.post("/v1/banks", json={"bank_id": bank, "defense_policy": "block"}).status_code

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        statuses = sorted(pool.map(create, range(8)))
    assert statuses == [201] + [409] * 7


def test_errors_have_stable_codes(admin: httpx.Client, bank: str) -> None:
    cases = [
        (admin.post(f"/v1/banks/{bank}/memories", json={"content": "   "}), 422, "invalid_content"),
        (
            admin.post(f"/v1/banks/{bank}/memories", json={"content": "x", "metadata": {"k": "a\u0000b"}}),
            422,
            "invalid_request",
        ),
        (admin.post(f"/v1/banks/{bank}/recall", json={"query": "q", "token_budget": 0}), 422, "invalid_budget"),
        (
            admin.post(f"/v1/banks/{bank}/recall", content=b"{not json", headers={"content-type": "application/json"}),
            400,
            "invalid_json",
        ),
        (admin.get(f"/v1/banks/{bank}/memories/{uuid.uuid4()}"), 404, "memory_not_found"),
        (admin.get("/v1/banks/bad%20bank/memories"), 422, "invalid_request"),
        (admin.get("/v1/nothing-here"), 404, "not_found"),
    ]
    for response, status, code in cases:
        assert response.status_code == status, (response.request.url, response.text)
        assert response.json()["error"]["code"] == code, response.text


def test_metrics_count_requests(admin: httpx.Client, bank: str) -> None:
    admin.post(f"/v1/banks/{bank}/recall", json={"query": "anything"})
    text = admin.get("/metrics").text
    assert 'memwrap_http_requests_total{method="POST",route="/v1/banks/{bank_id}/recall",status="200"}' in text
    assert "memwrap_events_total" in text and "memwrap_proxy_calls" in text


def test_recall_after_deleting_the_only_mention_of_an_entity(admin: httpx.Client, bank: str) -> None:
    # Found by schemathesis' stateful phase: an entity left with no mentions made the graph arm divide by zero.
    admin.post(f"/v1/banks/{bank}/memories", json={"content": "Keep this one about Lisbon."})
    ids = admin.post(f"/v1/banks/{bank}/memories", json={"content": "Zanzibar trip with Ottoline."}).json()["ids"]
    assert admin.delete(f"/v1/banks/{bank}/memories/{ids[0]}").status_code == 204
    recall = admin.post(f"/v1/banks/{bank}/recall", json={"query": "What about Zanzibar and Ottoline?"})
    assert recall.status_code == 200, recall.text


def test_reflect_without_an_llm_is_a_409(admin: httpx.Client, bank: str) -> None:
    response = admin.post(f"/v1/banks/{bank}/reflect", json={"query": "What do you know?"})
    assert response.status_code == 409 and response.json()["error"]["code"] == "llm_not_configured"
    bad = admin.post(f"/v1/banks/{bank}/reflect", json={"query": "q", "disposition": {"empathy": 7}})
    assert bad.status_code == 422
