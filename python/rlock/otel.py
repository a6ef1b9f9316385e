"""rlock's statistics as OpenTelemetry metrics.

Needs ``pip install rlock[otel]`` (opentelemetry-api 1.30 or later; an SDK, or another
implementation of the API, to export them). ::

    from opentelemetry.sdk.metrics import MeterProvider
    from rlock.otel import RlockMetrics

    client = rlock.Client(url)
    RlockMetrics(client, {"rlock.client": "orders"}, meter_provider=provider)  # or the global one

The instruments and their names, units and attributes are docs/metrics.md's, on the meter
"rlock". Counters and gauges are observable instruments whose callbacks read
``client.stats()`` at each collection (no network call).

Histograms: the OpenTelemetry API has no observable histogram, and a histogram fed with each
event's duration would count only what happens while an event handler is set, through the event
queue, which may drop. So at each collection, before the SDK reads the histograms, a callback
takes the client's snapshot, and for each histogram records into a synchronous ``Histogram``
what the snapshot gained since the previous collection: in each bucket as many samples as the
bucket gained, at values inside that bucket, chosen so that their sum is the sum the snapshot
gained. The instruments advise the library's bucket bounds (``explicit_bucket_boundaries_
advisory``, seconds), so with an aggregation that follows the advice (the SDK's default) the
exported bucket counts, count and sum are the client's, exactly for counts and up to float
rounding for the sum. Costs and limits of that choice:

- a collection records one sample per sample gained since the previous one (a few microseconds
  each): a client doing 10,000 commands a second adds about 0.05 s of work to a 60 s collection
  interval for ``rlock.command.duration``; ``histograms=False`` leaves the histograms out;
- the min and max the SDK reports for a histogram are of the recorded values, not of the real
  samples; a View with other bucket bounds buckets the recorded values, not the real samples;
- histogram samples carry the time of the collection that recorded them.

One ``RlockMetrics`` registers the instruments once on its meter; ``add()`` reports more
clients through the same instruments (give each its own attributes). Closed clients are skipped.
"""

from __future__ import annotations

import math
import threading
from typing import Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from opentelemetry import metrics
from opentelemetry.metrics import CallbackOptions, Meter, MeterProvider, Observation

from . import _metrics
from ._errors import ClientClosedError, ForkedError
from ._metrics import StatsSource
from ._native import version
from ._stats import HISTOGRAM_BOUNDS, Stats

__all__ = ["RlockMetrics", "METER_NAME"]

METER_NAME = "rlock"


class _Client:
    """One reported client: its attributes, and what its histograms were replayed up to."""

    def __init__(self, client: StatsSource, attributes: Dict[str, str]) -> None:
        self.client = client
        self.attributes = attributes
        # timing name -> (bucket counts and sum recorded up to, sum not placed yet in seconds)
        self.replayed: Dict[str, Tuple[Tuple[int, ...], float, float]] = {}

    def stats(self) -> Optional[Stats]:
        try:
            return self.client.stats()
        except (ClientClosedError, ForkedError):
            return None


class RlockMetrics:
    """Registers docs/metrics.md's instruments on the meter ``"rlock"`` of ``meter_provider``
    (default: the global one) and reports ``client`` through them, with ``attributes`` added to
    every point of it (e.g. ``{"rlock.client": "orders"}``). ``histograms=False`` leaves out
    the four duration histograms (see the module's documentation for their cost)."""

    def __init__(
        self,
        client: Optional[StatsSource] = None,
        attributes: Optional[Mapping[str, str]] = None,
        *,
        meter_provider: Optional[MeterProvider] = None,
        histograms: bool = True,
    ) -> None:
        self._mu = threading.Lock()
        self._clients: List[_Client] = []
        provider = meter_provider if meter_provider is not None else metrics.get_meter_provider()
        meter: Meter = provider.get_meter(METER_NAME, version())
        for scalar in _metrics.SCALARS:
            make = (
                meter.create_observable_counter
                if scalar.kind == _metrics.COUNTER
                else meter.create_observable_up_down_counter
            )
            make(
                scalar.name,
                callbacks=[self._callback(scalar)],
                unit=scalar.unit,
                description=scalar.description,
            )
        self._histograms: List[Tuple[_metrics.Timing, metrics.Histogram]] = []
        if histograms:
            for timing in _metrics.TIMINGS:
                instrument = meter.create_histogram(
                    timing.name,
                    unit=timing.unit,
                    description=timing.description,
                    explicit_bucket_boundaries_advisory=list(HISTOGRAM_BOUNDS),
                )
                self._histograms.append((timing, instrument))
        if client is not None:
            self.add(client, attributes)

    def add(
        self, client: StatsSource, attributes: Optional[Mapping[str, str]] = None
    ) -> "RlockMetrics":
        """Reports `client` too, with `attributes` on its points. Returns self."""
        if not callable(getattr(client, "stats", None)):
            raise TypeError(f"client must be an rlock client, not {type(client).__name__}")
        with self._mu:
            self._clients.append(
                _Client(client, {k: str(v) for k, v in (attributes or {}).items()})
            )
        return self

    def remove(self, client: StatsSource) -> None:
        """Stops reporting `client` (its series stop at their last values)."""
        with self._mu:
            self._clients = [c for c in self._clients if c.client is not client]

    def _callback(
        self, scalar: _metrics.Scalar
    ) -> Callable[[CallbackOptions], Iterable[Observation]]:
        def observe(options: CallbackOptions) -> Iterable[Observation]:
            with self._mu:
                clients = list(self._clients)
                # Every observable callback runs before the SDK reads the histograms: the first
                # of a collection records what they gained, the others find little or nothing.
                for reported in clients:
                    self._replay(reported)
            observations = []
            for reported in clients:
                stats = reported.stats()
                if stats is None:
                    continue
                for attributes, value in scalar.points(stats):
                    observations.append(Observation(value, {**attributes, **reported.attributes}))
            return observations

        return observe

    def _replay(self, reported: _Client) -> None:
        if not self._histograms:
            return
        stats = reported.stats()
        if stats is None:
            return
        for timing, instrument in self._histograms:
            now = timing.read(stats)
            counts, seen_sum, carry = reported.replayed.get(
                timing.name, ((0,) * len(now.counts), 0.0, 0.0)
            )
            gained = [n - before for n, before in zip(now.counts, counts)]
            # What the sum gained, plus what earlier collections could not place in a bucket
            # (a snapshot taken during calls may show a sample in the sum before its bucket).
            target = now.sum - seen_sum + carry
            recorded = 0.0
            for value, n in samples_for(HISTOGRAM_BOUNDS, gained, target):
                for _ in range(n):
                    instrument.record(value, reported.attributes)
                recorded += value * n
            reported.replayed[timing.name] = (now.counts, now.sum, target - recorded)


def samples_for(
    bounds: Sequence[float], counts: Sequence[int], total: float
) -> List[Tuple[float, int]]:
    """(value, how many) to record so that bucket i of `bounds` gets counts[i] samples and their
    sum is `total`, as nearly as the buckets allow. Bucket i holds the values above bounds[i-1]
    (0 for the first) and at most bounds[i]; the last, above every bound."""
    low: List[float] = []
    high: List[float] = []
    for i in range(len(counts)):
        lo = 0.0 if i == 0 else math.nextafter(bounds[i - 1], math.inf)
        hi = bounds[i] if i < len(bounds) else math.inf
        low.append(lo)
        high.append(hi)
    base = sum(n * lo for n, lo in zip(counts, low))
    room = total - base
    finite = [i for i, n in enumerate(counts) if n and high[i] != math.inf]
    capacity = sum(counts[i] * (high[i] - low[i]) for i in finite)
    share = min(1.0, room / capacity) if room > 0 and capacity > 0 else 0.0
    out: List[Tuple[float, int]] = []
    for i in finite:
        value = min(high[i], low[i] + share * (high[i] - low[i]))
        out.append((value, counts[i]))
    last = len(counts) - 1
    if counts[last] and high[last] == math.inf:
        leftover = max(0.0, room - share * capacity)
        out.append((low[last] + leftover / counts[last], counts[last]))
    return out
