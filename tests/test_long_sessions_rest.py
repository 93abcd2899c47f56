"""A long message's chunks over the REST API of a real `memwrap serve`: each recalled chunk says which message it
belongs to, its place in it, its document, speaker and session (issue 36)."""

from __future__ import annotations

import httpx
from test_long_sessions import LONG_ANSWER
from test_server_harness import *  # noqa: F403 - fixtures: sidecar, admin


def test_rest_recall_carries_a_chunks_provenance(admin: httpx.Client, bank: str) -> None:
    created = admin.post(
        f"/v1/banks/{bank}/memories",
        json={
            "content": LONG_ANSWER,
            "timestamp": "2026-01-05T10:01:00Z",
            "document_id": "s1:1",
            "metadata": {"role": "assistant", "session_id": "s1"},
        },
    )
    assert created.status_code == 201, created.text
    recall = admin.post(
        f"/v1/banks/{bank}/recall",
        json={"query": "retry loop worker/queue.py backoff capped at 30 seconds", "token_budget": 4000},
    )
    assert recall.status_code == 200, recall.text
    chunks = [m for m in recall.json()["memories"] if m["part"] is not None]
    assert len(chunks) >= 2
    assert {(m["document_id"], m["speaker"], m["session_id"], m["message_id"], m["parts"]) for m in chunks} == {
        ("s1:1", "assistant", "s1", chunks[0]["message_id"], chunks[0]["parts"])
    }
    assert chunks[0]["parts"] >= 3 and chunks[0]["message_id"]
    # One line in the block for the message's chunks.
    lines = [line for line in recall.json()["context"].splitlines() if line.startswith("- ")]
    assert len(lines) == 1 and lines[0].startswith("- [2026-01-05] assistant: The retry loop")
