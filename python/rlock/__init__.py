"""rlock: distributed locks on Redis that share Redisson's on-Redis layout.

    import rlock

    client = rlock.Client("redis://127.0.0.1:6379")   # or $RLOCK_URL
    with client.lock("nightly-report"):
        ...                                             # one process at a time, on any host

Durations are seconds as floats. ``acquire(blocking=True, timeout=-1, lease=None)`` behaves
like ``threading.Lock.acquire``. Locks are reentrant and owned per thread (per task with
``rlock.asyncio``). Without a lease a held lock is renewed by a watchdog until released, so a
crashed process frees it within ``watchdog_lease`` seconds.
"""

from . import _native
from ._client import Client, Lock, LostReason, MultiLock, ReadWriteLock, RedLock
from ._errors import (
    AcquireCancelledError,
    AuthenticationError,
    ClientClosedError,
    ConnectionError,
    DeadlockError,
    ForkedError,
    InvalidArgumentError,
    LockError,
    LockLostError,
    LockTimeoutError,
    NoPermissionError,
    NotHeldError,
    NotSyncedError,
    RedisConnectionError,
    RedisError,
    TLSError,
)
from ._semaphore import (
    NO_LEASE,
    WATCHDOG,
    CountDownLatch,
    ExpirableSemaphore,
    Permit,
    PermitLease,
    Semaphore,
)
from ._stats import Event, EventKind, Histogram, Stats

__version__: str = _native.version()

__all__ = [
    "__version__",
    "Client",
    "Lock",
    "ReadWriteLock",
    "MultiLock",
    "RedLock",
    "Semaphore",
    "ExpirableSemaphore",
    "Permit",
    "PermitLease",
    "NO_LEASE",
    "WATCHDOG",
    "CountDownLatch",
    "LostReason",
    "Stats",
    "Histogram",
    "Event",
    "EventKind",
    "LockError",
    "LockTimeoutError",
    "NotHeldError",
    "NotSyncedError",
    "LockLostError",
    "AcquireCancelledError",
    "DeadlockError",
    "ConnectionError",
    "RedisConnectionError",
    "AuthenticationError",
    "TLSError",
    "NoPermissionError",
    "RedisError",
    "InvalidArgumentError",
    "ClientClosedError",
    "ForkedError",
]
