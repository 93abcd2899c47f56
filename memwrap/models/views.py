"""Views of a bank for people (memwrap/engine/views/queries.py; the memory browser shows them): stats, sessions,
LLM usage, entities and their graph."""

from __future__ import annotations

from datetime import date, datetime
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field

from memwrap.models.limits import (
    ENTITY_TYPE_NAME_PATTERN,
    MAX_ENTITY_TYPE_DESCRIPTION_CHARS,
    MAX_ENTITY_TYPE_NAME_CHARS,
)


class BankStats(BaseModel):
    """A bank at a glance (`bank_stats`): what it holds, what its worker has to do, when it last changed."""

    bank_id: str
    memories: int = Field(description="Memories recall can find (not invalidated), every type")
    memories_by_type: dict[str, int] = Field(default_factory=dict, description="Not invalidated, per type")
    invalidated: int = 0
    observations: int = 0
    mental_models: int = 0
    mental_models_by_status: dict[str, int] = Field(default_factory=dict)
    entities: int = 0
    jobs_pending: int = Field(0, description="Queued or running background jobs of this bank")
    jobs_by_status: dict[str, int] = Field(default_factory=dict)
    facts_to_consolidate: int = Field(
        0, description="Facts consolidation has still to read (the count of its own query: learn/pending.py)"
    )
    created_at: datetime | None = None
    last_retain_at: datetime | None = None
    last_activity_at: datetime | None = Field(None, description="The latest retain, learning step or job")


class SessionSummary(BaseModel):
    """A conversation of a bank (`sessions`): the memories of one session (metadata `session_id`, or the
    "session" of a document id "session:part")."""

    session_id: str
    memories: int = Field(description="memories of the session recall can find (not invalidated), every type")
    speakers: list[str] = Field(default_factory=list, description="who said its memories, by name")
    first_said_at: datetime | None = None
    last_said_at: datetime | None = None


class LLMUsageCount(BaseModel):
    """Requests the engine's own LLM made for one purpose, and the tokens the provider reported for them."""

    purpose: str = Field(description="extraction (retain), consolidation (observations, mental models) or reflect")
    requests: int = 0
    input_tokens: int = Field(default=0, description="prompt tokens, cached ones included")
    output_tokens: int = 0
    cached_input_tokens: int = Field(default=0, description="the part of input_tokens served from the prompt cache")


class LLMUsageDay(LLMUsageCount):
    day: date = Field(description="the day (UTC) the requests were made")


class LLMUsage(BaseModel):
    """What a bank's LLM work cost (`llm_usage`): totals per purpose since `since`, and each day's counts."""

    bank_id: str
    since: date = Field(description="the first day counted (UTC)")
    by_purpose: list[LLMUsageCount] = Field(default_factory=list, description="extraction, consolidation, reflect")
    total: LLMUsageCount = Field(description="every purpose together (purpose: all)")
    days: list[LLMUsageDay] = Field(default_factory=list, description="newest day first, one row per purpose")


class LinkedMemory(BaseModel):
    id: UUID
    kind: str = Field(description="next (the following turn of a session), causal, ...")
    direction: str = Field(description="out: this memory links to it; in: it links to this memory")
    type: str
    text: str
    invalidated: bool = False


class CitingObservation(BaseModel):
    id: UUID
    text: str
    quote: str
    stance: str
    proof_count: int
    invalidated: bool = False


class EntityType(BaseModel):
    """A kind of entity a bank asks extraction to recognise (Graphiti's and Zep's custom entity types): its name,
    which the model answers with and recall filters by (`filters={"entity_types": [name]}`), and what it means."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(
        min_length=1,
        max_length=MAX_ENTITY_TYPE_NAME_CHARS,
        pattern=ENTITY_TYPE_NAME_PATTERN,
        description="a letter, then letters, digits, _ or - (e.g. Service, Person, api-endpoint)",
        examples=["Service"],
    )
    description: str = Field(
        default="",
        max_length=MAX_ENTITY_TYPE_DESCRIPTION_CHARS,
        description="what counts as one, for the extraction model (it is quoted, fenced, in the prompt)",
        examples=["A deployed backend service of our platform, e.g. billing-api"],
    )


class EntityRef(BaseModel):
    id: UUID
    name: str
    type: str | None = Field(default=None, description="its declared entity type, when extraction gave it one")


class MemoryContext(BaseModel):
    """What surrounds one memory (`memory_context`), beside the memory itself (`get`)."""

    id: UUID
    invalidated_at: datetime | None = None
    invalidation_reason: str | None = None
    entities: list[EntityRef] = Field(default_factory=list)
    links: list[LinkedMemory] = Field(default_factory=list)
    observations: list[CitingObservation] = Field(default_factory=list, description="Observations citing it")


class EntitySummary(BaseModel):
    id: UUID
    name: str
    type: str | None = Field(default=None, description="its declared entity type, when extraction gave it one")
    mentions: int
    aliases: list[str] = Field(default_factory=list)
    first_seen: datetime | None = None
    last_seen: datetime | None = None


class Neighbour(BaseModel):
    entity: EntitySummary
    co_mentions: int = Field(description="Memories that mention both")
    links: int = Field(description="Links (next turn, causal) between memories of one and memories of the other")


class EntityMemory(BaseModel):
    id: UUID
    type: str
    text: str
    mentioned_at: datetime | None = None


class EntityGraph(BaseModel):
    """An entity with its closest neighbours and its latest memories (`entity_graph`)."""

    entity: EntitySummary
    neighbours: list[Neighbour] = Field(default_factory=list)
    memories: list[EntityMemory] = Field(default_factory=list, description="Its latest memories")
