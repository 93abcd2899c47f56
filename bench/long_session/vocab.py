"""Word pools for the long technical sessions: projects, libraries, paths, identifiers, prose and code pieces.

Every pool is wide on purpose: a statement and the question about it are drawn from different wordings, so a
question rarely shares its rare words with its evidence (no trivial keyword match), and filler reuses the same
libraries and paths as the facts (distractors that do share words).
"""

from __future__ import annotations

PROJECTS = (
    "ledgerline", "quillmark", "tidewatch", "harborctl", "fernbook", "pinecast", "graniteq", "orbitdesk",
    "saltpeak", "mosaicdb", "driftwood-api", "lanternhub", "copperleaf", "northwind-sync", "emberlog",
)  # fmt: skip

COMPONENTS = (
    "search service", "billing worker", "ingest pipeline", "auth gateway", "notification fan-out",
    "report exporter", "sync daemon", "admin dashboard", "rate limiter", "webhook dispatcher", "job scheduler",
    "thumbnail renderer", "audit trail", "feature-flag service", "CSV importer", "GraphQL layer",
)  # fmt: skip

LIBRARIES = (
    "httpx", "requests", "pydantic", "SQLAlchemy", "alembic", "FastAPI", "Flask", "Django", "celery", "rq",
    "dramatiq", "redis-py", "asyncpg", "psycopg", "orjson", "ujson", "structlog", "loguru", "pytest",
    "hypothesis", "tenacity", "click", "typer", "rich", "numpy", "pandas", "polars", "pyarrow", "boto3",
    "uvicorn", "gunicorn", "aiohttp", "attrs", "marshmallow", "jinja2", "sentry-sdk", "prometheus-client",
    "opentelemetry", "msgpack", "cachetools", "APScheduler", "black", "ruff", "mypy", "isort", "tox", "nox",
)  # fmt: skip

DIRS = ("src", "app", "services", "lib", "internal", "pkg", "core", "workers", "api", "tools", "scripts")
MODULES = (
    "handlers", "models", "queries", "cache", "settings", "retry", "serializers", "routes", "tasks", "schema",
    "client", "pagination", "limits", "auth", "tokens", "exporter", "importer", "health", "metrics", "events",
)  # fmt: skip
VERBS = (
    "load", "parse", "fetch", "build", "render", "sync", "merge", "flush", "retry", "validate", "resolve",
    "normalise", "encode", "decode", "schedule", "dispatch", "collect", "refresh", "compact", "archive",
)  # fmt: skip
NOUNS = (
    "invoice", "batch", "cursor", "payload", "token", "session", "record", "bucket", "report", "snapshot",
    "event", "ledger", "manifest", "account", "webhook", "receipt", "profile", "shard", "digest", "quota",
)  # fmt: skip
CLASS_SUFFIXES = ("Loader", "Client", "Manager", "Store", "Worker", "Service", "Handler", "Builder", "Cache")
ERRORS = (
    "KeyError", "TimeoutError", "ConnectionResetError", "IntegrityError", "ValidationError", "RecursionError",
    "UnicodeDecodeError", "OperationalError", "PermissionError", "JSONDecodeError", "AttributeError",
)  # fmt: skip
LANGS = ("python", "sql", "bash", "yaml", "typescript", "toml")

USER_OPENERS = (
    "Quick one:", "Hey,", "Ok next thing.", "Morning!", "Back again.", "Another question:", "So,",
    "Following up on yesterday:", "Hmm.", "Can you help with something?", "Got a weird one.", "",
)  # fmt: skip
USER_REQUESTS = (
    "can you write a function that {verb}s the {noun} list and returns the ones that changed?",
    "why does `{func}` in `{path}` raise {error} when the {noun} is empty?",
    "please refactor `{cls}` so it does not hold a connection open between calls.",
    "I need a small CLI command to {verb} every {noun} for a given account id.",
    "review this query, it feels slow on large {noun} tables:",
    "how would you test `{func}` without hitting the network?",
    "write a migration that adds an index on {noun}_id to the {noun}s table.",
    "explain what this traceback means, I get it from `{path}` on startup.",
    "can you add retries with backoff around the call to the {lib} client?",
    "give me a docker-compose service for the {component} with healthchecks.",
    "how do I stream a large {noun} export without loading it all in memory?",
    "what's the cleanest way to share settings between `{path}` and the workers?",
    "make `{func}` async, it is called from the {component}.",
    "can you sketch a cache for `{func}` results keyed by {noun} id?",
    "write a pytest fixture that gives me a temporary {noun} store.",
)  # fmt: skip
ASSISTANT_OPENERS = (
    "Sure. Here is one way to do it.", "Good question: the cause is subtle.", "Here's a version that should work.",
    "Let me walk through it.", "A few things are going on here.", "This is a common pitfall.",
    "I'd structure it like this.", "Short answer: yes, with one caveat.", "Here is a minimal approach.",
)  # fmt: skip
EXPLANATIONS = (
    "The {noun} objects are created per request, so `{func}` sees a fresh copy every time and never the cached one.",
    "Because {lib} opens a new connection on each call, the pool is exhausted under load and requests queue up.",
    "The loop in `{path}` builds the whole list before yielding, which is why memory grows with the {noun} count.",
    "{error} happens when the {noun} has no `{field}` key; older rows were written before that field existed.",
    "Keeping the transaction open across the network call holds row locks for the whole round trip.",
    "A generator keeps only one {noun} in memory at a time, and the caller can stop early.",
    "The fixture scope matters: a session-scoped fixture shares state between tests, a function scope does not.",
    "Backoff with jitter avoids every worker retrying in lockstep after an outage of the {component}.",
    "Indexing `{noun}_id` turns the sequential scan into an index scan; check it with EXPLAIN ANALYZE.",
    "The {component} calls `{func}` from several threads, so the module-level dict needs a lock or a copy.",
    "Pinning {lib} avoids surprises, but keep the lock file in the repository so CI installs the same versions.",
    "Moving the parsing into `{path}` keeps the handler thin and makes it testable without the web framework.",
    "Note that `{field}` may be null for {noun}s imported from the legacy system, so guard for it.",
    "Passing the session explicitly instead of using a global makes the dependency visible and easy to replace.",
    "The default timeout of {lib} is infinite, so a hung upstream blocks the worker forever.",
)  # fmt: skip
BULLETS = (
    "keep `{func}` pure and move the I/O to the caller",
    "log the {noun} id on every failure so it can be replayed",
    "add a unit test for the empty {noun} case",
    "set an explicit timeout on the {lib} client",
    "document the new flag in `docs/{module}.md`",
    "batch the writes in groups of {n}",
    "return early when the {noun} is already up to date",
    "measure before and after with the existing benchmark",
    "make the retry count configurable via `{env}`",
    "avoid catching bare `Exception` in `{path}`",
)  # fmt: skip
FIELDS = ("status", "created_at", "owner_id", "amount", "checksum", "region", "version", "payload", "retries")
ENV_VARS = ("APP_ENV", "LOG_LEVEL", "DB_POOL_SIZE", "WORKER_CONCURRENCY", "CACHE_TTL", "FEATURE_FLAGS_URL")

CHITCHAT_USER = (
    "thanks, that worked!", "perfect, merged it.", "ok that makes sense.", "brb, grabbing lunch.",
    "nice, the tests pass now.", "cool. let me try it tomorrow.", "ugh, meetings all afternoon.",
    "good catch, I missed that.", "I'll ping you when CI is green.", "alright, calling it a day.",
)  # fmt: skip
CHITCHAT_ASSISTANT = (
    "Glad it helped. Ping me if anything else comes up.", "Great! Good luck with the rest of the change.",
    "Enjoy your lunch.", "Sounds good. The next step would be adding a test for the edge case.",
    "Happy to help. Have a good evening.", "Makes sense. I'll be here when you're back.",
)  # fmt: skip

PYTHON_SNIPPETS = (
    """def {func}({noun}s: list[dict], *, limit: int = {n}) -> list[dict]:
    \"\"\"Return the {noun}s whose {field} changed, at most `limit` of them.\"\"\"
    changed = []
    for {noun} in {noun}s:
        if {noun}.get("{field}") != {noun}.get("previous_{field}"):
            changed.append({noun})
        if len(changed) >= limit:
            break
    return changed""",
    """import {libmod}


class {cls}:
    def __init__(self, url: str, timeout: float = {t}) -> None:
        self.url = url
        self.timeout = timeout
        self._cache: dict[str, bytes] = {{}}

    def {func}(self, key: str) -> bytes:
        if key in self._cache:
            return self._cache[key]
        data = self._get(f"{{self.url}}/{noun}s/{{key}}")
        self._cache[key] = data
        return data""",
    """@pytest.fixture
def {noun}_store(tmp_path):
    store = {cls}(tmp_path / "{noun}s.db")
    store.create_schema()
    yield store
    store.close()


def test_{func}_empty({noun}_store):
    assert {noun}_store.{func}([]) == []""",
    """async def {func}(session, {noun}_id: int) -> None:
    for attempt in range({n}):
        try:
            await session.execute(UPDATE_{upper}, {noun}_id)
            return
        except {error}:
            await asyncio.sleep(0.1 * 2 ** attempt)
    raise RuntimeError(f"gave up on {noun} {{{noun}_id}}")""",
    """def {func}(path: Path) -> Iterator[dict]:
    with path.open(encoding="utf-8") as fh:
        for line_number, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                yield json.loads(line)
            except json.JSONDecodeError as exc:
                log.warning("skipping line %d of %s: %s", line_number, path, exc)""",
)  # fmt: skip
OTHER_SNIPPETS = {
    "sql": """SELECT {noun}_id, count(*) AS n, max(created_at) AS last_seen
FROM {noun}s
WHERE status = 'pending'
  AND created_at > now() - interval '{n} days'
GROUP BY {noun}_id
ORDER BY n DESC
LIMIT 50;""",
    "bash": """set -euo pipefail
export {env}=staging
python -m {project}.{module} {verb} --since "$(date -d '-{n} days' +%F)"
pytest -q tests/test_{module}.py -k {func}""",
    "yaml": """services:
  {module}:
    image: {project}/{module}:latest
    environment:
      - {env}=production
    healthcheck:
      test: ["CMD", "curl", "-f", "http://localhost:{port}/health"]
      interval: {n}s""",
    "typescript": """export async function {func}({noun}Id: string): Promise<{cls}> {{
  const res = await fetch(`/api/{noun}s/${{{noun}Id}}`, {{ signal: AbortSignal.timeout({t}000) }});
  if (!res.ok) throw new Error(`{func} failed: ${{res.status}}`);
  return (await res.json()) as {cls};
}}""",
    "toml": """[tool.{module}]
retries = {n}
timeout_seconds = {t}
backends = ["{lib}", "local"]""",
}
