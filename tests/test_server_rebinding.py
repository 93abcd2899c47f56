"""DNS rebinding: a page the user visits re-points its own name to 127.0.0.1 and has the browser call the server
under that name. Without API keys the server answers only localhost, IP addresses and MEMWRAP_ALLOWED_HOSTS,
on every route (REST, browser, docs, proxy, MCP) but /health and /ready; a browser's cross-site Origin is
refused the same way. With keys the key is the guard and any Host is answered (docs/security.md,
memwrap_server/hosts.py).
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from fakes.llm_server import FakeLLMServer
from test_server_harness import *  # noqa: F403 - ServerProcess, sidecar, upstream

from memwrap.store import embedded_pg

CHAT = {"model": "m", "messages": [{"role": "user", "content": "What do I like to drink?"}]}
MCP_LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}


@pytest.fixture(scope="module")
def open_server(memwrap_home: Path, upstream_server: FakeLLMServer) -> Iterator[ServerProcess]:
    """No API keys (the default), two names of the operator's own, on the tests' database."""
    env = {
        "MEMWRAP_DATABASE_URL": embedded_pg.embedded_database_url(memwrap_home / "pg"),
        "MEMWRAP_HOME": str(memwrap_home / "server-rebinding"),
        "MEMWRAP_API_KEYS": "",
        "MEMWRAP_ALLOWED_HOSTS": "memory.internal, .corp.example",
        "MEMWRAP_UPSTREAM_OPENAI_URL": upstream_server.openai_base_url,
        "MEMWRAP_UPSTREAM_ANTHROPIC_URL": upstream_server.anthropic_base_url,
    }
    with ServerProcess(env) as server:
        yield server


def _calls(bank: str) -> list[tuple[str, str, dict[str, object] | None, dict[str, str]]]:
    """One request of each kind a rebinding page would send: read, write, the browser, docs, proxy, MCP."""
    mcp_headers = {"Accept": "application/json, text/event-stream"}
    return [
        ("GET", "/v1/banks", None, {}),
        ("GET", f"/v1/banks/{bank}/memories", None, {}),
        ("POST", f"/v1/banks/{bank}/memories", {"content": "Written by a page that rebound its name."}, {}),
        ("POST", f"/v1/banks/{bank}/recall", {"query": "tea"}, {}),
        ("DELETE", f"/v1/banks/{bank}", None, {}),
        ("GET", "/ui/", None, {}),
        ("GET", "/docs", None, {}),
        ("GET", "/openapi.json", None, {}),
        ("GET", "/metrics", None, {}),
        ("POST", "/v1/chat/completions", CHAT, {"X-Memwrap-Bank": bank}),
        ("POST", f"/mcp/{bank}/", MCP_LIST, mcp_headers),
    ]


@pytest.mark.parametrize(
    "host",
    [
        "evil.example",
        "evil.example:{port}",
        "127.0.0.1.nip.example:{port}",
        "memory.internal.evil.example",
        "localhost.evil.example:{port}",
        "corp.example.evil",
    ],
)
def test_a_foreign_host_gets_421_everywhere_without_keys(
    open_server: ServerProcess, upstream: FakeLLMServer, bank: str, host: str
) -> None:
    host = host.format(port=open_server.port)
    with httpx.Client(base_url=open_server.url, timeout=30) as client:
        assert client.post(f"/v1/banks/{bank}/memories", json={"content": "Alice likes green tea."}).status_code == 201
        for method, path, body, headers in _calls(bank):
            response = client.request(method, path, json=body, headers={"Host": host, **headers})
            assert response.status_code == 421, (host, method, path, response.status_code, response.text[:200])
            error = response.json()["error"]
            assert error["code"] == "host_not_allowed" and "MEMWRAP_ALLOWED_HOSTS" in error["message"]
            assert "green tea" not in response.text
        # Probes answer any name (orchestrators use service names; they hold no data).
        assert client.get("/health", headers={"Host": host}).status_code == 200
        assert client.get("/ready", headers={"Host": host}).status_code == 200
        # Nothing was written, deleted or sent upstream.
        texts = [m["text"] for m in client.get(f"/v1/banks/{bank}/memories").json()["items"]]
        assert texts == ["Alice likes green tea."]
    assert upstream.requests == []


@pytest.mark.parametrize(
    "host",
    [
        "127.0.0.1:{port}",
        "localhost:{port}",
        "LOCALHOST",
        "[::1]:{port}",
        "localhost.",
        "ui.localhost:{port}",
        "192.168.1.20:{port}",
        "memory.internal:{port}",
        "corp.example",
        "api.corp.example:{port}",
    ],
)
def test_loopback_ip_and_configured_hosts_are_answered(open_server: ServerProcess, bank: str, host: str) -> None:
    host = host.format(port=open_server.port)
    with httpx.Client(base_url=open_server.url, timeout=30, headers={"Host": host}) as client:
        assert client.post(f"/v1/banks/{bank}/memories", json={"content": "Alice likes green tea."}).status_code == 201
        assert client.get(f"/v1/banks/{bank}/memories").json()["items"][0]["text"] == "Alice likes green tea."
        assert client.get("/ui/").status_code == 200
        mcp = client.post(f"/mcp/{bank}/", json=MCP_LIST, headers={"Accept": "application/json, text/event-stream"})
        assert mcp.status_code == 200 and "recall" in mcp.text


@pytest.mark.parametrize(
    ("origin", "allowed"),
    [
        ("http://evil.example", False),
        ("https://evil.example:{port}", False),
        ("http://203.0.113.9", False),  # a page served from the attacker's own IP address
        ("null", False),  # a sandboxed frame or a file:// page
        ("http://127.0.0.1:{port}", True),  # the server's own pages (/ui)
        ("http://localhost:3000", True),  # an app on this machine
        ("http://[::1]:5173", True),
        ("https://memory.internal", True),
    ],
)
def test_a_cross_site_origin_cannot_write_without_keys(
    open_server: ServerProcess, bank: str, origin: str, allowed: bool
) -> None:
    """A form or a `text/plain` fetch from another site needs no preflight: the Origin says where it came from."""
    origin = origin.format(port=open_server.port)
    with httpx.Client(base_url=open_server.url, timeout=30) as client:
        response = client.post(
            f"/v1/banks/{bank}/memories", json={"content": "Sent from a web page."}, headers={"Origin": origin}
        )
        stored = client.get(f"/v1/banks/{bank}/memories").json()["items"]
    if allowed:
        assert response.status_code == 201 and len(stored) == 1
    else:
        assert response.status_code == 421 and response.json()["error"]["code"] == "host_not_allowed"
        assert stored == []


def _raw(port: int, head: bytes) -> tuple[int, bytes]:
    """One request written byte for byte (what httpx would normalise), and the status and body of its answer."""
    import http.client

    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(head)
        response = http.client.HTTPResponse(sock)
        response.begin()
        return response.status, response.read()


@pytest.mark.parametrize(
    "head",
    [
        b"GET /v1/banks/{bank}/memories HTTP/1.1\r\nHost: \r\n\r\n",  # empty
        b"GET /v1/banks/{bank}/memories HTTP/1.1\r\nHost: localhost:{port}@evil.example\r\n\r\n",
        b"GET /v1/banks/{bank}/memories HTTP/1.1\r\nHost: localhost/evil.example\r\n\r\n",
        b"GET /v1/banks/{bank}/memories HTTP/1.1\r\nHost: localhost\r\nHost: evil.example\r\n\r\n",
        b"GET /v1/banks/{bank}/memories HTTP/1.1\r\nHost: evil.example\r\nHost: localhost\r\n\r\n",
        b"GET http://evil.example/v1/banks/{bank}/memories HTTP/1.1\r\nHost: localhost:{port}\r\n\r\n",
        b"GET http://localhost@evil.example/v1/banks/{bank}/memories HTTP/1.1\r\nHost: localhost\r\n\r\n",
    ],
)
def test_host_forms_no_browser_sends_are_refused(open_server: ServerProcess, bank: str, head: bytes) -> None:
    with httpx.Client(base_url=open_server.url, timeout=30) as client:
        assert client.post(f"/v1/banks/{bank}/memories", json={"content": "Alice likes green tea."}).status_code == 201
    status, body = _raw(
        open_server.port, head.replace(b"{bank}", bank.encode()).replace(b"{port}", str(open_server.port).encode())
    )
    assert status in (400, 421), (status, body[:300])
    assert b"green tea" not in body


def test_an_absolute_form_target_naming_this_server_is_answered(open_server: ServerProcess, bank: str) -> None:
    head = f"GET http://127.0.0.1:{open_server.port}/v1/banks/{bank}/memories HTTP/1.1\r\nHost: localhost\r\n\r\n"
    status, body = _raw(open_server.port, head.encode())
    assert status == 200, body[:300]


def test_with_keys_any_host_is_answered_with_the_key_and_none_without(sidecar: ServerProcess, bank: str) -> None:
    """Decided: with MEMWRAP_API_KEYS set (and no MEMWRAP_ALLOWED_HOSTS) the key is the guard, so a server behind
    a reverse proxy or reached by its LAN name needs no list; a rebinding page has no key."""
    with httpx.Client(base_url=sidecar.url, timeout=30, headers={"Host": "evil.example"}) as client:
        assert client.get(f"/v1/banks/{bank}/memories").status_code == 401
        keyed = client.get(f"/v1/banks/{bank}/memories", headers={"Authorization": f"Bearer {ADMIN_KEY}"})
        assert keyed.status_code == 200
