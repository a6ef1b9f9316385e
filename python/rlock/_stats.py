"""Statistics and events of a client: ``Client.stats()`` and ``Client.on_event()``.

The figures are the C library's (rlock.h, "Statistics"), counted per client since it was made;
durations are converted to seconds as floats, like every duration of the API.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Callable, Mapping, Optional, Tuple, Union

from . import _errors, _native
from ._leader import RevokeReason

__all__ = ["Stats", "Histogram", "Event", "EventKind", "LostReason"]

Name = Union[str, bytes]

# The upper bounds of every histogram's buckets, in seconds, ascending (25 us to 1 hour).
HISTOGRAM_BOUNDS: Tuple[float, ...] = tuple(us / 1e6 for us in _native.HISTOGRAM_BOUNDS_US)

# A failed acquire's status code -> its name in rlock.h without "RLOCK_" ("ECONN"), the
# `error.type` of the exporters.
_CODE_NAMES = {code: name[len("RLOCK_") :] for name, code in _errors._CODES.items()}


# rlock_revoke_reason -> its name as the statistics and exporters give it.
REVOKE_REASON_NAMES = {
    1: "gone",
    2: "unreachable",
    3: "expired",
    4: "resigned",
    5: "closed",
    6: "failed",
}


def revoke_reason_name(reason: int) -> str:
    """The name of a revoke reason in the statistics and exporters ("resigned")."""
    return REVOKE_REASON_NAMES.get(reason, f"reason_{reason}")


def code_name(code: int) -> str:
    """The name of a status code as the statistics and exporters give it ("ECONN")."""
    return _CODE_NAMES.get(code, f"E{-code}")


@dataclass(frozen=True)
class Histogram:
    """Durations counted in fixed buckets (the same for every histogram of every client).

    ``counts[i]`` counts the samples above ``bounds[i - 1]`` and at most ``bounds[i]``
    (seconds); the last count, one more than there are bounds, those above every bound. The
    counts are per bucket, not cumulative: ``cumulative()`` gives the running totals that
    Prometheus' ``le`` buckets show. ``count`` and ``sum`` (seconds) cover every sample."""

    bounds: Tuple[float, ...]
    counts: Tuple[int, ...]
    count: int
    sum: float

    def cumulative(self) -> Tuple[int, ...]:
        """For each bound, then for +Inf: how many samples were at most that long."""
        total = 0
        out = []
        for n in self.counts:
            total += n
            out.append(total)
        return tuple(out)

    @classmethod
    def _from_native(cls, raw: Tuple[int, int, Any]) -> "Histogram":
        count, sum_us, buckets = raw
        return cls(HISTOGRAM_BOUNDS, tuple(buckets), count, sum_us / 1e6)


@dataclass(frozen=True)
class Stats:
    """A snapshot of a client's statistics (``Client.stats()``); counters since the client was
    made, gauges now. Taken field by field: during calls, fields may be a few calls apart.
    With ``Client(stats=False)`` every figure is 0 and ``enabled`` is False."""

    enabled: bool
    acquires_granted: int
    acquires_timed_out: int
    """Acquires that ended because the wait ran out (a try-once on a held lock too)."""
    acquires_canceled: int
    acquires_failed: int
    """Acquires that ended with any other error; by code in ``acquires_failed_by_code``."""
    acquires_failed_by_code: Mapping[str, int]
    """Code name (``"ECONN"``, ``"EAUTH"``, ... as in rlock.h without ``RLOCK_``) -> failed
    acquires; only the codes seen."""
    releases: int
    releases_failed: int
    locks_lost_gone: int
    locks_lost_unreachable: int
    locks_lost_expired: int
    renewals_sent: int
    renewals_failed: int
    reconnects: int
    failovers: int
    cluster_redirects: int
    scripts_sent: int
    events_dropped: int
    holds: int
    """Holds (lock, owner) this client keeps now, not lost."""
    waiters: int
    """Acquires waiting for a lock now."""
    acquire_wait: Histogram
    """Granted acquires: from the call to the grant."""
    hold: Histogram
    """From a hold's first acquire to its last release."""
    handoff: Histogram
    """Acquires woken by an unlock message: from the message's arrival to the grant."""
    command_rtt: Histogram
    """Round trips of commands (a pipelined batch counts once)."""
    elections_won: int = 0
    """Times an election of this client (``Client.leader``, ``Client.election``) became leader."""
    leaderships_revoked: int = 0
    """Leaderships of this client that ended, whatever the reason."""
    leaderships_revoked_by_reason: Mapping[str, int] = field(
        default_factory=lambda: MappingProxyType({})
    )
    """Revoke reason (``"gone"``, ``"unreachable"``, ``"expired"``, ``"resigned"``, ``"closed"``,
    ``"failed"``: ``RevokeReason`` names in lower case) -> leaderships ended so; only those
    seen."""
    leaders: int = 0
    """Elections of this client that lead now."""
    tls_handshakes: int = 0
    """TLS handshakes completed (every kind of connection), full or resumed; 0 in plaintext."""
    tls_sessions_resumed: int = 0
    """Of those, the ones that resumed an earlier connection's session (docs/tls.md)."""

    @property
    def locks_lost(self) -> int:
        """Holds lost, whatever the reason."""
        return self.locks_lost_gone + self.locks_lost_unreachable + self.locks_lost_expired

    @classmethod
    def _from_native(cls, raw: dict[str, Any]) -> "Stats":
        fields = dict(raw)
        fields["acquires_failed_by_code"] = MappingProxyType(
            {code_name(code): n for code, n in sorted(raw["acquires_failed_by_code"].items())}
        )
        fields["leaderships_revoked_by_reason"] = MappingProxyType(
            {
                revoke_reason_name(reason): n
                for reason, n in sorted(raw.get("leaderships_revoked_by_reason", {}).items())
            }
        )
        for name in ("acquire_wait", "hold", "handoff", "command_rtt"):
            fields[name] = Histogram._from_native(raw[name])
        return cls(**fields)


class LostReason(enum.IntEnum):
    """Why a held lock was lost (the argument of an ``on_lost`` callback, and ``Event.reason``)."""

    GONE = 1
    """Renewal found the key deleted or held by someone else."""
    UNREACHABLE = 2
    """Redis could not be reached before the lease ran out."""
    EXPIRED = 3
    """An explicit lease ran out while the lock was still held."""


class EventKind(enum.IntEnum):
    """What an ``Event`` reports (rlock.h ``rlock_event_kind``)."""

    ACQUIRED = 1
    """A lock was granted: ``name``, ``owner``, ``duration`` (waited), ``token``."""
    RELEASED = 2
    """A hold ended by its last release: ``name``, ``owner``, ``duration`` (held)."""
    LOST = 3
    """A hold was found lost: ``name``, ``owner``, ``reason``."""
    RENEWAL_FAILED = 4
    """A watchdog renewal failed: ``name``, ``owner``, ``error`` (code name), ``detail``."""
    FAILOVER = 5
    """Sentinel moved the master: ``detail`` is the new "host:port"."""
    REDIRECT = 6
    """Cluster: a MOVED or ASK answer was followed: ``detail`` is "MOVED <slot> <host:port>"."""
    KEY_EXPIRED = 7
    """A key of the client's names expired (``Client.watch_key_events``): ``name``."""
    KEY_DELETED = 8
    """A key of the client's names was deleted (``Client.watch_key_events``): ``name``."""
    ELECTED = 9
    """An election of the client became leader: ``name``, ``owner``, ``token`` (the term)."""
    REVOKED = 10
    """An election's leadership ended: ``name``, ``owner``, ``token`` (the term; None when a
    campaign ended without leading), ``reason`` (a ``RevokeReason``)."""


@dataclass(frozen=True)
class Event:
    """One event of a client (``Client.on_event``). Absent fields are None.

    ``name`` is the lock's name as the API takes names: a str when it is UTF-8 (any name given
    as a str is), else bytes. ``owner`` is the hold's owner field on Redis,
    ``"<client id>:<thread id>"`` (``":write"`` appended for a writer). ``duration`` is in
    seconds: the time waited (ACQUIRED) or held (RELEASED). ``time`` is when it happened, in
    seconds since the epoch (as ``time.time()``)."""

    kind: EventKind
    time: float
    name: Optional[Name] = None
    owner: Optional[str] = None
    thread_id: Optional[int] = None
    duration: Optional[float] = None
    token: Optional[int] = None
    """ACQUIRED: the fencing token of the grant, if it got one."""
    reason: Optional[Union[LostReason, RevokeReason, int]] = None
    """LOST: why (a ``LostReason``); REVOKED: why (a ``RevokeReason``)."""
    error: Optional[str] = None
    """RENEWAL_FAILED: the status code's name (``"ECONN"``)."""
    detail: str = ""

    @property
    def waited(self) -> Optional[float]:
        """ACQUIRED: the seconds the acquire waited."""
        return self.duration if self.kind == EventKind.ACQUIRED else None

    @property
    def held(self) -> Optional[float]:
        """RELEASED: the seconds the lock was held (first acquire to last release)."""
        return self.duration if self.kind == EventKind.RELEASED else None


def _reason(kind: EventKind, reason: int) -> Optional[Union[LostReason, RevokeReason, int]]:
    if not reason:
        return None
    if kind == EventKind.LOST:
        return LostReason(reason)
    if kind == EventKind.REVOKED:
        try:
            return RevokeReason(reason)
        except ValueError:
            return reason  # a reason this binding does not know yet
    return None


def _name(raw: bytes) -> Optional[Name]:
    if not raw:
        return None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw


def event_dispatcher(
    handler: Callable[[Event], Any],
) -> Callable[[int, int, bytes, bytes, int, int, int, int, str], None]:
    """What the native layer calls for each event: builds the Event and calls `handler`."""

    def dispatch(
        kind: int,
        unix_time_us: int,
        name: bytes,
        owner: bytes,
        thread_id: int,
        duration_us: int,
        token: int,
        reason: int,
        detail: str,
    ) -> None:
        event_kind = EventKind(kind)
        timed = event_kind in (EventKind.ACQUIRED, EventKind.RELEASED)
        handler(
            Event(
                kind=event_kind,
                time=unix_time_us / 1e6,
                name=_name(name),
                owner=owner.decode("utf-8", "replace") if owner else None,
                thread_id=thread_id or None,
                duration=duration_us / 1e6 if timed else None,
                token=token or None,
                reason=_reason(event_kind, reason),
                error=code_name(reason) if event_kind == EventKind.RENEWAL_FAILED else None,
                detail=detail,
            )
        )

    return dispatch
