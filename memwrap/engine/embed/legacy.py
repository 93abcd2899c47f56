"""Homes embedded with the English model before multilingual-e5-small became the default (issue 38).

A store's vectors are one model's (store_meta 'embedding_model'). A home built with all-MiniLM-L6-v2 when it was
the default, opened by a memwrap whose default is multilingual-e5-small, would otherwise refuse to open
(EmbeddingModelMismatchError) and every wrapped call would fail open, recalling nothing. So when the user chose
no model (MEMWRAP_EMBEDDING_MODEL unset, no `embedding_model=`) and the store holds the old default's vectors,
the engine keeps that model for this home and says once, on the `memwrap.embed` logger (a warning: Python prints
it on stderr when the app configured no logging), what to run: `memwrap reembed` moves every memory to the
default in place, with a progress bar, and the next start uses the default. A model the user named is never
overridden: a mismatch then is the user's to settle, and Store.open says how.
"""

from __future__ import annotations

import logging

import asyncpg

from memwrap.config import DEFAULT_EMBEDDING_MODEL, ENGLISH_EMBEDDING_MODEL, Settings

log = logging.getLogger("memwrap.embed")

# Models that were memwrap's default once, which a home may hold without anyone having chosen them.
FORMER_DEFAULTS = frozenset({ENGLISH_EMBEDDING_MODEL})
_told: set[str] = set()  # homes (database URLs) already told, once per process


async def stored_model(url: str) -> str | None:
    """store_meta's embedding model, or None for a new database."""
    conn = await asyncpg.connect(url)
    try:
        if not await conn.fetchval("SELECT to_regclass('store_meta') IS NOT NULL"):
            return None
        value: str | None = await conn.fetchval("SELECT value FROM store_meta WHERE key = 'embedding_model'")
        return value
    finally:
        await conn.close()


def model_kept(settings: Settings, stored: str | None) -> str | None:
    """The former default this home keeps in place of the default model, or None (the settings' model applies)."""
    if stored is None or "embedding_model" in settings.model_fields_set:
        return None
    if settings.embedding_model != DEFAULT_EMBEDDING_MODEL or stored not in FORMER_DEFAULTS:
        return None
    return stored


async def settings_for_home(url: str, settings: Settings) -> tuple[Settings, str | None]:
    """The settings to open this home with, and the former default kept (None: `settings` unchanged)."""
    kept = model_kept(settings, await stored_model(url))
    if kept is None:
        return settings, None
    if url not in _told:
        _told.add(url)
        log.warning(
            "memwrap: this home's memories were embedded with %s, memwrap's English-only default before "
            "%s (every language) became the default; recall keeps using %s here. Run `memwrap reembed` once "
            "to move them (about 40 memories a second on two cores, with a progress bar); questions in Chinese, "
            "Spanish or another language than their memory need it. MEMWRAP_EMBEDDING_MODEL=%s keeps the old "
            "model without this notice.",
            kept,
            DEFAULT_EMBEDDING_MODEL,
            kept,
            kept,
        )
    return settings.model_copy(update={"embedding_model": kept}), kept
