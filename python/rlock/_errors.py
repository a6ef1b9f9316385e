"""rlock's exceptions and the one table that maps C status codes to them."""

from __future__ import annotations

import builtins

from . import _native

# The C status codes (rlock.h's rlock_error_code), the one copy in Python.
# tests/python/test_header_tables.py fails when this differs from the header.
_CODES: dict[str, int] = {
    "RLOCK_OK": 0,
    "RLOCK_ERROR": -1,
    "RLOCK_ETIMEDOUT": -2,
    "RLOCK_ENOTHELD": -3,
    "RLOCK_ECANCELED": -4,
    "RLOCK_ECONN": -5,
    "RLOCK_EINVAL": -6,
    "RLOCK_ENOMEM": -7,
    "RLOCK_EVERSION": -8,
    "RLOCK_EINTERNAL": -9,
    "RLOCK_EUSER": -10,
    "RLOCK_ELOST": -11,
    "RLOCK_ENOTOWNER": -12,
    "RLOCK_EAUTH": -13,
    "RLOCK_ENOPERM": -14,
    "RLOCK_EUNSUPPORTED": -15,
    "RLOCK_EREDIS": -16,
    "RLOCK_EOOM": -17,
    "RLOCK_EBUSY": -18,
    "RLOCK_EREADONLY": -19,
    "RLOCK_ECLOSED": -20,
    "RLOCK_EDEADLK": -21,
    "RLOCK_EBADHANDLE": -22,
    "RLOCK_ENOTSYNCED": -23,
    "RLOCK_EFORKED": -24,
    "RLOCK_ETLS": -25,
}


class LockError(Exception):
    """Base class of every rlock error.

    ``code`` is the C ABI status code (a negative ``RLOCK_E*`` value); the message comes from
    the C library and names the problem.
    """

    code: int = _CODES["RLOCK_ERROR"]


class LockTimeoutError(LockError, TimeoutError):
    """The lock was not acquired in the time allowed, where that is an error (``with lock:``
    on a lock made with ``blocking_timeout``). ``acquire()`` returns False instead."""

    code = _CODES["RLOCK_ETIMEDOUT"]


class NotHeldError(LockError, RuntimeError):
    """Release or extend of a lock the caller does not hold: nobody holds it, or another owner
    does (the lock is then left untouched). Like ``threading.Lock.release`` on an unlocked
    lock, it is also a ``RuntimeError``."""

    code = _CODES["RLOCK_ENOTHELD"]


class LockLostError(LockError):
    """The caller held the lock, but it expired or was taken before the release or extend: the
    critical section may not have been exclusive. Use fencing tokens where this matters."""

    code = _CODES["RLOCK_ELOST"]


class AcquireCancelledError(LockError):
    """The acquire was woken by ``cancel()`` from another thread."""

    code = _CODES["RLOCK_ECANCELED"]


class DeadlockError(LockError):
    """The acquire would wait for the caller itself: a read holder asked for the write lock."""

    code = _CODES["RLOCK_EDEADLK"]


class ConnectionError(LockError, builtins.ConnectionError):  # noqa: A001 (named as the issue asks)
    """Redis could not be reached, did not answer in time, or broke the protocol. Also an
    instance of the built-in ``ConnectionError``."""

    code = _CODES["RLOCK_ECONN"]


RedisConnectionError = ConnectionError  # the name that does not shadow the built-in


class AuthenticationError(ConnectionError):
    """Redis rejected the credentials."""

    code = _CODES["RLOCK_EAUTH"]


class TLSError(ConnectionError):
    """TLS failed while connecting: the handshake, the server's certificate (untrusted, expired,
    naming another host), a client certificate the server refused, or a server that does not
    speak TLS on a ``rediss://`` URL. The message gives OpenSSL's reason. Retrying does not help
    (the settings or the certificates must change), but like ``AuthenticationError`` it is a
    failure to connect, so ``except rlock.ConnectionError`` catches it too."""

    code = _CODES["RLOCK_ETLS"]


class NoPermissionError(LockError, PermissionError):
    """The Redis user lacks a command or key the lock needs (ACL)."""

    code = _CODES["RLOCK_ENOPERM"]


class RedisError(LockError):
    """Redis answered with an error: out of memory, busy with a script, a read-only replica,
    a missing command."""

    code = _CODES["RLOCK_EREDIS"]


class NotSyncedError(LockError):
    """Replica sync: the master granted the lock, but fewer replicas than asked confirmed it in
    time, twice; each grant was taken back, so nothing is held (``RLOCK_ENOTSYNCED``)."""

    code = _CODES["RLOCK_ENOTSYNCED"]


class ForkedError(LockError):
    """The client, lock or group was made in a parent process before ``fork()``: it cannot be
    used in the child (``RLOCK_EFORKED``). Nothing was sent to Redis, and the parent's locks are
    untouched. Make a new ``Client`` in the child."""

    code = _CODES["RLOCK_EFORKED"]


class InvalidArgumentError(LockError, ValueError):
    """An argument the C library refused (the message names it). Also a ``ValueError``."""

    code = _CODES["RLOCK_EINVAL"]


class ClientClosedError(LockError):
    """The client behind this lock was closed, or the lock or group itself was. (``code`` -22,
    ``RLOCK_EBADHANDLE``, would mean the binding passed a freed handle: a bug; the binding checks
    for closed objects itself and never does.)"""

    code = _CODES["RLOCK_ECLOSED"]


# The one mapping from C status codes to exception classes. Every code but RLOCK_OK is either
# here or in _GENERIC (raised as LockError); tests/python/test_header_tables.py checks that.
_BY_NAME: dict[str, type[LockError]] = {
    "RLOCK_ETIMEDOUT": LockTimeoutError,
    "RLOCK_ENOTHELD": NotHeldError,
    "RLOCK_ECANCELED": AcquireCancelledError,
    "RLOCK_ECONN": ConnectionError,
    "RLOCK_EINVAL": InvalidArgumentError,
    "RLOCK_ELOST": LockLostError,
    "RLOCK_ENOTOWNER": NotHeldError,
    "RLOCK_EAUTH": AuthenticationError,
    "RLOCK_ENOPERM": NoPermissionError,
    "RLOCK_EUNSUPPORTED": RedisError,
    "RLOCK_EREDIS": RedisError,
    "RLOCK_EOOM": RedisError,
    "RLOCK_EBUSY": RedisError,
    "RLOCK_EREADONLY": RedisError,
    "RLOCK_ECLOSED": ClientClosedError,
    "RLOCK_EDEADLK": DeadlockError,
    "RLOCK_EBADHANDLE": ClientClosedError,  # a freed handle is a closed one
    "RLOCK_ENOTSYNCED": NotSyncedError,
    "RLOCK_EFORKED": ForkedError,
    "RLOCK_ETLS": TLSError,
}
_GENERIC = {"RLOCK_ERROR", "RLOCK_ENOMEM", "RLOCK_EVERSION", "RLOCK_EINTERNAL", "RLOCK_EUSER"}
_BY_CODE: dict[int, type[LockError]] = {_CODES[name]: cls for name, cls in _BY_NAME.items()}

_native._set_error_classes(_BY_CODE, LockError)
