"""Request and response bodies of the REST API (the memwrap models are reused where they fit)."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Annotated, Any, Literal
from uuid import UUID

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator

from memwrap import validate
from memwrap.models import (
    MAX_ENTITY_TYPES,
    MAX_EXTRACTION_INSTRUCTIONS_CHARS,
    MAX_TTL_DAYS,
    EntityType,
    MemoryRecord,
    RetainItem,
)

BANK_ID_PATTERN = validate.BANK_ID_PATTERN  # documentation; the check itself is validate.bank_id (fullmatch)
DefensePolicy = Literal["redact", "block", "off"]
MAX_BATCH = 1000

# PostgreSQL text and jsonb take neither NUL nor lone surrogates; say so as a 422 instead of failing in SQL.
_UNSTORABLE = re.compile(r"[\x00\ud800-\udfff]")


def storable_text(value: str | None, where: str = "text") -> str | None:
    if value is not None and _UNSTORABLE.search(value):
        raise ValueError(f"{where} holds a NUL character or a lone surrogate, which cannot be stored")
    return value


def _storable(value: Any, where: str = "metadata") -> Any:
    """Any JSON value (strings at any depth) that PostgreSQL can store: validate.metadata's rules."""
    validate.metadata({"value": value}, what=where)
    return value


# Types that carry their check, for bodies, query strings and paths alike (a ValueError from a validator is a
# 422 with the documented body, wherever the value came from).
BankId = Annotated[str, AfterValidator(validate.bank_id)]
Timestamp = Annotated[datetime, AfterValidator(lambda value: validate.timestamp(value))]
Text = Annotated[str, AfterValidator(storable_text)]
Metadata = Annotated[dict[str, Any], AfterValidator(validate.metadata)]


class RetainBody(RetainItem):
    """One thing to remember (content is split, embedded, dated and linked as by `Memory.retain`)."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {"content": "Alice joined Google in March 2026.", "document_id": "conv-1:turn-3", "tags": ["work"]}
            ]
        },
    )

    @field_validator("metadata")
    @classmethod
    def _metadata_storable(cls, value: dict[str, Any]) -> dict[str, Any]:
        return validate.metadata(value)

    @field_validator("timestamp")
    @classmethod
    def _timestamp_in_range(cls, value: datetime | None) -> datetime | None:
        return validate.timestamp(value)

    @field_validator("timestamp", "expires_at", mode="before")
    @classmethod
    def _timestamp_as_text(cls, value: Any) -> Any:
        return date_time_text(value)


def date_time_text(value: Any) -> Any:
    """A date-time in a JSON body is ISO 8601 text, as the OpenAPI document says (`format: date-time`): pydantic
    would also read a number as Unix seconds, which no client of the document sends on purpose (0 is 1970)."""
    if isinstance(value, (int, float)):
        raise ValueError("must be an ISO 8601 date-time string, e.g. 2026-03-02T09:00:00Z (not a number)")
    return value


class RetainBatch(BaseModel):
    model_config = ConfigDict(extra="forbid")
    items: list[RetainBody] = Field(max_length=MAX_BATCH)


class RetainResult(BaseModel):
    """The ids of the memory units written (or already there: retaining the same item twice stores it once)."""

    ids: list[UUID]


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
        return _storable(value, "directives")

    def given(self) -> dict[str, Any]:
        return self.model_dump(exclude_none=True)


class BankCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    bank_id: BankId = Field(json_schema_extra={"pattern": BANK_ID_PATTERN}, max_length=128, examples=["alice"])
    defense_policy: DefensePolicy | None = Field(
        default=None, description="Secrets in retained text: redact (default), block (refuse the retain) or off."
    )
    disposition: DispositionIn | None = None
    raw_ttl_days: float | None = Field(
        default=None,
        gt=0,
        le=MAX_TTL_DAYS,
        description="Raw facts older than this are deleted by the worker (null: kept).",
    )
    extraction_instructions: Annotated[str, AfterValidator(storable_text)] | None = Field(
        default=None,
        max_length=MAX_EXTRACTION_INSTRUCTIONS_CHARS,
        description="What to keep and what to ignore, for LLM extraction and consolidation (null: none).",
    )
    entity_types: list[EntityType] | None = Field(
        default=None,
        max_length=MAX_ENTITY_TYPES,
        description="The kinds of entity LLM extraction gives a type (name and description each; null or []: none). "
        'Recall\'s filter {"entity_types": [name]} keeps the memories that mention one.',
    )


class BankPatch(BaseModel):
    """Only the fields present change; null resets a setting to the server's default."""

    model_config = ConfigDict(extra="forbid")
    defense_policy: DefensePolicy | None = None
    raw_ttl_days: float | None = Field(
        default=None,
        gt=0,
        le=MAX_TTL_DAYS,
        description="Raw facts older than this are deleted by the worker (null: kept).",
    )
    disposition: DispositionIn | None = Field(default=None, description="Reflect's disposition (null: defaults).")
    extraction_instructions: Annotated[str, AfterValidator(storable_text)] | None = Field(
        default=None,
        max_length=MAX_EXTRACTION_INSTRUCTIONS_CHARS,
        description="What to keep and what to ignore, for LLM extraction and consolidation (null: none).",
    )
    entity_types: list[EntityType] | None = Field(
        default=None,
        max_length=MAX_ENTITY_TYPES,
        description="The kinds of entity LLM extraction gives a type (name and description each; null or []: none). "
        'Recall\'s filter {"entity_types": [name]} keeps the memories that mention one.',
    )


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
    status: Literal["ok", "degraded", "down"] = Field(
        description="degraded: the database is unreachable. down (answered 503): the embedded database stopped and "
        "this process could not start it again; restart the process."
    )
    version: str
    engine: Literal["embedded", "postgres"]
    database: Literal["up", "down"]
    database_since: float = Field(description="Unix time of the last change of `database`.")
    store: str = Field(
        description="Which memory store this server serves, as a hash (no path, no credentials): equal values "
        "mean the same memory (`memwrap ui` reuses a server serving its home)."
    )


class ErrorDetail(BaseModel):
    code: str = Field(description="Stable machine-readable code, e.g. memory_not_found, invalid_content.")
    message: str
    type: str


class ErrorBody(BaseModel):
    error: ErrorDetail


ERRORS: dict[int | str, dict[str, Any]] = {
    status: {"model": ErrorBody, "description": text}
    for status, text in {
        400: "The body is not JSON (malformed, or nested too deeply)",
        401: "Missing or unknown API key",
        403: "The API key may not use this bank",
        413: "The body is larger than MEMWRAP_MAX_REQUEST_BYTES",
        421: "Host or Origin not allowed (without API keys: localhost, IP addresses, MEMWRAP_ALLOWED_HOSTS)",
        422: "Invalid input (nothing was changed)",
        429: "This API key sent too many refused requests (Retry-After)",
        503: "The database is unavailable",
    }.items()
}
