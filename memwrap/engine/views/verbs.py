"""The engine's read-only views of a bank (its counts, a memory's surroundings, its entities and their graph),
checked at the boundary.

`Engine` inherits them; each validates its arguments (errors that name the argument, or the specific
not-found error) and runs one bounded read of memwrap/engine/views/queries.py. They are declared verbs
(memwrap/verbs.py), so Python, `Memory(url=...)`, the REST API (the memory browser reads them) and the CLI
all reach them the same way. Kept apart so the engine module stays about retain and recall.
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from uuid import UUID

from memwrap import validate
from memwrap.engine.llm import usage as llm_usage
from memwrap.engine.views import queries as bank_views
from memwrap.errors import InvalidInputError
from memwrap.models import (
    MAX_ENTITIES_OFFSET,
    MAX_ENTITIES_PAGE,
    MAX_ENTITY_SEARCH_CHARS,
    MAX_NEIGHBOURS,
    MAX_PAGE_OFFSET,
    MAX_SESSIONS_PAGE,
    MAX_USAGE_DAYS,
    BankStats,
    EntityGraph,
    EntitySummary,
    LLMUsage,
    MemoryContext,
    SessionSummary,
)

if TYPE_CHECKING:
    from memwrap.store.db import Store


def _search(value: object) -> str | None:
    """Part of an entity's name or alias; None or blank: no filter."""
    if value is None or (isinstance(value, str) and validate.blank(value)):
        return None
    if isinstance(value, str) and len(value) > MAX_ENTITY_SEARCH_CHARS:
        raise InvalidInputError(
            f"search is {len(value):,} characters; the limit is {MAX_ENTITY_SEARCH_CHARS} (a part of a name or alias)."
        )
    return validate.text_field(value, what="search", max_chars=MAX_ENTITY_SEARCH_CHARS)


class ViewVerbs:
    store: Store

    async def bank_stats(self, bank_id: str) -> BankStats:
        """The bank's counts and last activity, in one query; BankNotFoundError if there is no such bank."""
        return await bank_views.bank_stats(self.store.pool, validate.bank_id(bank_id))

    async def memory_context(self, bank_id: str, memory_id: UUID | str) -> MemoryContext:
        """A memory's entities, links, the observations citing it and its invalidation; MemoryNotFoundError."""
        bank_id, memory_id = validate.bank_id(bank_id), validate.memory_id(memory_id)
        return await bank_views.memory_context(self.store.pool, bank_id, memory_id)

    async def entities(
        self,
        bank_id: str,
        *,
        search: str | None = None,
        limit: int = 50,
        offset: int = 0,
        entity_type: str | None = None,
    ) -> list[EntitySummary]:
        """The bank's entities, most mentioned first; `search` matches a part of a name or of an alias;
        `entity_type`: only those of that type (any case)."""
        return await bank_views.entities(
            self.store.pool,
            validate.bank_id(bank_id),
            search=_search(search),
            entity_type=validate.entity_type_name(entity_type),
            limit=validate.bounded(limit, what="limit", low=1, high=MAX_ENTITIES_PAGE),
            offset=validate.bounded(offset, what="offset", low=0, high=MAX_ENTITIES_OFFSET),
        )

    async def entity_graph(self, bank_id: str, entity_id: UUID | str, *, neighbours: int = 15) -> EntityGraph:
        """An entity, its `neighbours` closest entities and its latest memories; EntityNotFoundError."""
        return await bank_views.entity_graph(
            self.store.pool,
            validate.bank_id(bank_id),
            validate.entity_id(entity_id),
            neighbours=validate.bounded(neighbours, what="neighbours", low=1, high=MAX_NEIGHBOURS),
        )

    async def llm_usage(self, bank_id: str, *, days: int = 30) -> LLMUsage:
        """The bank's LLM requests and tokens per purpose over the last `days` days (UTC); an unknown bank or one
        the engine never called an LLM for has no counts."""
        return await llm_usage.read(
            self.store.pool,
            validate.bank_id(bank_id),
            validate.bounded(days, what="days", low=1, high=MAX_USAGE_DAYS),
        )

    async def sessions(self, bank_id: str, *, limit: int = 100, offset: int = 0) -> list[SessionSummary]:
        """The bank's conversations (document ids "session:part"), the latest first."""
        return await bank_views.sessions(
            self.store.pool,
            validate.bank_id(bank_id),
            limit=validate.bounded(limit, what="limit", low=1, high=MAX_SESSIONS_PAGE),
            offset=validate.bounded(offset, what="offset", low=0, high=MAX_PAGE_OFFSET),
        )
