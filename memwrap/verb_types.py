"""The types of the verbs' parameters, with their bounds, and what every declaring class shares.

A bound declared on a parameter (`Field(ge=..., le=...)`) is the one bound of that parameter: the engine checks the
same constant (memwrap/models/), REST and MCP advertise it (tests/test_verb_drift.py compares them). Recall's
`top_k` (`TopK`, at most MAX_TOP_K) and its banks (`BankIds`, at most MAX_RECALL_BANKS) are declared so: the
OpenAPI document and the MCP tool's schema show them, and the integrations read the same constants.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal
from uuid import UUID

from pydantic import Field, SkipValidation

from memwrap.models import (
    ENTITY_TYPE_NAME_PATTERN,
    MAX_BUDGET_TOKENS,
    MAX_ENTITIES_OFFSET,
    MAX_ENTITIES_PAGE,
    MAX_ENTITY_SEARCH_CHARS,
    MAX_ENTITY_TYPE_NAME_CHARS,
    MAX_ENTITY_TYPES,
    MAX_EXTRACTION_INSTRUCTIONS_CHARS,
    MAX_NEIGHBOURS,
    MAX_PAGE,
    MAX_PAGE_OFFSET,
    MAX_RECALL_BANKS,
    MAX_REFLECT_ITERATIONS,
    MAX_REFLECT_TIMEOUT_SECONDS,
    MAX_REFRESH_EVERY_SECONDS,
    MAX_SESSIONS_PAGE,
    MAX_TOP_K,
    MAX_TTL_DAYS,
    MAX_USAGE_DAYS,
    MIN_REFRESH_EVERY_SECONDS,
    EntityType,
    RetainItem,
)
from memwrap.webhook_models import (
    MAX_DELIVERIES_PAGE,
    WebhookEvent,
)

ItemLike = RetainItem | Mapping[str, Any] | str
# Checked by the engine (memwrap/validate.py), with messages about the item at fault.
Items = Annotated[Sequence[ItemLike], SkipValidation]
Tags = Sequence[str] | str | None
# One bank, or up to MAX_RECALL_BANKS banks read as one.
BankIds = str | Annotated[Sequence[str], Field(min_length=1, max_length=MAX_RECALL_BANKS)]
MemoryId = UUID | str
# A JSONL file (memwrap/engine/transfer/memories_jsonl.py) or the memories themselves, read lazily by the engine.
ImportSource = Annotated[str | Path | Iterable[Any] | AsyncIterable[Any], SkipValidation]
DefensePolicy = Literal["redact", "block", "off"]
EntityId = UUID | str
# The bounds of the entity views: the engine checks them (memwrap/engine/views/verbs.py); declared here too, they
# are checked before the engine is reached over REST and MCP, and the OpenAPI document shows them.
EntitySearch = Annotated[str, Field(max_length=MAX_ENTITY_SEARCH_CHARS)] | None
EntitiesLimit = Annotated[int, Field(ge=1, le=MAX_ENTITIES_PAGE)]
UsageDays = Annotated[int, Field(ge=1, le=MAX_USAGE_DAYS)]
SessionPageLimit = Annotated[int, Field(ge=1, le=MAX_SESSIONS_PAGE)]
EntitiesOffset = Annotated[int, Field(ge=0, le=MAX_ENTITIES_OFFSET)]
NeighbourCount = Annotated[int, Field(ge=1, le=MAX_NEIGHBOURS)]
PageOffset = Annotated[int, Field(ge=0, le=MAX_PAGE_OFFSET)]
PageLimit = Annotated[int, Field(ge=1, le=MAX_PAGE)]
TtlDays = Annotated[float, Field(gt=0, le=MAX_TTL_DAYS)]
Instructions = Annotated[str, Field(max_length=MAX_EXTRACTION_INSTRUCTIONS_CHARS)]
EntityTypeName = Annotated[str, Field(max_length=MAX_ENTITY_TYPE_NAME_CHARS, pattern=ENTITY_TYPE_NAME_PATTERN)]
EntityTypes = Annotated[Sequence[EntityType | Mapping[str, Any]], Field(max_length=MAX_ENTITY_TYPES)]
WebhookEvents = Sequence[WebhookEvent] | WebhookEvent | None
WebhookId = UUID | str
DeliveriesLimit = Annotated[int, Field(ge=1, le=MAX_DELIVERIES_PAGE)]
# Every number a bank's caller picks is bounded here (the engine checks the same constants: memwrap/models/limits.py).
TokenBudget = Annotated[int, Field(ge=1, le=MAX_BUDGET_TOKENS)]
# Recall's list form: at most MAX_TOP_K memories.
TopK = Annotated[int, Field(ge=1, le=MAX_TOP_K)]
ReflectIterations = Annotated[int, Field(ge=1, le=MAX_REFLECT_ITERATIONS)]
ReflectTimeout = Annotated[float, Field(gt=0, le=MAX_REFLECT_TIMEOUT_SECONDS)]
RefreshEvery = Annotated[float, Field(ge=MIN_REFRESH_EVERY_SECONDS, le=MAX_REFRESH_EVERY_SECONDS)]

BANK = "/v1/banks/{bank_id}"


class VerbSection:
    """A class of declared verbs (a section of `MemoryVerbs`, memwrap/verbs.py). The declarations are data the
    layers below the API read too (the engine's face, the HTTP client): they import nothing of those layers. The
    class that runs them (`AsyncVerbs`, memwrap/async_verbs.py) hands each call to the engine."""
