"""Prometheus metrics of one app, in a registry of its own (several apps may live in one test process)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from starlette.types import ASGIApp, Receive, Scope, Send


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "memwrap_http_requests", "HTTP requests", ["method", "route", "status"], registry=self.registry
        )
        self.latency = Histogram(
            "memwrap_http_request_seconds",
            "HTTP request latency",
            ["method", "route"],
            registry=self.registry,
            buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60),
        )
        self.inflight = Gauge("memwrap_http_requests_in_flight", "Requests being served", registry=self.registry)
        self.events = Counter("memwrap_events", "Memory operations", ["event"], registry=self.registry)

    def count(self, event: str, amount: int = 1) -> None:
        self.events.labels(event).inc(amount)

    def add_stats_source(self, name: str, read: Callable[[], dict[str, Any]]) -> None:
        """Expose a dict of counters (e.g. the proxy's wrapper Stats) as memwrap_<name>_<key>_total."""
        self.registry.register(_StatsCollector(name, read))

    def render(self) -> tuple[bytes, str]:
        return generate_latest(self.registry), CONTENT_TYPE_LATEST


class _StatsCollector:
    def __init__(self, name: str, read: Callable[[], dict[str, Any]]) -> None:
        self.name, self.read = name, read

    def collect(self) -> Iterator[CounterMetricFamily]:
        for key, value in self.read().items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                yield CounterMetricFamily(f"memwrap_{self.name}_{key}", f"{self.name} {key}", value=value)

    def describe(self) -> list[Any]:
        return []


class MetricsMiddleware:
    """Counts and times every request by its route template (never the raw path: bank ids are unbounded)."""

    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app, self.metrics = app, metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        status = [500]

        async def send_wrapper(message: Any) -> None:
            if message["type"] == "http.response.start":
                status[0] = message["status"]
            await send(message)

        started = time.perf_counter()
        self.metrics.inflight.inc()
        try:
            await self.app(scope, receive, send_wrapper)
        finally:
            self.metrics.inflight.dec()
            route = scope.get("route")
            template = getattr(route, "path", None) or (
                "/mcp/{bank_id}/" if scope["path"].startswith("/mcp/") else "other"
            )
            self.metrics.requests.labels(scope["method"], template, str(status[0])).inc()
            self.metrics.latency.labels(scope["method"], template).observe(time.perf_counter() - started)
