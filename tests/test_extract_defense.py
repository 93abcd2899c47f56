"""Memory defense on every field of a retained item, and before extraction: no raw secret reaches the LLM,
the database or the logs; under 'block' nothing is stored and nothing is sent."""

from __future__ import annotations

import json
import logging
import random
import string
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from database import Database
from extract_support import fact, make_engine, reply, units
from fakes.llm_server import FakeLLMServer, Reply
from llm_fixtures import engine_fixture

from memwrap.config import Settings
from memwrap.engine.engine import Engine
from memwrap.errors import SecretBlockedError

_rng = random.Random(5)


def _alnum(n: int) -> str:
    return "".join(_rng.choice(string.ascii_letters + string.digits) for _ in range(n))


OPENAI_KEY = "sk-proj-" + _alnum(156)
GITHUB_TOKEN = "ghp_" + _alnum(36)
ANTHROPIC_KEY = "sk-ant-api03-" + _alnum(93) + "AA"
SECRETS = (OPENAI_KEY, GITHUB_TOKEN, ANTHROPIC_KEY)

ITEM = {
    "content": f"user: My deploy key is {OPENAI_KEY}, please remember I deploy on Fridays.",
    "context": f"ops chat, token {GITHUB_TOKEN}",
    "metadata": {"role_hint": "ops", "nested": {"creds": [f"anthropic {ANTHROPIC_KEY}"]}, ANTHROPIC_KEY: "as a key"},
    "tags": ["ops", f"tok-{GITHUB_TOKEN}"],
    "document_id": "ops:1",
}


engine = engine_fixture(make_engine)


@pytest.fixture(scope="module")
async def plain(memwrap_home: Path) -> AsyncIterator[Engine]:
    """No LLM (none mode)."""
    eng = await Engine.open(Settings(home=memwrap_home, llm_provider="none", worker="off"))
    assert eng.extractor is None
    yield eng
    await eng.close()


async def block(engine: Engine, bank: str) -> None:
    await engine.create_bank(bank, defense_policy="block")


async def stored_text(db: Database, bank: str) -> str:
    """Everything stored for the bank, as one string."""
    parts: list[Any] = []
    for table in ("memory_units", "entities", "retained_items", "entity_aliases", "jobs"):
        rows = await db.fetch(f"SELECT to_jsonb(t)::text AS row FROM {table} t WHERE bank_id = $1", bank)
        parts.extend(r["row"] for r in rows)
    return "\n".join(parts)


def assert_clean(text: str) -> None:
    for secret in SECRETS:
        assert secret not in text
        assert secret[:24] not in text


async def test_none_mode_redacts_context_metadata_and_tags(plain: Engine, db: Database, bank: str) -> None:
    await plain.retain_many(bank, [ITEM])
    stored = await stored_text(db, bank)
    assert_clean(stored)
    [record] = await plain.list(bank)
    assert "[REDACTED:openai_key]" in record.text and record.context == "ops chat, token [REDACTED:github_token]"
    assert record.metadata["nested"] == {"creds": ["anthropic [REDACTED:anthropic_key]"]}
    assert record.metadata["[REDACTED:anthropic_key]"] == "as a key" and record.metadata["role_hint"] == "ops"
    assert record.tags == ["ops", "tok-[REDACTED:github_token]"]


@pytest.mark.parametrize(
    "where",
    [
        {"context": f"token {GITHUB_TOKEN}"},
        {"metadata": {"k": [f"x {OPENAI_KEY}"]}},
        {"tags": [GITHUB_TOKEN]},
        {"content": f"my key {ANTHROPIC_KEY}"},
    ],
)
async def test_block_refuses_a_secret_in_any_field(plain: Engine, bank: str, where: dict[str, Any]) -> None:
    await block(plain, bank)
    item = {"content": "An ordinary sentence.", **where}
    with pytest.raises(SecretBlockedError) as info:
        await plain.retain_many(bank, [{"content": "Fine on its own.", "document_id": "b:0"}, item])
    assert_clean(str(info.value))
    assert await units(plain, bank) == []  # not even the clean item of the same call


async def test_extraction_sees_and_stores_only_defended_text(
    engine: Engine, fake: FakeLLMServer, db: Database, bank: str
) -> None:
    # The model echoes a secret it could have invented: the fact passes the defense again before it is stored.
    fake.script([reply([fact(f"The user deploys on Fridays with key {OPENAI_KEY}.", "world", [1], ["Friday"])])])
    await engine.retain_many(bank, [ITEM])
    assert len(fake.requests) == 1
    sent = json.dumps(fake.last().body)
    assert_clean(sent)
    assert "[REDACTED:openai_key]" in sent and "token [REDACTED:github_token]" in sent
    stored = await stored_text(db, bank)
    assert_clean(stored)
    [row] = await units(engine, bank)
    assert row["fact_type"] == "world" and "[REDACTED:openai_key]" in row["text"]


async def test_block_under_extraction_sends_nothing(engine: Engine, fake: FakeLLMServer, bank: str) -> None:
    await block(engine, bank)
    with pytest.raises(SecretBlockedError):
        await engine.retain_many(bank, [{"content": "user: hello", "metadata": {"note": f"pat {GITHUB_TOKEN}"}}])
    assert fake.requests == []
    assert await units(engine, bank) == []


async def test_failures_log_and_queue_only_redacted_text(
    engine: Engine, fake: FakeLLMServer, db: Database, bank: str, caplog: pytest.LogCaptureFixture
) -> None:
    # A provider error that quotes a secret back (some endpoints echo the offending input).
    fake.script([Reply(status=400, error=f"invalid request near '{OPENAI_KEY}'")])
    with caplog.at_level(logging.INFO, logger="memwrap"):
        await engine.retain_many(bank, [{"content": "user: I deploy on Fridays.", "timestamp": None}])
    assert_clean(caplog.text)
    assert "[REDACTED:openai_key]" in caplog.text
    [row] = await units(engine, bank)
    assert row["fact_type"] == "raw"
    assert_clean(await stored_text(db, bank))
