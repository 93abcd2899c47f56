"""The public verbs of memwrap, each declared once (how declarations work: memwrap/declare.py).

`AsyncMemory` inherits `MemoryVerbs`; `Memory` (its sync twin), the HTTP client, the REST API, the MCP tools
and the CLI are derived from these declarations or checked against them (tests/test_verb_drift.py).

One word per meaning: `bank_id` is the bank everywhere; `tags` are tags everywhere; a budget says what it
budgets (`token_budget` of a recall's rendered block, `context_budget` of reflect's prompt, `max_answer_tokens`
of a mental model's answer). The body of each declaration is never run: `python -m memwrap._generate_verbs` writes
`AsyncMemory`'s (memwrap/async_verbs.py: the engine's method of the same name, called with every parameter), the
engine's typed face (memwrap/engine_verbs.py, the `EngineVerbs` protocol that `Engine` and `HttpEngine` satisfy),
the HTTP client's requests (memwrap/client/http_verbs/) and `Memory`'s sync twins (memwrap/sync_verbs.py).
A verb declared `custom=True` keeps the body written here.

`MemoryVerbs` is made of sections, in this order: retain, recall and the catalog (`RecallVerbs`, here), learning
(memwrap/verbs_learning.py), moving a bank (here), webhooks (memwrap/verbs_webhooks.py), where the database is
(here); the generator reads them in that order. The parameters' types and bounds are in memwrap/verb_types.py: a
bound declared on a parameter (`Field(ge=..., le=...)`) is the one bound of that parameter: the engine checks the
same constant, REST and MCP advertise it (tests/test_verb_drift.py compares them).
"""

from __future__ import annotations

import builtins
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any
from uuid import UUID

from memwrap.declare import VERBS, Route, in_declared_order, verb
from memwrap.filters import RecallFilter
from memwrap.models import (
    KEEP,
    BankInfo,
    BankStats,
    DeleteReport,
    Disposition,
    EntityGraph,
    EntitySummary,
    ImportReport,
    Keep,
    LLMUsage,
    MemoryContext,
    MemoryRecord,
    MemoryVersion,
    Recall,
    ReflectResult,
    SessionSummary,
)
from memwrap.verb_types import (
    BANK,
    BankIds,
    DefensePolicy,
    EntitiesLimit,
    EntitiesOffset,
    EntityId,
    EntitySearch,
    EntityTypeName,
    EntityTypes,
    ImportSource,
    Instructions,
    ItemLike,
    Items,
    MemoryId,
    NeighbourCount,
    PageLimit,
    PageOffset,
    ReflectIterations,
    ReflectTimeout,
    SessionPageLimit,
    Tags,
    TokenBudget,
    TopK,
    TtlDays,
    UsageDays,
    VerbSection,
)
from memwrap.verbs_learning import LearningVerbs
from memwrap.verbs_webhooks import WebhookVerbs

__all__ = ["VERBS", "ItemLike", "MemoryVerbs"]


class RecallVerbs(VerbSection):
    """Retain and recall, the catalog of a bank's memories, and what the memory browser looks at."""

    # --- retain and recall -----------------------------------------------------------------------------------

    @verb(
        Route("POST", f"{BANK}/memories", status=201, envelope="ids"),
        mcp=True,
        cli=True,
        span=("retain", "upsert_memory"),
    )
    async def retain(
        self,
        bank_id: str,
        content: str,
        *,
        timestamp: datetime | None = None,
        context: str | None = None,
        document_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        tags: Tags = None,
        expires_at: datetime | None = None,
    ) -> list[UUID]:
        """Remember `content`. Returns the ids of the memory units it became (the same ids if already retained).

        `timestamp`: when it was said (default now); `context`: what it was part of; `document_id`: a stable id
        (retaining the same document again replaces nothing and stores nothing twice); `metadata` and `tags`:
        yours, for filtering recall; `expires_at`: from then on recall, reflect and consolidation leave it out
        (list shows it with include_expired=True; `update` changes it)."""
        ...

    @verb(Route("POST", f"{BANK}/memories/batch", status=201, envelope="ids"), span=("retain", "upsert_memory"))
    async def retain_many(self, bank_id: str, items: Items) -> list[UUID]:
        """Remember many items at once (embedded and written in batches). Returns all unit ids, in item order."""
        ...

    @verb(Route("POST", "/v1/recall"), mcp=True, cli=True, renamed={"max_tokens": "token_budget"})
    async def recall(
        self,
        bank_id: BankIds,
        query: str,
        *,
        token_budget: TokenBudget | None = None,
        now: datetime | None = None,
        types: Tags = None,
        tags: Tags = None,
        filters: RecallFilter | Mapping[str, Any] | None = None,
        top_k: TopK | None = None,
        min_score: float | None = None,
        model: str | None = None,
        neighbours: bool | None = None,
        prefer_observations: bool | None = None,
        explain: bool = False,
        ids_in_block: bool = False,
    ) -> Recall:
        """Find what matters for `query` and render it within `token_budget` tokens (exact, counted with tiktoken).

        `bank_id`: a bank, or a list of banks read as one (one budget; each memory says its bank). `token_budget`:
        default 1024 (with `top_k`, no budget limit). `now`: resolve "last spring" against this time; `types`:
        world, experience, observation; `tags`: only memories with one of these tags; `filters`: on metadata
        (`{"metadata": {"project": "apollo", "priority": {"gte": 2}}}`, `and`/`or`/`not`, `exists`, `in`), on
        occurred and mentioned times (`occurred_after`, ...), documents and sessions (memwrap/filters.py); `top_k`,
        `min_score`: a list rather than a budget;
        `model`: the model the block is for (picks the token encoding); `neighbours`: add the turns around a hit;
        `prefer_observations`: an observation takes the place of the facts it covers. None: the configured
        default. `explain`: also return every candidate weighed, with its rank in each arm, its line, its
        token cost and whether it fit (`Recall.considered`; the memory browser's recall debugger shows it).
        `ids_in_block`: each line of the block starts with its memory's id (`- (id 1f0c…) …`, counted in the
        budget), for an agent that updates or invalidates memories by id."""
        ...

    @verb(Route("POST", f"{BANK}/reflect"), mcp=True, cli=True, renamed={"max_tokens": "context_budget"})
    async def reflect(
        self,
        bank_id: str,
        query: str,
        *,
        context_budget: TokenBudget | None = None,
        context: str | None = None,
        response_schema: Any = None,
        tags: Tags = None,
        disposition: Disposition | Mapping[str, Any] | None = None,
        max_iterations: ReflectIterations | None = None,
        timeout: ReflectTimeout | None = None,
        now: datetime | None = None,
    ) -> ReflectResult:
        """Answer `query` from memory: an LLM agent searches mental models, then observations, then raw facts,
        and answers citing the memories it used (needs an LLM: MEMWRAP_LLM_* or `use_llm`).

        `context_budget`: the most tokens the agent's prompt may hold (default MEMWRAP_REFLECT_MAX_TOKENS); with
        `max_iterations` and `timeout`, a limit reached ends in an answer from what was gathered (`forced=True`),
        not an error. `context`: the caller's situation (not memory, not cited). `response_schema`: a pydantic
        model or a JSON schema; the answer is also returned validated, as `structured`. `disposition`:
        skepticism, literalism, empathy (1-5) and directives, over the bank's own."""
        ...

    # --- the catalog -----------------------------------------------------------------------------------------

    @verb(Route("GET", f"{BANK}/memories", envelope="items"), mcp="list_memories", cli=True)
    async def list(
        self,
        bank_id: str,
        *,
        limit: PageLimit = 100,
        offset: PageOffset = 0,
        types: Tags = None,
        tags: Tags = None,
        document_id: str | None = None,
        filters: RecallFilter | Mapping[str, Any] | None = None,
        include_expired: bool = False,
        include_invalidated: bool = False,
    ) -> list[MemoryRecord]:
        """Stored memories of a bank, oldest first, `limit` at a time from `offset` (`filters` as for recall).

        `include_expired`: also the memories whose `expires_at` has passed (hidden from recall).
        `include_invalidated`: also the invalidated ones (`invalidated_at` says when; `restore` brings one back)."""
        ...

    @verb(Route("GET", f"{BANK}/memories/{{memory_id}}"), mcp="get_memory", cli=True)
    async def get(self, bank_id: str, memory_id: MemoryId) -> MemoryRecord:
        """One memory by id, invalidated or not (`invalidated_at` says when it was; MemoryNotFoundError if the bank
        has no such memory)."""
        ...

    @verb(
        Route("PATCH", f"{BANK}/memories/{{memory_id}}"),
        mcp="update_memory",
        cli=True,
        partial=True,
        span=("update", "update_memory"),
    )
    async def update(
        self,
        bank_id: str,
        memory_id: MemoryId,
        *,
        text: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        tags: Tags = None,
        occurred_start: datetime | None = None,
        occurred_end: datetime | None = None,
        expires_at: datetime | None | Keep = KEEP,
    ) -> MemoryRecord:
        """Change a memory in place: new text is re-embedded, re-dated and its entities re-linked; `metadata` and
        `tags` replace the old ones (None: unchanged). `occurred_start` (ISO; no zone means UTC; `occurred_end`
        defaults to it) sets when what it says happened, over the dates read from its text. The old version
        stays in its `history`; observations citing it are revisited by the worker. `expires_at`: a time sets
        when it stops being recalled, None clears it (never expires), not given keeps it (not a new version:
        what it says is unchanged)."""
        ...

    @verb(Route("GET", f"{BANK}/memories/{{memory_id}}/history"), cli=True)
    async def history(self, bank_id: str, memory_id: MemoryId) -> builtins.list[MemoryVersion]:
        """Every version of a memory, oldest first (the last is the current one), with what changed and when."""
        ...

    @verb(
        Route("DELETE", f"{BANK}/memories/{{memory_id}}", status=204),
        mcp="delete_memory",
        cli=True,
        span=("delete", "delete_memory"),
    )
    async def delete(self, bank_id: str, memory_id: MemoryId) -> None:
        """Forget one memory (what was learnt from it forgets it first)."""
        ...

    @verb(Route("POST", f"{BANK}/memories/delete"), mcp="delete_memories", cli="delete-memories")
    async def delete_memories(
        self,
        bank_id: str,
        *,
        filters: RecallFilter | Mapping[str, Any] | None = None,
        tags: Tags = None,
        types: Tags = None,
        document_id: str | None = None,
        dry_run: bool = True,
    ) -> DeleteReport:
        """Forget every memory that matches (a tagged purge): `tags` (any of them), `types`, `filters` (as for
        recall) and `document_id`, at least one of them. A dry run first (the default) only counts them
        (`matched`); `dry_run=False` deletes them as `delete` deletes one (`deleted`)."""
        ...

    @verb(Route("DELETE", BANK, envelope="deleted"), cli=True)
    async def delete_bank(self, bank_id: str) -> int:
        """Delete a bank and everything in it. Returns how many memories were removed."""
        ...

    @verb(Route("GET", "/v1/banks"), cli=True)
    async def banks(self) -> builtins.list[BankInfo]:
        """Every bank, with its memory count and last retain."""
        ...

    @verb(Route("GET", BANK, envelope="config"), cli=True)
    async def bank_config(self, bank_id: str) -> dict[str, Any]:
        """The bank's settings (e.g. {"defense_policy": "block"}). BankNotFoundError if there is no such bank."""
        ...

    @verb(Route("POST", "/v1/banks", status=201, envelope="config"), cli=True)
    async def create_bank(
        self,
        bank_id: str,
        *,
        defense_policy: DefensePolicy | None = None,
        disposition: Disposition | Mapping[str, Any] | None = None,
        raw_ttl_days: TtlDays | None = None,
        extraction_instructions: Instructions | None = None,
        entity_types: EntityTypes | None = None,
    ) -> dict[str, Any]:
        """Create a bank with its settings; BankExistsError if it exists (retain creates banks on its own too).

        `defense_policy`: secrets in retained text are redacted (default), blocked (the retain is refused) or
        kept (off); `disposition`: how reflect reasons for this bank; `raw_ttl_days`: raw facts older than this
        are deleted in the background (None keeps them); `extraction_instructions`: what to keep and what to
        ignore, in your words (at most 2000 characters), given to LLM extraction and consolidation (without an
        LLM they are stored and shown, and nothing reads them); `entity_types`: the kinds of entity LLM extraction
        gives a type, each a name (a letter, then letters, digits, _ or -) and a description (at most 500
        characters), at most 32; recall's `filters={"entity_types": [...]}` keeps the memories that mention one
        (without an LLM entities get no type)."""
        ...

    @verb(Route("PATCH", BANK, envelope="config"), cli=True, partial=True)
    async def configure_bank(
        self,
        bank_id: str,
        *,
        defense_policy: DefensePolicy | None | Keep = KEEP,
        disposition: Disposition | Mapping[str, Any] | None | Keep = KEEP,
        raw_ttl_days: TtlDays | None | Keep = KEEP,
        extraction_instructions: Instructions | None | Keep = KEEP,
        entity_types: EntityTypes | None | Keep = KEEP,
    ) -> dict[str, Any]:
        """Create the bank if needed and change the settings given (None resets one to the default; a setting
        not given, KEEP, stays as it is); the settings are those of `create_bank`. Returns the bank's settings."""
        ...

    # --- looking at a bank: counts, a memory's surroundings, entities (memwrap/engine/views/queries.py) ----
    # What the memory browser (/ui) shows; read-only, each a bounded query. Not MCP tools: an agent asks memory
    # with recall and reflect; these are for people (and scripts) looking at a bank.

    @verb(Route("GET", f"{BANK}/stats"), cli="stats")
    async def bank_stats(self, bank_id: str) -> BankStats:
        """A bank's counts and last activity.

        Memories recall can find (per type), invalidated ones, observations, mental models (per status), entities,
        background jobs pending (per status), and when the bank was created, last retained into and last changed.
        BankNotFoundError if there is no such bank."""
        ...

    @verb(Route("GET", f"{BANK}/memories/{{memory_id}}/context"), cli=True)
    async def memory_context(self, bank_id: str, memory_id: MemoryId) -> MemoryContext:
        """What surrounds a memory: entities, links, observations citing it, invalidation.

        Its entities; its links both ways (the next turn of its session, causal links); the observations citing it;
        when and why it was invalidated, if it was. MemoryNotFoundError if the bank has no such memory; the memory
        itself is `get`'s."""
        ...

    @verb(Route("GET", f"{BANK}/entities"), cli=True)
    async def entities(
        self,
        bank_id: str,
        *,
        search: EntitySearch = None,
        limit: EntitiesLimit = 50,
        offset: EntitiesOffset = 0,
        entity_type: EntityTypeName | None = None,
    ) -> builtins.list[EntitySummary]:
        """The bank's entities, most mentioned first (search: part of a name or alias).

        The people, places and things its memories mention, `limit` at a time from `offset`, with their type,
        their aliases and when they were first and last seen; `search`: only those with it in their name or in one
        of their aliases, in any case; `entity_type`: only those of this declared type (any case)."""
        ...

    @verb(Route("GET", f"{BANK}/entities/{{entity_id}}/graph"), cli=True)
    async def entity_graph(self, bank_id: str, entity_id: EntityId, *, neighbours: NeighbourCount = 15) -> EntityGraph:
        """An entity, its neighbours (co-mentions, links) and its latest memories.

        The `neighbours` closest entities: most memories mentioning both first, then most links between their
        memories. EntityNotFoundError if the bank has no such entity (`entities` lists them, with their ids)."""
        ...

    @verb(Route("GET", f"{BANK}/sessions"), cli=True)
    async def sessions(
        self, bank_id: str, *, limit: SessionPageLimit = 100, offset: PageOffset = 0
    ) -> builtins.list[SessionSummary]:
        """The bank's conversations, the latest first: each session's memory count, speakers and first and last
        time said.

        A memory's session is its metadata's `session_id`, else the part of its `document_id` before the last
        colon ("chat-7:turn-3" is of session "chat-7"), else its `document_id`; recall's and `list`'s
        filters={"session_ids": [...]} read one session."""
        ...

    @verb(Route("GET", f"{BANK}/llm-usage"), cli="llm-usage")
    async def llm_usage(self, bank_id: str, *, days: UsageDays = 30) -> LLMUsage:
        """What the engine's LLM did for a bank: requests and tokens per purpose and per day.

        Counted after every successful request the engine made for the bank (extraction of what it retained,
        consolidation and mental models, reflect), as the provider reported its tokens; the last `days` days
        (UTC, today included), totals per purpose and each day's counts, newest first. Requests of an
        application's own model (a wrapped client) are not the engine's and are not counted here."""
        ...


class BankFileVerbs(VerbSection):
    """A bank written to a file and read back."""

    # --- moving a bank -------------------------------------------------------------------------------------------

    @verb(Route("GET", f"{BANK}/export", client_side=("path",)), cli=True)
    async def export_bank(self, bank_id: str, path: str | Path, *, include_embeddings: bool = True) -> int:
        """Write the bank to `path` as JSON lines (memories with times, metadata, tags, entities and links;
        observations, mental models, histories; vectors too unless `include_embeddings=False`). Returns the
        number of lines. Over HTTP the file is written where the caller is."""

    @verb(Route("POST", f"{BANK}/import", client_side=("path",)), cli=True)
    async def import_bank(self, bank_id: str, path: str | Path) -> ImportReport:
        """Load an `export_bank` file into `bank_id` (created if needed; ids kept; rows already there skipped, so
        importing twice changes nothing; stored vectors used as they are when the model matches)."""


class StoreVerbs(VerbSection):
    """Verbs that run where the database is."""

    # --- where the database is -------------------------------------------------------------------------------

    @verb(local_only="writes Markdown files where the database is: run `memwrap export` on the server side")
    async def export(self, directory: str | Path, *, bank_id: str | None = None) -> builtins.list[Path]:
        """Mental models and observations as Markdown files under `directory`. Returns the files written."""
        ...

    @verb(local_only="COPYs rows into the database: run it where the database is", cli=True)
    async def import_memories(
        self, bank_id: str, memories: ImportSource, *, batch_size: int = 5000, rebuild_vector_index: bool = False
    ) -> int:
        """Bulk-load memories into a bank with COPY: a JSONL file's path, or an iterable of dicts (text, mentioned_at,
        occurred_start/end, document_id, context, metadata, tags, optional `embedding` of the configured model:
        not embedded again). No LLM; importing the same rows again stores nothing twice. Returns how many were new.
        rebuild_vector_index: drop the vector index (every bank's) for the load and build it once at the end: for
        a load as big as the store, several times faster; meanwhile semantic recall scans exactly (slower)."""
        ...

    @verb(
        local_only="rewrites every vector where the database is: run `memwrap reembed` on the server side", custom=True
    )
    async def reembed(self, *, batch_size: int = 256) -> int:
        """Re-embed every memory with the configured embedding model. Returns how many were re-embedded."""
        raise NotImplementedError


class MemoryVerbs(RecallVerbs, LearningVerbs, BankFileVerbs, WebhookVerbs, StoreVerbs):
    """Every public verb, typed and documented, its sections in this order. A subclass supplies `_get_engine()`
    (memwrap/async_api.py)."""


in_declared_order(MemoryVerbs)  # VERBS lists them as MemoryVerbs does, whatever order their modules loaded in
