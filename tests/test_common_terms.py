"""The keyword arm skips a bank's known common terms unread, with the same hits as reading them."""

from __future__ import annotations

import asyncio
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
            counted = await CommonTerms(pool, CAP).refresh(bank)
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
    original = common_terms.cap
    common_terms.cap = CAP
    try:
        memory.retain_many(bank, TURNS)
        memory.recall(bank, "weekend figs")

        memory._run(common_terms.wait())  # the count runs on the memory's own loop
        assert db.blocking.fetchval("SELECT common_terms_at FROM banks WHERE bank_id = $1", bank) == len(TURNS)
        assert not common_terms.due(len(TURNS), len(TURNS))  # counted: not again until the bank grows by half
        assert common_terms.due(27, len(TURNS)) and not common_terms.due(CAP - 1, None)
    finally:
        common_terms.cap = original
