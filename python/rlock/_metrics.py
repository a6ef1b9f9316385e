"""The metrics of a Stats snapshot under their OpenTelemetry names (docs/metrics.md), shared by
rlock.prometheus and rlock.otel. Lock names are never attributes: they are unbounded."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Dict, List, Protocol, Tuple

from ._stats import REVOKE_REASON_NAMES, Histogram, Stats

Attributes = Dict[str, str]
Points = List[Tuple[Attributes, int]]


class StatsSource(Protocol):
    """What an exporter needs of a client: ``rlock.Client`` and ``rlock.asyncio.Client`` are."""

    def stats(self) -> Stats: ...


COUNTER = "counter"
UP_DOWN = "updowncounter"


@dataclass(frozen=True)
class Scalar:
    """A counter or gauge: its OpenTelemetry name, kind, unit, description, and how to read
    its points (attributes, value) from a snapshot."""

    name: str
    kind: str
    unit: str
    description: str
    points: Callable[[Stats], Points]


@dataclass(frozen=True)
class Timing:
    """A histogram of durations in seconds."""

    name: str
    description: str
    read: Callable[[Stats], Histogram]
    unit: str = "s"


def _acquires(s: Stats) -> Points:
    points: Points = [
        ({"rlock.outcome": "granted"}, s.acquires_granted),
        ({"rlock.outcome": "timed_out"}, s.acquires_timed_out),
        ({"rlock.outcome": "canceled"}, s.acquires_canceled),
    ]
    for code, n in s.acquires_failed_by_code.items():
        points.append(({"rlock.outcome": "failed", "error.type": code}, n))
    return points


def _revoked(s: Stats) -> Points:
    # Every reason, seen or not, so a rate over any of them starts from 0.
    by_reason = s.leaderships_revoked_by_reason
    points: Points = [
        ({"rlock.revoke.reason": name}, by_reason.get(name, 0))
        for name in REVOKE_REASON_NAMES.values()
    ]
    for name, n in by_reason.items():
        if name not in REVOKE_REASON_NAMES.values():
            points.append(({"rlock.revoke.reason": name}, n))
    return points


def _one(read: Callable[[Stats], int]) -> Callable[[Stats], Points]:
    return lambda s: [({}, read(s))]


SCALARS: Tuple[Scalar, ...] = (
    Scalar("rlock.acquires", COUNTER, "{acquire}", "Acquire calls by outcome", _acquires),
    Scalar(
        "rlock.releases",
        COUNTER,
        "{release}",
        "Release calls by outcome",
        lambda s: [
            ({"rlock.outcome": "released"}, s.releases),
            ({"rlock.outcome": "failed"}, s.releases_failed),
        ],
    ),
    Scalar(
        "rlock.locks.lost",
        COUNTER,
        "{lock}",
        "Holds found lost, by reason",
        lambda s: [
            ({"rlock.lost.reason": "gone"}, s.locks_lost_gone),
            ({"rlock.lost.reason": "unreachable"}, s.locks_lost_unreachable),
            ({"rlock.lost.reason": "expired"}, s.locks_lost_expired),
        ],
    ),
    Scalar(
        "rlock.renewals",
        COUNTER,
        "{renewal}",
        "Watchdog renewals of holds by outcome",
        lambda s: [
            ({"rlock.outcome": "renewed"}, s.renewals_sent - s.renewals_failed),
            ({"rlock.outcome": "failed"}, s.renewals_failed),
        ],
    ),
    Scalar(
        "rlock.reconnects",
        COUNTER,
        "{reconnect}",
        "Connections opened again after one was lost",
        _one(lambda s: s.reconnects),
    ),
    Scalar(
        "rlock.failovers",
        COUNTER,
        "{failover}",
        "Sentinel master changes followed",
        _one(lambda s: s.failovers),
    ),
    Scalar(
        "rlock.cluster.redirects",
        COUNTER,
        "{redirect}",
        "Cluster MOVED and ASK answers followed",
        _one(lambda s: s.cluster_redirects),
    ),
    Scalar(
        "rlock.scripts",
        COUNTER,
        "{script}",
        "EVALSHA and EVAL commands sent",
        _one(lambda s: s.scripts_sent),
    ),
    Scalar(
        "rlock.events.dropped",
        COUNTER,
        "{event}",
        "Events not delivered because the queue was full",
        _one(lambda s: s.events_dropped),
    ),
    Scalar(
        "rlock.elections.won",
        COUNTER,
        "{election}",
        "Times an election of the client became leader",
        _one(lambda s: s.elections_won),
    ),
    Scalar(
        "rlock.leaderships.revoked",
        COUNTER,
        "{leadership}",
        "Leaderships that ended, by reason",
        _revoked,
    ),
    Scalar("rlock.holds", UP_DOWN, "{hold}", "Holds kept now", _one(lambda s: s.holds)),
    Scalar("rlock.waiters", UP_DOWN, "{waiter}", "Acquires waiting now", _one(lambda s: s.waiters)),
    Scalar(
        "rlock.leaders", UP_DOWN, "{election}", "Elections leading now", _one(lambda s: s.leaders)
    ),
)

TIMINGS: Tuple[Timing, ...] = (
    Timing(
        "rlock.acquire.wait.duration",
        "Wait of granted acquires, from the call to the grant",
        lambda s: s.acquire_wait,
    ),
    Timing(
        "rlock.hold.duration", "Holds, from the first acquire to the last release", lambda s: s.hold
    ),
    Timing(
        "rlock.handoff.duration",
        "Acquires woken by an unlock message, from its arrival to the grant",
        lambda s: s.handoff,
    ),
    Timing("rlock.command.duration", "Round trips of commands to Redis", lambda s: s.command_rtt),
)
