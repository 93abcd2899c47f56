"""Which facts consolidation has still to read, as one SQL condition: its own query (learn/consolidate.py PENDING)
and the bank's counts (`bank_stats.facts_to_consolidate`, views/queries.py) are built from it, so they cannot drift."""

from __future__ import annotations


def pending_facts(bank_id: str, watermark: str) -> str:
    """The WHERE condition over `memory_units m`: the bank's facts past its consolidation watermark (`seq`), not
    observations, not invalidated, that no learning step has marked yet (`unit_learning`). `bank_id` and
    `watermark` are SQL expressions (a parameter such as "$1", or a subquery)."""
    return (
        f"m.bank_id = {bank_id} AND m.seq > {watermark} AND m.fact_type <> 'observation' AND m.invalidated_at IS NULL\n"
        "  AND NOT EXISTS (SELECT 1 FROM unit_learning l WHERE l.bank_id = m.bank_id AND l.unit_id = m.id)"
    )
