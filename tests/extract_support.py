"""Helpers for the extraction tests (tests/test_extract*.py): an engine wired to the fake LLM server, scripted
extraction replies in each provider's shape, and direct looks into the database."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

from fakes.llm_server import FakeLLMServer, Reply, ToolCall

from memwrap.config import Settings
from memwrap.engine.engine import Engine


async def make_engine(home: Path, fake: FakeLLMServer | None, provider: str = "openai", **overrides: Any) -> Engine:
    """An engine on the test database whose extraction LLM is the fake server (or a dead port when fake is None)."""
    if fake is None:
        base = dead_url()
    else:
        base = fake.openai_base_url if provider == "openai" else fake.anthropic_base_url
    # Only the extraction role talks to the fake: consolidation (the learning worker that runs in every engine)
    # must not take scripted replies meant for extraction.
    options: dict[str, Any] = {
        "home": home,
        "llm_provider": "none",
        "extraction_provider": provider,
        "extraction_model": "fake-extractor",
        "extraction_base_url": base,
        "extraction_api_key": "sk-test",
        "llm_backoff": 0.01,
        "llm_max_retries": 1,
        "llm_timeout": 5.0,
        "extraction_retry_interval": 3600.0,  # no background pass unless a test asks for one
        "worker": "off",  # the learning worker would also work on other tests' banks in the shared database
    }
    options.update(overrides)
    return await Engine.open(Settings(**options))


def dead_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def fact(
    text: str,
    fact_type: str,
    turns: list[int],
    entities: list[str] | None = None,
    when: str | None = None,
    start: str | None = None,
    end: str | None = None,
    caused_by: list[int] | None = None,
) -> dict[str, Any]:
    return {
        "text": text,
        "fact_type": fact_type,
        "turns": turns,
        "entities": entities or [],
        "when": when,
        "start": start,
        "end": end,
        "caused_by": caused_by or [],
    }


def reply(facts: list[dict[str, Any]], entities: list[dict[str, Any]] | None = None, provider: str = "openai") -> Reply:
    """A scripted extraction: JSON text for OpenAI (json_schema), the forced tool call for Anthropic."""
    payload = {"facts": facts, "entities": entities or []}
    if provider == "anthropic":
        return Reply(tool_calls=[ToolCall("extraction", payload)])
    return Reply(json=payload)


def prompt_of(request: Any) -> tuple[str, str]:
    """(system, user) text of an extraction request, for either provider."""
    body = request.body
    if request.provider == "anthropic.messages":
        system = "".join(block["text"] for block in body["system"])
        user = "".join(
            b["text"] for m in body["messages"] if m["role"] == "user" for b in m["content"] if b["type"] == "text"
        )
        return system, user
    return body["messages"][0]["content"], body["messages"][-1]["content"]


async def units(engine: Engine, bank: str) -> list[dict[str, Any]]:
    """The bank's retained units (observations, which the learning worker may add at any time, left out)."""
    rows = await engine.store.pool.fetch(
        "SELECT id, text, fact_type, document_id, metadata, occurred_start, occurred_end, mentioned_at, item_hash "
        "FROM memory_units WHERE bank_id = $1 AND fact_type IN ('raw', 'world', 'experience') ORDER BY seq",
        bank,
    )
    return [dict(r) for r in rows]


async def queued(engine: Engine, bank: str) -> list[dict[str, Any]]:
    """The bank's items whose extraction job is open or dead (one entry per item, with its job's state)."""
    rows = await engine.store.pool.fetch(
        "SELECT h.item_hash, j.status, j.attempts, j.last_error, j.run_after FROM jobs j,"
        " jsonb_array_elements_text(j.payload->'item_hashes') AS h(item_hash)"
        " WHERE j.bank_id = $1 AND j.kind = 'extract' AND j.status IN ('queued', 'running', 'failed')",
        bank,
    )
    return [dict(r) for r in rows]


async def links(engine: Engine, bank: str, kind: str) -> list[tuple[Any, Any]]:
    rows = await engine.store.pool.fetch(
        "SELECT from_id, to_id FROM memory_links WHERE bank_id = $1 AND kind = $2", bank, kind
    )
    return [(r["from_id"], r["to_id"]) for r in rows]


async def retained(engine: Engine, bank: str) -> dict[str, list[Any]]:
    rows = await engine.store.pool.fetch("SELECT item_hash, unit_ids FROM retained_items WHERE bank_id = $1", bank)
    return {r["item_hash"]: list(r["unit_ids"]) for r in rows}
