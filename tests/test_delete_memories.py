"""delete_memories: a tagged (or filtered) purge, counted by a dry run first, on every surface: the embedded
Memory, REST, MCP and the CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import httpx
import pytest
from mcp.client.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from test_server_harness import *  # noqa: F403 - fixtures: sidecar, admin

from memwrap import Memory
from memwrap.errors import InvalidInputError

MEMWRAP = str(Path(sys.executable).parent / "memwrap")


def _bank() -> str:
    return f"purge-{uuid.uuid4().hex[:8]}"


def _fill(memory: Memory, bank: str) -> None:
    memory.retain_many(
        bank,
        [
            {"content": "The staging database lives on db-stage-2.", "tags": ["infra", "staging"]},
            {"content": "Staging deploys run at noon.", "tags": ["staging"], "metadata": {"team": "ops"}},
            {"content": "Alice prefers tea in the afternoon.", "tags": ["personal"], "metadata": {"team": "ops"}},
        ],
    )


def test_a_dry_run_counts_then_the_purge_deletes(memory: Memory) -> None:
    bank, other = _bank(), _bank()
    _fill(memory, bank)
    _fill(memory, other)
    counted = memory.delete_memories(bank, tags=["staging"])
    assert (counted.matched, counted.deleted, counted.dry_run) == (2, 0, True)
    assert len(memory.list(bank)) == 3  # a dry run deletes nothing
    by_filter = memory.delete_memories(bank, filters={"metadata": {"team": "ops"}}, tags=["personal"])
    assert by_filter.matched == 1  # tags and filters together: both must hold
    done = memory.delete_memories(bank, tags=["staging"], dry_run=False)
    assert (done.matched, done.deleted, done.dry_run) == (2, 2, False)
    assert [m.text for m in memory.list(bank)] == ["Alice prefers tea in the afternoon."]
    assert len(memory.list(other)) == 3  # another bank's memories with the same tags stay
    assert next(b for b in memory.banks() if b.bank_id == bank).memories == 1
    # Forgotten as `delete` forgets: retaining the same text again stores it again.
    memory.retain(bank, "Staging deploys run at noon.", tags=["staging"])
    assert len(memory.list(bank)) == 2
    with pytest.raises(InvalidInputError, match="delete_bank"):
        memory.delete_memories(bank, dry_run=False)  # no criterion: not a way to empty the bank
    for name in (bank, other):
        memory.delete_bank(name)


def test_rest_mcp_and_cli(sidecar: ServerProcess, admin: httpx.Client, memory: Memory) -> None:  # noqa: F405
    bank = _bank()
    for item in (("a", ["old"]), ("b", ["old"]), ("c", ["new"])):
        admin.post(f"/v1/banks/{bank}/memories", json={"content": f"note {item[0]}", "tags": item[1]})
    dry = admin.post(f"/v1/banks/{bank}/memories/delete", json={"tags": ["old"]})
    assert dry.status_code == 200 and dry.json() == {"bank_id": bank, "matched": 2, "deleted": 0, "dry_run": True}
    refused = admin.post(f"/v1/banks/{bank}/memories/delete", json={"dry_run": False})
    assert refused.status_code == 422 and "delete_bank" in refused.text

    async def by_mcp() -> dict[str, object]:
        http = create_mcp_http_client(headers={"Authorization": f"Bearer {ADMIN_KEY}"})  # noqa: F405
        async with Client(streamable_http_client(f"{sidecar.url}/mcp/{bank}/", http_client=http)) as client:
            result = await client.call_tool("delete_memories", {"tags": ["old"], "dry_run": False})
            assert not result.is_error, result
            return result.structured_content or json.loads(result.content[0].text)

    import asyncio

    assert asyncio.run(by_mcp()) == {"bank_id": bank, "matched": 2, "deleted": 2, "dry_run": False}
    assert [m["text"] for m in admin.get(f"/v1/banks/{bank}/memories").json()["items"]] == ["note c"]

    home = Path(os.environ["MEMWRAP_HOME"])
    memory.retain_many(bank, [{"content": "cli note", "tags": ["cli"]}])
    env = {**os.environ, "MEMWRAP_HOME": str(home)}
    env.pop("MEMWRAP_URL", None)
    counted = subprocess.run(
        [MEMWRAP, "delete-memories", bank, "--tags", "cli", "--json"], capture_output=True, text=True, env=env
    )
    assert counted.returncode == 0, counted.stderr
    assert json.loads(counted.stdout)["matched"] == 1 and json.loads(counted.stdout)["deleted"] == 0
    gone = subprocess.run(
        [MEMWRAP, "delete-memories", bank, "--tags", "cli", "--no-dry-run", "--json"],
        capture_output=True,
        text=True,
        env=env,
    )
    assert gone.returncode == 0 and json.loads(gone.stdout)["deleted"] == 1, gone.stderr
    memory.delete_bank(bank)
