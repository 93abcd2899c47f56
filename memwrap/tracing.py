"""OpenTelemetry spans for the memory steps, through `opentelemetry-api` only.

No SDK is imported: an app that configures a tracer provider (its own, or Logfire's, Langfuse's, LangSmith's
OTel setup) sees memwrap's spans inside its own traces; without one the API hands out non-recording spans, and
without `opentelemetry-api` installed at all `span()` is an empty context manager.

Attributes describe the work, never its content: bank ids, counts, token figures, arms, timings. Memory text
and queries are left out unless content capture is asked for: the GenAI conventions' standard switch
OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT (true, SPAN_ONLY or SPAN_AND_EVENT), or memwrap's own
MEMWRAP_TRACE_CONTENT, which decides when set (1 on, 0 off whatever the standard switch says). Then the query goes
on the memory search spans as `gen_ai.memory.query.text` (`memory_query()`), and on reflect's as `memwrap.query`.

Names: every attribute of ours is under `memwrap.`; the OpenTelemetry GenAI semantic conventions' own
attributes (`gen_ai.*`, with `server.*` and `error.*`) keep their names. A memory operation's span (recall:
`search_memory`; retain: `upsert_memory`; update and invalidate: `update_memory`; delete: `delete_memory`) is
named as the conventions say, `{gen_ai.operation.name} {gen_ai.memory.store.id}` (the bank; `search_memory a,b`
for a recall over two), with `gen_ai.provider.name` "memwrap", so a backend that groups by the spec's names sees
memwrap; `memwrap.step` says which step of ours it is (`recall`, `wrapper.recall`, `invalidate`, ...). The
wrapper's recall is the app's call to its memory (kind CLIENT, as a database client span); the engine's, inside
it when the engine is embedded, is INTERNAL. Other steps keep memwrap's names (`memwrap.recall.arm`,
`memwrap.reflect`, `memwrap.job`), and the LLM calls are the conventions' `chat {model}` spans.

What is whose: the engine's warm-up traces nothing (`quiet()`), and background work (the job worker) starts
traces of its own (`background()`), only for banks this process has served in the foreground: an app that
embeds the engine does not see the consolidation of a bank another process retained into.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
from collections.abc import Iterable, Iterator, Mapping
from typing import Any
from urllib.parse import urlsplit

try:  # an optional dependency: memwrap works the same without it
    from opentelemetry import context as _otel_context
    from opentelemetry import trace as _otel_trace
    from opentelemetry.trace import SpanKind, Status, StatusCode
except ImportError:  # pragma: no cover - exercised in environments without opentelemetry-api
    _otel_trace = None  # type: ignore[assignment]  # optional package: None stands for its absence
    _otel_context = None  # type: ignore[assignment]

INSTRUMENTATION_NAME = "memwrap"
PREFIX = "memwrap."
PROVIDER = "memwrap"  # gen_ai.provider.name of memwrap's memory operations
# The GenAI conventions' memory operations (gen_ai.operation.name): spans doing one are named after it.
MEMORY_OPERATIONS = frozenset(
    {
        "create_memory",
        "search_memory",
        "update_memory",
        "upsert_memory",
        "delete_memory",
        "create_memory_store",
        "delete_memory_store",
    }
)
CAPTURE_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"  # the conventions' content switch
CONTENT_ENV = "MEMWRAP_TRACE_CONTENT"  # memwrap's own: decides when set
MAX_CONTENT_CHARS = 1000
# Namespaces the OpenTelemetry semantic conventions define: their attributes keep their own names.
CONVENTION_PREFIXES = ("gen_ai.", "server.", "error.")
# OpenTelemetry's own flag (opentelemetry.context) that instrumentations honour: set during the warm-up so
# that asyncpg/httpx instrumentation stays quiet too.
_SUPPRESS_KEY = "suppress_instrumentation"
# MEMWRAP_TRACE_BACKGROUND: served (default) | all | none.
BACKGROUND_ENV = "MEMWRAP_TRACE_BACKGROUND"
_SERVED_CAP = 100_000  # banks remembered as served; past it, new ones' background work is traced no more

_quiet: contextvars.ContextVar[bool] = contextvars.ContextVar("memwrap_trace_quiet", default=False)
_in_background: contextvars.ContextVar[bool] = contextvars.ContextVar("memwrap_trace_background", default=False)
_served: set[str] = set()

AttributeValue = str | bool | int | float | list[str] | list[int] | list[float]


class _NoSpan:
    """Stands in for a span when opentelemetry-api is not installed."""

    def set_attribute(self, key: str, value: Any) -> None:
        pass

    def set_attributes(self, attributes: Mapping[str, Any]) -> None:
        pass

    def is_recording(self) -> bool:
        return False


_NO_SPAN = _NoSpan()


def _tracer() -> Any:
    # Looked up on every span (cheap: a global read and a proxy) so a provider set after import is honoured.
    return _otel_trace.get_tracer(INSTRUMENTATION_NAME) if _otel_trace is not None else None


def _clean(attributes: Mapping[str, Any]) -> dict[str, AttributeValue]:
    """OTel takes str/bool/int/float and homogeneous lists of them; None is dropped, keys get our prefix."""
    out: dict[str, AttributeValue] = {}
    for key, value in attributes.items():
        if value is None:
            continue
        name = key if key.startswith(PREFIX) or key.startswith(CONVENTION_PREFIXES) else PREFIX + key
        if isinstance(value, (str, bool, int, float)):
            out[name] = value
        elif isinstance(value, (list, tuple)):
            out[name] = [str(v) for v in value]
        else:
            out[name] = str(value)
    return out


def _mark_served(bank_id: Any) -> None:
    """A foreground span that names banks: this process serves them, so their background work is traced."""
    if _in_background.get() or bank_id is None or len(_served) >= _SERVED_CAP:
        return
    if isinstance(bank_id, str):
        _served.add(bank_id)
    elif isinstance(bank_id, (list, tuple)):
        _served.update(b for b in bank_id if isinstance(b, str))


def served(bank_id: str) -> bool:
    return bank_id in _served


def span_name(name: str, attributes: Mapping[str, Any]) -> str:
    """A memory operation's span is `{gen_ai.operation.name} {gen_ai.memory.store.id}` (the conventions' name);
    any other is memwrap's own, `memwrap.<name>`."""
    operation = attributes.get("gen_ai.operation.name")
    if operation not in MEMORY_OPERATIONS:
        return PREFIX + name
    store = attributes.get("gen_ai.memory.store.id")
    return f"{operation} {store}" if store else str(operation)


@contextlib.contextmanager
def span(name: str, **attributes: Any) -> Iterator[Any]:
    """`with span("recall", bank_id=...) as s: ... s.set_attribute(...)`. Errors are recorded and re-raised.
    A memory operation (attributes from `memory_operation()`) is named as the GenAI conventions say, its
    `memwrap.step` the name given."""
    with _span(name, attributes, client=False) as current:
        yield current


@contextlib.contextmanager
def client_span(name: str, **attributes: Any) -> Iterator[Any]:
    """As `span`, of kind CLIENT: the app's call to its memory (the wrapper's recall)."""
    with _span(name, attributes, client=True) as current:
        yield current


@contextlib.contextmanager
def _span(name: str, attributes: Mapping[str, Any], *, client: bool) -> Iterator[Any]:
    tracer = _tracer()
    if tracer is None or _quiet.get():
        yield _NO_SPAN
        return
    _mark_served(attributes.get("bank_id"))
    full_name = span_name(name, attributes)
    if not full_name.startswith(PREFIX):
        attributes = {**attributes, "step": name}
    with tracer.start_as_current_span(
        full_name,
        kind=SpanKind.CLIENT if client else SpanKind.INTERNAL,
        attributes=_clean(attributes),  # at creation: samplers read the operation and the store
        record_exception=True,
        set_status_on_exception=True,
    ) as current:
        yield current


@contextlib.contextmanager
def quiet() -> Iterator[None]:
    """No spans inside, memwrap's or (through OpenTelemetry's suppression flag) instrumented libraries': for
    work no user asked for, such as the engine's warm-up."""
    token = _quiet.set(True)
    otel_token = None
    if _otel_context is not None:
        otel_token = _otel_context.attach(_otel_context.set_value(_SUPPRESS_KEY, True))
    try:
        yield
    finally:
        if otel_token is not None and _otel_context is not None:
            _otel_context.detach(otel_token)
        _quiet.reset(token)


_background_default = "served"


def trace_every_bank_in_background() -> None:
    """For processes whose background work is their point: `memwrap worker` and the sidecar (`memwrap serve`),
    whose exporter is the operator's. MEMWRAP_TRACE_BACKGROUND still decides when set."""
    global _background_default
    _background_default = "all"


def _background_policy() -> str:
    value = os.environ.get(BACKGROUND_ENV, "").strip().lower()
    return value if value in ("all", "none", "served") else _background_default


@contextlib.contextmanager
def background(name: str, bank_id: str | None, **attributes: Any) -> Iterator[Any]:
    """A span for background work (a queued job): the root of a trace of its own, never a child of whatever
    happened to be current. Traced only for a bank this process served in the foreground (retain, recall, ...),
    or every bank with MEMWRAP_TRACE_BACKGROUND=all; =none traces no background work."""
    policy = _background_policy()
    wanted = policy == "all" or (policy == "served" and bank_id is not None and served(bank_id))
    tracer = _tracer()
    background_token = _in_background.set(True)
    try:
        if tracer is None or _quiet.get() or not wanted or _otel_context is None:
            with quiet():
                yield _NO_SPAN
            return
        with tracer.start_as_current_span(
            PREFIX + name,
            context=_otel_context.Context(),  # an empty context: a new trace
            record_exception=True,
            set_status_on_exception=True,
        ) as current:
            if current.is_recording():
                current.set_attributes(_clean({"bank_id": bank_id, **attributes}))
            yield current
    finally:
        _in_background.reset(background_token)


def memory_operation(operation: str, bank_id: str | Iterable[str] | None) -> dict[str, AttributeValue]:
    """The GenAI conventions' memory attributes: `gen_ai.operation.name` (search_memory, upsert_memory,
    update_memory, delete_memory), and the store — the bank (banks, comma-joined, for a recall over several)."""
    store = bank_id if isinstance(bank_id, str) or bank_id is None else ",".join(bank_id)
    attributes: dict[str, AttributeValue] = {"gen_ai.operation.name": operation, "gen_ai.provider.name": PROVIDER}
    if store:
        attributes["gen_ai.memory.store.id"] = store
    return attributes


def memory_record(operation: str, bank_id: Any, memory_id: Any) -> dict[str, Any]:
    """A span's attributes for an operation on one memory (update, invalidate, delete): its bank and id (an id
    is no content; it names nothing the bank holds)."""
    return {
        "bank_id": bank_id,
        **memory_operation(operation, bank_id if isinstance(bank_id, str) else None),
        "gen_ai.memory.record.id": str(memory_id)[:64],  # as given: validation comes after
        "gen_ai.memory.record.count": 1,
    }


@contextlib.contextmanager
def llm_call(provider: str, model: str, endpoint: str, role: str, max_tokens: int | None) -> Iterator[Any]:
    """One LLM request of the engine's (extraction, consolidation, reflect) as the GenAI conventions'
    inference span: `chat {model}`, kind CLIENT, retries inside it. `llm_result()` adds the response."""
    tracer = _tracer()
    if tracer is None or _quiet.get():
        yield _NO_SPAN
        return
    attributes: dict[str, Any] = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": provider,
        "gen_ai.request.model": model,
        "gen_ai.request.max_tokens": max_tokens,
        "llm_role": role,
    }
    where = urlsplit(endpoint) if endpoint else None
    if where is not None and where.hostname:
        attributes["server.address"] = where.hostname
        attributes["server.port"] = where.port or (443 if where.scheme == "https" else 80)
    with tracer.start_as_current_span(
        f"chat {model}",
        kind=SpanKind.CLIENT,
        attributes=_clean(attributes),  # at creation: samplers read the operation, provider and model
        record_exception=True,
        set_status_on_exception=True,
    ) as current:
        try:
            yield current
        except BaseException as exc:
            if current.is_recording():
                current.set_attribute("error.type", type(exc).__name__)
            raise


def llm_result(
    current: Any,
    *,
    response_model: str,
    input_tokens: int,
    output_tokens: int,
    cached_tokens: int,
    finish_reason: str,
) -> None:
    if current.is_recording():
        current.set_attributes(
            _clean(
                {
                    "gen_ai.response.model": response_model or None,
                    "gen_ai.usage.input_tokens": input_tokens,
                    "gen_ai.usage.output_tokens": output_tokens,
                    "gen_ai.usage.cache_read.input_tokens": cached_tokens or None,
                    "gen_ai.response.finish_reasons": [finish_reason],
                }
            )
        )


@contextlib.contextmanager
def embeddings(model: str, texts: int) -> Iterator[Any]:
    """The embedding model's run, as the GenAI conventions' embeddings span (in-process: kind INTERNAL)."""
    tracer = _tracer()
    if tracer is None or _quiet.get():
        yield _NO_SPAN
        return
    attributes = {"gen_ai.operation.name": "embeddings", "gen_ai.request.model": model, "texts": texts}
    with tracer.start_as_current_span(
        f"embeddings {model}", attributes=_clean(attributes), record_exception=True, set_status_on_exception=True
    ) as current:
        yield current


def set_attributes(current: Any, **attributes: Any) -> None:
    """Add attributes to a span from `span()`, computing nothing when it does not record."""
    if current.is_recording():
        current.set_attributes(_clean(attributes))


def mark_error(current: Any, message: str) -> None:
    if current.is_recording() and _otel_trace is not None:
        current.set_status(Status(StatusCode.ERROR, message))


def capture_content() -> bool:
    """Whether spans may carry user content: MEMWRAP_TRACE_CONTENT when set, else the GenAI conventions' switch
    (OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: true, or SPAN_ONLY / SPAN_AND_EVENT; EVENT_ONLY and
    NO_CONTENT put nothing on spans)."""
    ours = os.environ.get(CONTENT_ENV, "").strip().lower()
    if ours:
        return ours in ("1", "true", "yes", "on")
    standard = os.environ.get(CAPTURE_ENV, "").strip().lower()
    return standard in ("1", "true", "yes", "on", "span_only", "span_and_event")


def content_attributes(**values: str) -> dict[str, str]:
    """Attributes that carry user content under memwrap's names (reflect's query): only with capture on."""
    if not capture_content():
        return {}
    return {key: value[:MAX_CONTENT_CHARS] for key, value in values.items()}


def memory_query(query: str) -> dict[str, str]:
    """A memory search's query as the conventions' `gen_ai.memory.query.text`: only with capture on."""
    if not capture_content():
        return {}
    return {"gen_ai.memory.query.text": query[:MAX_CONTENT_CHARS]}


def verb_attributes(operation: str, bank_id: Any, memory_id: Any = None, items: Any = None) -> dict[str, Any]:
    """A verb span's attributes: an operation on one memory (`memory_record`), or a retain of `items`."""
    if memory_id is not None:
        return memory_record(operation, bank_id, memory_id)
    return {
        "bank_id": bank_id,
        "items": len(items),
        **memory_operation(operation, bank_id),
        "gen_ai.memory.record.count": len(items),
    }


@contextlib.contextmanager
def verb_span(step: str, operation: str, bank_id: Any, *, memory_id: Any = None, items: Any = None) -> Iterator[Any]:
    """The span of one verb called through the engine's face (memwrap/instrumented_verbs.py, declared with
    `@verb(span=(step, operation))`): named as the GenAI conventions name the memory `operation`, `memwrap.step`
    the step. The arguments are the caller's, unchecked: attributes that cannot be read from them are left out
    (the engine reports a bad argument)."""
    attributes: dict[str, Any] = {}
    with contextlib.suppress(Exception):
        attributes = verb_attributes(operation, bank_id, memory_id, items)
    with span(step, **attributes) as current:
        yield current


__all__ = [
    "background",
    "capture_content",
    "client_span",
    "content_attributes",
    "embeddings",
    "llm_call",
    "llm_result",
    "mark_error",
    "memory_operation",
    "memory_query",
    "memory_record",
    "quiet",
    "served",
    "set_attributes",
    "span",
    "trace_every_bank_in_background",
    "verb_span",
]
