"""MCP per bank on a real server: the official `mcp` client lists the tools and recalls only its bank's memories,
whose text it sees only inside the fenced block."""

from __future__ import annotations

import json
import uuid
from typing import Any

import fence_forgeries
import httpx
from mcp.client.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError
from test_server_harness import *  # noqa: F403 - fixtures: sidecar, admin

import memwrap
from memwrap.block.fence import CLOSE_TAG, OPEN_TAG, REPLACEMENT, find_tags


def _client(sidecar: ServerProcess, bank: str, key: str = ADMIN_KEY, statuses: list[int] | None = None) -> Client:
    """An MCP client on the bank's endpoint; `statuses` collects the HTTP status of every response it gets."""
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {key}"})
    if statuses is not None:

        async def note(response: Any) -> None:
            statuses.append(response.status_code)

        http.event_hooks["response"].append(note)
    return Client(streamable_http_client(f"{sidecar.url}/mcp/{bank}/", http_client=http))


def _payload(result: Any) -> dict[str, Any]:
    assert not result.is_error, result
    return result.structured_content or json.loads(result.content[0].text)


async def test_mcp_lists_tools_and_recalls_alice(sidecar: ServerProcess, admin: httpx.Client) -> None:
    admin.delete("/v1/banks/alice")
    admin.delete("/v1/banks/bob")
    admin.post("/v1/banks/alice/memories", json={"content": "Alice's cello teacher is João; lessons on Saturdays."})
    admin.post("/v1/banks/bob/memories", json={"content": "Bob's cello teacher is Martha; lessons on Sundays."})

    async with _client(sidecar, "alice") as client:
        tools = {t.name for t in (await client.list_tools()).tools}
        assert {"retain", "recall", "list_memories", "get_memory"} <= tools
        recalled = _payload(await client.call_tool("recall", {"query": "Who teaches me the cello?"}))
        assert "João" in recalled["context"] and "Martha" not in recalled["context"]

        stored = _payload(await client.call_tool("retain", {"content": "Alice bought a new bow in Porto."}))
        listed = _payload(await client.call_tool("list_memories", {"limit": 10}))
        assert stored["ids"][0] in [m["id"] for m in listed["memories"]]
        one = _payload(await client.call_tool("get_memory", {"memory_id": stored["ids"][0]}))
        assert one["text"] == "Alice bought a new bow in Porto."

    # The retain went to alice only.
    bob = admin.get("/v1/banks/bob/memories").json()["items"]
    assert [m["text"] for m in bob] == ["Bob's cello teacher is Martha; lessons on Sundays."]


async def test_mcp_respects_bank_allow_list(sidecar: ServerProcess) -> None:
    async with _client(sidecar, "alice", key=ALICE_KEY) as client:
        assert (await client.list_tools()).tools
    statuses: list[int] = []
    refused = False
    try:
        async with _client(sidecar, "bob", key=ALICE_KEY, statuses=statuses) as client:
            await client.list_tools()
    except* MCPError:  # how the SDK reports the refusal (inside its task groups' exception groups)
        refused = True
    assert refused and statuses and set(statuses) == {403}  # refused by the allow-list, not failing otherwise
    forbidden = httpx.post(f"{sidecar.url}/mcp/bob/", headers={"Authorization": f"Bearer {ALICE_KEY}"}, json={})
    assert forbidden.status_code == 403 and forbidden.json()["error"]["code"] == "bank_forbidden"


async def test_mcp_recall_shows_memory_text_only_inside_the_fence(sidecar: ServerProcess, admin: httpx.Client) -> None:
    """A memory that forges the close tag (generated look-alikes: tests/fence_forgeries.py) reaches the agent only
    inside the block, neutralised; beside the block the tool gives ids, types and dates, never text."""
    bank = f"mcp-fence-{uuid.uuid4().hex[:8]}"
    forged = fence_forgeries.combinations(40, seed=11) + fence_forgeries.special()
    items = [
        {
            "content": f"OVERRIDE {start}: "
            + " ".join(f"<{n}> {forged[n]} </{n}>" for n in range(start, start + 10) if n < len(forged)),
            "document_id": f"f:{start}",
        }
        for start in range(0, len(forged), 10)
    ]
    assert admin.post(f"/v1/banks/{bank}/memories/batch", json={"items": items}).status_code == 201
    async with _client(sidecar, bank) as client:
        result = await client.call_tool("recall", {"query": "OVERRIDE", "token_budget": 20000})
        recalled = _payload(result)
        listed = _payload(await client.call_tool("list_memories", {"limit": 100}))
    context = recalled["context"]
    spans = find_tags(context)
    assert [context[a:b] for a, b in spans] == [OPEN_TAG, CLOSE_TAG]
    assert all(f"<{n}> {REPLACEMENT} </{n}>" in context for n in range(len(forged)))
    assert len(recalled["memories"]) == len(items)
    assert all(
        set(m) == {"id", "type", "mentioned_at", "document_id", "speaker", "message_id", "part", "parts"}
        for m in recalled["memories"]
    )
    beside = json.dumps({k: v for k, v in recalled.items() if k != "context"}, ensure_ascii=False)
    assert "OVERRIDE" not in beside and not any(f in beside for f in forged)
    # Every text the tool result holds (the unstructured copy too) is the fenced block or carries no memory text.
    assert all("OVERRIDE" not in block.text or block.text.count(OPEN_TAG) == 1 for block in result.content)
    # Other tools show records unfenced: no string in them reads as a tag.
    assert all(not find_tags(m["text"]) for m in listed["memories"]) and len(listed["memories"]) == len(items)


async def test_mcp_invalidates_and_deletes_a_memory_of_its_bank_only(
    sidecar: ServerProcess, admin: httpx.Client
) -> None:
    bank, other = f"mcp-forget-{uuid.uuid4().hex[:8]}", f"mcp-keep-{uuid.uuid4().hex[:8]}"
    elsewhere = admin.post(f"/v1/banks/{other}/memories", json={"content": "The office plant is watered on Fridays."})
    other_id = elsewhere.json()["ids"][0]
    async with _client(sidecar, bank) as client:
        stale = _payload(await client.call_tool("retain", {"content": "The office plant is watered on Mondays."}))
        memory_id = stale["ids"][0]
        assert (
            "Mondays" in _payload(await client.call_tool("recall", {"query": "When is the plant watered?"}))["context"]
        )

        invalidated = await client.call_tool("invalidate_memory", {"memory_id": memory_id, "reason": "now Fridays"})
        assert _payload(invalidated)["invalidated"] is True
        assert "restore_memory" in _payload(invalidated)["note"]
        assert (
            "Mondays"
            not in _payload(await client.call_tool("recall", {"query": "When is the plant watered?"}))["context"]
        )
        context = admin.get(f"/v1/banks/{bank}/memories/{memory_id}/context").json()
        assert "now Fridays" in json.dumps(context)  # the reason is kept with the invalidation
        # get_memory says so, and when; list_memories leaves it out unless asked.
        got = _payload(await client.call_tool("get_memory", {"memory_id": memory_id}))
        assert got["invalidated"] is True and got["invalidated_at"]
        assert _payload(await client.call_tool("list_memories", {}))["memories"] == []
        listed = _payload(await client.call_tool("list_memories", {"include_invalidated": True}))["memories"]
        assert [(m["id"], m["invalidated"]) for m in listed] == [(memory_id, True)]
        # The same flag and field over REST (and so the HTTP client).
        assert admin.get(f"/v1/banks/{bank}/memories").json()["items"] == []
        rest = admin.get(f"/v1/banks/{bank}/memories", params={"include_invalidated": "true"}).json()["items"]
        assert [(m["id"], bool(m["invalidated_at"])) for m in rest] == [(memory_id, True)]
        # restore_memory undoes it.
        assert _payload(await client.call_tool("restore_memory", {"memory_id": memory_id})) == {"restored": True}
        got = _payload(await client.call_tool("get_memory", {"memory_id": memory_id}))
        assert got["invalidated"] is False and "invalidated_at" not in got
        assert (
            "Mondays" in _payload(await client.call_tool("recall", {"query": "When is the plant watered?"}))["context"]
        )

        assert _payload(await client.call_tool("delete_memory", {"memory_id": memory_id})) == {"deleted": True}
        assert admin.get(f"/v1/banks/{bank}/memories/{memory_id}").status_code == 404

        # The endpoint's bank only: another bank's memory is not this bank's to forget.
        refused = await client.call_tool("delete_memory", {"memory_id": other_id})
        assert refused.is_error and "memory_not_found" in refused.content[0].text
        assert f"No memory with id {other_id} in bank {bank!r}." in refused.content[0].text
    assert admin.get(f"/v1/banks/{other}/memories/{other_id}").status_code == 200


async def test_mcp_tools_carry_annotations_and_the_server_its_version(sidecar: ServerProcess) -> None:
    """As the official client sees them. The session's sidecar has no LLM: `reflect` (which could only fail) is
    not listed; with an LLM it is (tests/test_mcp_stdio.py)."""
    async with _client(sidecar, f"mcp-hints-{uuid.uuid4().hex[:8]}") as client:
        assert client.server_info is not None
        assert (client.server_info.name, client.server_info.version) == ("memwrap", memwrap.__version__)
        tools = {t.name: t for t in (await client.list_tools()).tools}
    hints = {
        name: (a.read_only_hint, a.destructive_hint, a.idempotent_hint, a.open_world_hint)
        for name, t in tools.items()
        if (a := t.annotations) is not None
    }
    print("\n".join(f"{name}: {t.annotations}" for name, t in tools.items()))  # the acceptance note's table
    assert "reflect" not in tools and "restore_memory" in tools
    assert set(hints) == set(tools)  # every tool has them
    for name in ("recall", "list_memories", "get_memory", "mental_models", "get_mental_model"):
        assert hints[name] == (True, None, None, False), name
    assert hints["delete_memory"] == (False, True, True, False)
    assert hints["invalidate_memory"] == (False, True, True, False)
    assert hints["restore_memory"] == (False, False, True, False)
    assert hints["retain"] == (False, False, True, False)
    assert hints["update_memory"] == (False, False, True, False)
    assert all(t.annotations and t.annotations.title for t in tools.values())
