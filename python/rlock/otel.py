"""rlock's statistics as OpenTelemetry metrics.

Needs ``pip install "rlock-redis[otel]"`` (opentelemetry-api 1.30 or later; an SDK, or another
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
gained. The instruments advise the library's bucket bounds in seconds
(``explicit_bucket_boundaries_advisory``), so with an aggregation that follows the advice (the
SDK's default one does) the exported bucket counts, count and sum are the client's: exactly
for the counts, up to float rounding for the sum. Costs and limits of that choice:

- a collection records one sample per sample gained since the previous one, about 5 us each
  with the SDK: a client doing 1,000 acquires a second adds about 0.3 s of work to each 60 s
  collection for ``rlock.acquire.wait.duration`` and as much for ``rlock.hold.duration``, and
  ``rlock.command.duration`` gets one sample per command. ``histograms=`` names the histograms
  to report (all by default; ``False`` or ``()`` for none);
- the min and max the SDK reports for a histogram are of the recorded values, not of the real
  samples; a View with other bucket bounds buckets the recorded values, not the real samples;
- histogram samples carry the time of the collection that recorded them.

The instruments are registered once per meter; every ``RlockMetrics`` of it (and ``add()``)
reports its clients through them: give each client its own attributes. Closed clients are
skipped.
"""

from __future__ import annotations

import math
import threading
import weakref
from typing import Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Set, Tuple, Union

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
    """One reported client: its attributes, its histograms, and what they were replayed up
    to."""

    def __init__(self, client: StatsSource, attributes: Dict[str, str], timings: Set[str]) -> None:
        self.client = client
        self.attributes = attributes
        self.timings = timings
        # timing name -> (bucket counts and sum recorded up to, sum not placed yet in seconds)
        self.replayed: Dict[str, Tuple[Tuple[int, ...], float, float]] = {}

    def stats(self) -> Optional[Stats]:
        try:
            return self.client.stats()
        except (ClientClosedError, ForkedError):
            return None


class _Instruments:
    """The instruments of one meter and the clients they report. OpenTelemetry hands back the
    instrument made first under a name, callbacks included, so every RlockMetrics of a meter
    shares these."""

    def __init__(self, meter: Meter) -> None:
        self.meter = meter
        self.mu = threading.Lock()
        self.clients: List[_Client] = []
        self.histograms: Dict[str, metrics.Histogram] = {}
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

    def histogram(self, timing: _metrics.Timing) -> None:
        with self.mu:
            if timing.name not in self.histograms:
                self.histograms[timing.name] = self.meter.create_histogram(
                    timing.name,
                    unit=timing.unit,
                    description=timing.description,
                    explicit_bucket_boundaries_advisory=list(HISTOGRAM_BOUNDS),
                )

    def _callback(
        self, scalar: _metrics.Scalar
    ) -> Callable[[CallbackOptions], Iterable[Observation]]:
        def observe(options: CallbackOptions) -> Iterable[Observation]:
            with self.mu:
                clients = list(self.clients)
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
        if not reported.timings:
            return
        stats = reported.stats()
        if stats is None:
            return
        for timing in _metrics.TIMINGS:
            if timing.name not in reported.timings:
                continue
            instrument = self.histograms[timing.name]
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


_by_meter: "weakref.WeakKeyDictionary[Meter, _Instruments]" = weakref.WeakKeyDictionary()
_by_meter_mu = threading.Lock()


def _instruments(meter: Meter) -> _Instruments:
    with _by_meter_mu:
        found = _by_meter.get(meter)
        if found is None:
            found = _by_meter[meter] = _Instruments(meter)
        return found


def _timings(histograms: Union[bool, Iterable[str]]) -> Set[str]:
    names = {t.name for t in _metrics.TIMINGS}
    if isinstance(histograms, bool):
        return names if histograms else set()
    wanted = set(histograms)
    unknown = wanted - names
    if unknown:
        raise ValueError(f"no such rlock histogram: {', '.join(sorted(unknown))}")
    return wanted


class RlockMetrics:
    """Registers docs/metrics.md's instruments on the meter ``"rlock"`` of ``meter_provider``
    (default: the global one) and reports ``client`` through them, with ``attributes`` added to
    every point of it (e.g. ``{"rlock.client": "orders"}``); ``add()`` reports more clients.
    ``histograms`` names the duration histograms to report (``"rlock.hold.duration"``, ...):
    True (the default) for all four, False for none (see the module's documentation for their
    cost). Several RlockMetrics of one meter provider share its instruments."""

    def __init__(
        self,
        client: Optional[StatsSource] = None,
        attributes: Optional[Mapping[str, str]] = None,
        *,
        meter_provider: Optional[MeterProvider] = None,
        histograms: Union[bool, Iterable[str]] = True,
    ) -> None:
        self._timings = _timings(histograms)
        provider = meter_provider if meter_provider is not None else metrics.get_meter_provider()
        self._instruments = _instruments(provider.get_meter(METER_NAME, version()))
        for timing in _metrics.TIMINGS:
            if timing.name in self._timings:
                self._instruments.histogram(timing)
        self._mine: List[_Client] = []
        if client is not None:
            self.add(client, attributes)

    def add(
        self, client: StatsSource, attributes: Optional[Mapping[str, str]] = None
    ) -> "RlockMetrics":
        """Reports `client` too, with `attributes` on its points. Returns self."""
        if not callable(getattr(client, "stats", None)):
            raise TypeError(f"client must be an rlock client, not {type(client).__name__}")
        reported = _Client(
            client, {k: str(v) for k, v in (attributes or {}).items()}, self._timings
        )
        with self._instruments.mu:
            self._instruments.clients.append(reported)
            self._mine.append(reported)
        return self

    def remove(self, client: StatsSource) -> None:
        """Stops reporting `client` (its series stop at their last values)."""
        shared = self._instruments
        with shared.mu:
            gone = [c for c in self._mine if c.client is client]
            self._mine = [c for c in self._mine if c.client is not client]
            shared.clients = [c for c in shared.clients if c not in gone]


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
