"""Edges a careless client or an attacker reaches, on the session's real server (keys on): huge offsets and
deep filters are 4xx, not 500; a NUL in a static path is a quiet 404; a mental model name that no URL can hold
is refused at creation; a new bank id may not pass for another (existing ones keep working), and one bank id
means one bank over REST, MCP and the proxy's header (UTF-8 or percent-encoded); metadata has a size cap;
a caller that hangs up is no error in the log.

Host and Origin (DNS rebinding): test_server_rebinding.py. The database frozen: test_server_database.py.
"""

from __future__ import annotations

import socket
import time
import urllib.parse
from typing import Any

import httpx
import pytest
from database import Database
from fakes.llm_server import FakeLLMServer
from test_server_harness import *  # noqa: F403 - fixtures: sidecar, admin, upstream

CHAT = {"model": "m", "messages": [{"role": "user", "content": "What do I like to drink?"}]}


def _error(response: httpx.Response, status: int) -> dict[str, Any]:
    assert response.status_code == status, (response.status_code, response.text[:300])
    body = response.json()
    error = body["error"]
    assert error["code"] and error["message"], body
    return error


def _log_since(sidecar: ServerProcess, mark: int) -> str:
    return sidecar.tail(10_000_000)[mark:] if mark else sidecar.tail(10_000_000)


def _mark(sidecar: ServerProcess) -> int:
    return len(sidecar.tail(10_000_000))


@pytest.mark.parametrize("offset", [2**63, 2**63 - 1, 10**40, 10_000_001])
def test_huge_offsets_are_422(admin: httpx.Client, bank: str, offset: int) -> None:
    for path in ("observations", "memories"):
        error = _error(admin.get(f"/v1/banks/{bank}/{path}", params={"offset": offset}), 422)
        assert "offset" in error["message"]
    assert admin.get(f"/v1/banks/{bank}/observations", params={"offset": 10_000_000}).status_code == 200


@pytest.mark.parametrize("depth", [40, 1_000, 5_000])
def test_deeply_nested_filters_are_4xx_on_every_surface(
    sidecar: ServerProcess, admin: httpx.Client, upstream: FakeLLMServer, bank: str, depth: int
) -> None:
    nested = '{"metadata":' + '{"not":' * depth + '{"project":"apollo"}' + "}" * depth + "}"
    headers = {
        "X-Memwrap-Key": ADMIN_KEY,
        "X-Memwrap-Bank": bank,
        "X-Memwrap-Filter": nested,
        "X-Memwrap-Retain": "false",
    }
    proxied = httpx.post(f"{sidecar.url}/v1/chat/completions", json=CHAT, headers=headers, timeout=30)
    assert "X-Memwrap-Filter" in _error(proxied, 400)["message"]
    assert upstream.requests == []  # refused before anything went upstream
    if len(nested) < 4_000:  # the query parameter's own limit comes first past that
        listed = admin.get(f"/v1/banks/{bank}/memories", params={"filters": nested})
        assert "nests deeper than 32" in _error(listed, 422)["message"]
    body = '{"query": "tea", "filters": ' + nested + "}"
    recalled = admin.post(f"/v1/banks/{bank}/recall", content=body, headers={"content-type": "application/json"})
    assert recalled.status_code in (400, 422), recalled.text[:300]


def test_a_nul_in_a_browser_path_is_a_quiet_404(sidecar: ServerProcess) -> None:
    mark = _mark(sidecar)
    for path in ("/ui/a%00b", "/ui/%00", "/ui/js/%00.js", "/ui/" + "x" * 5000):
        response = httpx.get(sidecar.url + path)
        assert response.status_code == 404, (path, response.status_code)
        assert response.json()["error"]["code"] == "not_found"
    log = _log_since(sidecar, mark)
    assert "unexpected error" not in log and "Traceback" not in log, log[-2000:]


@pytest.mark.parametrize("name", ["a/b", "/", "team/diet", "..", "."])
def test_a_mental_model_name_no_url_can_hold_is_refused_at_creation(admin: httpx.Client, bank: str, name: str) -> None:
    error = _error(admin.post(f"/v1/banks/{bank}/mental-models", json={"name": name, "question": "What?"}), 422)
    assert "cannot contain '/'" in error["message"]
    assert admin.get(f"/v1/banks/{bank}/mental-models").json() == []


def test_mental_model_names_a_url_can_hold_round_trip(admin: httpx.Client, bank: str) -> None:
    for name in ("diet plan", "饮食", "a?b#c", "50%", "a.b", "...", "a\\b"):
        assert (
            admin.post(f"/v1/banks/{bank}/mental-models", json={"name": name, "question": "What?"}).status_code == 201
        )
        quoted = urllib.parse.quote(name, safe="")
        assert admin.get(f"/v1/banks/{bank}/mental-models/{quoted}").json()["name"] == name, name
        assert admin.delete(f"/v1/banks/{bank}/mental-models/{quoted}").status_code == 204, name


LOOKALIKES = [
    "bаnk-b",  # Cyrillic а among Latin letters
    "раураl",  # Cyrillic р, а, у and a Latin l
    "ΑΒΕ",  # Greek capitals, each an ASCII look-alike
    "ｂａｎｋ-b",  # fullwidth
    "team-москва",
]  # Latin with Cyrillic: no language writes both


@pytest.mark.parametrize("lookalike", LOOKALIKES)
def test_a_new_bank_may_not_pass_for_another(
    sidecar: ServerProcess, admin: httpx.Client, upstream: FakeLLMServer, lookalike: str
) -> None:
    path = urllib.parse.quote(lookalike, safe="")
    error = _error(admin.post(f"/v1/banks/{path}/memories", json={"content": "Alice likes green tea."}), 422)
    assert error["code"] == "invalid_bank_id"
    _error(admin.post("/v1/banks", json={"bank_id": lookalike}), 422)
    _error(admin.post(f"/v1/banks/{path}/mental-models", json={"name": "diet", "question": "What?"}), 422)
    proxied = httpx.post(
        f"{sidecar.url}/v1/chat/completions",
        json=CHAT,
        timeout=30,
        headers={"X-Memwrap-Key": ADMIN_KEY, "X-Memwrap-Bank": path},
    )
    assert _error(proxied, 400)["code"] == "invalid_bank_id"
    assert upstream.requests == []
    assert lookalike not in [b["bank_id"] for b in admin.get("/v1/banks").json()]


def test_a_lookalike_bank_that_exists_keeps_working(admin: httpx.Client, db: Database) -> None:
    """A bank made before the rule (here: by SQL) is no one's to lose: every verb still reaches it."""
    bank = "bаnk-old"  # Cyrillic а
    db.blocking.execute("INSERT INTO banks (bank_id) VALUES ($1) ON CONFLICT DO NOTHING", bank)
    path = urllib.parse.quote(bank, safe="")
    assert admin.post(f"/v1/banks/{path}/memories", json={"content": "Kept from before."}).status_code == 201
    assert admin.get(f"/v1/banks/{path}/memories").json()["items"][0]["text"] == "Kept from before."
    assert admin.delete(f"/v1/banks/{path}").status_code in (200, 204)


@pytest.mark.parametrize("bank", ["张伟", "user:张伟", "日本語-テスト", "müller", "москва", "한국어"])
def test_one_unicode_bank_over_rest_mcp_and_the_proxy_header(
    sidecar: ServerProcess, admin: httpx.Client, upstream: FakeLLMServer, bank: str
) -> None:
    """The proxy read its header as Latin-1, so a UTF-8 bank that works over REST was a 400 there. Now it is
    read as UTF-8, and percent-encoded UTF-8 (what ASCII-only clients send) names the same bank."""
    path = urllib.parse.quote(bank, safe="")
    admin.delete(f"/v1/banks/{path}")
    assert admin.post(f"/v1/banks/{path}/memories", json={"content": "Likes jasmine tea."}).status_code == 201
    for header in (bank.encode("utf-8"), path.encode("ascii")):
        upstream.script(["Jasmine tea."])
        response = httpx.post(
            f"{sidecar.url}/v1/chat/completions",
            json=CHAT,
            timeout=60,
            headers=[(b"X-Memwrap-Key", ADMIN_KEY.encode()), (b"X-Memwrap-Bank", header)],
        )
        assert response.status_code == 200, response.text[:300]
        assert "jasmine" in str(upstream.last("openai.chat").body)  # recalled from the REST bank
    mcp = httpx.post(
        f"{sidecar.url}/mcp/{path}/",
        timeout=60,
        headers={"Authorization": f"Bearer {ADMIN_KEY}", "Accept": "application/json, text/event-stream"},
        json={
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "recall", "arguments": {"query": "What tea?"}},
        },
    )
    assert mcp.status_code == 200 and "jasmine" in mcp.text
    texts = wait_until(
        lambda: [
            m["text"] for m in admin.get(f"/v1/banks/{path}/memories").json()["items"] if "Jasmine tea." in m["text"]
        ],
        60,
    )
    assert texts, "the proxied turns were retained into the same bank"
    bad = httpx.post(
        f"{sidecar.url}/v1/chat/completions",
        json=CHAT,
        timeout=30,
        headers=[(b"X-Memwrap-Key", ADMIN_KEY.encode()), (b"X-Memwrap-Bank", b"\xff\xfe")],
    )
    assert "UTF-8" in _error(bad, 400)["message"]


def test_metadata_has_a_size_cap(admin: httpx.Client, bank: str) -> None:
    big = {"blob": "x" * 70_000}
    error = _error(admin.post(f"/v1/banks/{bank}/memories", json={"content": "n1", "metadata": big}), 422)
    assert "MEMWRAP_MAX_METADATA_BYTES" in error["message"]
    batch = {"items": [{"content": "n2"}, {"content": "n3", "metadata": big}]}
    assert (
        "MEMWRAP_MAX_METADATA_BYTES"
        in _error(admin.post(f"/v1/banks/{bank}/memories/batch", json=batch), 422)["message"]
    )
    assert admin.get(f"/v1/banks/{bank}/memories").json()["items"] == []  # the whole batch was refused
    memory_id = admin.post(f"/v1/banks/{bank}/memories", json={"content": "n4", "metadata": {"k": "v"}}).json()["ids"][
        0
    ]
    _error(admin.patch(f"/v1/banks/{bank}/memories/{memory_id}", json={"metadata": big}), 422)
    assert (
        admin.post(f"/v1/banks/{bank}/memories", json={"content": "n5", "metadata": {"k": "x" * 60_000}}).status_code
        == 201
    )


def test_a_caller_hanging_up_mid_body_is_no_error(sidecar: ServerProcess, bank: str) -> None:
    mark = _mark(sidecar)
    for path in (f"/v1/banks/{bank}/memories", "/v1/chat/completions", f"/mcp/{bank}/"):
        with socket.create_connection(("127.0.0.1", sidecar.port)) as conn:
            conn.sendall(
                f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                f"Authorization: Bearer {ADMIN_KEY}\r\nX-Memwrap-Key: {ADMIN_KEY}\r\nX-Memwrap-Bank: {bank}\r\n"
                "Accept: application/json, text/event-stream\r\nContent-Length: 1000\r\n\r\n"
                '{"content": "cut short'.encode()
            )
            time.sleep(0.3)
    time.sleep(1.0)  # the log is written by a thread of its own
    log = _log_since(sidecar, mark)
    assert "ClientDisconnect" not in log and "level=error" not in log, log[-3000:]
