"""rlock.prometheus and rlock.otel: what they export equals Client.stats(), under the names of
docs/metrics.md. prometheus_client's text format is parsed back; OpenTelemetry's is read with
the SDK's InMemoryMetricReader."""

from __future__ import annotations

import importlib
import math
import os
import random
import threading
from types import ModuleType

import pytest
import rlock
from helpers import Holder, wait_until


def exporter_package(module: str) -> ModuleType:
    """The package, or a skip when it is not installed; under scripts/test-python.sh, which
    installs tests/python/requirements.txt, its absence is a failure."""
    try:
        return importlib.import_module(module)
    except ImportError:
        if os.environ.get("RLOCK_TEST_WHEEL"):
            pytest.fail(f"{module} is missing although tests/python/requirements.txt lists it")
        pytest.skip(f"{module} is not installed")


def workload(client: rlock.Client, other: rlock.Client, name: str) -> rlock.Lock:
    """Some of everything: grants and releases, try-once timeouts, a failure by code, a hold
    kept (while the returned lock lives)."""
    lock = client.lock(name)
    for _ in range(3):
        with lock:
            pass
    holder = Holder(other.lock(name + ":held"))
    for _ in range(2):
        assert client.lock(name + ":held").acquire(blocking=False) is False
    holder.release()
    rw = client.read_write_lock(name + ":rw")
    with rw.read_lock():
        with pytest.raises(rlock.DeadlockError):
            rw.write_lock().acquire()
    with pytest.raises(rlock.NotHeldError):
        lock.release()
    kept = client.lock(name + ":kept")
    assert kept.acquire()
    return kept


# Counters and gauges of a snapshot: (OTel name, attributes) -> value.
def expected_points(stats: rlock.Stats, extra: dict) -> dict:
    points = {
        ("rlock.acquires", (("rlock.outcome", "granted"),)): stats.acquires_granted,
        ("rlock.acquires", (("rlock.outcome", "timed_out"),)): stats.acquires_timed_out,
        ("rlock.acquires", (("rlock.outcome", "canceled"),)): stats.acquires_canceled,
        ("rlock.releases", (("rlock.outcome", "released"),)): stats.releases,
        ("rlock.releases", (("rlock.outcome", "failed"),)): stats.releases_failed,
        ("rlock.locks.lost", (("rlock.lost.reason", "gone"),)): stats.locks_lost_gone,
        ("rlock.locks.lost", (("rlock.lost.reason", "unreachable"),)): stats.locks_lost_unreachable,
        ("rlock.locks.lost", (("rlock.lost.reason", "expired"),)): stats.locks_lost_expired,
        ("rlock.renewals", (("rlock.outcome", "renewed"),)): stats.renewals_sent
        - stats.renewals_failed,
        ("rlock.renewals", (("rlock.outcome", "failed"),)): stats.renewals_failed,
        ("rlock.reconnects", ()): stats.reconnects,
        ("rlock.failovers", ()): stats.failovers,
        ("rlock.cluster.redirects", ()): stats.cluster_redirects,
        ("rlock.scripts", ()): stats.scripts_sent,
        ("rlock.events.dropped", ()): stats.events_dropped,
        ("rlock.holds", ()): stats.holds,
        ("rlock.waiters", ()): stats.waiters,
        ("rlock.elections.won", ()): stats.elections_won,
        ("rlock.leaders", ()): stats.leaders,
    }
    for reason in ("gone", "unreachable", "expired", "resigned", "closed", "failed"):
        points[("rlock.leaderships.revoked", (("rlock.revoke.reason", reason),))] = (
            stats.leaderships_revoked_by_reason.get(reason, 0)
        )
    for code, n in stats.acquires_failed_by_code.items():
        points[("rlock.acquires", (("error.type", code), ("rlock.outcome", "failed")))] = n
    return {
        (metric, tuple(sorted((*attributes, *extra.items())))): value
        for (metric, attributes), value in points.items()
    }


GAUGES = ("rlock.holds", "rlock.waiters", "rlock.leaders")

HISTOGRAMS = {
    "rlock.acquire.wait.duration": "acquire_wait",
    "rlock.hold.duration": "hold",
    "rlock.handoff.duration": "handoff",
    "rlock.command.duration": "command_rtt",
}


# ---- Prometheus -------------------------------------------------------------------------------


def prometheus_name(otel_name: str) -> str:
    return otel_name.replace(".", "_")


def scrape(registry) -> dict:
    """(sample name, sorted labels) -> value, from the text format parsed back."""
    from prometheus_client import generate_latest
    from prometheus_client.parser import text_string_to_metric_families

    text = generate_latest(registry).decode()
    samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return samples


def test_prometheus_text_equals_the_snapshot(make_client, name):
    prometheus_client = exporter_package("prometheus_client")
    from rlock.prometheus import RlockCollector

    client = make_client()
    kept = workload(client, make_client(), name)
    registry = prometheus_client.CollectorRegistry()
    registry.register(RlockCollector(client, labels={"rlock.client": "orders"}))
    samples = scrape(registry)
    stats = client.stats()  # nothing runs meanwhile: the scrape saw the same figures

    extra = {"rlock_client": "orders"}
    expected = {}
    for (metric, attributes), value in expected_points(stats, {}).items():
        labels = {key.replace(".", "_"): v for key, v in attributes}
        is_gauge = metric in GAUGES
        sample = prometheus_name(metric) + ("" if is_gauge else "_total")
        expected[(sample, tuple(sorted({**labels, **extra}.items())))] = value
    for otel_name, field in HISTOGRAMS.items():
        histogram = getattr(stats, field)
        base = prometheus_name(otel_name) + "_seconds"
        les = [repr(b) for b in histogram.bounds] + ["+Inf"]
        for le, count in zip(les, histogram.cumulative()):
            expected[(base + "_bucket", tuple(sorted({**extra, "le": le}.items())))] = count
        expected[(base + "_count", tuple(sorted(extra.items())))] = histogram.count
        expected[(base + "_sum", tuple(sorted(extra.items())))] = pytest.approx(histogram.sum)
    assert samples == expected
    # The workload's known figures, as the text shows them.
    granted = ("rlock_acquires_total", (("rlock_client", "orders"), ("rlock_outcome", "granted")))
    assert samples[granted] == 5
    failed = (
        "rlock_acquires_total",
        (("error_type", "EDEADLK"), ("rlock_client", "orders"), ("rlock_outcome", "failed")),
    )
    assert samples[failed] == 1
    assert samples[("rlock_holds", (("rlock_client", "orders"),))] == 1
    inf = (
        "rlock_acquire_wait_duration_seconds_bucket",
        (("le", "+Inf"), ("rlock_client", "orders")),
    )
    assert samples[inf] == 5
    kept.release()


def test_prometheus_collector_reports_several_clients_and_skips_closed_ones(make_client, name):
    prometheus_client = exporter_package("prometheus_client")
    from rlock.prometheus import RlockCollector

    first, second = make_client(), make_client()
    with first.lock(name):
        pass
    registry = prometheus_client.CollectorRegistry()
    collector = RlockCollector(first, {"rlock.client": "first"}).add(second, {"rlock.client": "b"})
    registry.register(collector)
    samples = scrape(registry)
    key = "rlock_acquires_total"
    assert samples[(key, (("rlock_client", "first"), ("rlock_outcome", "granted")))] == 1
    assert samples[(key, (("rlock_client", "b"), ("rlock_outcome", "granted")))] == 0
    second.close()
    samples = scrape(registry)
    assert (key, (("rlock_client", "b"), ("rlock_outcome", "granted"))) not in samples
    assert samples[(key, (("rlock_client", "first"), ("rlock_outcome", "granted")))] == 1
    collector.remove(first)
    assert not [k for k in scrape(registry) if k[0].startswith("rlock_")]


# ---- OpenTelemetry ----------------------------------------------------------------------------


def otel_reader():
    exporter_package("opentelemetry.sdk.metrics")
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader

    reader = InMemoryMetricReader()
    return reader, MeterProvider(metric_readers=[reader])


def collect(reader) -> dict:
    """OTel name -> the Metric, from one collection of the meter "rlock"."""
    data = reader.get_metrics_data()
    metrics = {}
    for resource in data.resource_metrics:
        for scope in resource.scope_metrics:
            if scope.scope.name == "rlock":
                assert scope.scope.version == rlock.__version__
                for metric in scope.metrics:
                    metrics[metric.name] = metric
    return metrics


def check_otel_equals(metrics: dict, stats: rlock.Stats, extra: dict) -> None:
    from opentelemetry.sdk.metrics.export import Histogram, Sum

    points = {}
    for name, metric in metrics.items():
        if name in HISTOGRAMS:
            continue
        assert isinstance(metric.data, Sum)
        assert metric.data.is_monotonic == (name not in GAUGES)
        for point in metric.data.data_points:
            points[(name, tuple(sorted((point.attributes or {}).items())))] = point.value
    assert points == expected_points(stats, extra)
    assert metrics["rlock.acquires"].unit == "{acquire}"
    assert metrics["rlock.locks.lost"].unit == "{lock}"
    assert metrics["rlock.holds"].unit == "{hold}"
    for name, field in HISTOGRAMS.items():
        histogram = getattr(stats, field)
        if histogram.count == 0:
            assert name not in metrics  # nothing recorded yet: no point
            continue
        metric = metrics[name]
        assert metric.unit == "s"
        assert isinstance(metric.data, Histogram)
        (bucketed,) = metric.data.data_points
        assert dict(bucketed.attributes or {}) == extra
        assert tuple(bucketed.explicit_bounds) == histogram.bounds
        assert tuple(bucketed.bucket_counts) == histogram.counts
        assert bucketed.count == histogram.count
        assert bucketed.sum == pytest.approx(histogram.sum, rel=1e-9, abs=1e-12)


def test_otel_in_memory_reader_equals_the_snapshot(make_client, name):
    reader, provider = otel_reader()
    from rlock.otel import RlockMetrics

    client = make_client()
    other = make_client()
    RlockMetrics(client, {"rlock.client": "orders"}, meter_provider=provider)
    kept = workload(client, other, name)
    check_otel_equals(collect(reader), client.stats(), {"rlock.client": "orders"})
    stats = client.stats()
    assert stats.acquires_granted == 5 and stats.holds == 1

    # A second collection after more work: the histograms gained exactly what the client did.
    for _ in range(7):
        with client.lock(name + ":more"):
            pass
    check_otel_equals(collect(reader), client.stats(), {"rlock.client": "orders"})
    assert client.stats().acquire_wait.count == 12
    kept.release()
    provider.shutdown()


def test_otel_skips_closed_clients_and_can_leave_histograms_out(make_client, name):
    reader, provider = otel_reader()
    from rlock.otel import RlockMetrics

    first, second = make_client(), make_client()
    metrics = RlockMetrics(first, {"c": "1"}, meter_provider=provider, histograms=False)
    metrics.add(second, {"c": "2"})
    with first.lock(name):
        pass
    collected = collect(reader)
    assert not set(HISTOGRAMS) & set(collected)
    granted = {
        dict(p.attributes)["c"]: p.value
        for p in collected["rlock.acquires"].data.data_points
        if dict(p.attributes)["rlock.outcome"] == "granted"
    }
    assert granted == {"1": 1, "2": 0}
    second.close()
    points = collect(reader)["rlock.acquires"].data.data_points
    assert {dict(p.attributes)["c"] for p in points} == {"1"}
    provider.shutdown()


def test_otel_replay_places_every_sample_in_its_bucket_with_the_right_sum():
    exporter_package("opentelemetry")
    from rlock.otel import samples_for

    bounds = rlock._stats.HISTOGRAM_BOUNDS
    rng = random.Random(22)
    for _ in range(500):
        real = [rng.choice([rng.uniform(0, 0.002), rng.expovariate(1.0), 5000.0 * rng.random()])]
        real += [
            rng.expovariate(rng.choice([10.0, 1000.0, 0.01])) for _ in range(rng.randint(0, 30))
        ]
        real = [round(v * 1e6) / 1e6 for v in real]  # whole microseconds, as the library keeps
        counts = [0] * (len(bounds) + 1)
        for v in real:
            counts[sum(1 for b in bounds if v > b)] += 1
        total = sum(real)
        placed = [0] * len(counts)
        placed_sum = 0.0
        for value, n in samples_for(bounds, counts, total):
            index = sum(1 for b in bounds if value > b)  # the bucket an SDK puts it in
            placed[index] += n
            placed_sum += value * n
        assert placed == counts
        assert math.isclose(placed_sum, total, rel_tol=1e-9, abs_tol=1e-12)


def test_exporters_take_the_asyncio_client(redis_url, name):
    prometheus_client = exporter_package("prometheus_client")
    import asyncio

    import rlock.asyncio
    from rlock.prometheus import RlockCollector

    async def main() -> dict:
        async with rlock.asyncio.Client(redis_url) as client:
            async with client.lock(name):
                pass
            registry = prometheus_client.CollectorRegistry()
            registry.register(RlockCollector(client))
            return scrape(registry)

    samples = asyncio.run(main())
    assert samples[("rlock_acquires_total", (("rlock_outcome", "granted"),))] == 1


def test_a_waiter_shows_in_both_exporters(make_client, name):
    prometheus_client = exporter_package("prometheus_client")
    reader, provider = otel_reader()
    from rlock.otel import RlockMetrics
    from rlock.prometheus import RlockCollector

    client, other = make_client(), make_client()
    registry = prometheus_client.CollectorRegistry()
    registry.register(RlockCollector(client))
    RlockMetrics(client, meter_provider=provider)
    holder = Holder(other.lock(name))
    lock = client.lock(name)
    waiter = threading.Thread(target=lambda: lock.acquire(timeout=10) and lock.release())
    waiter.start()
    try:
        from helpers import wait_until

        assert wait_until(lambda: client.stats().waiters == 1)
        assert scrape(registry)[("rlock_waiters", ())] == 1
        (point,) = collect(reader)["rlock.waiters"].data.data_points
        assert point.value == 1
    finally:
        holder.release()
        waiter.join(10)
    assert scrape(registry)[("rlock_waiters", ())] == 0
    provider.shutdown()


def test_otel_reports_the_histograms_asked_for(make_client, name):
    reader, provider = otel_reader()
    from rlock.otel import RlockMetrics

    with pytest.raises(ValueError, match="rlock.nope"):
        RlockMetrics(make_client(), meter_provider=provider, histograms=["rlock.nope"])
    client = make_client()
    RlockMetrics(client, meter_provider=provider, histograms=["rlock.acquire.wait.duration"])
    with client.lock(name):
        pass
    collected = collect(reader)
    assert set(HISTOGRAMS) & set(collected) == {"rlock.acquire.wait.duration"}
    (point,) = collected["rlock.acquire.wait.duration"].data.data_points
    assert point.count == 1
    provider.shutdown()


def test_two_rlock_metrics_of_one_provider_both_report(make_client, name):
    reader, provider = otel_reader()
    from rlock.otel import RlockMetrics

    first, second = make_client(), make_client()
    RlockMetrics(first, {"c": "1"}, meter_provider=provider, histograms=False)
    RlockMetrics(second, {"c": "2"}, meter_provider=provider)
    with second.lock(name):
        pass
    collected = collect(reader)
    granted = {
        dict(p.attributes)["c"]: p.value
        for p in collected["rlock.acquires"].data.data_points
        if dict(p.attributes)["rlock.outcome"] == "granted"
    }
    assert granted == {"1": 0, "2": 1}
    (point,) = collected["rlock.acquire.wait.duration"].data.data_points
    assert dict(point.attributes) == {"c": "2"} and point.count == 1
    provider.shutdown()


# ---- Leader elections -------------------------------------------------------------------------


def test_both_exporters_show_a_won_and_resigned_leadership(make_client, name):
    prometheus_client = exporter_package("prometheus_client")
    from rlock.prometheus import RlockCollector

    reader, provider = otel_reader()
    from rlock.otel import RlockMetrics

    client = make_client()
    events: list = []
    client.on_event(events.append)
    registry = prometheus_client.CollectorRegistry()
    registry.register(RlockCollector(client))
    RlockMetrics(client, meter_provider=provider)
    resigned = ("rlock_leaderships_revoked_total", (("rlock_revoke_reason", "resigned"),))

    with client.leader(name) as lead:
        term = lead.term
        samples = scrape(registry)
        assert samples[("rlock_elections_won_total", ())] == 1
        assert samples[("rlock_leaders", ())] == 1
        assert samples[resigned] == 0
        metrics = collect(reader)
        (point,) = metrics["rlock.leaders"].data.data_points
        assert point.value == 1
        check_otel_equals(metrics, client.stats(), {})

    samples = scrape(registry)
    assert samples[("rlock_elections_won_total", ())] == 1
    assert samples[("rlock_leaders", ())] == 0
    assert samples[resigned] == 1
    gone = ("rlock_leaderships_revoked_total", (("rlock_revoke_reason", "gone"),))
    assert samples[gone] == 0
    stats = client.stats()
    assert stats.elections_won == 1 and stats.leaders == 0 and stats.leaderships_revoked == 1
    assert dict(stats.leaderships_revoked_by_reason) == {"resigned": 1}
    metrics = collect(reader)
    check_otel_equals(metrics, stats, {})
    assert metrics["rlock.elections.won"].unit == "{election}"

    kinds = (rlock.EventKind.ELECTED, rlock.EventKind.REVOKED)
    assert wait_until(lambda: len([e for e in events if e.kind in kinds]) == 2)
    elected, revoked = [e for e in events if e.kind in kinds]
    assert (elected.kind, elected.name, elected.token, elected.reason) == (
        rlock.EventKind.ELECTED,
        name,
        term,
        None,
    )
    assert (revoked.kind, revoked.name, revoked.token) == (rlock.EventKind.REVOKED, name, term)
    assert revoked.reason is rlock.RevokeReason.RESIGNED
    assert elected.owner and revoked.owner == elected.owner
    provider.shutdown()
