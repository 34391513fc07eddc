"""Prometheus metrics of the server (`GET /metrics`).

The hot path only adds to a plain dictionary (`count`). The figures become Prometheus metric families when `/metrics`
is scraped. A collector of this server's own registry makes them. The label sets are bounded: the route kind (a fixed
set), the status code, the store name and a version number. Never a key or a client's text. With access control on, a
scrape shows the series of the stores its principal may describe (`render(stores)`).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


@dataclass(frozen=True)
class StoreFigures:
    """What the metrics show of one store."""

    current: int | None
    seq: int
    loaded: int
    unservable: int
    waiting: int


class Metrics(Collector):
    """Request counts by (route, status), and gauges read from the server when scraped."""

    def __init__(
        self,
        stores: Callable[[], Mapping[str, StoreFigures]],
        last_fetch: Callable[[], float],
        consumers: Callable[[], Mapping[str, Mapping[int, int]]],
    ) -> None:
        self.requests: Counter[tuple[str, int]] = Counter()
        self._stores = stores
        self._last_fetch = last_fetch
        self._consumers = consumers
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(self)

    def count(self, route: str, status: int) -> None:
        self.requests[route, status] += 1

    def collect(self) -> Iterable[Metric]:
        requests = CounterMetricFamily("cfgtool_requests", "HTTP requests answered", labels=["route", "status"])
        for (route, status), n in sorted(self.requests.items()):
            requests.add_metric([route, str(status)], n)
        yield requests
        lag = GaugeMetricFamily(
            "cfgtool_fetch_lag_seconds", "Seconds since the tags were last read (grows while fetching fails)"
        )
        lag.add_metric([], max(0.0, time.time() - self._last_fetch()))
        yield lag
        families = {
            "current": GaugeMetricFamily("cfgtool_current_version", "The store's current version", labels=["store"]),
            "seq": GaugeMetricFamily("cfgtool_feed_seq", "Events in the store's change feed", labels=["store"]),
            "loaded": GaugeMetricFamily("cfgtool_versions_in_memory", "Versions held in memory", labels=["store"]),
            "unservable": GaugeMetricFamily(
                "cfgtool_unservable_versions", "Version tags whose store does not compile", labels=["store"]
            ),
            "waiting": GaugeMetricFamily("cfgtool_long_polls_waiting", "Long polls waiting", labels=["store"]),
        }
        for name, figures in sorted(self._stores().items()):
            for field, family in families.items():
                value = getattr(figures, field)
                family.add_metric([name], -1 if value is None else value)
        yield from families.values()
        consumers = GaugeMetricFamily(
            "cfgtool_consumers",
            "Client instances of the store heard in the last 24 hours, by the version they read or applied",
            labels=["store", "version"],
        )
        for name, counts in sorted(self._consumers().items()):
            for version, n in sorted(counts.items()):
                consumers.add_metric([name, str(version)], n)
        yield consumers

    def render(self, stores: Collection[str] | None = None) -> bytes:
        """The text exposition; with `stores`, a store's series only for the stores named (the server's own
        series stay)."""
        if stores is None:
            return generate_latest(self.registry)
        registry = CollectorRegistry(auto_describe=False)
        registry.register(_Only(self, frozenset(stores)))
        return generate_latest(registry)


class _Only(Collector):
    """`metrics`' families, without the series of the stores not in `stores`."""

    def __init__(self, metrics: Metrics, stores: frozenset[str]) -> None:
        self._metrics = metrics
        self._stores = stores

    def collect(self) -> Iterable[Metric]:
        for family in self._metrics.collect():
            family.samples = [s for s in family.samples if "store" not in s.labels or s.labels["store"] in self._stores]
            yield family
