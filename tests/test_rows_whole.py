"""A memory's row is kept whole: its embedding beside its text, not in PostgreSQL's side table for large values
(schema v24, issue 36). Rows of long technical messages pass PostgreSQL's default 2 kB threshold; with their
embeddings out of line, every exact nearest-memory scan read each of them two or three times over."""

from __future__ import annotations

from database import Database

from memwrap import Memory

LONG_ANSWER = (
    "The exporter raised KeyError('record') because `export_rows()` in src/exporter/rows.py read the record before "
    "checking that the batch was empty; the fix moves the check into `BatchReader.__iter__` and adds a test with "
    "an empty batch. Benchmarks after the change: p50 212 ms, p95 388 ms on the 40k-row fixture. "
)


def _toast_chunks(db: Database) -> int:
    toast = db.blocking.fetchval(
        "SELECT reltoastrelid::regclass::text FROM pg_class WHERE oid = 'memory_units'::regclass"
    )
    return int(db.blocking.fetchval(f"SELECT count(*) FROM {toast}"))


def test_the_table_keeps_embeddings_in_the_row(memory: Memory, db: Database) -> None:
    memory._run(memory.aio._get_engine())  # the schema is created at start
    options = db.blocking.fetchval("SELECT reloptions FROM pg_class WHERE oid = 'memory_units'::regclass")
    assert "toast_tuple_target=8160" in options
    storage = db.blocking.fetchval(
        "SELECT attstorage::text FROM pg_attribute WHERE attrelid = 'memory_units'::regclass AND attname = 'embedding'"
    )
    assert storage == "m"  # MAIN: inline, compressed only as a last resort


def test_long_messages_are_stored_without_out_of_line_values(memory: Memory, db: Database, bank: str) -> None:
    texts = [f"Session {i}: {LONG_ANSWER * 4}" for i in range(12)]
    before = _toast_chunks(db)
    memory.retain_many(bank, [{"content": text, "document_id": f"answer-{i}"} for i, text in enumerate(texts)])
    sizes = db.blocking.fetch("SELECT pg_column_size(m.*) AS row_bytes FROM memory_units m WHERE bank_id = $1", bank)
    assert sizes and min(r["row_bytes"] for r in sizes) > 2100  # past PostgreSQL's default threshold (2,032)
    assert _toast_chunks(db) == before
