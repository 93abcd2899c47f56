"""The keyword arm skips a bank's known common terms unread, with the same hits as reading them; frequent terms
under the cap are read within a budget and score what the rarer terms found."""

from __future__ import annotations

import asyncio
import re
from typing import Any

import pytest
from database import Database

from memwrap import Memory
from memwrap.engine.language.text import search_text
from memwrap.engine.recall import arms
from memwrap.engine.recall.arms import Filters
from memwrap.engine.recall.common_terms import CommonTerms

CAP = 10  # stands in for TERM_SCAN_CAP: a term in 10 or more memories of the bank is common

TURNS = [f"We went hiking on the weekend, trip number {i}." for i in range(14)] + [
    "The weekend market sells fresh figs.",
    "Maya bought figs and cheese for the picnic.",
    "The cello lesson moved to Thursday.",
    "Alice finally went to the dentist.",
]
QUERIES = ["weekend", "figs at the weekend market", "who went hiking", "cello lesson Thursday", "Maya picnic"]


def engine(memory: Memory) -> Any:
    return memory._run(memory.aio._get_engine())


async def keyword_hits(pool: Any, bank: str, query: str, size: int, filters: Filters | None = None) -> list[Any]:
    async with pool.acquire() as conn:
        return await arms.keyword(conn, filters or Filters(bank), search_text(query), 60, size)


def test_known_common_terms_are_skipped_with_the_same_hits(
    memory: Memory, db: Database, bank: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(arms, "TERM_SCAN_CAP", CAP)
    memory.retain_many(bank, TURNS)
    size = len(TURNS)

    async def scenario() -> tuple[list[Any], list[Any], list[tuple[str, int]], list[Any]]:
        async with db.pool() as pool:
            before = [await keyword_hits(pool, bank, q, size) for q in QUERIES]
            counted = await CommonTerms(pool, listed_df=CAP).refresh(bank)
            assert counted is not None and counted > 0
            rows = await pool.fetch("SELECT lexeme, df FROM bank_common_terms WHERE bank_id = $1 ORDER BY lexeme", bank)
            after = [await keyword_hits(pool, bank, q, size) for q in QUERIES]
            filtered = [await keyword_hits(pool, bank, q, size, Filters(bank, ["raw"])) for q in QUERIES]
            return before, after, [(r["lexeme"], r["df"]) for r in rows], filtered

    before, after, common, filtered = asyncio.run(scenario())
    assert ("weekend", 15) in common and ("hike", 14) in common  # "figs" (2) and "cello" (1) are not common
    assert all(df >= CAP for _, df in common)
    assert after == before  # skipping them unread changes nothing: they were dropped after reading before
    assert after[0] == [] and after[2] == []  # only common terms ("weekend"; "went", "hike"): nothing to rank by
    assert after[1] and after[3] and after[4]  # rare terms ("figs", "cello", "Maya") still hit
    assert filtered == before  # under a type filter the list is not used (and the hits agree here too)


def test_recall_counts_common_terms_in_the_background_when_due(memory: Memory, db: Database, bank: str) -> None:
    eng = engine(memory)
    common_terms = eng.searcher.common_terms
    original = common_terms.count_from
    common_terms.count_from = CAP
    try:
        memory.retain_many(bank, TURNS)
        memory.recall(bank, "weekend figs")

        memory._run(common_terms.wait())  # the count runs on the memory's own loop
        assert db.blocking.fetchval("SELECT common_terms_at FROM banks WHERE bank_id = $1", bank) == len(TURNS)
        assert not common_terms.due(len(TURNS), len(TURNS))  # counted: not again until the bank grows by half
        assert common_terms.due(27, len(TURNS)) and not common_terms.due(CAP - 1, None)
    finally:
        common_terms.count_from = original


# Frequent terms: "deploy" and "server" in 13 memories each, under the cap (30) and listed (6 or more); "canary" in
# 4, "rollback" in 3: rare. Reading either frequent term would take 13 rows: over a budget of 10.
FREQUENT = (  # (counts in the comments are memories containing the term)
    [f"Deploy {i} went out to the staging server without trouble." for i in range(6)]
    + [f"The deploy script {i} prints its log." for i in range(3)]
    + [f"The server room {i} is cold." for i in range(3)]
    + [f"Canary {i} before the deploy caught the server error." for i in range(3)]
    + ["The canary deploy was stopped; rollback of the server took a minute."]
    + [f"A rollback note number {i}." for i in range(2)]
)


def test_frequent_terms_past_the_budget_score_without_being_read(
    memory: Memory, db: Database, bank: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(arms, "TERM_SCAN_CAP", 30)
    memory.retain_many(bank, FREQUENT)
    size = len(FREQUENT)

    async def scenario() -> dict[str, Any]:
        async with db.pool() as pool:
            question = "canary rollback of the deploy server"
            exact = await keyword_hits(pool, bank, question, size)  # nothing listed: every term read and counted
            await CommonTerms(pool, listed_df=6).refresh(bank)
            listed = dict(await pool.fetch("SELECT lexeme, df FROM bank_common_terms WHERE bank_id = $1", bank))
            monkeypatch.setattr(arms, "FREQUENT_READ_BUDGET", 10)
            async with pool.acquire() as conn:
                budgeted = await arms.keyword(conn, Filters(bank), search_text(question), 3, size)
                plan = await explain_keyword(conn, bank, question, 3, size)
                filling = await arms.keyword(conn, Filters(bank), search_text(question), 60, size)
            return {"exact": exact, "listed": listed, "budgeted": budgeted, "plan": plan, "filling": filling}

    out = asyncio.run(scenario())
    assert out["listed"]["deploy"] == 13 and out["listed"]["server"] == 13
    assert "canary" not in out["listed"] and "rollback" not in out["listed"]
    # Limit 3: the rare terms find 6 memories, room for none of the frequent terms (13 rows each > 10)...
    scans = re.findall(r" on memory_units m_\d+ \(actual rows=([\d.]+) loops=(\d+)\)", out["plan"])
    assert scans, out["plan"]
    assert sum(float(rows) * int(loops) for rows, loops in scans) == 4 + 3, out["plan"]  # canary's and rollback's
    # ...yet they still score there, with their listed counts: the same ranking as reading everything.
    assert out["budgeted"] == [hit for hit in out["exact"][:3]]
    # Limit 60: the rare terms cannot fill it, so every frequent term is read and the arm is exact.
    assert out["filling"] == out["exact"]


async def explain_keyword(conn: Any, bank: str, question: str, limit: int, size: int) -> str:
    """The keyword arm's plan as run (EXPLAIN ANALYZE), one string."""
    captured: list[str] = []

    class Explaining:
        async def fetch(self, sql: str, *args: Any) -> list[Any]:
            rows = await conn.fetch("EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, BUFFERS OFF) " + sql, *args)
            captured.extend(r[0] for r in rows)
            return []

    await arms.keyword(Explaining(), Filters(bank), search_text(question), limit, size)  # type: ignore[arg-type]
    return "\n".join(captured)


def test_filling_the_list_reads_frequent_terms_within_a_budget(
    memory: Memory, db: Database, bank: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When the rarer terms find too few memories, frequent terms are read rarest first only while fewer than
    FILL_READ_BUDGET rows have been read (issue 36: a question of common words read thousands of rows); the ones
    left unread still score the memories read."""
    monkeypatch.setattr(arms, "TERM_SCAN_CAP", 30)
    memory.retain_many(bank, FREQUENT)
    size = len(FREQUENT)

    async def scenario() -> tuple[list[Any], list[Any], str]:
        async with db.pool() as pool:
            question = "canary rollback of the deploy server"
            exact = await keyword_hits(pool, bank, question, size)
            await CommonTerms(pool, listed_df=6).refresh(bank)
            monkeypatch.setattr(arms, "FREQUENT_READ_BUDGET", 10)
            monkeypatch.setattr(arms, "FILL_READ_BUDGET", 10)
            async with pool.acquire() as conn:
                filled = await arms.keyword(conn, Filters(bank), search_text(question), 60, size)
                plan = await explain_keyword(conn, bank, question, 60, size)
            return exact, filled, plan

    exact, filled, plan = asyncio.run(scenario())
    # Limit 60: canary (4) and rollback (3) cannot fill it; "deploy" (13) starts under the budget of 10 and is read,
    # "server" (13 more) would start past it: left unread.
    scans = re.findall(r" on memory_units m_\d+ \(actual rows=([\d.]+) loops=(\d+)\)", plan)
    assert scans, plan
    assert sum(float(rows) * int(loops) for rows, loops in scans) == 4 + 3 + 13, plan
    assert len(exact) == len(FREQUENT) and len(filled) == len(FREQUENT) - 3  # "The server room …" only: not reached
    # The unread term still scores what was read: the memory matching all four terms leads, as when reading all.
    assert filled[0] == exact[0]
    assert [hit for hit, _ in filled] == [hit for hit, _ in exact if hit in {h for h, _ in filled}]
