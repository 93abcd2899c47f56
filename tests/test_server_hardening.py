"""Hand-written cases for every finding of a black-box review of `memwrap serve`, on the session's
real server (keys on) with the fake upstream: bad input is a 4xx with the documented body, the proxy refuses
what it cannot file up front and stores what the engine would refuse, failures are relayed, turns are never
dropped, `previous_response_id` stays in its bank, MCP validates banks and explains its errors.

The database going down, start-up delivery and the map surviving across processes: test_server_database.py.
Secrets and file modes: test_server_secrets.py. Fuzzing: test_server_fuzz.py.
"""

from __future__ import annotations

import json
import time
from typing import Any

import httpx
import pytest
from fakes.llm_server import FakeLLMServer, Reply
from mcp.client.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from test_server_harness import *  # noqa: F403 - fixtures: sidecar, admin, upstream

CHAT = {"model": "m", "messages": [{"role": "user", "content": "Hello there, how are you today?"}]}


def _proxy_headers(bank: str, **extra: str) -> dict[str, str]:
    return {"X-Memwrap-Key": ADMIN_KEY, "X-Memwrap-Bank": bank, **extra}


def _documented_error(response: httpx.Response, status: int | None = None) -> dict[str, Any]:
    assert 400 <= response.status_code < 500, (response.status_code, response.text[:300])
    if status is not None:
        assert response.status_code == status, response.text[:300]
    error = response.json()["error"]
    assert error["code"] and error["message"] and error["type"], error
    return error


def _raw(client: httpx.Client, method: str, path: str, body: bytes, **headers: str) -> httpx.Response:
    return client.request(method, path, content=body, headers={"content-type": "application/json", **headers})


# -- 2. bad input -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        b'{"content":"n1","metadata":{"k":NaN}}',
        b'{"content":"n1","metadata":{"k":Infinity}}',
        b'{"content":"n1","metadata":{"k":-Infinity}}',
        b'{"content":"n1","metadata":{"k":[1e999]}}',
        b'{"content":"n1","timestamp":"0001-01-01T00:00:00"}',
        b'{"content":"n1","timestamp":"9999-12-31T23:59:59"}',
        b'{"content":"n1","metadata":' + b'{"a":' * 40 + b"1" + b"}" * 40 + b"}",
        b'{"content":"n1","metadata":{"k":' + b"[" * 5000 + b"]" * 5000 + b"}}",
        b'{"content":"n1\\u0000"}',
        b'{"content":"\\ud800 lone"}',
        b'{"content":"n1","tags":["\\u0000"]}',
    ],
)
def test_bad_retain_bodies_are_4xx(admin: httpx.Client, bank: str, body: bytes) -> None:
    _documented_error(_raw(admin, "POST", f"/v1/banks/{bank}/memories", body))
    assert admin.get(f"/v1/banks/{bank}/memories").json()["items"] == []  # nothing was stored


@pytest.mark.parametrize("now", ["0001-01-01T00:00:00", "9999-12-31T23:59:59", "0001-01-01T00:00:00+14:00"])
def test_extreme_dates_are_4xx_everywhere(admin: httpx.Client, bank: str, now: str) -> None:
    _documented_error(admin.get(f"/v1/banks/{bank}/observations", params={"now": now}), 422)
    _documented_error(
        admin.get(f"/v1/banks/{bank}/observations/{'0' * 8}-0000-0000-0000-{'0' * 12}", params={"now": now}), 422
    )
    _documented_error(admin.post(f"/v1/banks/{bank}/recall", json={"query": "q", "now": now}), 422)
    _documented_error(admin.post(f"/v1/banks/{bank}/reflect", json={"query": "q", "now": now}), 422)


@pytest.mark.parametrize(("method", "suffix"), [("GET", ""), ("DELETE", ""), ("GET", "/history"), ("POST", "/refresh")])
def test_nul_in_path_params_is_4xx(admin: httpx.Client, bank: str, method: str, suffix: str) -> None:
    _documented_error(admin.request(method, f"/v1/banks/{bank}/mental-models/x%00y{suffix}"), 422)
    _documented_error(admin.request(method, f"/v1/banks/x%00y/mental-models/x{suffix}"), 422)


def test_bank_ids_follow_one_full_match_rule(sidecar: ServerProcess, admin: httpx.Client) -> None:
    for bad in ("team-a%0A", "team-a%0D%0A", "%0Ateam-a", "a%00b", "-lead", "x" * 129):
        _documented_error(admin.get(f"/v1/banks/{bad}/memories"))
        _documented_error(
            httpx.post(f"{sidecar.url}/mcp/{bad}/", json={}, headers={"Authorization": f"Bearer {ADMIN_KEY}"})
        )
    _documented_error(admin.post("/v1/banks", json={"bank_id": "team-a\n"}), 422)
    refused = httpx.post(
        f"{sidecar.url}/v1/chat/completions", json=CHAT, headers=_proxy_headers("team-a\n".replace("\n", "%0A"))
    )
    _documented_error(refused, 400)


def test_proxy_body_nested_5000_deep_is_400(sidecar: ServerProcess, upstream: FakeLLMServer, bank: str) -> None:
    body = b'{"model":"m","messages":' + b"[" * 5000 + b"]" * 5000 + b"}"
    with httpx.Client(base_url=sidecar.url) as client:
        for headers in (_proxy_headers(bank), {"X-Memwrap-Key": ADMIN_KEY}):  # with and without memory
            error = _documented_error(_raw(client, "POST", "/v1/chat/completions", body, **headers), 400)
            assert "nests deeper" in error["message"]
        anthropic = _raw(client, "POST", "/v1/messages", body, **_proxy_headers(bank))
        assert anthropic.status_code == 400 and anthropic.json()["type"] == "error"  # Anthropic's envelope
    assert upstream.requests == []


# -- 7. the proxy: refuse up front, or store; never drop --------------------------------------------------


@pytest.mark.parametrize("depth", [41, 999, 1000, 5000, 100_000])
def test_an_import_line_nested_too_deeply_is_4xx(admin: httpx.Client, bank: str, depth: int, tmp_path: Any) -> None:
    """Past the interpreter's recursion limit json raises RecursionError (a 500 before); just under it, the checks
    and encoders further down would. Either way the answer names the line and stores nothing; the CLI the same."""
    header = json.dumps({"record": "header", "format": "memwrap.bank", "version": 1})
    deep = '{"record": "memory", "metadata": ' + "[" * depth + "]" * depth + "}"
    response = admin.post(f"/v1/banks/{bank}/import", content=f"{header}\n{deep}\n".encode())
    assert response.status_code == 422, response.text[:300]
    assert "line 2" in response.json()["error"]["message"] and "nests deeper" in response.json()["error"]["message"]
    assert bank not in {b["bank_id"] for b in admin.get("/v1/banks").json()}

    from memwrap.engine.transfer.mem0_export import read_mem0_file
    from memwrap.engine.transfer.memories_jsonl import read_jsonl
    from memwrap.errors import InvalidInputError

    with pytest.raises(InvalidInputError, match="nests deeper"):
        list(read_jsonl([deep], source="memories.jsonl"))  # `memwrap import-memories`
    mem0 = tmp_path / "mem0.json"
    mem0.write_text("[" * depth + "]" * depth)
    with pytest.raises(InvalidInputError, match="nests deeper"):
        read_mem0_file(mem0)  # `memwrap import-mem0`


@pytest.mark.parametrize(
    ("header", "value"),
    [
        ("X-Memwrap-Session", "s" * 600),
        ("X-Memwrap-Tags", "t" * 300),
        ("X-Memwrap-Tags", ",".join(f"t{i}" for i in range(60))),
        ("X-Memwrap-Max-Tokens", "1000000000"),
        ("X-Memwrap-Max-Tokens", "0"),
        ("X-Memwrap-Max-Tokens", "-5"),
        ("X-Memwrap-Max-Tokens", "ten"),
    ],
)
def test_proxy_refuses_bad_headers_before_calling_upstream(
    sidecar: ServerProcess, upstream: FakeLLMServer, bank: str, header: str, value: str
) -> None:
    response = httpx.post(
        f"{sidecar.url}/v1/chat/completions", json=CHAT, headers=_proxy_headers(bank, **{header: value})
    )
    assert (
        header.lower() in _documented_error(response, 400)["message"].lower()
        or response.json()["error"]["code"] == "invalid_budget"
    )
    assert upstream.requests == []


def _turns(admin: httpx.Client, bank: str, timeout: float = 60.0) -> list[dict[str, Any]]:
    def found() -> list[dict[str, Any]]:
        items = admin.get(f"/v1/banks/{bank}/memories", params={"limit": 1000}).json()["items"]
        return [m for m in items if str(m["metadata"].get("source", "")).startswith("memwrap.")]

    return wait_until(found, timeout)


def test_proxy_stores_a_turn_with_nul(
    sidecar: ServerProcess, admin: httpx.Client, upstream: FakeLLMServer, bank: str
) -> None:
    upstream.script(["Noted."])
    body = {"model": "m", "messages": [{"role": "user", "content": "My locker code is 4\u00002\u00007, remember it."}]}
    assert httpx.post(f"{sidecar.url}/v1/chat/completions", json=body, headers=_proxy_headers(bank)).status_code == 200
    turns = _turns(admin, bank)
    assert turns and "4\ufffd2\ufffd7" in turns[0]["text"] and "Noted." in turns[1]["text"]  # one memory per turn


def test_proxy_stores_a_turn_over_the_content_limit_in_parts(
    sidecar: ServerProcess, admin: httpx.Client, upstream: FakeLLMServer, bank: str
) -> None:
    upstream.script(["That is a long document."])
    sentence = "The quarterly garden report lists every tomato plant by row and height. "
    content = sentence * (505_000 // len(sentence) + 1)
    body = {"model": "m", "messages": [{"role": "user", "content": content}]}
    headers = _proxy_headers(bank, **{"X-Memwrap-Session": "long-doc"})
    assert httpx.post(f"{sidecar.url}/v1/chat/completions", json=body, headers=headers, timeout=120).status_code == 200
    turns = wait_until(
        lambda: [
            t
            for t in _turns(admin, bank, 1)
            if t["metadata"].get("parts") == 2 and "That is a long document." in t["text"]
        ],
        600,
    )
    parts = {t["metadata"]["part"] for t in _turns(admin, bank, 1)}
    assert turns and parts == {1, 2}  # both halves are stored, under the turn's own document id
    assert {t["document_id"] for t in _turns(admin, bank, 1)} == {"long-doc:turn-0"}


def test_request_body_over_the_limit_is_413(sidecar: ServerProcess, upstream: FakeLLMServer, bank: str) -> None:
    big = b'{"model":"m","messages":[{"role":"user","content":"' + b"x" * (33 * 1024 * 1024) + b'"}]}'
    with httpx.Client(base_url=sidecar.url, timeout=60) as client:
        error = _documented_error(_raw(client, "POST", "/v1/chat/completions", big, **_proxy_headers(bank)), 413)
        assert error["code"] == "request_too_large"

        def chunked() -> Any:  # no Content-Length: counted as it streams in
            for _ in range(40):
                yield b"x" * (1024 * 1024)

        streamed = client.post(
            f"/v1/banks/{bank}/memories",
            content=chunked(),
            headers={"content-type": "application/json", "Authorization": f"Bearer {ADMIN_KEY}"},
        )
        assert _documented_error(streamed, 413)["code"] == "request_too_large"
    assert upstream.requests == []


# -- 6. a stream the upstream cut is relayed as a failure --------------------------------------------------


def test_cut_stream_reaches_the_openai_sdk_as_an_error(
    sidecar: ServerProcess, admin: httpx.Client, upstream: FakeLLMServer, bank: str
) -> None:
    import openai

    upstream.script(
        [Reply(text="This answer will never be finished by the upstream server.", chunk_size=4, cut_after=4)]
    )
    client = openai.OpenAI(
        base_url=sidecar.url + "/v1", api_key="sk-up", max_retries=0, default_headers=_proxy_headers(bank)
    )
    got = []
    with pytest.raises((openai.APIError, httpx.HTTPError)):
        for chunk in client.chat.completions.create(model="m", stream=True, messages=CHAT["messages"]):
            got.append(chunk)
    assert 0 < len(got) < 10
    turns = _turns(admin, bank)
    assert turns and turns[0]["metadata"].get("partial") is True


def test_cut_stream_reaches_raw_clients_as_a_broken_stream(
    sidecar: ServerProcess, upstream: FakeLLMServer, bank: str
) -> None:
    for path, body in (
        ("/v1/chat/completions", {**CHAT, "stream": True}),
        ("/v1/messages", {**CHAT, "max_tokens": 50, "stream": True}),
    ):
        upstream.script([Reply(text="A stream that breaks off in the middle of it.", chunk_size=4, cut_after=3)])
        received = b""
        with (
            pytest.raises(httpx.RemoteProtocolError),
            httpx.stream("POST", sidecar.url + path, json=body, headers=_proxy_headers(bank), timeout=30) as response,
        ):
            assert response.status_code == 200
            for chunk in response.iter_raw():
                received += chunk
        assert b"upstream_stream_cut" in received or b"event: error" in received
        assert b"[DONE]" not in received and b"message_stop" not in received


def test_cut_stream_reaches_the_anthropic_sdk_as_an_error(
    sidecar: ServerProcess, upstream: FakeLLMServer, bank: str
) -> None:
    import anthropic

    upstream.script([Reply(text="Claude starts an answer it will not finish.", chunk_size=4, cut_after=4)])
    client = anthropic.Anthropic(
        base_url=sidecar.url, api_key="sk-up", max_retries=0, default_headers=_proxy_headers(bank)
    )
    with (
        pytest.raises((anthropic.APIError, httpx.HTTPError)),
        client.messages.stream(model="m", max_tokens=50, messages=CHAT["messages"]) as stream,
    ):
        stream.get_final_text()


# -- 11. a caller that hangs up: the answer is kept, marked unseen ----------------------------------------


def test_hang_up_before_the_answer_keeps_the_turn_marked_unseen(
    sidecar: ServerProcess, admin: httpx.Client, upstream: FakeLLMServer, bank: str
) -> None:
    upstream.script([Reply(text="An answer nobody waited for.", delay=2.0)])
    with pytest.raises(httpx.ReadTimeout):
        httpx.post(f"{sidecar.url}/v1/chat/completions", json=CHAT, headers=_proxy_headers(bank), timeout=0.5)
    turns = _turns(admin, bank)
    turns = wait_until(lambda: t if len(t := _turns(admin, bank)) == 2 else None, 60)
    assert "An answer nobody waited for." in turns[1]["text"]  # the question and the answer, a memory each
    assert all(t["metadata"].get("unseen") is True for t in turns)
    upstream.script(["Seen."])
    httpx.post(
        f"{sidecar.url}/v1/chat/completions",
        json={**CHAT, "messages": [{"role": "user", "content": "And a second question, answered normally?"}]},
        headers=_proxy_headers(bank),
    )
    second = wait_until(lambda: [t for t in _turns(admin, bank, 1) if "Seen." in t["text"]], 30)
    assert second and "unseen" not in second[0]["metadata"]


# -- 9. previous_response_id belongs to its bank ----------------------------------------------------------


def test_previous_response_id_continues_a_session_only_in_its_own_bank(
    sidecar: ServerProcess, admin: httpx.Client, upstream: FakeLLMServer, bank: str
) -> None:
    alice, bob = f"{bank}-alice", f"{bank}-bob"
    upstream.script(["First answer.", "Bob's answer.", "Second answer."])
    first = httpx.post(
        f"{sidecar.url}/v1/responses",
        json={"model": "m", "input": "Plan my trip to Porto."},
        headers=_proxy_headers(alice, **{"X-Memwrap-Session": "trip"}),
    ).json()
    time.sleep(0.5)  # the map is written after the answer
    follow = {"model": "m", "input": "And the hotel?", "previous_response_id": first["id"]}
    assert httpx.post(f"{sidecar.url}/v1/responses", json=follow, headers=_proxy_headers(bob)).status_code == 200
    assert httpx.post(f"{sidecar.url}/v1/responses", json=follow, headers=_proxy_headers(alice)).status_code == 200
    alice_docs = wait_until(
        lambda: (
            sorted(t["document_id"] for t in _turns(admin, alice, 1)) if len(_turns(admin, alice, 1)) == 4 else None
        ),
        30,
    )
    assert alice_docs == ["trip:turn-0", "trip:turn-0", "trip:turn-1", "trip:turn-1"]  # question and answer each
    bob_docs = [t["document_id"] for t in _turns(admin, bob)]
    assert bob_docs == [f"resp-{first['id']}:turn-1"] * 2  # bob cannot file his turn under alice's session


# -- 10/11. MCP ---------------------------------------------------------------------------------------------


async def test_mcp_reflect_without_an_llm_says_why(sidecar: ServerProcess, bank: str) -> None:
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {ADMIN_KEY}"})
    async with Client(streamable_http_client(f"{sidecar.url}/mcp/{bank}/", http_client=http)) as client:
        tools = {t.name for t in (await client.list_tools()).tools}
        assert {"recall", "retain", "list_memories", "get_memory", "mental_models", "get_mental_model"} <= tools
        assert "reflect" not in tools  # listed only with an LLM (issue 39): a listed tool must be able to work
        # Called anyway, it still says why it cannot answer.
        result = await client.call_tool("reflect", {"query": "What do you know?"})
        assert result.is_error
        text = result.content[0].text
        assert "llm_not_configured" in text and "LLM" in text, text
        missing = await client.call_tool("get_memory", {"memory_id": "not-a-uuid"})
        assert missing.is_error and "memory_not_found" in missing.content[0].text


# -- 11. OpenAPI lists the proxy routes; errors do not echo internals ---------------------------------------


def test_openapi_lists_the_proxy_routes(admin: httpx.Client) -> None:
    paths = admin.get("/openapi.json").json()["paths"]
    for path in ("/v1/chat/completions", "/v1/responses", "/v1/messages", "/ready"):
        assert path in paths, path
    headers = {p["name"] for p in paths["/v1/chat/completions"]["post"]["parameters"]}
    assert {"X-Memwrap-Bank", "X-Memwrap-Session", "X-Memwrap-Token-Budget", "X-Memwrap-Tags"} <= headers


def test_server_log_is_plain_and_names_no_upstream(sidecar: ServerProcess, upstream: FakeLLMServer) -> None:
    log = sidecar.tail(1_000_000)
    assert "Traceback (most recent call last)" not in log or "level=" in log
    assert "╭" not in log and "│" not in log  # nothing rendered by rich
    assert upstream.url not in log
    for line in log.splitlines():
        if line and not line.startswith(" "):
            assert " level=" in line, line
    assert json.loads(httpx.get(sidecar.url + "/health").text)["database"] == "up"
