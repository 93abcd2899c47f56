"""The bounds of every number a bank's caller picks, declared once (memwrap/verbs.py declares them on the verbs,
the engine checks them, REST and MCP advertise them)."""

from __future__ import annotations

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
# The longest extraction instructions a bank holds (memwrap/engine/banks/instructions.py): a paragraph or two of
# what to keep and what to ignore, not a prompt of its own; every extraction and consolidation call carries them.
MAX_EXTRACTION_INSTRUCTIONS_CHARS = 2000
# The entity types a bank may declare for extraction (`entity_types`, memwrap/engine/banks/entity_types.py): each
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
