"""Memories as JSON lines: one memory per line, as `import_memories` takes them (and a bank export writes them).

    {"text": "Alice: I ran the river 10k on Sunday.", "mentioned_at": "2024-05-02T09:00:00Z",
     "document_id": "S12:3", "tags": ["running"], "metadata": {"speaker": "Alice"},
     "embedding": [0.012, -0.08, ...]}

Only `text` is required. `timestamp` is accepted for `mentioned_at` (a retain item's name for it). `embedding`,
when present, must come from the bank's configured embedding model (its dimension is checked): it is written as
it is, which is what makes an import of a million memories a matter of minutes rather than hours of embedding.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any, Literal
from uuid import UUID

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, ValidationError

from memwrap import validate
from memwrap.errors import InvalidInputError

ImportedType = Literal["raw", "world", "experience"]


class ImportedMemory(BaseModel):
    """One memory to import. Observations are not imported: they are learnt again from the facts."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    text: str = Field(validation_alias=AliasChoices("text", "content"))
    id: UUID | None = None
    type: ImportedType = Field("raw", validation_alias=AliasChoices("type", "fact_type"))
    mentioned_at: datetime | None = Field(None, validation_alias=AliasChoices("mentioned_at", "timestamp"))
    occurred_start: datetime | None = None
    occurred_end: datetime | None = None
    document_id: str | None = None
    context: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    tags: list[str] = Field(default_factory=list)
    embedding: list[float] | None = None


def read_jsonl(lines: Iterable[str], *, source: str = "input") -> Iterator[ImportedMemory]:
    """Parse memories from JSON lines (blank lines are skipped); an error names the line and what is wrong."""
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        value = validate.json_document(line, what=f"{source}, line {number}")  # not JSON, or nested too deeply
        try:
            yield ImportedMemory.model_validate(value)
        except (ValueError, ValidationError) as exc:
            raise InvalidInputError(
                f"{source}, line {number}: not a memory ({exc}). Nothing after it was read."
            ) from exc


def read_jsonl_file(path: str | Path) -> Iterator[ImportedMemory]:
    """Memories from a .jsonl file, read as they are needed (a big file never sits in memory whole)."""
    with Path(path).open(encoding="utf-8") as handle:
        yield from read_jsonl(handle, source=str(path))


def memory_line(memory: ImportedMemory) -> str:
    """One JSON line for a memory (the inverse of `read_jsonl`)."""
    return json.dumps(memory.model_dump(mode="json", exclude_none=True), ensure_ascii=False)
