"""Prometheus metrics (``GET /metrics``, the text exposition format, prometheus-client).

Each app has a registry of its own (no process-wide state: tests and embedders create several apps). Requests
are counted by route template (``/rules/{code}``, never the raw path: a scanner must not blow up the label set),
method and status, with a latency histogram per route; the queue length (requests waiting for a worker), the
workers alive and the workers replaced (after a timeout or a crash) are read from the pool when scraped.
"""

from __future__ import annotations

import time

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from starlette.routing import Match

# linting takes milliseconds to the time limit (seconds): buckets across both
_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)


class _PoolCollector:
    def __init__(self, pool) -> None:
        self.pool = pool

    def collect(self):
        waiting = GaugeMetricFamily("thunder_lint_queue_length", "Requests waiting for a free lint worker.")
        waiting.add_metric([], self.pool.waiting)
        yield waiting
        alive = GaugeMetricFamily("thunder_lint_workers_alive", "Lint worker processes alive.")
        alive.add_metric([], self.pool.alive)
        yield alive
        restarts = CounterMetricFamily("thunder_lint_worker_restarts", "Lint workers replaced after a timeout or a crash.")
        restarts.add_metric([], self.pool.replaced)
        yield restarts


class Metrics:
    def __init__(self, pool) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.requests = Counter("thunder_lint_http_requests", "HTTP requests answered, by route, method and status.",
                                ["route", "method", "status"], registry=self.registry)
        self.latency = Histogram("thunder_lint_http_request_duration_seconds", "Time to answer a request, by route.",
                                 ["route"], buckets=_BUCKETS, registry=self.registry)
        self.registry.register(_PoolCollector(pool))

    def exposition(self) -> tuple[bytes, str]:
        return generate_latest(self.registry), CONTENT_TYPE_LATEST


def route_of(app, scope) -> str:
    """The template of the route a request matched (``/rules/{code}``), else ``other``."""
    for route in getattr(app, "routes", ()):
        try:
            match, _ = route.matches(scope)
        except Exception:
            continue
        if match == Match.FULL:
            return getattr(route, "path", "other")
    return "other"


class MetricsMiddleware:
    """Counts every request (auth refusals, 413s and 404s included: it sits outside the other middleware)."""

    def __init__(self, app, metrics: Metrics, routes_of) -> None:
        self.app = app
        self.metrics = metrics
        self.routes_of = routes_of  # the FastAPI app, whose routes name the label

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        started = time.perf_counter()
        status = [500]

        async def send_status(message):
            if message["type"] == "http.response.start":
                status[0] = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_status)
        finally:
            route = route_of(self.routes_of, scope)
            self.metrics.requests.labels(route, scope.get("method", ""), str(status[0])).inc()
            self.metrics.latency.labels(route).observe(time.perf_counter() - started)
