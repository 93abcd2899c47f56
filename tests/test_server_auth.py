"""MEMWRAP_API_KEYS: 401 without a key on every route but /health and /ready, 403 for a bank outside a key's
allow-list."""

from __future__ import annotations

import uuid

import httpx
from test_server_harness import *  # noqa: F403 - fixtures: sidecar, admin

from memwrap_server.auth import PROXY_PATHS, PUBLIC_PATHS

EXTRA_ROUTES = [
    ("POST", "/v1/chat/completions"),
    ("POST", "/v1/responses"),
    ("POST", "/v1/messages"),
    ("POST", "/mcp/alice/"),
    ("GET", "/metrics"),
]


def _routes(admin: httpx.Client, bank: str) -> list[tuple[str, str]]:
    spec = admin.get("/openapi.json").json()
    found = []
    for path, operations in spec["paths"].items():
        if path in PUBLIC_PATHS:
            continue
        concrete = path.replace("{bank_id}", bank).replace("{memory_id}", str(uuid.uuid4()))
        found += [(method.upper(), concrete) for method in operations]
    return found


def test_every_route_but_health_needs_a_key(sidecar: ServerProcess, admin: httpx.Client) -> None:
    routes = _routes(admin, "alice") + EXTRA_ROUTES
    assert len(routes) >= 15
    for method, path in routes:
        for headers in ({}, {"Authorization": "Bearer wrong-key"}, {"X-Memwrap-Key": "wrong-key"}):
            response = httpx.request(method, sidecar.url + path, headers=headers, json={})
            assert response.status_code == 401, (method, path, headers, response.text)
            assert response.headers["www-authenticate"].startswith("Bearer")
    assert httpx.get(sidecar.url + "/health").status_code == 200
    assert httpx.get(sidecar.url + "/ready").status_code == 200
    # The proxy's Authorization header belongs to the upstream: a memwrap key there is not memwrap's key.
    proxied = httpx.post(
        sidecar.url + "/v1/chat/completions", headers={"Authorization": f"Bearer {ADMIN_KEY}"}, json={}
    )
    assert proxied.status_code == 401


def test_bank_allow_list(sidecar: ServerProcess, admin: httpx.Client) -> None:
    admin.post("/v1/banks/bob/memories", json={"content": "Bob's secret plan."})
    alice = httpx.Client(base_url=sidecar.url, headers={"Authorization": f"Bearer {ALICE_KEY}"})
    for method, path in _routes(admin, "bob"):
        if "{" in path or path in ("/v1/banks", "/metrics", "/v1/recall", *PROXY_PATHS):  # checked below
            continue
        if path.startswith("/v1/spool"):  # not one bank's: answered with the key's banks only (below)
            continue
        response = alice.request(method, path, json={"query": "plan", "content": "x", "items": []})
        assert response.status_code == 403, (method, path, response.text)
        assert response.json()["error"]["code"] == "bank_forbidden"
    assert alice.post("/v1/banks", json={"bank_id": "bob"}).status_code == 403
    for path in ("/v1/spool", "/v1/spool/rows?dead=true", "/v1/spool/rows"):  # tests/test_server_spool.py: rows
        assert alice.get(path).status_code == 200 and "bob" not in alice.get(path).text
    assert alice.get("/v1/spool/rows", params={"bank_id": "bob"}).status_code == 403
    # A recall of several banks (the banks in its body): one the key may not use refuses the whole recall.
    several = alice.post("/v1/recall", json={"bank_id": ["alice", "bob"], "query": "plan"})
    assert several.status_code == 403 and several.json()["error"]["code"] == "bank_forbidden"
    assert "Bob" not in several.text
    proxied = alice.post(
        "/v1/chat/completions",
        headers={"X-Memwrap-Key": ALICE_KEY, "X-Memwrap-Bank": "bob"},
        json={"model": "m", "messages": [{"role": "user", "content": "hi"}]},
    )
    assert proxied.status_code == 403 and proxied.json()["error"]["code"] == "bank_forbidden"

    # Allowed banks work, and listing shows only them.
    assert alice.post("/v1/banks/alice-notes/memories", json={"content": "A note of Alice."}).status_code == 201
    assert alice.post("/v1/banks/alice/recall", json={"query": "note"}).status_code == 200
    listed = [b["bank_id"] for b in alice.get("/v1/banks").json()]
    assert "alice-notes" in listed and "bob" not in listed
    assert "bob" in [b["bank_id"] for b in admin.get("/v1/banks").json()]


def test_the_api_description_is_public_and_declares_how_to_send_a_key(sidecar: ServerProcess) -> None:
    """Decided: /docs, /redoc and /openapi.json need no key (no data; a browser opening /docs cannot send one),
    and with keys set the document declares both ways of sending one, so Swagger UI's "Authorize" works."""
    for path in ("/docs", "/redoc", "/openapi.json"):
        assert httpx.get(sidecar.url + path).status_code == 200, path
    spec = httpx.get(sidecar.url + "/openapi.json").json()
    schemes = spec["components"]["securitySchemes"]
    assert schemes["bearer"] == {"type": "http", "scheme": "bearer", "description": schemes["bearer"]["description"]}
    assert schemes["memwrapKey"]["in"] == "header" and schemes["memwrapKey"]["name"] == "X-Memwrap-Key"
    assert spec["security"] == [{"bearer": []}, {"memwrapKey": []}]
    assert spec["paths"]["/health"]["get"]["security"] == []
    assert spec["paths"]["/v1/chat/completions"]["post"]["security"] == [{"memwrapKey": []}]
    assert "security" not in spec["paths"]["/v1/banks/{bank_id}/recall"]["post"]  # the document's: either way
