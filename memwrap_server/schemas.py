"""Request and response bodies of the REST API (the memwrap models are reused where they fit)."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any, Literal
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field, field_validator

from memwrap.models import MemoryRecord, MemoryType, RetainItem

BANK_ID_PATTERN = r"^[\w][\w.:@+\-]{0,127}$"
DefensePolicy = Literal["redact", "block", "off"]
MAX_BATCH = 1000

# PostgreSQL text and jsonb take neither NUL nor lone surrogates; say so as a 422 instead of failing in SQL.
_UNSTORABLE = re.compile(r"[\x00\ud800-\udfff]")


def _storable(value: Any, where: str = "metadata") -> Any:
    if isinstance(value, str):
        if _UNSTORABLE.search(value):
            raise ValueError(f"{where} holds a NUL character or a lone surrogate, which cannot be stored")
    elif isinstance(value, dict):
        for key, inner in value.items():
            _storable(key, where)
            _storable(inner, where)
    elif isinstance(value, list):
        for inner in value:
            _storable(inner, where)
    return value


class RetainBody(RetainItem):
    """One thing to remember (content is split, embedded, dated and linked as by `Memory.retain`)."""

    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [
        {"content": "Alice joined Google in March 2026.", "document_id": "conv-1:turn-3", "tags": ["work"]}
    ]})

    @field_validator("metadata")
    @classmethod
    def _metadata_storable(cls, value: dict[str, Any]) -> dict[str, Any]:
        return _storable(value)

    @field_validator("timestamp")
    @classmethod
    def _timestamp_in_range(cls, value: datetime | None) -> datetime | None:
        return _in_range(value, "timestamp")


class RetainBatch(BaseModel):
    model_config = ConfigDict(extra="forbid")
    items: list[RetainBody] = Field(max_length=MAX_BATCH)


class RetainResult(BaseModel):
    """The ids of the memory units written (or already there: retaining the same item twice stores it once)."""

    ids: list[UUID]


def _in_range(value: datetime | None, what: str) -> datetime | None:
    # Dates at the very ends of the calendar overflow once shifted to UTC or widened into periods.
    if value is None:
        return None
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    if not 2 <= value.year <= 9997:
        raise ValueError(f"{what} must be between the years 2 and 9997")
    return value


class RecallBody(BaseModel):
    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [
        {"query": "Where does Alice work?", "max_tokens": 512}
    ]})

    query: str = Field(description="What the memories are for: usually the user's last message.")
    max_tokens: int = Field(default=1024, ge=1, le=2_000_000, description="Exact budget of the rendered block.")
    now: datetime | None = Field(default=None, description="Resolve 'last spring' against this time (default: now).")
    types: list[MemoryType] | None = None
    tags: list[str] | None = None
    model: str | None = Field(default=None, description="Model the block is for (picks the token encoding).")
    neighbours: bool | None = None

    @field_validator("now")
    @classmethod
    def _now_in_range(cls, value: datetime | None) -> datetime | None:
        return _in_range(value, "now")

    @field_validator("model")
    @classmethod
    def _model_storable(cls, value: str | None) -> str | None:
        return _storable(value, "model")


class MemoryPage(BaseModel):
    items: list[MemoryRecord]
    limit: int
    offset: int
    next_offset: int | None = Field(description="Offset of the next page; null on the last page.")


class DispositionIn(BaseModel):
    """How reflect reasons for this bank (1-5 each, 3 neutral); only the parts given change."""

    model_config = ConfigDict(extra="forbid")
    skepticism: int | None = Field(default=None, ge=1, le=5)
    literalism: int | None = Field(default=None, ge=1, le=5)
    empathy: int | None = Field(default=None, ge=1, le=5)
    directives: list[str] | None = Field(default=None, max_length=50)

    @field_validator("directives")
    @classmethod
    def _directives_storable(cls, value: list[str] | None) -> list[str] | None:
        return _storable(value, "directives")  # type: ignore[no-any-return]

    def given(self) -> dict[str, Any]:
        return self.model_dump(exclude_none=True)


class BankCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    bank_id: str = Field(pattern=BANK_ID_PATTERN, examples=["alice"])
    defense_policy: DefensePolicy | None = Field(
        default=None, description="Secrets in retained text: redact (default), block (refuse the retain) or off."
    )
    disposition: DispositionIn | None = None


class BankPatch(BaseModel):
    """Only the fields present change; null resets a setting to the server's default."""

    model_config = ConfigDict(extra="forbid")
    defense_policy: DefensePolicy | None = None
    raw_ttl_days: float | None = Field(default=None, gt=0, le=36_500,
                                       description="Raw facts older than this are deleted by the worker (null: kept).")
    disposition: DispositionIn | None = Field(default=None, description="Reflect's disposition (null: defaults).")


class BankOut(BaseModel):
    bank_id: str
    memories: int = 0
    created_at: datetime | None = None
    last_retain_at: datetime | None = None
    config: dict[str, Any] = Field(default_factory=dict)


class BankDeleted(BaseModel):
    bank_id: str
    deleted: int = Field(description="How many memories were removed.")


class Health(BaseModel):
    status: Literal["ok"]
    version: str
    engine: Literal["embedded", "postgres"]


class ErrorDetail(BaseModel):
    code: str = Field(description="Stable machine-readable code, e.g. memory_not_found, invalid_content.")
    message: str
    type: str


class ErrorBody(BaseModel):
    error: ErrorDetail


ERRORS: dict[int | str, dict[str, Any]] = {
    status: {"model": ErrorBody, "description": text}
    for status, text in {
        401: "Missing or unknown API key",
        403: "The API key may not use this bank",
        422: "Invalid input (nothing was changed)",
        503: "The database is unavailable",
    }.items()
}
