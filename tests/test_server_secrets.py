"""Secrets seeded in every field a caller controls (content, context, metadata keys and values, tags,
document_id, the proxy's session header, MCP arguments, an update's text, an invalidation's reason, a mental
model's name and question, a bank's disposition directives) are absent from the database, the spool, the server's
log and every API answer, also when written in disguise (any Unicode separator, fullwidth digits, a zero-width
space inside, a key wrapped over two lines); and nothing under MEMWRAP_HOME is readable by other users.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import stat
import string
from pathlib import Path
from typing import Any

import httpx
import pytest
from database import Database
from fakes.llm_server import FakeLLMServer
from mcp.client.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from test_defense_properties import readable
from test_server_harness import *  # noqa: F403 - fixtures: sidecar, admin, upstream

from memwrap.defense.checks import _cn_id_checksum, _random_base64_40

ALNUM = string.ascii_letters + string.digits


def _openai() -> str:
    return "sk-proj-" + "".join(random.choices(ALNUM, k=48))


def _github() -> str:
    return "ghp_" + "".join(random.choices(ALNUM, k=36))


def _aws_secret() -> str:
    while True:
        candidate = "".join(random.choices(ALNUM + "/+", k=40))
        if _random_base64_40(candidate):
            return candidate


def _card() -> str:
    digits = [4] + [random.randrange(10) for _ in range(14)]
    total = sum(d if i % 2 else (d * 2 - 9 if d * 2 > 9 else d * 2) for i, d in enumerate(reversed(digits)))
    return "".join(map(str, digits)) + str((10 - total % 10) % 10)


@pytest.fixture(scope="module")
def secrets() -> dict[str, str]:
    found = {f"openai{i}": _openai() for i in range(10)}
    found |= {f"github{i}": _github() for i in range(6)}
    found |= {f"aws{i}": _aws_secret() for i in range(3)}
    found |= {f"card{i}": _card() for i in range(4)}
    first17 = "44030419880512" + "".join(random.choices(string.digits, k=3))
    found["cn_id"] = first17 + _cn_id_checksum(first17)
    found["mobile"] = "139" + "".join(random.choices(string.digits, k=8))
    return found


def _disguised(secrets: dict[str, str]) -> dict[str, str]:
    """Secrets written the way people and input methods write them, by the name of the plain one."""
    card2, card3, cn_id, mobile = secrets["card2"], secrets["card3"], secrets["cn_id"], secrets["mobile"]
    fullwidth = "".join(chr(ord(c) + 0xFEE0) for c in card3)
    github = secrets["github4"]
    key = secrets["openai6"]
    return {
        "card2": "\u00a0".join(card2[i : i + 4] for i in range(0, 16, 4)),  # NBSP between the groups
        "card3": f"{fullwidth[:4]}\u3000{fullwidth[4:8]}.{fullwidth[8:12]}\t{fullwidth[12:]}",  # fullwidth, mixed
        "cn_id": f"{cn_id[:6]} {cn_id[6:14]} {cn_id[14:]}",
        "mobile": f"{mobile[:3]}\u2009{mobile[3:7]}\u2009{mobile[7:]}",
        "github4": github[:10] + "\u200b" + github[10:],
        "openai6": key[:30] + "\n" + key[30:],  # wrapped over two lines
    }


def _leaks(text: str, secrets: dict[str, str]) -> list[str]:
    """The secrets readable in `text`: as written, or whole once what a reader does not see (separators, invisible
    characters, width) is taken away. (tests/test_defense_properties.py looks for any six characters of one; here
    the answers are full of ids and times, whose digits would match six of a card's by chance.)"""
    seen = readable(text)
    return [name for name, value in secrets.items() if value in text or readable(value) in seen]


async def _mcp(sidecar: ServerProcess, bank: str, secrets: dict[str, str]) -> list[str]:
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {ADMIN_KEY}"})
    answers = []
    async with Client(streamable_http_client(f"{sidecar.url}/mcp/{bank}/", http_client=http)) as client:
        stored = await client.call_tool(
            "retain",
            {
                "content": f"MCP note with {secrets['openai5']}",
                "document_id": f"mcp-{secrets['github3']}:1",
                "tags": [secrets["aws2"]],
                "context": f"card {secrets['card1']}",
            },
        )
        answers.append(json.dumps(stored.structured_content or stored.content[0].text))
        for name, arguments in (("list_memories", {"limit": 100}), ("recall", {"query": "note key token card"})):
            result = await client.call_tool(name, arguments)
            answers.append(json.dumps(result.structured_content) + result.content[0].text)
    return answers


@pytest.fixture(scope="module")
def seeded(sidecar: ServerProcess, upstream_server: FakeLLMServer, secrets: dict[str, str]) -> dict[str, Any]:
    """Everything sent in, once for the module: the bank, and every answer memwrap gave on the way."""
    bank = f"secrets-{random.randrange(10**9)}"
    answers: list[str] = []
    with httpx.Client(base_url=sidecar.url, headers={"Authorization": f"Bearer {ADMIN_KEY}"}, timeout=60) as admin:
        answers.append(
            admin.post(
                f"/v1/banks/{bank}/memories",
                json={
                    "content": f"Alice's OpenAI key is {secrets['openai0']} and her card {secrets['card0']}.",
                    "context": f"pasted from {secrets['github0']}",
                    "document_id": f"doc-{secrets['openai1']}:1",
                    "metadata": {
                        "note": secrets["aws0"],
                        secrets["github1"]: "as a key",
                        "deep": {"list": [secrets["openai2"]]},
                    },
                    "tags": [secrets["github2"], "work"],
                },
            ).text
        )
        answers.append(
            admin.post(
                f"/v1/banks/{bank}/memories/batch",
                json={"items": [{"content": f"AWS secret alone: {secrets['aws1']}", "document_id": "batch:1"}]},
            ).text
        )
        disguised = _disguised(secrets)
        answers.append(
            admin.post(
                f"/v1/banks/{bank}/memories/batch",
                json={
                    "items": [
                        {
                            "content": f"Bob's card is {disguised['card2']}, his mobile {disguised['mobile']}.",
                            "document_id": "d:1",
                        },
                        {"content": f"身份证 {disguised['cn_id']}，卡号 {disguised['card3']}", "document_id": "d:2"},
                        {
                            "content": f"token {disguised['github4']} and key\n{disguised['openai6']}",
                            "document_id": "d:3",
                        },
                    ]
                },
            ).text
        )
        # Every other writer: an update's text, an invalidation's reason, a mental model, bank directives.
        target = admin.get(f"/v1/banks/{bank}/memories", params={"document_id": "batch:1"}).json()["items"][0]["id"]
        answers.append(
            admin.patch(
                f"/v1/banks/{bank}/memories/{target}", json={"text": f"AWS key rotated, new one {secrets['openai7']}"}
            ).text
        )
        answers.append(
            admin.post(
                f"/v1/banks/{bank}/memories/{target}/invalidate", json={"reason": f"leaked key {secrets['openai8']}"}
            ).text
        )
        answers.append(
            admin.post(
                f"/v1/banks/{bank}/mental-models",
                json={"name": f"keys {secrets['github5']}", "question": f"Who used {secrets['openai9']}?"},
            ).text
        )
        answers.append(
            admin.patch(
                f"/v1/banks/{bank}", json={"disposition": {"directives": [f"Never repeat {secrets['card3']}"]}}
            ).text
        )
        upstream_server.reset()
        upstream_server.script(["Noted, I will not repeat it.", "Stored it."])
        proxy = {"X-Memwrap-Key": ADMIN_KEY, "X-Memwrap-Bank": bank, "Authorization": f"Bearer {secrets['openai3']}"}
        chat = httpx.post(
            f"{sidecar.url}/v1/chat/completions",
            timeout=60,
            headers={**proxy, "X-Memwrap-Session": f"sess-{secrets['openai4']}"},
            json={"model": "m", "messages": [{"role": "user", "content": f"My card is {secrets['card1']}"}]},
        )
        assert chat.status_code == 200
        responses = httpx.post(
            f"{sidecar.url}/v1/responses",
            timeout=60,
            headers={**proxy, "X-Memwrap-Session": f"resp-{secrets['github3']}"},
            json={"model": "m", "input": f"Keep {secrets['aws2']} for me"},
        )
        assert responses.status_code == 200
        answers += asyncio.run(_mcp(sidecar, bank, secrets))
        wait_until(lambda: len(admin.get(f"/v1/banks/{bank}/memories").json()["items"]) >= 5, 60)
        items = admin.get(f"/v1/banks/{bank}/memories", params={"limit": 100}).json()
        answers.append(json.dumps(items))
        for item in items["items"]:
            answers.append(admin.get(f"/v1/banks/{bank}/memories/{item['id']}").text)
        for query in ("OpenAI key card", "AWS secret", "card", "Keep for me"):
            answers.append(admin.post(f"/v1/banks/{bank}/recall", json={"query": query}).text)
        for path in ("", "/jobs", "/observations", "/mental-models"):
            answers.append(admin.get(f"/v1/banks/{bank}{path}").text)
        answers.append(admin.get("/v1/banks").text)
        answers.append(admin.get(f"/v1/banks/{bank}/memories", params={"document_id": "batch:1"}).text)
    return {"bank": bank, "answers": answers, "items": items["items"]}


def test_everything_was_stored_redacted(seeded: dict[str, Any]) -> None:
    texts = json.dumps(seeded["items"])
    assert len(seeded["items"]) >= 5
    assert "[REDACTED:" in texts
    for kind in ("openai_key", "github_token", "aws_secret_key"):
        assert f"[REDACTED:{kind}]" in texts, kind


def test_no_api_answer_holds_a_secret(seeded: dict[str, Any], secrets: dict[str, str]) -> None:
    for answer in seeded["answers"]:
        assert not _leaks(answer, secrets), answer[:500]


def test_the_database_holds_no_secret(seeded: dict[str, Any], secrets: dict[str, str], memwrap_home: Path) -> None:
    import asyncpg

    from memwrap.store.embedded_pg import embedded_database_url

    async def dump() -> str:
        conn = await asyncpg.connect(embedded_database_url(memwrap_home / "pg"))
        try:
            tables = [
                r[0]
                for r in await conn.fetch(
                    "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'"
                )
            ]
            parts = []
            for table in tables:
                rows = await conn.fetch(f'SELECT t::text FROM "{table}" t')  # catalog names
                parts += [r[0] for r in rows]
            return "\n".join(parts)
        finally:
            await conn.close()

    text = asyncio.run(dump())
    assert seeded["bank"] in text  # the dump does hold this test's rows
    assert not _leaks(text, secrets)


def test_the_spool_and_the_log_hold_no_secret(
    seeded: dict[str, Any], secrets: dict[str, str], sidecar: ServerProcess, memwrap_home: Path
) -> None:
    spooled = b"".join(p.read_bytes() for p in (memwrap_home / "spool").glob("retains.sqlite3*"))
    assert spooled  # the proxy's turns went through it
    assert not [name for name, value in secrets.items() if value.encode() in spooled]
    assert not _leaks(sidecar.tail(10_000_000), secrets)


def test_nothing_under_the_home_is_readable_by_others(seeded: dict[str, Any], memwrap_home: Path, db: Database) -> None:
    readable = []
    for path in [memwrap_home, *memwrap_home.rglob("*")]:
        try:
            mode = path.lstat().st_mode
        except (FileNotFoundError, PermissionError):
            continue
        if stat.S_ISSOCK(mode) or stat.S_ISLNK(mode):
            continue  # the database's socket lives in its own 0700 folder
        if mode & stat.S_IROTH:
            readable.append(f"{stat.filemode(mode)} {path}")
    assert not readable, readable[:20]
    home = memwrap_home.stat()
    if os.geteuid() == 0:  # the embedded PostgreSQL passes through by the home's group (its processes' own)
        assert stat.S_IMODE(home.st_mode) == 0o710
        postmaster = (memwrap_home / "pg" / "postmaster.pid").read_text().split()[0]
        gids = next(
            line for line in Path(f"/proc/{postmaster}/status").read_text().splitlines() if line.startswith("Gid:")
        ).split()[1:]
        assert str(home.st_gid) in gids, (home.st_gid, gids)
    else:
        assert stat.S_IMODE(home.st_mode) == 0o700
    # The database still reaches its own files through the home: a checkpoint writes global/pg_control (with the
    # home's group not the server's, this PANICked and took the database down).
    db.blocking.execute("CHECKPOINT")
    for spool_file in (memwrap_home / "spool").glob("retains.sqlite3*"):
        assert stat.S_IMODE(spool_file.stat().st_mode) == 0o600, spool_file
