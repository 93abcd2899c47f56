"""The graph arm's plan does not follow the database's history (issue 36).

The case: three banks in one home; the first two retained and analysed, the third retained just before its
recall, with no ANALYZE since (autovacuum off here, as it is for the minute after any bulk write). The
statistics know nothing of the third bank, so a plan built from them guesses it holds a few rows; written as
plain joins, the arm then ran nested loops over bank-wide scans (2 s instead of 20 ms). The arm's SQL leaves the
planner one shape whatever it believes: index probes that lead with bank_id, one per row of the step before.

Asserted on EXPLAIN, never on a time: no sequential scan, hash or merge join over the graph's tables, every
probe keyed by the bank, and the links read bounded by the arm's budget even through a hub entity that every
memory of the bank mentions.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from database import Database

from memwrap import Memory
from memwrap.config import load_settings
from memwrap.engine.recall import arms, details
from memwrap.engine.recall.arms import Filters

GRAPH_TABLES = ("memory_units", "unit_entities", "entities", "memory_links")
# An equality on a lookup key (a unit, an entity, a link's end, a name) from the step before.
PROBE_KEY = re.compile(r"\((?:unit_id|entity_id|id|from_id|to_id|name_key) = ")
PEOPLE = ["Maya", "Tomas", "Priya", "Jonas", "Aiko", "Lucia", "Omar", "Greta", "Ravi", "Chen"]
PARTS = ["Billing", "Gateway", "Scheduler", "Indexer", "Notifier", "Importer", "Ledger", "Renderer"]
LIBRARIES = ["Redis", "Kafka", "Celery", "Pydantic", "Uvicorn", "Alembic"]


def _turns(bank: str, count: int) -> list[dict[str, Any]]:
    """Technical turns: people, components, libraries, and one name (Postgres) in every turn: a hub."""
    start = datetime(2026, 1, 5, tzinfo=UTC)
    return [
        {
            "content": (
                f"{PEOPLE[i % len(PEOPLE)]} moved the {PARTS[(i * 3) % len(PARTS)]} service onto "
                f"{LIBRARIES[(i * 7) % len(LIBRARIES)]} with Postgres underneath; ticket OPS-{i} tracks it, "
                f"and {PEOPLE[(i + 3) % len(PEOPLE)]} reviewed the change to {PARTS[(i + 1) % len(PARTS)]}."
            ),
            "document_id": f"{bank}:{i}",
            "timestamp": start + timedelta(hours=i),
            "metadata": {"session_id": f"{bank}:s{i // 20}"},
        }
        for i in range(count)
    ]


@pytest.fixture(scope="module")
def three_banks() -> Iterator[tuple[Memory, Database]]:
    import shutil
    import tempfile

    home = Path(tempfile.mkdtemp(prefix="memwrap-test-graph-plan-"))
    try:
        with Memory(settings=load_settings(home=home)) as memory:
            memory._run(memory.aio._get_engine())  # the schema is created at start
            db = Database.of(memory)
            for table in GRAPH_TABLES:
                db.blocking.execute(f"ALTER TABLE {table} SET (autovacuum_enabled = false)")
            for bank in ("plan-a", "plan-b"):
                memory.retain_many(bank, _turns(bank, 450))
            db.blocking.execute(f"ANALYZE {', '.join(GRAPH_TABLES)}")
            # Fewer rows than the writer's own ANALYZE waits for (planner_stats.py): the third bank stays
            # unknown to the statistics, as any bank is for a while after its retain.
            memory.retain_many("plan-c", _turns("plan-c", 450))
            yield memory, db
    finally:
        shutil.rmtree(home, ignore_errors=True)


def _nodes(plan: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield plan
    for child in plan.get("Plans", []):
        yield from _nodes(child)


def _shown(plan: dict[str, Any], depth: int = 0) -> str:
    """The plan as an indented outline, for a failure's message."""
    keys = ("Relation Name", "Index Name", "Index Cond", "Filter", "Plan Rows", "Actual Rows", "Actual Loops")
    line = "  " * depth + plan["Node Type"] + " " + " ".join(f"{k}={plan[k]}" for k in keys if k in plan)
    return "\n".join([line, *(_shown(child, depth + 1) for child in plan.get("Plans", []))])


def _graph_sql(memory: Memory, query: str, keys: list[str]) -> tuple[str, list[object]]:
    engine = memory._run(memory.aio._get_engine())
    vector = memory._run(engine.embedder.embed_query(query))
    return arms.graph_query(Filters("plan-c"), vector, keys, 20, 450)


def _explain(db: Database, sql: str, args: list[object], *, analyze: bool, generic: bool) -> dict[str, Any]:
    async def run() -> dict[str, Any]:
        async with db.connect() as conn:
            if generic:
                await conn.execute("SET plan_cache_mode = force_generic_plan")
            # The statistics really are stale: the planner has never seen plan-c's rows.
            stale = await conn.fetchval(
                "SELECT coalesce(bool_and(NOT (most_common_vals::text::text[] @> ARRAY['plan-c'])), true) "
                "FROM pg_stats WHERE tablename = 'unit_entities' AND attname = 'bank_id'"
            )
            assert stale
            options = "ANALYZE, FORMAT JSON" if analyze else "FORMAT JSON"
            raw = await conn.fetchval(f"EXPLAIN ({options}) {sql}", *args)
        return json.loads(raw)[0]["Plan"]

    return asyncio.run(run())


def _assert_index_probes(plan: dict[str, Any], tables: tuple[str, ...]) -> None:
    nodes = list(_nodes(plan))
    on_tables = [n for n in nodes if n.get("Relation Name") in GRAPH_TABLES]
    assert {n["Relation Name"] for n in on_tables} == set(tables), _shown(plan)
    for node in on_tables:
        assert node["Node Type"] in {"Index Scan", "Index Only Scan", "Bitmap Heap Scan"}, _shown(plan)
    keyed = [n for n in nodes if n["Node Type"] in {"Index Scan", "Index Only Scan", "Bitmap Index Scan"}]
    assert keyed and all("bank_id" in n.get("Index Cond", "") for n in keyed), _shown(plan)
    # Each probe finds its rows by its key, not by reading the bank and filtering: the key after bank_id is
    # in the index condition, never in a filter.
    for node in keyed:
        assert not PROBE_KEY.search(node.get("Filter", "")), _shown(plan)
    joins = {n["Node Type"] for n in nodes if "Join" in n["Node Type"] or n["Node Type"] == "Nested Loop"}
    assert joins <= {"Nested Loop"}, _shown(plan)


@pytest.mark.parametrize("generic", [False, True], ids=["custom-plan", "generic-plan"])
def test_the_graph_arm_probes_indexes_by_bank_whatever_the_statistics(
    three_banks: tuple[Memory, Database], generic: bool
) -> None:
    memory, db = three_banks
    sql, args = _graph_sql(memory, "What did Maya change in the Billing service?", ["maya", "postgres"])
    _assert_index_probes(_explain(db, sql, args, analyze=False, generic=generic), GRAPH_TABLES)


@pytest.mark.parametrize("generic", [False, True], ids=["custom-plan", "generic-plan"])
def test_the_candidates_rows_are_read_by_key(three_banks: tuple[Memory, Database], generic: bool) -> None:
    """After fusion: the candidates' rows with their session neighbours, then the names of their entities."""
    memory, db = three_banks
    ids = [r["id"] for r in db.blocking.fetch("SELECT id FROM memory_units WHERE bank_id = 'plan-c' LIMIT 60")]
    where, params = Filters("plan-c").sql("m", 4)
    rows_sql = details.ROWS_AND_NEIGHBOURS.format(columns=details.COLUMNS, filters=where)
    plan = _explain(db, rows_sql, ["plan-c", ids, ids[:10], *params], analyze=False, generic=generic)
    _assert_index_probes(plan, ("memory_units", "memory_links"))
    plan = _explain(db, details.ENTITY_NAMES, ["plan-c", ids], analyze=False, generic=generic)
    _assert_index_probes(plan, ("unit_entities", "entities"))


def _links_read(plan: dict[str, Any]) -> int:
    return sum(
        n["Actual Rows"] * n["Actual Loops"]
        for n in _nodes(plan)
        if n.get("Relation Name") == "unit_entities" or n.get("Index Name", "").startswith("unit_entities")
    )


def test_the_graph_arm_reads_a_bounded_number_of_links(
    three_banks: tuple[Memory, Database], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The links the arm reads stop at its budget (the rarest entities first), however many the seeds' names
    lead to; and a hub (a name in every memory: 'postgres') is never expanded at all."""
    memory, db = three_banks
    question = "Which service did Maya and Tomas move onto Postgres?"
    # As if the bank were large: every name but the hub is then rare enough to expand.
    engine = memory._run(memory.aio._get_engine())
    vector = memory._run(engine.embedder.embed_query(question))
    bank_size = 8000  # hub limit 400 (HUB_SHARE): 'postgres', in all 450 memories, is over it

    def read(keys: list[str]) -> int:
        sql, args = arms.graph_query(Filters("plan-c"), vector, keys, 20, bank_size)
        return _links_read(_explain(db, sql, args, analyze=True, generic=False))

    unbounded = read(["maya", "tomas"])
    assert read(["maya", "tomas", "postgres"]) == unbounded  # the hub adds nothing to what is read
    monkeypatch.setattr(arms, "REACH_BUDGET", 100)
    hub_limit = int(bank_size * arms.HUB_SHARE)
    seeds_own = 5 * 8  # the seeds' own links: a turn names at most 8 things here
    bounded = read(["maya", "tomas"])
    assert bounded <= arms.REACH_BUDGET + hub_limit + seeds_own < unbounded


def _nearest_ids(memory: Memory, db: Database, question: str, count: int) -> list[Any]:
    engine = memory._run(memory.aio._get_engine())
    vector = memory._run(engine.embedder.embed_query(question))

    async def run() -> list[Any]:
        async with db.connect() as conn:
            return [memory_id for memory_id, _ in await arms.nearest(conn, Filters("plan-c"), vector, count, 450)]

    return asyncio.run(run())


@pytest.mark.parametrize("generic", [False, True], ids=["custom-plan", "generic-plan"])
def test_given_seeds_the_graph_arm_reads_no_vector(three_banks: tuple[Memory, Database], generic: bool) -> None:
    """Seeded by the semantic arm's scan (recall passes it on: arm_runs.ArmRuns._graph), the arm computes no
    distance at all, and every table is still read by index probes keyed by the bank."""
    memory, db = three_banks
    question = "What did Maya change in the Billing service?"
    seeds = _nearest_ids(memory, db, question, 20)
    engine = memory._run(memory.aio._get_engine())
    vector = memory._run(engine.embedder.embed_query(question))
    sql, args = arms.graph_query(Filters("plan-c"), vector, ["maya", "postgres"], 20, 450, seed_ids=seeds)
    assert "<=>" not in sql and not any(isinstance(arg, np.ndarray) for arg in args)
    _assert_index_probes(_explain(db, sql, args, analyze=False, generic=generic), GRAPH_TABLES)


def test_given_seeds_reach_what_the_arm_finds_alone(three_banks: tuple[Memory, Database]) -> None:
    """The same seeds, given or found: the same hits in the same order (the nearest scan's head is the graph arm's
    own seed set)."""
    memory, db = three_banks
    engine = memory._run(memory.aio._get_engine())
    for question, keys in [
        ("What did Maya change in the Billing service?", ["maya", "billing"]),
        ("Who reviewed the Ledger change on Kafka?", ["ledger", "kafka"]),
    ]:
        vector = memory._run(engine.embedder.embed_query(question))

        async def both(vector: Any = vector, keys: list[str] = keys) -> tuple[arms.Hits, arms.Hits]:
            async with db.connect() as conn:
                head = await arms.nearest(conn, Filters("plan-c"), vector, 20, 450)
                seeds = [memory_id for memory_id, _ in head][: arms.seed_count(450)]
                alone = await arms.graph(conn, Filters("plan-c"), vector, keys, 20, 450)
                given = await arms.graph(conn, Filters("plan-c"), vector, keys, 20, 450, seed_ids=seeds)
            return alone, given

        alone, given = asyncio.run(both())
        assert alone and given == alone
