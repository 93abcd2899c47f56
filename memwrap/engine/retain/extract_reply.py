"""The shape of an extraction reply (retain/extract.py sends it as the JSON schema and validates the reply as it):
facts, and the entities the model groups under one name, typed when the bank declared entity types."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from memwrap.engine.banks.entity_types import Declared
from memwrap.engine.llm.types import strict_schema

# --- the reply's shape --------------------------------------------------------------------------------------


class ExtractedFact(BaseModel):
    model_config = ConfigDict(extra="ignore")

    text: str = Field(min_length=1)
    fact_type: Literal["world", "experience"]
    turns: list[int] = Field(min_length=1)
    entities: list[str] = Field(default_factory=list)
    when: str | None = None
    start: str | None = None
    end: str | None = None
    caused_by: list[int] = Field(default_factory=list)

    @field_validator("fact_type", mode="before")
    @classmethod
    def _lower(cls, value: object) -> object:
        return value.strip().lower() if isinstance(value, str) else value


class EntityNames(BaseModel):
    model_config = ConfigDict(extra="ignore")

    name: str = Field(min_length=1)
    aliases: list[str] = Field(default_factory=list)


class Extraction(BaseModel):
    """Memories extracted from the numbered turns."""

    model_config = ConfigDict(extra="ignore")

    facts: list[ExtractedFact]
    entities: list[EntityNames] = Field(default_factory=list)


class TypedEntityNames(EntityNames):
    """An entity with its kind, when the bank declared entity types (engine/banks/entity_types.py)."""

    type: str | None = None

    @field_validator("type", mode="before")
    @classmethod
    def _text_or_none(cls, value: object) -> object:
        # Whatever else a model answers (a number, a list) is no type at all, not a reason to ask again.
        return value if isinstance(value, str) else None


class TypedExtraction(Extraction):
    """The reply's shape when the bank declared entity types: its entities may carry one."""

    entities: list[TypedEntityNames] = Field(default_factory=list)  # type: ignore[assignment]


def typed_schema(types: Declared) -> dict[str, Any]:
    """TypedExtraction's strict JSON schema, an entity's type one of the declared names (or null): a provider
    that enforces the schema, or a local server's grammar, cannot answer another. Our own validation is laxer
    (any text, matched to a declared name or dropped), for the providers that do not."""
    schema = strict_schema(TypedExtraction)
    schema["$defs"]["TypedEntityNames"]["properties"]["type"] = {
        "anyOf": [{"type": "string", "enum": types.names}, {"type": "null"}]
    }
    return schema
