"""rlock's exceptions and the one table that maps C status codes to them."""

from __future__ import annotations

import builtins

from . import _native


class LockError(Exception):
    """Base class of every rlock error.

    ``code`` is the C ABI status code (a negative ``RLOCK_E*`` value); the message comes from
    the C library and names the problem.
    """

    code: int = -1


class LockTimeoutError(LockError, TimeoutError):
    """The lock was not acquired in the time allowed, where that is an error (``with lock:``
    on a lock made with ``blocking_timeout``). ``acquire()`` returns False instead."""

    code = -2


class NotHeldError(LockError, RuntimeError):
    """Release or extend of a lock the caller does not hold: nobody holds it, or another owner
    does (the lock is then left untouched). Like ``threading.Lock.release`` on an unlocked
    lock, it is also a ``RuntimeError``."""

    code = -3


class LockLostError(LockError):
    """The caller held the lock, but it expired or was taken before the release or extend: the
    critical section may not have been exclusive. Use fencing tokens where this matters."""

    code = -11


class AcquireCancelledError(LockError):
    """The acquire was woken by ``cancel()`` from another thread."""

    code = -4


class DeadlockError(LockError):
    """The acquire would wait for the caller itself: a read holder asked for the write lock."""

    code = -21


class ConnectionError(LockError, builtins.ConnectionError):  # noqa: A001 (named as the issue asks)
    """Redis could not be reached, did not answer in time, or broke the protocol. Also an
    instance of the built-in ``ConnectionError``."""

    code = -5


RedisConnectionError = ConnectionError  # the name that does not shadow the built-in


class AuthenticationError(ConnectionError):
    """Redis rejected the credentials."""

    code = -13


class NoPermissionError(LockError, PermissionError):
    """The Redis user lacks a command or key the lock needs (ACL)."""

    code = -14


class RedisError(LockError):
    """Redis answered with an error: out of memory, busy with a script, a read-only replica,
    a missing command."""

    code = -16


class NotSyncedError(LockError):
    """Replica sync: the master granted the lock, but fewer replicas than asked confirmed it in
    time, twice; each grant was taken back, so nothing is held (``RLOCK_ENOTSYNCED``)."""

    code = -23


class InvalidArgumentError(LockError, ValueError):
    """An argument the C library refused (the message names it). Also a ``ValueError``."""

    code = -6


class ClientClosedError(LockError):
    """The client behind this lock was closed, or the lock or group itself was. (``code`` -22,
    ``RLOCK_EBADHANDLE``, would mean the binding passed a freed handle: a bug; the binding checks
    for closed objects itself and never does.)"""

    code = -20


# The one mapping from C status codes to exception classes. Codes not listed raise LockError.
_BY_CODE: dict[int, type[LockError]] = {
    -2: LockTimeoutError,  # RLOCK_ETIMEDOUT
    -3: NotHeldError,  # RLOCK_ENOTHELD
    -4: AcquireCancelledError,  # RLOCK_ECANCELED
    -5: ConnectionError,  # RLOCK_ECONN
    -6: InvalidArgumentError,  # RLOCK_EINVAL
    -11: LockLostError,  # RLOCK_ELOST
    -12: NotHeldError,  # RLOCK_ENOTOWNER
    -13: AuthenticationError,  # RLOCK_EAUTH
    -14: NoPermissionError,  # RLOCK_ENOPERM
    -15: RedisError,  # RLOCK_EUNSUPPORTED
    -16: RedisError,  # RLOCK_EREDIS
    -17: RedisError,  # RLOCK_EOOM
    -18: RedisError,  # RLOCK_EBUSY
    -19: RedisError,  # RLOCK_EREADONLY
    -20: ClientClosedError,  # RLOCK_ECLOSED
    -21: DeadlockError,  # RLOCK_EDEADLK
    -22: ClientClosedError,  # RLOCK_EBADHANDLE: a freed handle is a closed one
    -23: NotSyncedError,  # RLOCK_ENOTSYNCED
}

_native._set_error_classes(_BY_CODE, LockError)
