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
from ._client import Client, Holder, Lock, LostReason, MultiLock, ReadWriteLock, RedLock
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
from ._leader import Election, Leadership, LeadershipLostError, RevokeReason
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


def _warn_if_sharing_the_package() -> None:
    # The PyPI name "rlock" is another project that installs a package "rlock" too, as did this
    # project's builds before its distribution became rlock-redis: either one beside us owns our
    # files as well, and uninstalling it deletes them.
    import os
    import warnings

    site = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    try:
        names = os.listdir(site)
    except OSError:
        return
    others = sorted(
        n
        for n in names
        if n.lower().startswith("rlock-") and n.endswith((".dist-info", ".egg-info"))
    )
    if others:
        warnings.warn(
            f"a distribution named 'rlock' ({others[0]}) is installed in {site} beside "
            "rlock-redis and shares its package directory 'rlock'; uninstalling either deletes "
            "files of the other. Run: pip uninstall rlock rlock-redis && pip install rlock-redis",
            RuntimeWarning,
            stacklevel=3,
        )


_warn_if_sharing_the_package()

__all__ = [
    "__version__",
    "Client",
    "Lock",
    "Holder",
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
    "Election",
    "Leadership",
    "RevokeReason",
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
    "LeadershipLostError",
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
