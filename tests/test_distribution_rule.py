"""The distribution rule: the schema and every query fit a database sharded by bank (Citus, `bank_id` as the
distribution column; docs/operations.md, *Past one machine: Citus*).

1. The migrations: every primary key and unique constraint of a bank-scoped table leads with bank_id, every
   foreign key between them carries it, and every index leads with it except the few named below (with why).
2. The SQL the engine runs: the verbs are run for real (retain, recall, list/get, delete, learning without an
   LLM, import, delete_bank) with a query logger on every pooled connection; each statement that touches a
   bank-scoped table is planned (EXPLAIN GENERIC_PLAN) and every scan of such a table must be bounded by
   bank_id, every INSERT must name it. Cross-bank statements are allowed only where named below.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from memwrap import Memory
from memwrap.config import load_settings
from memwrap.engine.transfer.import_memories import CREATE_STAGING
from memwrap.store import db
from memwrap.store.db import migrations_folder

# Tables that are not distributed by bank: bookkeeping of the database itself, and the job queue (claimed across
# banks with FOR UPDATE SKIP LOCKED: it stays on the coordinator; see docs/operations.md).
NOT_BANK_SCOPED = {"store_meta", "schema_migrations", "jobs", "job_runs"}

# Indexes that do not lead with bank_id, and why that is fine on a sharded database (each shard has its own).
INDEX_EXCEPTIONS = {
    "memory_units_embedding_hnsw": "a vector index takes one column; every search filters by bank (iterative scan)",
    "entities_name_trgm": "trigram GIN over names; every lookup also filters by bank_id",
    "mental_models_sources": "GIN over source ids; every lookup also filters by bank_id",
    "extraction_queue_due": "the re-extraction worker's scan for due items across banks (a multi-shard query)",
    "response_sessions_created": "the proxy's pruning of old rows across banks (a multi-shard DELETE)",
    "webhook_deliveries_finished": "the pruning of finished webhook deliveries across banks (a multi-shard DELETE)",
}

# Statements that may read or write several banks, by a fragment of their text, and why.
CROSS_BANK_STATEMENTS = {
    "FROM banks": "the bank listing (banks(), an admin listing)",
    "FROM extraction_queue": "the re-extraction worker's scan for due items across banks",
    "DELETE FROM webhook_deliveries WHERE status <> 'pending'": "pruning finished webhook deliveries, every bank",
    # The learning worker's periodic sweeps (memwrap/engine/learn): each joins its tables on bank_id, so a
    # sharded database runs them shard by shard (co-located multi-shard statements), never across banks' rows.
    "UPDATE learn_progress p SET watermark = s.low - 1": "consolidation's watermark repair, every bank at once",
    "SELECT 'refresh_mental_model', mm.bank_id": "the scheduler queueing due mental-model refreshes",
    "SELECT o.bank_id, o.id FROM observations o WHERE o.evidence_count": "reconciliation of evidence counts",
    # Building the one vector index (memwrap/store/vector_index.py): once per build, never per request.
    "SELECT EXISTS (SELECT 1 FROM memory_units)": "whether a missing vector index is worth a warning",
    "SELECT count(*) FROM memory_units WHERE embedding IS NOT NULL": "sizing the vector index build's memory",
    # The change-cue backfill at start (memwrap/engine/change_cues.py): which banks hold memories whose cue is
    # unknown, from a partial index that is empty once they are filled; the filling itself goes bank by bank.
    "SELECT DISTINCT bank_id FROM memory_units WHERE change_cue IS NULL": "the change-cue backfill's banks to fill",
}

_CREATE_TABLE = re.compile(r"CREATE TABLE(?: IF NOT EXISTS)?\s+(\w+)\s*\((.*?)\n\);", re.S | re.I)
_CREATE_INDEX = re.compile(
    r"CREATE\s+(UNIQUE\s+)?INDEX(?: IF NOT EXISTS)?\s+(\w+)"
    r"\s+ON\s+(\w+)(?:\s+USING\s+\w+)?\s*\((.*?)\)\s*(?:WITH|WHERE|;)",
    re.S | re.I,
)


def _schema() -> tuple[dict[str, str], list[tuple[bool, str, str, str]]]:
    tables: dict[str, str] = {}
    indexes: list[tuple[bool, str, str, str]] = []
    for path in sorted(migrations_folder().glob("*.sql")):
        sql = re.sub(r"--[^\n]*", "", path.read_text(encoding="utf-8"))
        tables.update({name: body for name, body in _CREATE_TABLE.findall(sql)})
        indexes += [(bool(unique), name, table, cols) for unique, name, table, cols in _CREATE_INDEX.findall(sql)]
    return tables, indexes


def bank_scoped_tables() -> set[str]:
    tables, _ = _schema()
    return {name for name in tables if name not in NOT_BANK_SCOPED}


def _first_column(columns: str) -> str:
    return columns.strip().split(",")[0].split()[0].strip("()")


def schema_problems() -> list[str]:
    tables, indexes = _schema()
    problems = []
    for name, body in tables.items():
        if name in NOT_BANK_SCOPED:
            continue
        if not re.search(r"^\s*bank_id\s", body, re.M):
            problems.append(f"{name} has no bank_id column")
            continue
        inline_key = re.search(r"^\s*(\w+)\s[^\n]*PRIMARY KEY", body, re.M)
        if inline_key and inline_key.group(1) != "bank_id":
            problems.append(f"{name}: primary key on {inline_key.group(1)}")
        for kind, columns in re.findall(r"(PRIMARY KEY|UNIQUE)\s*\(([^)]*)\)", body):
            if _first_column(columns) != "bank_id":
                problems.append(f"{name}: {kind} ({columns}) does not lead with bank_id")
        for columns, target in re.findall(r"FOREIGN KEY\s*\(([^)]*)\)\s*REFERENCES\s+(\w+)", body):
            if _first_column(columns) != "bank_id":
                problems.append(f"{name}: foreign key ({columns}) -> {target} does not carry bank_id first")
        for column, target in re.findall(r"^\s*(\w+)\s[^\n]*REFERENCES\s+(\w+)", body, re.M):
            if column.upper() in ("FOREIGN", "PRIMARY", "UNIQUE"):
                continue
            if column != "bank_id" and target in tables and target not in NOT_BANK_SCOPED:
                problems.append(f"{name}.{column} references {target} without bank_id")
    for unique, name, table, columns in indexes:
        if table in NOT_BANK_SCOPED or name in INDEX_EXCEPTIONS:
            continue
        if _first_column(columns) != "bank_id":
            problems.append(
                f"{'unique ' if unique else ''}index {name} on {table} ({columns}) does not lead with bank_id"
            )
    return problems


def test_every_key_and_index_leads_with_bank_id() -> None:
    assert bank_scoped_tables() >= {"memory_units", "entities", "observations", "mental_models", "banks"}
    assert schema_problems() == []
    _, indexes = _schema()
    assert set(INDEX_EXCEPTIONS) <= {name for _, name, _, _ in indexes}  # no stale exception


def test_the_schema_checker_notices_a_key_without_bank_id(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    bad = tmp_path / "migrations"
    bad.mkdir()
    (bad / "0001_bad.sql").write_text(
        "CREATE TABLE notes (\n    bank_id text NOT NULL,\n    id uuid NOT NULL,\n    PRIMARY KEY (id, bank_id)\n);\n"
        "CREATE INDEX notes_id ON notes (id);\n"
    )
    monkeypatch.setattr(f"{__name__}.migrations_folder", lambda: bad)
    assert len(schema_problems()) == 2


# --- the statements the engine runs -------------------------------------------------------------------------


@pytest.fixture
def statements(fresh_home: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Memory, list[str]]]:
    """A Memory whose every pooled connection logs the statements it runs. On a database of its own: the plans
    checked depend on the tables' statistics, and the run's shared database holds whatever the modules a worker
    happened to run before left in it (under xdist that differs from run to run; a Seq Scan on unit_entities was
    chosen once in three runs there)."""
    seen: list[str] = []
    original = db._init_connection

    async def logged(conn: Any) -> None:
        await original(conn)
        conn.add_query_logger(lambda record: seen.append(record.query))

    monkeypatch.setattr(db, "_init_connection", logged)
    settings = load_settings(
        home=fresh_home,
        worker="inline",
        worker_poll_seconds=0.05,
        consolidation_delay_seconds=0.0,
        mental_model_refresh_delay_seconds=0.05,
    )
    with Memory(settings=settings) as memory:
        yield memory, seen


def _run_the_verbs(memory: Memory, bank: str) -> None:
    now = datetime(2024, 6, 1, tzinfo=UTC)
    ids = memory.retain_many(
        bank,
        [
            {
                "content": "Alice: I ran the river 10k with Bob last Sunday.",
                "document_id": "S1:1",
                "timestamp": now,
                "tags": ["running"],
            },
            {
                "content": "Bob: Alice was faster than me, she trains every morning.",
                "document_id": "S1:2",
                "timestamp": now,
            },
            {
                "content": "Alice: Next month I will run a half marathon in Lisbon.",
                "document_id": "S2:1",
                "timestamp": now,
            },
        ],
    )
    memory.retain(bank, "Alice runs every morning before work.", timestamp=now)
    memory.import_memories(bank, [{"text": "Carmen adopted a rescue dog named Pepper.", "document_id": "S3:1"}])
    memory.recall(bank, "What does Alice do in the mornings?", now=now, neighbours=True)
    memory.recall(bank, "What happened last Sunday?", now=now, tags=["running"], types=["raw"])
    memory.recall(bank, "Alice", now=now, prefer_observations=True)
    memory.list(bank, tags=["running"])
    memory.list(bank, document_id="S1:1")
    memory.get(bank, ids[0])
    memory.consolidate(bank)
    memory.wait_for_jobs(bank, timeout=60)
    for observation in memory.observations(bank):
        memory.get_observation(bank, observation.id)
        memory.observation_history(bank, observation.id)
    memory.create_mental_model(bank, "running", "How does Alice train?")
    memory.wait_for_jobs(bank, timeout=60)
    memory.get_mental_model(bank, "running")
    memory.mental_models(bank)
    memory.mental_model_history(bank, "running")
    memory.invalidate(bank, ids[1], reason="test")
    memory.restore(bank, ids[1])
    memory.configure_bank(bank, defense_policy="block")
    memory.bank_config(bank)
    memory.delete(bank, ids[2])
    memory.wait_for_jobs(bank, timeout=60)
    memory.banks()
    memory.delete_bank(bank)


def _scans(plan: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield plan
    for child in plan.get("Plans", []):
        yield from _scans(child)


def _bounded(node: dict[str, Any]) -> bool:
    conditions = " ".join(str(node.get(k, "")) for k in ("Index Cond", "Filter", "Recheck Cond", "Join Filter"))
    conditions += " ".join(str(c.get("Index Cond", "")) for c in node.get("Plans", []) if "Bitmap" in c["Node Type"])
    return "bank_id" in conditions


async def _generic_plan(pool: Any, sql: str) -> Any:
    # EXPLAIN GENERIC_PLAN takes $1-style placeholders, but only when nothing binds them: run it from PL/pgSQL.
    async with pool.acquire() as conn:
        await conn.execute(
            "CREATE OR REPLACE FUNCTION pg_temp.generic_plan(q text) RETURNS json LANGUAGE plpgsql AS $$"
            " DECLARE r json; BEGIN EXECUTE 'EXPLAIN (GENERIC_PLAN, FORMAT JSON) ' || q INTO r; RETURN r; END $$"
        )
        await conn.execute(CREATE_STAGING.format(dim=384))  # the import's temporary table, on this session
        return json.loads(await conn.fetchval("SELECT pg_temp.generic_plan($1)", sql))


def statement_problems(memory: Memory, seen: list[str]) -> list[str]:
    tables = bank_scoped_tables()
    engine = memory._run(memory.aio._get_engine())
    problems = []
    for sql in dict.fromkeys(seen):
        words = set(re.findall(r"\w+", sql.lower()))
        touched = tables & words
        head = sql.lstrip().split(None, 1)[0].upper() if sql.strip() else ""
        if not touched or head not in ("SELECT", "WITH", "INSERT", "UPDATE", "DELETE"):
            continue
        if any(fragment in " ".join(sql.split()) for fragment in CROSS_BANK_STATEMENTS):
            continue
        plan = memory._run(_generic_plan(engine.store.pool, sql))
        for node in _scans(plan[0]["Plan"]):
            relation = node.get("Relation Name")
            if relation not in tables:
                continue
            if node["Node Type"] == "ModifyTable":
                if node.get("Operation") == "Insert" and "bank_id" not in sql.split("VALUES")[0].split("SELECT")[0]:
                    problems.append(f"INSERT into {relation} without bank_id: {sql.strip()[:200]}")
                continue
            if "Scan" in node["Node Type"] and not _bounded(node):
                problems.append(
                    f"{node['Node Type']} on {relation} not bounded by bank_id: {' '.join(sql.split())[:300]}"
                )
    return problems


def test_every_statement_is_bounded_by_bank(statements: tuple[Memory, list[str]], bank: str) -> None:
    memory, seen = statements
    _run_the_verbs(memory, bank)
    assert len({s for s in seen if "memory_units" in s}) > 10  # the verbs really ran through the logger
    assert statement_problems(memory, seen) == []


def test_the_statement_checker_notices_a_cross_bank_scan(statements: tuple[Memory, list[str]]) -> None:
    memory, _ = statements
    found = statement_problems(memory, ["SELECT id FROM memory_units WHERE text = $1"])
    assert len(found) == 1 and "memory_units" in found[0]
