"""A mem0 export (what mem0's `Memory.get_all()` or the platform's export returns) as memories to import.

    {"results": [{"id": "3c90…", "memory": "Likes hiking", "hash": "…", "metadata": {…}, "created_at":
                  "2024-07-20T01:23:45-07:00", "updated_at": …, "user_id": "alice", "agent_id": …, "run_id": …}]}

(older mem0 versions return the bare list; both are read). The scoping maps as the README's "Scoping" section
says: one mem0 user is one bank (the caller picks it; `user_id` is kept in metadata), `agent_id` becomes the tag
`agent:<id>` and a metadata key, `run_id` the session (document id `<run_id>:<mem0 id>`, so
`filters={"session_ids": [run_id]}` finds a run) and a metadata key. mem0's id is kept as the memory's id (a
second import stores nothing twice), its `created_at` as when the memory was said; its hash and `updated_at` go
under `metadata["mem0"]`. mem0's memories are already extracted facts, so they come in as "world" memories.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from memwrap import validate
from memwrap.engine.transfer.memories_jsonl import ImportedMemory
from memwrap.errors import InvalidInputError

SCOPE_KEYS = ("user_id", "agent_id", "run_id", "actor_id", "role")


class Mem0Memory(BaseModel):
    """One row of a mem0 export; unknown fields (score, categories, …) are ignored."""

    model_config = ConfigDict(extra="ignore")

    id: str
    memory: str = Field(min_length=1)
    hash: str | None = None
    metadata: dict[str, Any] | None = None
    created_at: datetime | None = None
    updated_at: datetime | None = None
    user_id: str | None = None
    agent_id: str | None = None
    run_id: str | None = None
    actor_id: str | None = None
    role: str | None = None


def _aware(value: datetime | None) -> datetime | None:
    # mem0 writes zone-aware times; a naive one (hand-made exports) is read as UTC rather than refused.
    return value.replace(tzinfo=UTC) if value is not None and value.tzinfo is None else value


def _uuid(value: str) -> UUID | None:
    try:
        return UUID(value)
    except ValueError:
        return None  # not a UUID: the memory gets a new id, mem0's stays in metadata["mem0"]["id"]


def to_imported(row: Mem0Memory) -> ImportedMemory:
    metadata: dict[str, Any] = dict(row.metadata or {})
    for key in SCOPE_KEYS:  # the item's own metadata wins over a promoted key of the same name
        value = getattr(row, key)
        if value is not None:
            metadata.setdefault(key, value)
    updated_at = _aware(row.updated_at)
    provenance = {"id": row.id, "hash": row.hash, "updated_at": updated_at.isoformat() if updated_at else None}
    metadata["mem0"] = {k: v for k, v in provenance.items() if v is not None}
    return ImportedMemory(
        text=row.memory,
        id=_uuid(row.id),
        type="world",
        mentioned_at=_aware(row.created_at),
        document_id=f"{row.run_id}:{row.id}" if row.run_id else None,
        metadata=metadata,
        tags=[f"agent:{row.agent_id}"] if row.agent_id else [],
    )


def read_mem0(data: Any, *, source: str = "mem0 export") -> list[ImportedMemory]:
    """The memories of a parsed mem0 export (`{"results": [...]}` or a list); an error names the bad row."""
    rows = data.get("results") if isinstance(data, dict) else data
    if not isinstance(rows, list):
        raise InvalidInputError(
            f'{source}: not a mem0 export: expected {{"results": [...]}} (mem0\'s get_all) or a list of memories.'
        )
    out: list[ImportedMemory] = []
    for number, row in enumerate(rows, start=1):
        try:
            out.append(to_imported(Mem0Memory.model_validate(row)))
        except ValidationError as exc:
            raise InvalidInputError(
                f"{source}, memory {number}: not a mem0 memory ({exc}). Nothing was imported."
            ) from exc
    return out


def read_mem0_file(path: str | Path) -> list[ImportedMemory]:
    """A mem0 export file (JSON), checked whole before anything is imported."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, ValueError) as exc:
        raise InvalidInputError(f"{path}: cannot read it as JSON ({exc}).") from exc
    data = validate.json_document(text, what=str(path))  # not JSON, or nested too deeply
    return read_mem0(data, source=str(path))
