"""The memory proxy of a real server process, driven by the real SDKs and by curl; upstream is a fake LLM."""

from __future__ import annotations

import json
import shutil
import subprocess
from typing import Any

import httpx
import pytest
from conftest_wrappers import memory_block, system_text
from fakes.llm_server import FakeLLMServer, Reply
from test_server_harness import *  # noqa: F403 - fixtures: sidecar, admin, upstream

UPSTREAM_KEY = "sk-upstream-secret-never-logged"
FACT = "Alice is allergic to peanuts and lives in Lisbon."


def _headers(bank: str, **extra: str) -> dict[str, str]:
    return {"X-Memwrap-Key": ADMIN_KEY, "X-Memwrap-Bank": bank, **extra}


@pytest.fixture
def seeded(admin: httpx.Client, bank: str) -> str:
    assert admin.post(f"/v1/banks/{bank}/memories", json={"content": FACT}).status_code == 201
    return bank


def _retained(admin: httpx.Client, bank: str, source: str, timeout: float = 15.0) -> list[dict[str, Any]]:
    def found() -> list[dict[str, Any]]:
        items = admin.get(f"/v1/banks/{bank}/memories", params={"limit": 100}).json()["items"]
        return [m for m in items if m["metadata"].get("source") == source]

    return wait_until(found, timeout)


def _openai(sidecar: ServerProcess, bank: str, **kwargs: Any) -> Any:
    from openai import OpenAI

    return OpenAI(
        base_url=sidecar.url + "/v1", api_key=UPSTREAM_KEY, max_retries=0, default_headers=_headers(bank), **kwargs
    )


def test_openai_sdk_chat_gets_memory_and_turn_is_retained(
    sidecar: ServerProcess, admin: httpx.Client, upstream: FakeLLMServer, seeded: str
) -> None:
    upstream.script(["Then skip the satay, Alice."])
    client = _openai(sidecar, seeded)
    answer = client.chat.completions.create(
        model="gpt-4o-mini",
        messages=[
            {"role": "system", "content": "You are helpful."},
            {"role": "user", "content": "What should I avoid eating at the Thai place?"},
        ],
    )
    assert answer.choices[0].message.content == "Then skip the satay, Alice."

    sent = upstream.last("openai.chat")
    assert "peanuts" in memory_block(sent)
    assert system_text(sent).startswith("You are helpful.")  # the app's prefix first: it stays cacheable
    assert sent.headers["authorization"] == f"Bearer {UPSTREAM_KEY}"  # passed through as it came
    assert not any(k.startswith("x-memwrap-") for k in sent.headers)  # memwrap's headers stay here

    retained = _retained(admin, seeded, "memwrap.openai.chat")
    # The exchange is one memory per turn: the user's question, then the answer.
    assert [r["speaker"] for r in retained] == ["user", "assistant"] and "Then skip the satay" in retained[1]["text"]
    assert "<memwrap_memories>" not in retained[0]["text"]  # an injected block is never retained again
    assert UPSTREAM_KEY not in sidecar.tail(1_000_000)


def test_openai_sdk_stream_arrives_complete_and_is_retained_after(
    sidecar: ServerProcess, admin: httpx.Client, upstream: FakeLLMServer, seeded: str
) -> None:
    reply = "Here is a long streamed answer about peanut-free restaurants in Lisbon, chunk by chunk."
    upstream.script([Reply(text=reply, chunk_size=5, chunk_delay=0.01)])
    client = _openai(sidecar, seeded)
    stream = client.chat.completions.create(
        model="gpt-4o-mini",
        stream=True,
        messages=[{"role": "user", "content": "Any restaurant tips for me?"}],
    )
    chunks = [c.choices[0].delta.content or "" for c in stream if c.choices]
    assert "".join(chunks) == reply and len(chunks) > 5
    assert "peanuts" in memory_block(upstream.last("openai.chat"))

    retained = wait_until(lambda: r if len(r := _retained(admin, seeded, "memwrap.openai.chat")) == 2 else None, 15)
    assert reply in retained[1]["text"] and not retained[1]["metadata"].get("partial")  # the answer, a memory


def test_openai_responses_stream_through_proxy(
    sidecar: ServerProcess, admin: httpx.Client, upstream: FakeLLMServer, seeded: str
) -> None:
    upstream.script(["Noted, no peanuts."])
    client = _openai(sidecar, seeded)
    with client.responses.stream(model="gpt-4o-mini", input="Remember my allergy when you plan dinner.") as stream:
        final = stream.get_final_response()
    assert final.output_text == "Noted, no peanuts."
    sent = upstream.last("openai.responses")
    assert "peanuts" in (sent.body.get("instructions") or "")
    assert _retained(admin, seeded, "memwrap.openai.responses")


def test_anthropic_sdk_stream_with_x_api_key(
    sidecar: ServerProcess, admin: httpx.Client, upstream: FakeLLMServer, seeded: str
) -> None:
    from anthropic import Anthropic

    upstream.script(["Claude says: avoid peanuts."])
    client = Anthropic(
        base_url=sidecar.url,
        api_key=UPSTREAM_KEY,
        max_retries=0,
        default_headers={**_headers(seeded), "x-api-key": UPSTREAM_KEY},
    )
    with client.messages.stream(
        model="claude-x", max_tokens=100, system="Be brief.", messages=[{"role": "user", "content": "What do I avoid?"}]
    ) as stream:
        text = stream.get_final_text()
    assert text == "Claude says: avoid peanuts."
    sent = upstream.last("anthropic.messages")
    assert sent.headers["x-api-key"] == UPSTREAM_KEY and sent.headers["anthropic-version"]
    assert "peanuts" in memory_block(sent) and system_text(sent).startswith("Be brief.")
    assert _retained(admin, seeded, "memwrap.anthropic.messages")


def test_upstream_error_passes_through_with_its_status(
    sidecar: ServerProcess, admin: httpx.Client, upstream: FakeLLMServer, seeded: str
) -> None:
    import openai

    upstream.script([Reply(status=429, error="slow down")])
    client = _openai(sidecar, seeded)
    with pytest.raises(openai.RateLimitError) as caught:
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hello there"}])
    assert caught.value.status_code == 429 and "slow down" in str(caught.value)


def test_without_bank_the_proxy_is_a_plain_pass_through(sidecar: ServerProcess, upstream: FakeLLMServer) -> None:
    response = httpx.post(
        sidecar.url + "/v1/chat/completions",
        headers={"X-Memwrap-Key": ADMIN_KEY},
        json={"model": "m", "messages": [{"role": "user", "content": "hi"}]},
    )
    assert response.status_code == 200
    assert upstream.last("openai.chat").body == {"model": "m", "messages": [{"role": "user", "content": "hi"}]}


@pytest.mark.skipif(shutil.which("curl") is None, reason="curl not installed")
def test_curl_chat_and_stream(
    sidecar: ServerProcess, admin: httpx.Client, upstream: FakeLLMServer, seeded: str
) -> None:
    base = [
        "curl",
        "-sS",
        "--fail-with-body",
        sidecar.url + "/v1/chat/completions",
        "-H",
        "Content-Type: application/json",
        "-H",
        f"Authorization: Bearer {UPSTREAM_KEY}",
        "-H",
        f"X-Memwrap-Key: {ADMIN_KEY}",
        "-H",
        f"X-Memwrap-Bank: {seeded}",
        "-H",
        "X-Memwrap-Session: curl-session",
    ]
    upstream.script(["Plain answer.", Reply(text="Streamed answer from curl.", chunk_size=4)])
    body = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "What am I allergic to?"}]}
    plain = subprocess.run([*base, "-d", json.dumps(body)], capture_output=True, text=True, timeout=60, check=True)
    assert json.loads(plain.stdout)["choices"][0]["message"]["content"] == "Plain answer."
    assert "peanuts" in memory_block(upstream.last("openai.chat"))

    body = {
        **body,
        "stream": True,
        "messages": [
            *body["messages"],
            {"role": "assistant", "content": "Plain answer."},
            {"role": "user", "content": "Say it as a stream."},
        ],
    }
    streamed = subprocess.run(
        [*base, "-N", "-d", json.dumps(body)], capture_output=True, text=True, timeout=60, check=True
    )
    events = [line[6:] for line in streamed.stdout.splitlines() if line.startswith("data: ")]
    assert events[-1] == "[DONE]"
    text = "".join((json.loads(e)["choices"] or [{}])[0].get("delta", {}).get("content") or "" for e in events[:-1])
    assert text == "Streamed answer from curl."

    retained = wait_until(
        lambda: (
            r
            if len(
                r := [
                    m
                    for m in _retained(admin, seeded, "memwrap.openai.chat")
                    if m["document_id"] == "curl-session:turn-1"
                ]
            )
            == 2
            else None
        )
    )
    assert "Streamed answer from curl." in retained[1]["text"]  # the question, then the answer


def test_x_memwrap_filter_narrows_what_is_injected(
    sidecar: ServerProcess, admin: httpx.Client, upstream: FakeLLMServer, bank: str
) -> None:
    admin.post(
        f"/v1/banks/{bank}/memories/batch",
        json={
            "items": [
                {"content": "Project apollo deploys on Tuesdays.", "metadata": {"project": "apollo"}},
                {"content": "Project gemini deploys on Fridays.", "metadata": {"project": "gemini"}},
            ]
        },
    ).raise_for_status()
    upstream.script(["Tuesdays."])
    body = {"model": "m", "messages": [{"role": "user", "content": "When does the project deploy?"}]}
    answer = httpx.post(
        sidecar.url + "/v1/chat/completions",
        json=body,
        timeout=30,
        headers=_headers(
            bank, **{"X-Memwrap-Filter": json.dumps({"metadata": {"project": "apollo"}}), "X-Memwrap-Retain": "false"}
        ),
    )
    assert answer.status_code == 200, answer.text
    block = memory_block(upstream.last("openai.chat"))
    assert "Tuesdays" in block and "Fridays" not in block
    for bad in ("{not json", '{"metdata": {"project": "apollo"}}', '{"mentioned_after": "soon"}', '["apollo"]'):
        refused = httpx.post(
            sidecar.url + "/v1/chat/completions",
            json=body,
            timeout=30,
            headers=_headers(bank, **{"X-Memwrap-Filter": bad}),
        )
        assert refused.status_code == 400 and "X-Memwrap-Filter" in refused.json()["error"]["message"], refused.text
