"""The connection pool and the schema: versioned SQL migrations applied at start-up under an advisory lock."""

from __future__ import annotations

import asyncio
import json
import re
from importlib import resources
from pathlib import Path

import asyncpg
from pgvector.asyncpg import register_vector

from memwrap.errors import EmbeddingModelMismatchError, StoreError
from memwrap.store.pg_types import Connection
from memwrap.store.planner_stats import PlannerStats
from memwrap.store.vector_index import ensure_vector_index

# Any fixed number works; every memwrap process on a database must agree on it.
_MIGRATION_LOCK_KEY = 0x6D656D77  # "memw"

_MIGRATION_FILE = re.compile(r"^(\d{4})_[\w-]+\.sql$")

# Seconds a new connection may take (asyncpg's default is 60): a database that accepts the TCP connection but
# never answers (a frozen host) then costs a pool refill 10 s, not a minute. The server notices such a database
# sooner still, by its own probe (memwrap_server/database.py).
CONNECT_TIMEOUT = 10.0


def _migrations() -> list[tuple[int, str, str]]:
    folder = resources.files("memwrap.store") / "migrations"
    found = []
    for entry in folder.iterdir():
        match = _MIGRATION_FILE.match(entry.name)
        if match:
            found.append((int(match.group(1)), entry.name, entry.read_text(encoding="utf-8")))
    return sorted(found)


# Session settings, given at connect time: the pool's reset on release (RESET ALL) would undo a SET.
SERVER_SETTINGS = {
    # Filtered vector search (WHERE bank_id = ...) keeps scanning the HNSW graph until it has enough rows.
    "hnsw.iterative_scan": "relaxed_order",
    "hnsw.ef_search": "100",
    # Recall's plans depend on the values (bank size, term rarity); a generic cached plan was 7x slower.
    "plan_cache_mode": "force_custom_plan",
}


async def _init_connection(conn: asyncpg.Connection) -> None:  # the pool's own connection, not a proxy
    await register_vector(conn)
    await conn.set_type_codec("jsonb", encoder=_json_dumps, decoder=_json_loads, schema="pg_catalog")


def _json_dumps(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def _json_loads(value: str) -> object:
    return json.loads(value)


class Store:
    """A pool of connections to a migrated memwrap database."""

    def __init__(self, pool: asyncpg.Pool, url: str) -> None:
        self.pool = pool
        self.url = url
        self.planner_stats = PlannerStats(pool)  # writers report rows; it re-ANALYZEs after bulk loads
        self.index_memory_cap: int | None = None  # what a vector index build may take (embedded server only)

    @classmethod
    async def open(
        cls,
        url: str,
        *,
        embedding_model: str,
        embedding_dim: int,
        allow_model_change: bool = False,
        min_size: int = 1,
        max_size: int = 8,
        index_memory_cap: int | None = None,
    ) -> Store:
        """Migrate, connect, check the embedding model, and build the vector index if a bulk load died without
        building it again (`index_memory_cap`: see vector_index.ensure_vector_index)."""
        try:
            await migrate(url, embedding_model=embedding_model, embedding_dim=embedding_dim)
            pool = await asyncpg.create_pool(
                url,
                min_size=min_size,
                max_size=max_size,
                init=_init_connection,
                server_settings=SERVER_SETTINGS,
                timeout=CONNECT_TIMEOUT,
            )
        except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
            raise StoreError(f"Could not open the memwrap database at {_redact_url(url)}: {exc}") from exc
        store = cls(pool, url)
        store.index_memory_cap = index_memory_cap
        if not allow_model_change:
            await store.check_embedding_model(embedding_model, embedding_dim)
            await ensure_vector_index(pool, memory_cap=index_memory_cap, unfinished=True)
        return store

    async def check_embedding_model(self, model: str, dim: int) -> None:
        """`model` is an embedding space (config.embedding_space): the model's name, and its recipe if it has one."""
        stored = await self.get_meta("embedding_model")
        stored_dim = await self.get_meta("embedding_dim")
        if stored is not None and stored != model and stored.split("@")[0] == model.split("@")[0]:
            # The same model, embedded another way (config.EMBEDDING_RECIPES): old and new vectors do not mix.
            raise EmbeddingModelMismatchError(
                f"This store's vectors were made with an earlier recipe of {model.split('@')[0]!r} ({stored!r}; "
                f"this memwrap makes {model!r}). Run `memwrap reembed` once to re-embed every memory in place "
                "(about 40 memories a second on two cores); nothing else changes."
            )
        if stored is not None and (stored != model or stored_dim != str(dim)):
            stored_name, name = stored.split("@")[0], model.split("@")[0]  # names as users set them
            raise EmbeddingModelMismatchError(
                f"This store was built with the embedding model {stored_name!r} ({stored_dim} dims), but "
                f"{name!r} ({dim} dims) is configured. Run `memwrap reembed` to re-embed every memory in place "
                f"with {name!r}, or set MEMWRAP_EMBEDDING_MODEL={stored_name!r} to keep using the old one."
            )

    async def get_meta(self, key: str) -> str | None:
        return await self.pool.fetchval("SELECT value FROM store_meta WHERE key = $1", key)

    async def set_meta(self, key: str, value: str, conn: Connection | None = None) -> None:
        sql = "INSERT INTO store_meta (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = $2"
        await (conn or self.pool).execute(sql, key, value)

    async def close(self, timeout: float = 10.0) -> None:
        """Close the pool gracefully; connections that do not close within `timeout` (a hung server) are cut."""
        await self.planner_stats.close()
        try:
            await asyncio.wait_for(self.pool.close(), timeout)
        except TimeoutError:
            self.pool.terminate()


async def migrate(url: str, *, embedding_model: str, embedding_dim: int, upto: int | None = None) -> None:
    """Apply the migrations this database lacks (those up to version `upto` only, when given: the schema of an
    older release, which the migration tests start from)."""
    conn = await asyncpg.connect(url)
    try:
        # Several processes may start at once on one database: one migrates, the others wait here.
        await conn.execute("SELECT pg_advisory_lock($1)", _MIGRATION_LOCK_KEY)
        try:
            await conn.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations ("
                " version int PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())"
            )
            applied = {r["version"] for r in await conn.fetch("SELECT version FROM schema_migrations")}
            for version, name, sql in _migrations():
                if version in applied or (upto is not None and version > upto):
                    continue
                async with conn.transaction():
                    await conn.execute(sql.replace("{embedding_dim}", str(int(embedding_dim))))
                    await conn.execute("INSERT INTO schema_migrations (version, name) VALUES ($1, $2)", version, name)
                    if version == 1:
                        await conn.execute(
                            "INSERT INTO store_meta (key, value) VALUES ('embedding_model', $1), ('embedding_dim', $2)",
                            embedding_model,
                            str(embedding_dim),
                        )
        finally:
            await conn.execute("SELECT pg_advisory_unlock($1)", _MIGRATION_LOCK_KEY)
    finally:
        await conn.close()


def _redact_url(url: str) -> str:
    return re.sub(r"(://[^:/@]+:)[^@]+@", r"\1***@", url)


def migrations_folder() -> Path:
    return Path(str(resources.files("memwrap.store") / "migrations"))
