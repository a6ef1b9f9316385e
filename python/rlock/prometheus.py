"""rlock's statistics as Prometheus metrics: a ``prometheus_client`` collector.

Needs ``pip install "rlock-redis[prometheus]"``. ::

    from prometheus_client import REGISTRY, start_http_server
    from rlock.prometheus import RlockCollector

    client = rlock.Client(url)
    REGISTRY.register(RlockCollector(client, labels={"rlock.client": "orders"}))
    start_http_server(9100)

Each scrape reads ``client.stats()`` (no network call). The names are docs/metrics.md's
OpenTelemetry names in Prometheus form: dots become underscores, counters end in ``_total``,
durations in ``_seconds`` (``rlock_acquires_total{rlock_outcome="granted"}``,
``rlock_acquire_wait_duration_seconds_bucket{le="0.001"}``, ...); histogram buckets are
cumulative, in seconds, up to ``+Inf``. Extra labels name the client (dots in their names become
underscores too); a collector may report several clients (``add``), which then need labels that
tell them apart. Closed clients are skipped. Lock names are never labels.
"""

from __future__ import annotations

import re
import threading
from typing import Iterable, List, Mapping, Optional, Tuple, Union

from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector

from . import _metrics
from ._errors import ClientClosedError, ForkedError
from ._metrics import StatsSource
from ._stats import HISTOGRAM_BOUNDS, Histogram, Stats

__all__ = ["RlockCollector", "metric_name"]

_INVALID = re.compile(r"[^a-zA-Z0-9_]")


def metric_name(otel_name: str, unit: str = "") -> str:
    """The Prometheus name of an OpenTelemetry instrument name: ``rlock.hold.duration`` with
    unit ``s`` -> ``rlock_hold_duration_seconds`` (without ``_total``)."""
    name = _INVALID.sub("_", otel_name)
    return name + "_seconds" if unit == "s" else name


def _label(name: str) -> str:
    return _INVALID.sub("_", name)


def _labels(attributes: Mapping[str, str]) -> dict[str, str]:
    return {_label(k): str(v) for k, v in attributes.items()}


class RlockCollector(Collector):
    """A ``prometheus_client`` collector of one client's statistics (or several: ``add``).
    ``labels`` are added to every series of that client, e.g. ``{"rlock.client": "orders"}``."""

    def __init__(
        self, client: Optional[StatsSource] = None, labels: Optional[Mapping[str, str]] = None
    ) -> None:
        self._mu = threading.Lock()
        self._clients: List[Tuple[StatsSource, dict[str, str]]] = []
        if client is not None:
            self.add(client, labels)

    def add(
        self, client: StatsSource, labels: Optional[Mapping[str, str]] = None
    ) -> "RlockCollector":
        """Reports `client` too, with `labels` on its series. Returns the collector."""
        if not callable(getattr(client, "stats", None)):
            raise TypeError(f"client must be an rlock client, not {type(client).__name__}")
        with self._mu:
            self._clients.append((client, _labels(labels or {})))
        return self

    def remove(self, client: StatsSource) -> None:
        """Stops reporting `client`."""
        with self._mu:
            self._clients = [entry for entry in self._clients if entry[0] is not client]

    def describe(self) -> Iterable[Metric]:
        # The families without samples: registering the collector reads no statistics.
        return list(self._families())

    def collect(self) -> Iterable[Metric]:
        with self._mu:
            clients = list(self._clients)
        snapshots = []
        for client, labels in clients:
            try:
                snapshots.append((client.stats(), labels))
            except (ClientClosedError, ForkedError):
                continue  # a scrape reports the clients still open
        families = self._families()
        sources: List[Union[_metrics.Scalar, _metrics.Timing]] = [
            *_metrics.SCALARS,
            *_metrics.TIMINGS,
        ]
        for family, source in zip(families, sources):
            for stats, labels in snapshots:
                if isinstance(source, _metrics.Scalar):
                    _add_points(family, source, stats, labels)
                else:
                    _add_histogram(family, source.read(stats), labels)
        return families

    @staticmethod
    def _families() -> List[Metric]:
        families: List[Metric] = []
        for scalar in _metrics.SCALARS:
            name = metric_name(scalar.name)
            if scalar.kind == _metrics.COUNTER:
                families.append(CounterMetricFamily(name, scalar.description))
            else:
                families.append(GaugeMetricFamily(name, scalar.description))
        for timing in _metrics.TIMINGS:
            families.append(
                HistogramMetricFamily(metric_name(timing.name, timing.unit), timing.description)
            )
        return families


def _le(bound: float) -> str:
    """A bucket bound as Prometheus clients print it: the shortest repr ("0.001", "2.5e-05",
    "60.0")."""
    return repr(float(bound))


def _add_points(
    family: Metric, scalar: _metrics.Scalar, stats: Stats, labels: dict[str, str]
) -> None:
    sample = family.name + "_total" if scalar.kind == _metrics.COUNTER else family.name
    for attributes, value in scalar.points(stats):
        family.add_sample(sample, {**_labels(attributes), **labels}, float(value))


def _add_histogram(family: Metric, histogram: Histogram, labels: dict[str, str]) -> None:
    cumulative = histogram.cumulative()
    les = [_le(bound) for bound in HISTOGRAM_BOUNDS] + ["+Inf"]
    for le, count in zip(les, cumulative):
        family.add_sample(family.name + "_bucket", {**labels, "le": le}, float(count))
    # _count is the +Inf bucket, as Prometheus expects (a snapshot taken during calls may have
    # `count` a few samples apart from the buckets).
    family.add_sample(family.name + "_count", labels, float(cumulative[-1]))
    family.add_sample(family.name + "_sum", labels, histogram.sum)
