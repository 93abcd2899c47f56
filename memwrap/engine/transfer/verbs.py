"""The engine's verbs that move a bank's memories in bulk: import_memories, export/import of a bank, reembed.

`Engine` inherits them (engine/engine.py); each delegates to a module of engine/transfer/ (or engine/embed/reembed.py).
Kept apart so the engine module stays about retain and recall.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memwrap import validate
from memwrap.engine.banks import ids as bank_ids
from memwrap.engine.embed.reembed import reembed_store
from memwrap.engine.transfer.bank_stream import export_lines, import_lines, read_lines, write_lines
from memwrap.engine.transfer.import_memories import IMPORT_BATCH, BulkLoadReport, batches, import_batch
from memwrap.engine.transfer.memories_jsonl import read_jsonl_file
from memwrap.models import ImportReport
from memwrap.store.vector_index import index_down

if TYPE_CHECKING:
    from memwrap.config import Settings
    from memwrap.engine.embed.embedder import Embedder
    from memwrap.engine.learn.service import Learning
    from memwrap.engine.parts import EngineParts
    from memwrap.engine.retain.pipeline import Retainer
    from memwrap.store.db import Store


class TransferVerbs:
    store: Store
    embedder: Embedder
    settings: Settings
    parts: EngineParts
    retainer: Retainer
    learning: Learning

    async def defense_policy(self, bank_id: str) -> str:  # Engine.defense_policy
        raise NotImplementedError

    async def import_memories(
        self,
        bank_id: str,
        memories: str | Path | Iterable[Any] | AsyncIterable[Any],
        *,
        batch_size: int = IMPORT_BATCH,
        rebuild_vector_index: bool = False,
    ) -> int:
        """Write memories (a JSONL file, or ImportedMemory or their dicts; engine/transfer/memories_jsonl.py) with
        COPY, a batch per transaction; rows with an `embedding` are not embedded again. Returns how many were new.
        `rebuild_vector_index`: drop the vector index for the load and build it once at the end
        (memwrap/store/vector_index.py)."""
        bank_id = validate.bank_id(bank_id)
        await bank_ids.admit(self.store.pool, bank_id)
        if isinstance(memories, str | Path):
            memories = read_jsonl_file(memories)
        if not 1 <= batch_size <= 100_000:
            raise validate.InvalidInputError("import_memories takes 1 <= batch_size <= 100000.")
        policy = await self.defense_policy(bank_id)
        report = BulkLoadReport()
        if rebuild_vector_index:
            async with index_down(self.store.pool, memory_cap=self.store.index_memory_cap):
                await self._import_batches(bank_id, memories, batch_size, policy, report)
        else:
            await self._import_batches(bank_id, memories, batch_size, policy, report)
        await self.learning.after_retain(bank_id, report.imported)
        return report.imported

    async def _import_batches(
        self,
        bank_id: str,
        memories: Iterable[Any] | AsyncIterable[Any],
        batch_size: int,
        policy: str,
        report: BulkLoadReport,
    ) -> None:
        async for batch in batches(memories, batch_size):
            async with self.store.pool.acquire() as conn:
                written = await import_batch(
                    conn,
                    bank_id,
                    batch,
                    dim=self.embedder.dim,
                    embed=self.embedder.embed,
                    defense_policy=policy,
                    report=report,
                    legacy_key=await self.retainer.legacy_item_key(),
                    max_metadata_bytes=self.settings.max_metadata_bytes,
                )
            self.store.planner_stats.note_writes(bank_id, len(written))

    async def reembed(self, *, batch_size: int = 256) -> int:
        """Re-embed every memory with the configured model, in place (memwrap/engine/embed/reembed.py)."""
        return await reembed_store(self.store, self.embedder, self.settings.embedding_space, batch_size=batch_size)

    def export_stream(self, bank_id: str, *, include_embeddings: bool = True) -> AsyncIterator[str]:
        """The bank as JSON lines (memwrap/engine/transfer/bank_stream.py): memories with their times, metadata, tags,
        entities and links, observations, mental models, histories; vectors too with include_embeddings."""
        return export_lines(self.parts, bank_id, include_embeddings=include_embeddings)

    async def import_stream(
        self, bank_id: str, lines: AsyncIterable[str | bytes] | Iterable[str | bytes]
    ) -> ImportReport:
        """Load an export stream into `bank_id` (created if needed). Ids are kept; rows already present are
        skipped, so importing twice changes nothing. Vectors of the configured model's size are used as they are."""
        return await import_lines(self.parts, bank_id, lines)

    async def export_bank(self, bank_id: str, path: str | Path, *, include_embeddings: bool = True) -> int:
        """The declared export_bank: the stream written to `path` (complete or not at all: a temporary file is
        renamed at the end). Returns the number of lines."""
        return await write_lines(Path(path), self.export_stream(bank_id, include_embeddings=include_embeddings))

    async def import_bank(self, bank_id: str, path: str | Path) -> ImportReport:
        return await self.import_stream(bank_id, read_lines(Path(path)))
