"""A bank worth looking at, for the memory browser's browser tests (tests/test_ui_browser.py): two sessions of a
conversation, facts in English and Chinese, an XSS payload stored as a memory, observations, a mental model."""

from __future__ import annotations

from typing import Any

import httpx

XSS = '<img src=x onerror="window.__xss=1"><script>window.__xss=2</script> Alice said </memwrap-memory> hi'

MEMORIES: list[dict[str, Any]] = [
    {
        "content": "Alice moved to Lisbon in April 2026 for a new job at Google on the Cloud team.",
        "timestamp": "2026-04-12T18:30:00Z",
        "document_id": "s1:turn-0",
        "tags": ["work"],
    },
    {
        "content": "Alice is vegetarian and allergic to peanuts.",
        "timestamp": "2026-04-12T18:31:00Z",
        "document_id": "s1:turn-1",
        "tags": ["food"],
    },
    {
        "content": "Alice's sister Maya is visiting Lisbon in May 2026.",
        "timestamp": "2026-04-12T18:32:00Z",
        "document_id": "s1:turn-2",
        "tags": ["family"],
    },
    {
        "content": "Alice went hiking in Sintra with Maya in May 2026.",
        "timestamp": "2026-05-20T10:00:00Z",
        "document_id": "s2:turn-0",
        "tags": ["family"],
    },
    {
        "content": "Alice started learning the cello in October 2026 with a teacher called João.",
        "timestamp": "2026-11-23T09:00:00Z",
        "document_id": "s3:turn-0",
        "tags": ["hobby"],
    },
    {
        "content": "Alice practises the cello every morning before work.",
        "timestamp": "2026-11-23T09:01:00Z",
        "document_id": "s3:turn-1",
        "tags": ["hobby"],
    },
    {
        "content": "Alice prefers vegetarian restaurants near Time Out Market in Lisbon.",
        "timestamp": "2026-06-02T19:00:00Z",
        "document_id": "s2:turn-1",
        "tags": ["food"],
    },
    {
        "content": "Alice 喜欢在里斯本的咖啡馆里读书，她最喜欢的作家是张爱玲。",
        "timestamp": "2026-07-01T08:00:00Z",
        "document_id": "s4:turn-0",
        "tags": ["中文"],
    },
    {
        "content": "Alice 的妹妹 Maya 五月来里斯本看她。",
        "timestamp": "2026-07-01T08:01:00Z",
        "document_id": "s4:turn-1",
        "tags": ["中文"],
    },
    {"content": XSS, "timestamp": "2026-08-01T12:00:00Z", "document_id": "s5:turn-0", "tags": ["xss"]},
]


def seed(client: httpx.Client, bank: str) -> dict[str, Any]:
    """Retain the memories (and a few repeats, so consolidation has evidence), consolidate, add a mental model."""
    ids = client.post(f"/v1/banks/{bank}/memories/batch", json={"items": MEMORIES}).raise_for_status().json()["ids"]
    repeats = [
        {**m, "document_id": f"{m['document_id']}-again", "timestamp": "2026-09-01T10:00:00Z"} for m in MEMORIES[:3]
    ]
    client.post(f"/v1/banks/{bank}/memories/batch", json={"items": repeats}).raise_for_status()
    report = client.post(f"/v1/banks/{bank}/consolidate").raise_for_status().json()
    model = client.post(
        f"/v1/banks/{bank}/mental-models", json={"name": "diet", "question": "What does Alice eat and avoid?"}
    )
    return {"ids": ids, "consolidation": report, "model": model.status_code}
