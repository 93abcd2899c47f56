"""OpenTelemetry spans for the memory steps, through `opentelemetry-api` only.

No SDK is imported: an app that configures a tracer provider (its own, or Logfire's, Langfuse's, LangSmith's
OTel setup) sees memwrap's spans inside its own traces; without one the API hands out non-recording spans, and
without `opentelemetry-api` installed at all `span()` is an empty context manager.

Attributes describe the work, never its content: bank ids, counts, token figures, arms, timings. Memory text
and queries are left out, unless MEMWRAP_TRACE_CONTENT=1 asks for the query (`content_attributes()`).
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Awaitable, Callable, Iterator, Mapping
from typing import Any, ParamSpec, TypeVar

try:  # an optional dependency: memwrap works the same without it
    from opentelemetry import trace as _otel_trace
    from opentelemetry.trace import Status, StatusCode
except ImportError:  # pragma: no cover - exercised in environments without opentelemetry-api
    _otel_trace = None  # type: ignore[assignment]  # optional package: None stands for its absence

INSTRUMENTATION_NAME = "memwrap"
PREFIX = "memwrap."

P = ParamSpec("P")
R = TypeVar("R")

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
        name = key if key.startswith(PREFIX) or "." in key else PREFIX + key
        if isinstance(value, (str, bool, int, float)):
            out[name] = value
        elif isinstance(value, (list, tuple)):
            out[name] = [str(v) for v in value]
        else:
            out[name] = str(value)
    return out


@contextlib.contextmanager
def span(name: str, **attributes: Any) -> Iterator[Any]:
    """`with span("recall", bank_id=...) as s: ... s.set_attribute(...)`. Errors are recorded and re-raised."""
    tracer = _tracer()
    if tracer is None:
        yield _NO_SPAN
        return
    with tracer.start_as_current_span(PREFIX + name, record_exception=True, set_status_on_exception=True) as current:
        if current.is_recording() and attributes:
            current.set_attributes(_clean(attributes))
        yield current


def set_attributes(current: Any, **attributes: Any) -> None:
    """Add attributes to a span from `span()`, computing nothing when it does not record."""
    if current.is_recording():
        current.set_attributes(_clean(attributes))


def mark_error(current: Any, message: str) -> None:
    if current.is_recording() and _otel_trace is not None:
        current.set_status(Status(StatusCode.ERROR, message))


def content_attributes(**values: str) -> dict[str, str]:
    """Attributes that carry user content (the query): only with MEMWRAP_TRACE_CONTENT=1."""
    if os.environ.get("MEMWRAP_TRACE_CONTENT", "").strip().lower() not in ("1", "true", "yes", "on"):
        return {}
    return {key: value[:1000] for key, value in values.items()}


def traced(
    name: str, attributes: Callable[..., Mapping[str, Any]] | None = None
) -> Callable[[Callable[P, Awaitable[R]]], Callable[P, Awaitable[R]]]:
    """Decorate an async function with a span; `attributes(*args, **kwargs)` names what it works on."""

    def decorate(fn: Callable[P, Awaitable[R]]) -> Callable[P, Awaitable[R]]:
        @functools.wraps(fn)
        async def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
            if _otel_trace is None:
                return await fn(*args, **kwargs)
            extra: Mapping[str, Any] = {}
            if attributes is not None:
                with contextlib.suppress(Exception):  # a bad argument is the function's to report, not ours
                    extra = attributes(*args, **kwargs)
            with span(name, **extra):
                return await fn(*args, **kwargs)

        return wrapper

    return decorate


__all__ = ["content_attributes", "mark_error", "set_attributes", "span", "traced"]
