"""Export a bank as JSON lines, and import such a file into a bank: a round trip keeps everything recall and
learning read (memories with ids, times, metadata, tags, entities, links; observations with their evidence and
history; mental models and their versions; update histories).

The file: a header line, then one record per line, `{"record": <kind>, ...}`, in dependency order
(memwrap/store/bank_transfer.py lists the kinds and their fields). Vectors travel by default: the embedding
model's output depends slightly on the other texts in its batch, so only the stored vectors give back exactly the
same recall. Without them (include_embeddings=False: a file a quarter the size, or one for another model) import
embeds the memories again from the same text retain embeds (embed/unit_text.py).

Import reads the whole file before writing anything and writes it in one transaction: a bad line stores nothing.
Ids are kept and present rows are skipped, so importing a file twice is the same as importing it once.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterable, AsyncIterator, Callable, Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any
from uuid import UUID

import numpy as np

from memwrap import tracing, validate
from memwrap.engine.banks import ids as bank_ids
from memwrap.engine.embed.unit_text import context_of, embedding_text
from memwrap.engine.language.text import search_text
from memwrap.errors import BankNotFoundError, InvalidInputError, MemoryNotFoundError
from memwrap.models import ImportReport
from memwrap.store import bank_transfer as sql

if TYPE_CHECKING:
    from memwrap.engine.parts import EngineParts

FORMAT = "memwrap.bank"
FORMAT_VERSION = 1
HEADER = "header"
RECORD = "record"  # the key naming a line's kind ("kind" itself is a column of memory_links)
INSERT_BATCH = 1000
ANALYZE_AFTER = 500  # rows written into a parent table before its children's checks need fresh statistics
EMBED_BATCH = 256


async def export_lines(parts: EngineParts, bank_id: str, *, include_embeddings: bool = True) -> AsyncIterator[str]:
    """The bank as JSON lines (each ends with a newline), read from one snapshot."""
    bank_id = validate.bank_id(bank_id)
    pool = parts.pool
    with tracing.span("export", bank_id=bank_id, embeddings=include_embeddings) as current:
        async with pool.acquire() as conn, conn.transaction(isolation="repeatable_read", readonly=True):
            bank = await conn.fetchrow("SELECT config, created_at FROM banks WHERE bank_id = $1", bank_id)
            if bank is None:
                raise BankNotFoundError(f"No bank {bank_id!r} to export.")
            counts = {
                t.kind: await conn.fetchval(f"SELECT count(*) FROM {t.table} WHERE bank_id = $1", bank_id)
                for t in sql.TABLES
            }
            yield _line(
                {
                    RECORD: HEADER,
                    "format": FORMAT,
                    "version": FORMAT_VERSION,
                    "bank_id": bank_id,
                    "exported_at": datetime.now(UTC).isoformat(),
                    "config": dict(bank["config"] or {}),
                    "created_at": bank["created_at"].isoformat(),
                    "embedding_model": parts.settings.embedding_space,
                    "embedding_dim": parts.embedder.dim if include_embeddings else None,
                    "counts": counts,
                }
            )
            for table in sql.TABLES:
                async for record in sql.records(conn, table, bank_id, with_embeddings=include_embeddings):
                    yield _line({RECORD: table.kind, **record})
        tracing.set_attributes(current, memories=counts["memory"])


def _line(record: dict[str, Any]) -> str:
    return json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n"


Progress = Callable[[str, int, int], None]  # (phase, done, total): "read" lines, then "write" rows


async def import_lines(
    parts: EngineParts,
    bank_id: str,
    lines: AsyncIterable[str | bytes] | Iterable[str | bytes],
    *,
    progress: Progress | None = None,
) -> ImportReport:
    bank_id = validate.bank_id(bank_id)
    await bank_ids.admit(parts.pool, bank_id)
    with tracing.span("import", bank_id=bank_id) as current:
        header, grouped = await _read(lines, max_metadata_bytes=parts.settings.max_metadata_bytes, progress=progress)
        report = ImportReport(bank_id=bank_id, read={kind: len(rows) for kind, rows in grouped.items()})
        memories = grouped.get(sql.MEMORIES.kind, [])
        pool = parts.pool
        # What the bank holds already (a file imported again) is neither embedded nor sent: looked up first,
        # outside the write's transaction (a hint; ON CONFLICT in the write decides).
        held = await _held_memories(pool, bank_id, memories)
        report.embedded = await _add_vectors(parts, header, memories, held)
        if memories:
            grouped[sql.MEMORIES.kind] = [m for m in memories if str(m["id"]) not in held]
        # The vector index stays up: it is every bank's, so dropping it would make every other bank's semantic
        # search an exact scan for the load, and a build over the whole table would make an import's time depend
        # on the store's size, not on the file's.
        pending = await _write(pool, bank_id, header, grouped, report, progress)
        if memories and sql.MEMORIES.kind not in report.written:
            report.written[sql.MEMORIES.kind] = 0
        parts.planner_stats.note_writes(bank_id, report.written.get(sql.MEMORIES.kind, 0))
        await parts.learning().after_retain(bank_id, pending)
        tracing.set_attributes(current, memories=report.written.get(sql.MEMORIES.kind, 0), embedded=report.embedded)
        return report


async def _held_memories(pool: Any, bank_id: str, memories: list[dict[str, Any]]) -> set[str]:
    """The ids (as text) of the file's memories the bank holds already."""
    ids = sorted({u for u in (_uuid(m.get("id")) for m in memories) if u is not None})
    if not ids:
        return set()
    async with pool.acquire() as conn:
        return {str(k) for k in await sql.present_keys(conn, bank_id, "memory_units", "id", ids)}


async def _write(
    pool: Any,
    bank_id: str,
    header: dict[str, Any],
    grouped: dict[str, list[dict[str, Any]]],
    report: ImportReport,
    progress: Progress | None,
) -> int:
    """Every table's rows in one transaction, parents first; returns the facts still waiting for consolidation."""
    total = sum(len(grouped.get(t.kind, [])) for t in sql.TABLES)
    done = 0
    async with pool.acquire() as conn, conn.transaction():
        await conn.execute(
            "INSERT INTO banks (bank_id, config) VALUES ($1, $2::jsonb) ON CONFLICT (bank_id) DO NOTHING",
            bank_id,
            header.get("config") or {},
        )
        entity_map: dict[str, str] = {}
        for table in sql.TABLES:
            rows = grouped.get(table.kind, [])
            if table.entity_columns:
                rows = [
                    {**r, **{c: entity_map.get(str(r.get(c)), r.get(c)) for c in table.entity_columns}} for r in rows
                ]
            kept = await _with_parents(conn, bank_id, table, rows)
            written = 0
            for start in range(0, len(kept), INSERT_BATCH):
                status = await conn.execute(
                    sql.insert_sql(table), bank_id, *sql.arguments(table, kept[start : start + INSERT_BATCH])
                )
                written += int(status.split()[-1])
                if progress is not None:
                    progress("write", done + min(len(rows), start + INSERT_BATCH), total)
            done += len(rows)
            if rows:
                report.written[table.kind] = written
            if written >= ANALYZE_AFTER and table.table in _PARENTS:
                # The children's foreign-key checks are planned from statistics that do not know this bank's new
                # rows: a bank of "1 row" is read through (bank_id, seq) and filtered, once per child row, which
                # made 40k entity links of a 10k import take minutes. ANALYZE in the transaction counts them.
                await conn.execute(f"ANALYZE {table.table} (bank_id)")
            if table is sql.ENTITIES and rows:
                # The bank may already name an entity of that key with another id: links follow the bank's.
                ours = await sql.entity_ids_by_key(conn, bank_id, sorted({str(r.get("name_key")) for r in rows}))
                entity_map = {str(r.get("id")): str(ours[r["name_key"]]) for r in rows if r.get("name_key") in ours}
        return await sql.finish_import(conn, bank_id)


_PARENTS = {parent for table in sql.TABLES for _, parent, _ in table.parents}


async def _with_parents(conn: Any, bank_id: str, table: sql.Table, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows whose every parent is in the bank (written just before, or there already); the others are
    skipped, not an error (a link to a memory the export did not carry). One look-up per parent column."""
    for column, parent, key in table.parents:
        wanted = {str(r.get(column)): _uuid(r.get(column)) for r in rows}
        ids = sorted({u for u in wanted.values() if u is not None})
        present = {str(k) for k in await sql.present_keys(conn, bank_id, parent, key, ids)}
        rows = [r for r in rows if str(wanted[str(r.get(column))]) in present]
    return rows


def _uuid(value: Any) -> UUID | None:
    try:
        return UUID(str(value))
    except ValueError:
        return None


async def _read(
    lines: AsyncIterable[str | bytes] | Iterable[str | bytes],
    *,
    max_metadata_bytes: int | None = None,
    progress: Progress | None = None,
) -> tuple[dict[str, Any], dict[str, list[dict[str, Any]]]]:
    """The header and the records by kind, every line checked before anything is written."""
    header: dict[str, Any] | None = None
    grouped: dict[str, list[dict[str, Any]]] = {}
    number = 0
    async for raw in _iterate(lines):
        number += 1
        if progress is not None and number % 1000 == 0:
            progress("read", number, 0)
        text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
        if not text.strip():
            continue
        record = validate.json_document(text, what=f"Import line {number}")
        if not isinstance(record, dict) or not isinstance(record.get(RECORD), str):
            raise InvalidInputError(f'Import line {number} is not a record: an object with a "{RECORD}" is expected.')
        kind = record.pop(RECORD)
        if header is None:
            if kind != HEADER or record.get("format") != FORMAT:
                raise InvalidInputError(
                    f"Import line {number} is not a memwrap bank export header (export_bank writes one first)."
                )
            if record.get("version") != FORMAT_VERSION:
                raise InvalidInputError(
                    f"This export is format version {record.get('version')!r}; this memwrap reads version "
                    f"{FORMAT_VERSION}."
                )
            header = record
            continue
        if kind not in sql.BY_KIND:
            raise InvalidInputError(f"Import line {number} has an unknown kind {kind!r}.")
        if kind == sql.MEMORIES.kind:
            _check_memory(record, number, max_metadata_bytes)
        grouped.setdefault(kind, []).append(record)
    if header is None:
        raise InvalidInputError("Nothing to import: the file is empty.")
    return header, grouped


def _check_memory(record: dict[str, Any], number: int, max_metadata_bytes: int | None) -> None:
    for name in ("id", "text", "fact_type", "item_hash", "mentioned_at"):
        if record.get(name) in (None, ""):
            raise InvalidInputError(f"Import line {number}: a memory needs {name!r}.")
    try:
        validate.memory_id(record["id"])
        validate.text_field(
            record["text"], what=f"the memory text on line {number}", max_chars=validate.MAX_CONTENT_CHARS
        )
        validate.metadata(
            record.get("metadata") or {}, what=f"the metadata on line {number}", max_bytes=max_metadata_bytes
        )
    except (InvalidInputError, MemoryNotFoundError) as exc:  # a malformed id is "not found" to get()
        raise InvalidInputError(f"Import line {number}: {exc}") from None


async def _iterate(lines: AsyncIterable[str | bytes] | Iterable[str | bytes]) -> AsyncIterator[str | bytes]:
    if isinstance(lines, AsyncIterable):
        async for line in lines:
            yield line
    else:
        for line in lines:
            yield line


async def _add_vectors(
    parts: EngineParts, header: dict[str, Any], memories: list[dict[str, Any]], held: set[str]
) -> int:
    """Each new memory's search text, and its vector: the file's when it was made by this model at this size, else
    computed here from the text retain would embed. A memory the bank holds (`held`) gets neither. Returns how
    many were embedded."""

    same_model = header.get("embedding_model") == parts.settings.embedding_space
    dim = parts.embedder.dim
    previous: dict[str, str | None] = {}
    missing: list[tuple[dict[str, Any], str]] = []
    for record in memories:
        session = record.get("session_key")
        context = previous.get(session) if record.get("fact_type") == "raw" and session else None
        if session:  # every memory of the file, held or not, is the context of the next one in its session
            previous[session] = context_of(record["text"], record.get("turn_parts"))
        if str(record["id"]) in held:
            continue
        record["search_text"] = search_text(record["text"])
        vector = _vector(record.get("embedding"), dim) if same_model else None
        if vector is not None:
            record["embedding"] = vector
            continue
        missing.append((record, embedding_text(record["text"], context, chunk=record.get("turn_parts") is not None)))
    for start in range(0, len(missing), EMBED_BATCH):
        batch = missing[start : start + EMBED_BATCH]
        vectors = await parts.embedder.embed([text for _, text in batch])
        for (record, _), vector in zip(batch, vectors, strict=True):
            record["embedding"] = np.asarray(vector, dtype=np.float32)
    return len(missing)


def _vector(value: Any, dim: int) -> np.ndarray | None:
    """The file's vector as float32, or None when it cannot be one of this model's (absent, another size, not
    all finite numbers): such a memory is embedded again."""
    if not isinstance(value, list) or len(value) != dim:
        return None
    try:  # one C pass: a string, a null or a huge integer shows in the dtype, a nested list raises
        vector = np.array(value)
    except (ValueError, TypeError, OverflowError):
        return None
    if vector.dtype.kind not in "fi" or vector.shape != (dim,) or not bool(np.isfinite(vector).all()):
        return None
    return vector.astype(np.float32)


async def write_lines(path: Path, lines: AsyncIterator[str]) -> int:
    """Write `lines` to `path` through a temporary file renamed at the end (a failed export leaves no half file)."""
    temp = path.with_name(f".{path.name}.{os.getpid()}.part")
    count = 0
    try:
        with temp.open("w", encoding="utf-8") as out:
            async for line in lines:
                out.write(line)
                count += 1
        os.replace(temp, path)
    finally:
        temp.unlink(missing_ok=True)
    return count


def read_lines(path: Path) -> Iterator[str]:
    if not path.is_file():
        raise InvalidInputError(f"No export file at {path}.")
    with path.open("rb") as lines:
        for number, line in enumerate(lines, start=1):
            try:
                yield line.decode("utf-8")
            except UnicodeDecodeError:
                raise InvalidInputError(
                    f"Import line {number} is not UTF-8 text: is this an export_bank file?"
                ) from None
