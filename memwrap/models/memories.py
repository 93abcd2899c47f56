"""Pydantic models that cross layers: what goes into retain and what comes out of recall."""

from __future__ import annotations

import enum
import warnings
from datetime import date, datetime
from typing import Any, Literal
from uuid import UUID

from pydantic import AliasChoices, BaseModel, ConfigDict, Field


def _renamed(old: str, new: str) -> None:
    warnings.warn(
        f"{old} is now {new}; the old name will stop working in a later release.", DeprecationWarning, stacklevel=3
    )


class Keep(enum.Enum):
    """The default of a setting `configure_bank` changes only when given: absent keeps it, None resets it."""

    KEEP = "keep"

    def __repr__(self) -> str:
        return "KEEP"


KEEP = Keep.KEEP

# "raw": a piece of the retained text itself (no-LLM mode, or an extraction that has not happened yet).
# "world"/"experience": facts an LLM extracted (what others state vs what the assistant did).
# "observation": consolidated knowledge backed by evidence.
MemoryType = Literal["raw", "world", "experience", "observation"]
MEMORY_TYPES: tuple[str, ...] = ("raw", "world", "experience", "observation")

Arm = Literal["semantic", "keyword", "graph", "temporal"]


class RetainItem(BaseModel):
    """One thing to remember. `document_id` of the form "session:part" groups items into a session."""

    model_config = ConfigDict(extra="forbid")

    content: str
    timestamp: datetime | None = None
    context: str | None = None
    document_id: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    tags: list[str] = Field(default_factory=list)
    expires_at: datetime | None = None  # past it, the memory is no longer recalled (None: never)


class MemoryRecord(BaseModel):
    """A stored memory unit, as `list`/`get` return it."""

    id: UUID
    bank_id: str
    text: str
    type: MemoryType
    document_id: str | None = None
    context: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    tags: list[str] = Field(default_factory=list)
    entities: list[str] = Field(default_factory=list)
    occurred_start: datetime | None = None
    occurred_end: datetime | None = None
    mentioned_at: datetime | None = None
    created_at: datetime | None = None
    speaker: str | None = Field(default=None, description='who said it: "user", "assistant", a participant\'s name')
    expires_at: datetime | None = Field(default=None, description="when it stops being recalled (None: never)")
    invalidated_at: datetime | None = Field(
        default=None, description="when it was invalidated (None: it is not); `restore` brings it back"
    )


class RecalledMemory(BaseModel):
    """A memory chosen by recall, with its fused score and its rank in each arm that found it (1 = best)."""

    id: UUID
    bank_id: str | None = None  # the bank it came from (a recall may read several)
    text: str
    type: MemoryType
    document_id: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    tags: list[str] = Field(default_factory=list)
    entities: list[str] = Field(default_factory=list)
    occurred_start: datetime | None = None
    occurred_end: datetime | None = None
    mentioned_at: datetime | None = None
    speaker: str | None = Field(default=None, description='who said it: "user", "assistant", a participant\'s name')
    session_id: str | None = Field(default=None, description="the conversation it belongs to (session_key)")
    message_id: str | None = Field(
        default=None,
        description="the message a chunk belongs to: the same for every chunk of one long message (None when the "
        "message is one memory)",
    )
    part: int | None = Field(default=None, description="which chunk of its message this is (0 = the first)")
    parts: int | None = Field(default=None, description="how many chunks its message was split into")
    replaced_by: UUID | None = Field(
        default=None, description="a newer memory among those recalled that states a change of what this one says"
    )
    replaced_at: datetime | None = Field(default=None, description="when that newer memory was said")
    score: float = 0.0
    arms: dict[str, int] = Field(default_factory=dict)
    tokens: int = 0
    neighbour_of: UUID | None = None


class ConsideredMemory(RecalledMemory):
    """A candidate recall weighed for the block (recall with explain=True), in ranking order."""

    rank: int = Field(description="1-based place in the final ranking (after fusion, rerank, observations)")
    fit: bool = Field(description="whether its line went into the block")
    line: str = Field(description="the line exactly as rendered into the block")
    budget_left: int = Field(description="tokens of the budget left when this line was weighed")
    reason: str = Field(default="", description="why it was left out (empty when it fit)")


class TimeWindow(BaseModel):
    start: datetime
    end: datetime
    expression: str
    vague: bool = Field(default=False, description='a rough window ("recently": the last 30 days), not a date')


class Recall(BaseModel):
    """The result of a recall: `context` is exactly the block a wrapper injects; `tokens` is its exact size."""

    bank_id: str
    query: str
    context: str
    tokens: int
    token_budget: int = Field(validation_alias=AliasChoices("token_budget", "max_tokens"))
    bank_ids: list[str] = Field(default_factory=list)  # every bank read, bank_id first
    encoding: str
    memories: list[RecalledMemory] = Field(default_factory=list)
    time_window: TimeWindow | None = None
    candidates: int = 0
    timings_ms: dict[str, float] = Field(default_factory=dict)
    considered: list[ConsideredMemory] | None = Field(
        default=None, description="explain=True: every candidate weighed, fit or not (tokens = its line's cost)"
    )

    @property
    def max_tokens(self) -> int:
        """Deprecated name of `token_budget`."""
        _renamed("Recall.max_tokens", "token_budget")
        return self.token_budget


class BankInfo(BaseModel):
    bank_id: str
    memories: int
    created_at: datetime | None = None
    last_retain_at: datetime | None = None
    config: dict[str, Any] = Field(default_factory=dict)  # its stored settings, as bank_config(bank_id) gives them


# --- learning: jobs, observations, mental models -------------------------------------------------------------

JobStatus = Literal["queued", "running", "done", "failed", "cancelled"]
Trend = Literal["new", "strengthening", "stable", "weakening", "stale"]
MentalModelStatus = Literal["pending", "fresh", "stale", "failed"]


class Job(BaseModel):
    """One row of the background work queue (`memwrap jobs`)."""

    id: int
    kind: str
    bank_id: str | None = None
    status: JobStatus
    attempts: int = 0
    max_attempts: int = 0
    payload: dict[str, Any] = Field(default_factory=dict)
    result: dict[str, Any] | None = None
    last_error: str | None = None
    locked_by: str | None = None
    run_after: datetime | None = None
    lease_until: datetime | None = None
    created_at: datetime | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None


class Evidence(BaseModel):
    """A source memory behind an observation: what it said and when. `source` identifies independent sources."""

    memory_id: UUID
    quote: str
    at: datetime
    source: str
    stance: Literal["supports", "superseded"] = "supports"
    active: bool = True  # False while the source memory is invalidated


class ObservationVersion(BaseModel):
    """One entry of an observation's history: the text it had from `valid_from` on, and why it changed."""

    version: int
    text: str
    action: str
    reason: str = ""
    proof_count: int = 0
    evidence_ids: list[UUID] = Field(default_factory=list)
    valid_from: datetime | None = None
    recorded_at: datetime | None = None


class Observation(BaseModel):
    """Consolidated knowledge (a memory of type 'observation') with the evidence it rests on."""

    id: UUID
    bank_id: str
    text: str
    tags: list[str] = Field(default_factory=list)
    origin: Literal["heuristic", "llm"]
    proof_count: int = 0
    evidence_count: int = 0
    trend: Trend = "new"
    version: int = 1
    first_evidence_at: datetime | None = None
    last_evidence_at: datetime | None = None
    created_at: datetime | None = None
    updated_at: datetime | None = None
    invalidated_at: datetime | None = None
    evidence: list[Evidence] = Field(default_factory=list)


class MentalModel(BaseModel):
    """A named standing question per bank and its current answer, kept up to date in the background."""

    id: UUID
    bank_id: str
    name: str
    question: str
    tags: list[str] = Field(default_factory=list)
    max_answer_tokens: int = Field(validation_alias=AliasChoices("max_answer_tokens", "max_tokens"))
    refresh_every: float | None = None
    content: str = ""
    version: int = 0
    status: MentalModelStatus = "pending"
    generator: str | None = None
    source_ids: list[UUID] = Field(default_factory=list)
    stale_since: datetime | None = None
    stale_reason: str | None = None
    last_error: str | None = None
    refreshed_at: datetime | None = None
    created_at: datetime | None = None

    @property
    def max_tokens(self) -> int:
        """Deprecated name of `max_answer_tokens`."""
        _renamed("MentalModel.max_tokens", "max_answer_tokens")
        return self.max_answer_tokens


class MentalModelVersion(BaseModel):
    version: int
    content: str
    generator: str
    source_ids: list[UUID] = Field(default_factory=list)
    reason: str = ""
    generated_at: datetime | None = None


class ConsolidationReport(BaseModel):
    """What one consolidation pass did."""

    bank_id: str
    units: int = 0
    created: int = 0
    updated: int = 0
    deleted: int = 0
    evidence_added: int = 0
    failed: int = 0
    mode: Literal["heuristic", "llm"] = "heuristic"
    llm_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0


# --- reflect: the tool-loop agent over mental models, observations and facts (memwrap/engine/reflect) ----------


class Disposition(BaseModel):
    """How a bank's reflect reasons and speaks (1-5 each, 3 is neutral), plus free-text directives.

    Stored per bank (`configure_bank(bank, disposition={...})`); a reflect call may override any part of it.
    """

    model_config = ConfigDict(extra="forbid")

    skepticism: int = Field(default=3, ge=1, le=5, description="1 takes memories at face value; 5 wants corroboration")
    literalism: int = Field(default=3, ge=1, le=5, description="1 reads intent between the lines; 5 only what is said")
    empathy: int = Field(default=3, ge=1, le=5, description="1 matter-of-fact; 5 warm and attentive to feelings")
    directives: list[str] = Field(default_factory=list, description="free-text rules the answer must follow")


class ReflectUsage(BaseModel):
    """What one reflect cost: LLM tokens and calls (loop and synthesis together), and time."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    calls: int = 0  # LLM requests, retries of one request not counted
    tool_calls: int = 0
    latency_ms: float = 0.0  # wall clock of the whole reflect
    llm_ms: float = 0.0  # of which waiting for the LLM
    tools_ms: float = 0.0  # of which running tools (concurrent calls of a turn count once)


TraceKind = Literal["llm", "tool", "synthesis", "limit"]


class ReflectTraceEntry(BaseModel):
    """One step of a reflect: an LLM turn, a tool call, or the forced synthesis."""

    kind: TraceKind
    iteration: int
    name: str = ""  # the tool's name (kind "tool"), the limit hit (kind "limit")
    arguments: dict[str, Any] = Field(default_factory=dict)
    cap_tokens: int | None = None  # the most tokens the tool's result was allowed (its share of the budget)
    result_tokens: int = 0  # size of what the model was shown (tool result, or the LLM's reply)
    result_chars: int = 0
    truncated: bool = False  # the result was cut to its cap
    request_tokens: int | None = None  # LLM turns: our count of the prompt sent
    latency_ms: float = 0.0
    error: str | None = None
    detail: str | None = None


class ReflectResult(BaseModel):
    """The answer of `reflect`, the memories it cites, and how it got there.

    `forced`: a limit (iterations, context budget, time) or a context overflow ended the loop, and the answer was
    synthesised from what had been gathered. `unknown_ids`: ids the model cited that are not in the bank (dropped).
    """

    bank_id: str
    query: str
    answer: str
    structured: Any = None
    memory_ids: list[UUID] = Field(default_factory=list)
    mental_model_ids: list[UUID] = Field(default_factory=list)
    citations: dict[str, UUID] = Field(default_factory=dict)  # the short refs the model used (F3, O1, M2) -> ids
    unknown_ids: list[str] = Field(default_factory=list)
    iterations: int = 0
    forced: bool = False
    forced_reason: str | None = None  # iterations | context_budget | timeout | context_overflow | uncited
    context_budget: int = Field(default=0, validation_alias=AliasChoices("context_budget", "max_tokens"))
    disposition: Disposition = Field(default_factory=Disposition)
    usage: ReflectUsage = Field(default_factory=ReflectUsage)
    trace: list[ReflectTraceEntry] = Field(default_factory=list)

    @property
    def max_tokens(self) -> int:
        """Deprecated name of `context_budget`."""
        _renamed("ReflectResult.max_tokens", "context_budget")
        return self.context_budget


# --- update and history of a memory (memwrap/engine/update.py) ------------------------------------------------

MemoryField = Literal["text", "metadata", "tags", "occurred"]


class MemoryVersion(BaseModel):
    """One version of a memory: what it said from `valid_from` until `valid_until` (None: it still does), and
    which fields differ from the version before it (`changed`; empty for the first)."""

    version: int
    text: str
    metadata: dict[str, Any] = Field(default_factory=dict)
    tags: list[str] = Field(default_factory=list)
    occurred_start: datetime | None = None
    occurred_end: datetime | None = None
    valid_from: datetime | None = None
    valid_until: datetime | None = None
    changed: list[MemoryField] = Field(default_factory=list)
    current: bool = False


# --- export / import of a bank (memwrap/engine/transfer.py) ----------------------------------------------------


class ImportReport(BaseModel):
    """What `import_bank` did: records read and rows written by kind. Rows already present are skipped (not
    counted as written), so importing the same file twice writes nothing the second time."""

    bank_id: str
    read: dict[str, int] = Field(default_factory=dict)
    written: dict[str, int] = Field(default_factory=dict)
    embedded: int = 0  # memories embedded on import (the file had no vector for them, or one of another size)


class DeleteReport(BaseModel):
    """What `delete_memories` found (`matched`) and removed (`deleted`: 0 on a dry run)."""

    bank_id: str
    matched: int
    deleted: int
    dry_run: bool


# --- views of a bank for people (memwrap/engine/bank_views.py; the memory browser shows them) --------------------

# Past this, OFFSET scans are slow and PostgreSQL's bigint is not far: page with filters instead (the lists of
# memories and observations; checked by the engine, advertised in the OpenAPI document).
MAX_PAGE_OFFSET = 10_000_000
# The longest page of memories, observations or jobs one call returns, on every surface (memwrap/verbs.py declares
# it; the engine checks it; REST and MCP advertise it).
MAX_PAGE = 10_000
# Tokens of memory a recall renders when no budget is given, and the wrappers inject per call by default.
DEFAULT_TOKEN_BUDGET = 1024
# The longest a bank keeps raw facts when told to forget them (`raw_ttl_days`, in days: a hundred years).
MAX_TTL_DAYS = 36_500
# Every bank-controlled number has a bound, declared here and on the verbs (memwrap/verbs.py), checked by the engine:
# a number a caller picks must never reach SQL arithmetic (intervals, timestamps) that can overflow.
MAX_BUDGET_TOKENS = 2_000_000  # a token budget larger than any model's context window
MAX_TOP_K = 1000  # recall's list form
MAX_RECALL_BANKS = 16  # banks one recall reads (each adds its four arms to the statement count)
MAX_REFLECT_ITERATIONS = 100
MAX_REFLECT_TIMEOUT_SECONDS = 3600.0
# A mental model's schedule (`refresh_every`, seconds): at least a second, at most a year (workers reconcile
# every MEMWRAP_RECONCILE_SECONDS anyway, so a shorter schedule only means "every pass").
MIN_REFRESH_EVERY_SECONDS = 1.0
MAX_REFRESH_EVERY_SECONDS = 365 * 86400.0
# The longest extraction instructions a bank holds (memwrap/engine/bank_instructions.py): a paragraph or two of
# what to keep and what to ignore, not a prompt of its own; every extraction and consolidation call carries them.
MAX_EXTRACTION_INSTRUCTIONS_CHARS = 2000
# The entity types a bank may declare for extraction (`entity_types`, memwrap/engine/entity_types.py): each
# declaration goes into every extraction prompt, so they are few and short. A name is an identifier (it is what
# the model answers with and what recall filters by): a letter, then letters, digits, `_` or `-`.
MAX_ENTITY_TYPES = 32
MAX_ENTITY_TYPE_NAME_CHARS = 64
MAX_ENTITY_TYPE_DESCRIPTION_CHARS = 500
ENTITY_TYPE_NAME_PATTERN = r"^[A-Za-z][A-Za-z0-9_-]{0,63}$"

# Bounds of the entity views: checked by the engine, advertised in the REST API's OpenAPI document (memwrap/verbs.py).
MAX_ENTITIES_PAGE = 500
MAX_ENTITIES_OFFSET = 1_000_000
MAX_ENTITY_SEARCH_CHARS = 200
MAX_NEIGHBOURS = 50
# How many sessions one `sessions` page holds.
MAX_SESSIONS_PAGE = 500
# How far back `llm_usage` reads (days): a year and a day.
MAX_USAGE_DAYS = 366


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
