"""The blocking API of semaphores and count-down latches: Semaphore, ExpirableSemaphore, Permit,
CountDownLatch. They share Redisson's on-Redis layouts (``RSemaphore``,
``RPermitExpirableSemaphore``, ``RCountDownLatch``), so rlock and Redisson processes share them.

Unlike locks, none of them is owned by a thread: a plain semaphore's permits belong to the
client that took them (any thread of it may give them back), an expirable permit to whoever
has its id, and a latch to nobody.
"""

from __future__ import annotations

import enum
import math
import os
from typing import TYPE_CHECKING, Any, Iterable, List, Optional, Sequence, Union

from . import _green, _native
from ._client import (
    _MAX_SECONDS,
    _duration_ms,
    _in_main_thread,
    _made_here,
    _name_bytes,
    _number,
)
from ._errors import InvalidArgumentError, LockTimeoutError

if TYPE_CHECKING:
    from ._client import Client, Name

__all__ = [
    "Semaphore",
    "ExpirableSemaphore",
    "Permit",
    "CountDownLatch",
    "PermitLease",
    "NO_LEASE",
    "WATCHDOG",
]


class PermitLease(enum.Enum):
    """The special leases of an expirable permit (besides a number of seconds)."""

    NONE = _native.LEASE_NONE
    """The permit never expires (Redisson's lease -1): a holder that dies keeps it for good."""
    WATCHDOG = _native.LEASE_WATCHDOG
    """The permit gets the client's ``watchdog_lease`` and is renewed while its client lives,
    until released; closing the client gives it back (an rlock extension: Redisson renews no
    permit)."""


NO_LEASE = PermitLease.NONE
WATCHDOG = PermitLease.WATCHDOG

Lease = Union[float, PermitLease, None]
PermitRef = Union[str, "Permit"]


# ---- argument checks ------------------------------------------------------------------------


def _whole(value: Any, what: str) -> int:
    """An int for the C library, which checks the range that matters; outside 64 bits it
    could not even be passed."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{what} must be an int, not {type(value).__name__}")
    if not -(2**63) <= value < 2**63:
        raise InvalidArgumentError(f"{what} is out of range: {value}")
    return value


def _timeout_ms(timeout: Optional[float]) -> int:
    """None waits for ever; 0 tries once; otherwise whole milliseconds, rounded up."""
    if timeout is None:
        return int(_native.WAIT_FOREVER)
    seconds = _number(timeout, "timeout")
    if seconds < 0:
        raise InvalidArgumentError(f"timeout must be None or at least 0, got {timeout!r}")
    if seconds > _MAX_SECONDS:
        raise OverflowError("timeout value is too large")
    return math.ceil(seconds * 1000.0)


def _permit_lease_ms(lease: Lease, default_ms: int) -> int:
    """A permit lease in C terms: None is `default_ms`."""
    if lease is None:
        return default_ms
    if isinstance(lease, PermitLease):
        return int(lease.value)
    return _duration_ms(lease, "lease")


def _ttl_ms(ttl: Optional[float]) -> int:
    return 0 if ttl is None else _duration_ms(ttl, "ttl")


def _id_text(permit: Any) -> str:
    if isinstance(permit, Permit):
        return permit.id
    if isinstance(permit, str):
        return permit
    raise TypeError(f"a permit is a Permit or its id (str), not {type(permit).__name__}")


def _id_list(ids: Union[PermitRef, Iterable[PermitRef]]) -> List[str]:
    if isinstance(ids, (str, Permit)):
        return [_id_text(ids)]
    if isinstance(ids, (bytes, bytearray, memoryview)):
        raise TypeError("a permit id is a str of 32 hex digits, not bytes")
    return [_id_text(one) for one in ids]


def _check_client(client: Any) -> "Client":
    from ._client import Client

    if not isinstance(client, Client):
        raise TypeError(f"client must be an rlock.Client, not {type(client).__name__}")
    return client


def _take(
    native: _native.Semaphore, permits: int, wait_ms: int, lease_ms: int, expirable: bool
) -> Optional[List[str]]:
    """One native acquire: the ids taken ([] for a plain semaphore), None when the time ran
    out. In the main thread the wait runs signal handlers (Ctrl-C); permits granted just as one
    raises are given back, here or in the native layer, before the exception goes on."""
    if wait_ms != 0 and _green.active():
        taken = native.acquire(permits, 0, lease_ms, None, False, [])
        if taken is not None:
            return taken

        def start(cancel: _native.CancelToken, loop: Any, done: _green.Done) -> None:
            native.acquire_async(permits, wait_ms, lease_ms, cancel, loop, done)

        def give_back(grant: Any) -> None:
            if expirable:
                native.release_ids(grant)
            else:
                native.release(permits)

        grant = _green.acquire(start, give_back)
        return None if grant is None else (list(grant) if expirable else [])
    receipt: List[Any] = []
    try:
        return native.acquire(permits, wait_ms, lease_ms, None, _in_main_thread(), receipt)
    except BaseException:
        if receipt:
            if expirable:
                native.release_ids(receipt[0])
            else:
                native.release(permits)
        raise


class _Handle:
    """What the semaphore and latch classes share: the client (kept open while they live),
    the name and the native handle."""

    __slots__ = ("_client", "_name", "_handle", "_pid", "__weakref__")
    _client: "Client"
    _name: "Name"
    _handle: Union[_native.Semaphore, _native.Latch]
    _pid: int  # the process it was made in (see _made_here)

    def __init__(self) -> None:
        raise TypeError(
            "semaphores and latches are made by a Client: client.semaphore(name), "
            "client.expirable_semaphore(name), client.count_down_latch(name)"
        )

    @property
    def name(self) -> "Name":
        return self._name

    @property
    def client(self) -> "Client":
        return self._client

    def close(self) -> None:
        """Frees the native handle now (no network call); waits in progress end with
        ``AcquireCancelledError``. Unusable afterwards. Garbage collection does the same."""
        self._handle.close()

    def cancel(self) -> None:
        """Wakes every wait in progress on this object, in any thread
        (``AcquireCancelledError``)."""
        self._client._checked()
        self._handle.cancel()


# ---- plain semaphore --------------------------------------------------------------------------


class Semaphore(_Handle):
    """A counting semaphore on Redis (Redisson ``RSemaphore``), made by
    ``Client.semaphore(name)``: the count of available permits is the string key ``name``.

    Set the permits once (``try_set_permits``), then ``acquire`` / ``release`` them, or
    ``with sem:`` (one permit) and ``with sem.permits(n, timeout=...):``. Permits are anonymous
    and belong to the client that took them: any of its threads may give them back, and it may
    give back no more than it took (``add_permits`` makes new ones). A process that dies keeps
    its permits for good; use an ``ExpirableSemaphore`` when that matters. Waiting costs no
    thread (pub/sub on ``redisson_sc:{name}``)."""

    __slots__ = ()
    _handle: _native.Semaphore

    @classmethod
    def _make(cls, client: "Client", name: "Name") -> "Semaphore":
        _check_client(client)
        raw_name = _name_bytes(name, "semaphore name")
        self = object.__new__(cls)
        self._pid = os.getpid()
        self._client = client
        self._name = name
        self._handle = _native.Semaphore(
            client._checked(), raw_name, _native.SEMAPHORE_PLAIN, int(_native.LEASE_WATCHDOG)
        )
        return self

    def __repr__(self) -> str:
        return f"<rlock.Semaphore {self._name!r}>"

    def _checked(self) -> _native.Semaphore:
        _made_here(self._pid, "semaphore or latch")
        self._client._checked()
        return self._handle

    def try_set_permits(self, permits: int, ttl: Optional[float] = None) -> bool:
        """Sets the permits (0 to 2**31-1) of a semaphore that does not exist yet; True when
        set, False when it existed (unchanged). ``ttl`` (seconds) makes it expire."""
        return self._checked().try_set_permits(_whole(permits, "permits"), _ttl_ms(ttl))

    def add_permits(self, delta: int) -> int:
        """Adds ``delta`` permits (a negative delta takes some away: the count may go below
        0); a missing semaphore counts as 0. Returns the new count. Drops any expiry, as
        Redisson's does."""
        return self._checked().add_permits(_whole(delta, "delta"))

    def acquire(self, permits: int = 1, timeout: Optional[float] = None) -> bool:
        """Takes ``permits`` (0 to 2**31-1; 0 succeeds at once) permits, waiting up to
        ``timeout`` seconds (None: for
        ever, 0: one try). True when taken, False when the time ran out (a semaphore that does
        not exist has no permits: the wait runs out). The GIL is released while waiting;
        Ctrl-C interrupts the wait and leaves nothing taken."""
        native = self._checked()
        count = _whole(permits, "permits")
        return _take(native, count, _timeout_ms(timeout), 0, False) is not None

    def try_acquire(self, permits: int = 1) -> bool:
        """Takes ``permits`` permits if that many are available now, without waiting."""
        return self.acquire(permits, timeout=0)

    def release(self, permits: int = 1) -> None:
        """Gives back ``permits`` permits that this client took. ``NotHeldError`` (nothing
        changes) for more than it holds; ``LockLostError`` when the semaphore was deleted or
        expired meanwhile."""
        self._checked().release(_whole(permits, "permits"))

    def release_if_exists(self, permits: int = 1) -> bool:
        """As ``release``, but only to a semaphore that still exists (Redisson's
        ``releaseIfExists``): True when the permits were given back; False when the semaphore
        does not exist (nothing is created, and the permits no longer count as this client's)
        or ``permits`` is 0. ``NotHeldError`` for more than this client holds."""
        return self._checked().release_if_exists(_whole(permits, "permits"))

    def available_permits(self) -> int:
        """The permits available now (0 when the semaphore does not exist)."""
        return int(self._checked().available()[0])

    def exists(self) -> bool:
        """True if the semaphore exists (its permits were set)."""
        return bool(self._checked().available()[2])

    def drain_permits(self) -> int:
        """Takes every available permit (they are gone, not held); returns how many (may be
        negative, when the count was). Nothing to give back afterwards."""
        return self._checked().drain()

    def delete(self) -> bool:
        """Deletes the semaphore; True if it existed. Permits held by anyone can no longer be
        given back (``LockLostError``)."""
        return self._checked().delete()

    def held_permits(self) -> int:
        """The permits this client took and has not given back (local view, no network
        call)."""
        return self._checked().held()

    def permits(self, permits: int = 1, timeout: Optional[float] = None) -> "HeldPermits":
        """A context manager that takes ``permits`` permits on entry, waiting up to
        ``timeout`` seconds (``LockTimeoutError`` when the time runs out), and gives them back
        on exit: ``with sem.permits(2, timeout=5.0): ...``."""
        _whole(permits, "permits")
        _timeout_ms(timeout)  # checked now rather than at the `with`
        return HeldPermits(self, permits, timeout)

    def __enter__(self) -> "Semaphore":
        self.acquire()
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.release()


class HeldPermits:
    """``Semaphore.permits(n, timeout)``: takes the permits on entry, gives them back on
    exit."""

    __slots__ = ("_semaphore", "_permits", "_timeout")

    def __init__(self, semaphore: Semaphore, permits: int, timeout: Optional[float]) -> None:
        self._semaphore = semaphore
        self._permits = permits
        self._timeout = timeout

    def __enter__(self) -> Semaphore:
        if not self._semaphore.acquire(self._permits, self._timeout):
            raise LockTimeoutError(
                f"semaphore {self._semaphore.name!r}: {self._permits} permit(s) not acquired "
                f"within {self._timeout} s"
            )
        return self._semaphore

    def __exit__(self, *exc_info: Any) -> None:
        self._semaphore.release(self._permits)


# ---- permit-expirable semaphore -----------------------------------------------------------


class Permit:
    """One permit of an ``ExpirableSemaphore``: its ``id`` (32 lower-case hex digits, the
    16 bytes Redisson keeps in ``{name}:timeout``). ``with permit:`` gives it back on exit."""

    __slots__ = ("_semaphore", "_id")

    def __init__(self, semaphore: "ExpirableSemaphore", permit_id: str) -> None:
        self._semaphore = semaphore
        self._id = permit_id

    @property
    def id(self) -> str:
        return self._id

    @property
    def semaphore(self) -> "ExpirableSemaphore":
        return self._semaphore

    def release(self) -> None:
        """Gives the permit back (see ``ExpirableSemaphore.release``)."""
        self._semaphore.release(self._id)

    def update_lease(self, lease: Lease = None) -> bool:
        """See ``ExpirableSemaphore.update_lease``."""
        return self._semaphore.update_lease(self._id, lease)

    def lease_time(self) -> Optional[float]:
        """See ``ExpirableSemaphore.lease_time``."""
        return self._semaphore.lease_time(self._id)

    def __enter__(self) -> "Permit":
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.release()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Permit) and other._id == self._id

    def __hash__(self) -> int:
        return hash(self._id)

    def __repr__(self) -> str:
        return f"<rlock.Permit {self._id} of {self._semaphore.name!r}>"


class ExpirableSemaphore(_Handle):
    """A semaphore whose permits each have an id and a lease (Redisson
    ``RPermitExpirableSemaphore``), made by ``Client.expirable_semaphore(name, lease=...)``: a
    holder that dies frees its permits when their lease runs out.

    ``lease`` is the default lease of its acquires: None (the watchdog: the client's
    ``watchdog_lease``, renewed while the client lives), seconds, or ``rlock.NO_LEASE`` (never
    expires). It shares the count (key ``name``) and the channel with a plain ``Semaphore`` of
    the same name; the held permits' deadlines are in ``{name}:timeout``."""

    __slots__ = ("_lease_ms",)
    _handle: _native.Semaphore
    _lease_ms: int

    @classmethod
    def _make(cls, client: "Client", name: "Name", lease: Lease) -> "ExpirableSemaphore":
        _check_client(client)
        raw_name = _name_bytes(name, "semaphore name")
        lease_ms = _permit_lease_ms(lease, int(_native.LEASE_WATCHDOG))
        self = object.__new__(cls)
        self._pid = os.getpid()
        self._client = client
        self._name = name
        self._lease_ms = lease_ms
        self._handle = _native.Semaphore(
            client._checked(), raw_name, _native.SEMAPHORE_EXPIRABLE, lease_ms
        )
        return self

    def __repr__(self) -> str:
        return f"<rlock.ExpirableSemaphore {self._name!r}>"

    def _checked(self) -> _native.Semaphore:
        _made_here(self._pid, "semaphore or latch")
        self._client._checked()
        return self._handle

    def _permits(self, ids: Sequence[str]) -> List[Permit]:
        return [Permit(self, one) for one in ids]

    def try_set_permits(self, permits: int) -> bool:
        """Sets the permits (0 to 2**31-1) of a semaphore that does not exist yet; True when
        set."""
        return self._checked().try_set_permits(_whole(permits, "permits"), 0)

    def add_permits(self, delta: int) -> int:
        """Adds (or, negative, takes away) permits; returns the new available count."""
        return self._checked().add_permits(_whole(delta, "delta"))

    def acquire_many(
        self, permits: int, timeout: Optional[float] = None, lease: Lease = None
    ) -> Optional[List[Permit]]:
        """Takes ``permits`` (1 to 1000) permits at once, waiting up to ``timeout`` seconds
        (None: for ever, 0: one try), each with ``lease`` (None: the semaphore's). None when
        the time ran out. Ctrl-C interrupts the wait and leaves nothing taken."""
        native = self._checked()
        count = _whole(permits, "permits")
        ids = _take(native, count, _timeout_ms(timeout), _permit_lease_ms(lease, 0), True)
        return None if ids is None else self._permits(ids)

    def acquire(self, timeout: Optional[float] = None, lease: Lease = None) -> Optional[Permit]:
        """Takes one permit (see ``acquire_many``); None when the time ran out."""
        taken = self.acquire_many(1, timeout, lease)
        return None if taken is None else taken[0]

    def try_acquire(self, lease: Lease = None) -> Optional[Permit]:
        """Takes one permit if one is available now, without waiting."""
        return self.acquire(0, lease)

    def permit(self, timeout: Optional[float] = None, lease: Lease = None) -> "HeldPermit":
        """A context manager that takes a permit on entry (``LockTimeoutError`` when
        ``timeout`` runs out) and gives it back on exit: ``with sem.permit() as p: ...``."""
        _timeout_ms(timeout)
        _permit_lease_ms(lease, 0)
        return HeldPermit(self, timeout, lease)

    def release(self, permits: Union[PermitRef, Iterable[PermitRef]]) -> None:
        """Gives back permits by id (``Permit`` objects or their ids, one or several), all or
        none: ``NotHeldError`` when one is not held (never taken, released, or reclaimed after
        its lease ran out), ``LockLostError`` when one's lease ran out (it goes back to the
        semaphore anyway), ``InvalidArgumentError`` for a malformed id; nothing changes then."""
        ids = _id_list(permits)
        if not ids:
            raise InvalidArgumentError("release needs at least one permit, got none")
        self._checked().release_ids(ids)

    def update_lease(self, permit: PermitRef, lease: Lease = None) -> bool:
        """Gives a held permit a new lease from now (None: the semaphore's default;
        ``rlock.WATCHDOG``: renewed by this object from now on; ``rlock.NO_LEASE``: never
        expires). False when it is not held (released, or expired)."""
        lease_ms = _permit_lease_ms(lease, self._lease_ms)
        return self._checked().update_lease(_id_text(permit), lease_ms)

    def set_permits(self, permits: int) -> int:
        """Sets the total of permits, available plus held (Redisson's ``setPermits``):
        expired permits go back first, then the available count becomes ``permits`` minus the
        permits held, so it is below 0 while more are held than the new total. A semaphore that
        does not exist is made with ``permits`` available. Returns the available count."""
        return self._checked().set_permits(_whole(permits, "permits"))

    def lease_time(self, permit: PermitRef) -> Optional[float]:
        """Seconds left on a held permit's lease (Redisson's ``getLeaseTime``, in seconds):
        ``math.inf`` for a permit without lease, None when it is not held (never taken,
        released, or its lease ran out; Redisson throws). Expired permits go back first."""
        left = self._checked().lease_time(_id_text(permit))
        if left is None:
            return None
        return math.inf if left == _native.LEASE_NONE else left / 1000.0

    def available_permits(self) -> int:
        """The permits available now, after giving expired permits back."""
        return int(self._checked().available()[0])

    def acquired_permits(self) -> int:
        """The permits held now, by anyone (after giving expired ones back)."""
        return int(self._checked().available()[1])

    def exists(self) -> bool:
        """True if the semaphore exists (its permits were set)."""
        return bool(self._checked().available()[2])

    def delete(self) -> bool:
        """Deletes the semaphore and its permits' ids; True if it existed."""
        return self._checked().delete()


class HeldPermit:
    """``ExpirableSemaphore.permit(timeout, lease)``: takes a permit on entry, gives it back
    on exit."""

    __slots__ = ("_semaphore", "_timeout", "_lease", "_permit")

    def __init__(self, semaphore: ExpirableSemaphore, timeout: Optional[float], lease: Lease):
        self._semaphore = semaphore
        self._timeout = timeout
        self._lease = lease
        self._permit: Optional[Permit] = None

    def __enter__(self) -> Permit:
        permit = self._semaphore.acquire(self._timeout, self._lease)
        if permit is None:
            raise LockTimeoutError(
                f"semaphore {self._semaphore.name!r}: no permit acquired within {self._timeout} s"
            )
        self._permit = permit
        return permit

    def __exit__(self, *exc_info: Any) -> None:
        permit, self._permit = self._permit, None
        if permit is not None:
            permit.release()


# ---- count-down latch -------------------------------------------------------------------------


class CountDownLatch(_Handle):
    """A count-down latch on Redis (Redisson ``RCountDownLatch``), made by
    ``Client.count_down_latch(name)``: closed while its count (the string key ``name``) is
    above 0, open when it reaches 0 or does not exist. Waiting costs no thread."""

    __slots__ = ()
    _handle: _native.Latch

    @classmethod
    def _make(cls, client: "Client", name: "Name") -> "CountDownLatch":
        _check_client(client)
        raw_name = _name_bytes(name, "latch name")
        self = object.__new__(cls)
        self._pid = os.getpid()
        self._client = client
        self._name = name
        self._handle = _native.Latch(client._checked(), raw_name)
        return self

    def __repr__(self) -> str:
        return f"<rlock.CountDownLatch {self._name!r}>"

    def _checked(self) -> _native.Latch:
        _made_here(self._pid, "semaphore or latch")
        self._client._checked()
        return self._handle

    def try_set_count(self, count: int) -> bool:
        """Sets the count (1 to 999999999999999) of a latch that does not exist (is open);
        True when set, False when it existed (unchanged)."""
        return self._checked().try_set_count(_whole(count, "count"))

    def count_down(self) -> int:
        """Counts down by one and returns the count left; at 0 the latch opens and every
        waiter wakes. An open latch stays open (0)."""
        return self._checked().count_down()

    def count(self) -> int:
        """The count now (0: open)."""
        return self._checked().count()

    def wait(self, timeout: Optional[float] = None) -> bool:
        """Waits until the latch is open: True then, False when ``timeout`` seconds (None:
        for ever) ran out. Ctrl-C interrupts the wait."""
        wait_ms = _timeout_ms(timeout)
        native = self._checked()
        if wait_ms != 0 and _green.active():
            if native.count() == 0:
                return True

            def start(cancel: _native.CancelToken, loop: Any, done: _green.Done) -> None:
                native.wait_async(wait_ms, cancel, loop, done)

            return _green.acquire(start, lambda _grant: None) is not None
        return native.wait(wait_ms, None, _in_main_thread())

    def delete(self) -> bool:
        """Deletes the latch, which opens it; True if it existed. As in Redisson, waiters are
        not woken by it: they find it open at their next message, poll (``poll_cap``) or the
        end of their timeout (then ``wait`` returns True)."""
        return self._checked().delete()
