"""The blocking API: Client, Lock, ReadWriteLock, MultiLock, RedLock.

Owners: a lock is held by an owner, "<client id>:<thread id>" on Redis. Here the owner is the
calling OS thread (``threading.get_native_id()``), so a lock acquired in one thread must be
released in the same thread, and re-acquiring in the holding thread nests (reentrant).
"""

from __future__ import annotations

import atexit
import functools
import math
import os
import threading
import weakref
from ssl import TLSVersion, VerifyMode
from typing import (
    TYPE_CHECKING,
    Any,
    Callable,
    Iterable,
    List,
    NamedTuple,
    Optional,
    Sequence,
    TypeVar,
    Union,
)

from . import _decorate, _green, _native, _owners, _tls
from ._errors import ClientClosedError, ForkedError, InvalidArgumentError, LockTimeoutError
from ._owners import Owners
from ._stats import Event, LostReason, Stats, event_dispatcher

if TYPE_CHECKING:
    from . import _leader
    from ._semaphore import CountDownLatch, ExpirableSemaphore, PermitLease, Semaphore

__all__ = ["Client", "Lock", "ReadWriteLock", "MultiLock", "RedLock", "LostReason"]

Name = Union[str, bytes]
_T = TypeVar("_T")
_F = TypeVar("_F", bound=Callable[..., Any])

_DEFAULT_URL = "redis://127.0.0.1:6379"
_DEFAULT_TLS_URL = "rediss://" + _DEFAULT_URL.partition("://")[2]  # with ssl=True
_MAX_SECONDS = _native.MAX_DURATION_MS / 1000.0
# The C library's option defaults, in milliseconds: the keyword defaults below derive from them.
_CLIENT_DEFAULTS = _native.client_option_defaults()
_LOCK_DEFAULTS = _native.lock_option_defaults()


# ---- argument checks ------------------------------------------------------------------------


def _number(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{what} must be a number of seconds, not {type(value).__name__}")
    seconds = float(value)
    if math.isnan(seconds):
        raise InvalidArgumentError(f"{what} must be a number of seconds, not NaN")
    return seconds


def _duration_ms(value: Any, what: str) -> int:
    """A positive duration in seconds as whole milliseconds (rounded up, at least 1)."""
    seconds = _number(value, what)
    if seconds <= 0:
        raise InvalidArgumentError(f"{what} must be positive, got {value!r}")
    if seconds > _MAX_SECONDS:
        raise InvalidArgumentError(f"{what} is too large: {value!r} (at most {_MAX_SECONDS:.0f} s)")
    return max(1, math.ceil(seconds * 1000.0))


def _wait_s(wait: Optional[float]) -> Optional[float]:
    """A wait in seconds: None (as long as it takes) or a positive number."""
    if wait is None:
        return None
    _duration_ms(wait, "wait")
    return float(wait)


def _lease_ms(lease: Optional[float]) -> int:
    """0 means the lock's default lease (the watchdog unless the lock was made with one)."""
    return 0 if lease is None else _duration_ms(lease, "lease")


def _wait_ms(blocking: bool, timeout: float) -> int:
    """threading.Lock.acquire's rules for blocking and timeout, in C terms."""
    if blocking is True and timeout.__class__ is int and timeout == -1:
        return _native.WAIT_FOREVER  # the defaults: nothing to check
    if not isinstance(blocking, (bool, int)):
        raise TypeError(f"blocking must be a bool, not {type(blocking).__name__}")
    seconds = _number(timeout, "timeout")
    if not blocking:
        if seconds != -1:
            raise ValueError("can't specify a timeout for a non-blocking call")
        return 0
    if seconds == -1:
        return _native.WAIT_FOREVER
    if seconds < 0:
        raise ValueError("timeout value must be a non-negative number")
    if seconds > _MAX_SECONDS:
        raise OverflowError("timeout value is too large")
    return math.ceil(seconds * 1000.0)


def _ttl_seconds(ttl_ms: int) -> Optional[float]:
    """A remaining TTL from Redis (-2: no key, -1: no expiry) in the API's terms."""
    if ttl_ms == -2:
        return None
    return math.inf if ttl_ms == -1 else ttl_ms / 1000.0


def _utf8(text: str, what: str) -> bytes:
    """`text` as UTF-8, exactly. A str holding a lone surrogate has no UTF-8 form: refused rather
    than replaced, so two different strings never become one key."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as e:
        raise InvalidArgumentError(
            f"{what} has no UTF-8 form: lone surrogate {text[e.start]!r} at index {e.start}"
        ) from None


def _url_text(url: str) -> str:
    """`url` if it can reach the C library whole: a C string ends at the first NUL."""
    _utf8(url, "url")
    nul = url.find("\0")
    if nul >= 0:
        raise InvalidArgumentError(
            f"url contains a NUL character (at index {nul}); it cannot be passed to the C library"
        )
    return url


def _name_bytes(name: Any, what: str = "lock name") -> bytes:
    if isinstance(name, str):
        return _utf8(name, what)
    if isinstance(name, (bytes, bytearray, memoryview)):
        return bytes(name)
    raise TypeError(f"a lock name must be str or bytes, not {type(name).__name__}")


def _owner_id_bytes(owner_id: Any) -> bytes:
    """The bytes the library names a caller-given owner by (an int: its decimal digits)."""
    if isinstance(owner_id, bool) or not isinstance(owner_id, (str, bytes, int)):
        raise TypeError(f"owner_id must be a str, bytes or int, not {type(owner_id).__name__}")
    if isinstance(owner_id, int):
        raw = str(owner_id).encode()
    else:
        raw = _name_bytes(owner_id, "owner_id")
    if not raw:
        raise InvalidArgumentError("owner_id must not be empty")
    if len(raw) > _owners.MAX_OWNER_ID_BYTES:
        raise InvalidArgumentError(
            f"owner_id is {len(raw)} bytes, longer than the limit of {_owners.MAX_OWNER_ID_BYTES}"
        )
    return raw


# ---- acquiring --------------------------------------------------------------------------------


def _in_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def _acquire(attempt: Callable[[bool, List[Any]], _T], undo: Callable[[], None]) -> _T:
    """Runs attempt(interruptible, receipt), a native acquire.

    In the main thread the native call waits on a helper thread and runs signal handlers
    meanwhile, so Ctrl-C interrupts it; if the lock was granted at that moment it is released
    there. The native call also appends to `receipt` on success before returning, so an
    interrupt that lands right after it returns (Python checks for signals after each call)
    is seen here, and undo() gives the lock back before the exception goes on."""
    receipt: List[Any] = []
    try:
        return attempt(_in_main_thread(), receipt)
    except BaseException:
        if receipt:
            undo()
        raise


# ---- client ---------------------------------------------------------------------------------

_live_clients: "weakref.WeakSet[Client]" = weakref.WeakSet()
# Iterating a WeakSet runs Python code, during which another thread may add to it ("changed size
# during iteration"), with or without the GIL.
_live_clients_mu = threading.Lock()

# Guards a forked child's reconnects. Both locks are made anew in each child, since a thread of
# the parent may have held one at the fork.
_reconnect_mu = threading.Lock()


# This process's id. os.getpid() is a system call, and every lock call checks for a fork: the
# id changes only in a fork's child, where the hook below updates it before Python code runs.
_process_id = os.getpid()


def _new_locks() -> None:
    global _reconnect_mu, _live_clients_mu, _process_id
    _process_id = os.getpid()
    _reconnect_mu = threading.Lock()
    _live_clients_mu = threading.Lock()


os.register_at_fork(after_in_child=_new_locks)


def _made_here(pid: int, what: str) -> None:
    """Refuses an object (a lock, group, semaphore or latch) made before a fork, in the child:
    what it holds is the parent's."""
    if _process_id != pid:
        raise ForkedError(
            f"this {what} was made in process {pid} before fork(): what it holds stays the "
            "parent's. Make it again from the client in this process (the client reconnects "
            "here with a new id)"
        )


def _at_exit() -> None:
    # No lost-lock callback may enter Python once the interpreter starts finalizing.
    _native._shutdown()
    # Release what is still held (best effort) rather than leave it until the lease runs out.
    with _live_clients_mu:
        clients = list(_live_clients)
    for client in clients:
        try:
            client.close()
        except Exception:
            pass


atexit.register(_at_exit)


class Client:
    """A connection pool to one Redis server, shared by every lock made from it. Thread-safe.

    ``url`` is ``redis://[[user]:password@]host[:port][/db]`` or
    ``unix://[[user]:password@]/path/to/socket[?db=N]`` or
    ``redis-sentinel://[[user]:password@]host[:port][,host[:port]...]/master-name[?db=N]`` or
    ``redis-cluster://[[user]:password@]host[:port][,host[:port]...]``; it defaults to
    ``$RLOCK_URL``, then ``redis://127.0.0.1:6379``. Creating a client connects once, so a wrong
    address or password fails here (``ConnectionError``, ``AuthenticationError``). A URL with a
    NUL character or a lone surrogate raises ``InvalidArgumentError`` before any connection.

    Durations are seconds: ``connect_timeout`` and ``command_timeout`` bound every connect and
    round trip; ``watchdog_lease`` is the lease a lock acquired without one gets, renewed every
    third of it while held; ``poll_cap`` is the longest a waiter sleeps without trying again.

    TLS: a ``rediss://``, ``rediss-sentinel://`` or ``rediss-cluster://`` URL (or ``ssl=True``
    without a URL: ``rediss://127.0.0.1:6379``). The server's certificate is verified against
    ``ssl_ca_certs`` (a PEM file) or ``ssl_ca_path`` (a hashed directory), by default the system
    trust store, and must name the host (or ``ssl_server_name``). ``ssl_check_hostname=False``
    checks the chain only; ``ssl_cert_reqs="none"`` (or ``ssl.CERT_NONE``) nothing at all.
    ``ssl_certfile`` and ``ssl_keyfile`` are a client certificate for mutual TLS;
    ``ssl_min_version`` is ``ssl.TLSVersion.TLSv1_2`` (the default) or ``TLSv1_3``;
    ``sentinel_ssl`` says whether the sentinels of a Sentinel URL use TLS too (default: as the
    master). A URL's ``tls_*`` options may set the same; where both do they must agree. A
    failed handshake or verification raises ``TLSError``.

    ``stats()`` returns the client's statistics (counters, gauges, histograms of durations);
    keeping them costs a few atomic additions per call, and ``stats=False`` skips them (every
    figure stays 0). ``on_event(handler)`` reports acquires, releases and lost locks one by one.

    ``key_prefix`` goes before every name, as Redisson's ``NameMapper`` does: the keys and
    channels of name ``N`` are those of ``key_prefix + N`` (``"billing:"`` keeps services that
    share one Redis apart). Names in events, lost callbacks and listings come back without it;
    ``max_name_len`` bounds prefix and name together. The URL option ``key_prefix=`` sets it too.

    ``close()`` (or leaving ``with``) releases what the client's locks still hold and closes
    connections. In a child process after ``fork()`` the client reconnects at its first use,
    with an identity of its own; locks made before the fork stay the parent's there.
    """

    def __init__(
        self,
        url: Optional[str] = None,
        *,
        connect_timeout: float = _CLIENT_DEFAULTS["connect_timeout_ms"] / 1000.0,
        command_timeout: float = _CLIENT_DEFAULTS["command_timeout_ms"] / 1000.0,
        pool_size: int = _CLIENT_DEFAULTS["pool_size"],
        watchdog_lease: float = _CLIENT_DEFAULTS["watchdog_lease_ms"] / 1000.0,
        poll_cap: float = _CLIENT_DEFAULTS["poll_cap_ms"] / 1000.0,
        max_name_len: Optional[int] = None,
        ssl: Optional[bool] = None,
        ssl_ca_certs: Optional[_tls.StrPath] = None,
        ssl_ca_path: Optional[_tls.StrPath] = None,
        ssl_certfile: Optional[_tls.StrPath] = None,
        ssl_keyfile: Optional[_tls.StrPath] = None,
        ssl_cert_reqs: Union[str, VerifyMode, None] = None,
        ssl_check_hostname: Optional[bool] = None,
        ssl_server_name: Optional[str] = None,
        ssl_min_version: Optional[TLSVersion] = None,
        sentinel_ssl: Optional[bool] = None,
        stats: bool = True,
        key_prefix: Optional[str] = None,
    ) -> None:
        if url is None:
            url = os.environ.get("RLOCK_URL") or (_DEFAULT_TLS_URL if ssl else _DEFAULT_URL)
        if not isinstance(url, str):
            raise TypeError(f"url must be a str, not {type(url).__name__}")
        url = _url_text(url)
        tls = _tls.native_options(
            url,
            ssl=ssl,
            ssl_ca_certs=ssl_ca_certs,
            ssl_ca_path=ssl_ca_path,
            ssl_certfile=ssl_certfile,
            ssl_keyfile=ssl_keyfile,
            ssl_cert_reqs=ssl_cert_reqs,
            ssl_check_hostname=ssl_check_hostname,
            ssl_server_name=ssl_server_name,
            ssl_min_version=ssl_min_version,
            sentinel_ssl=sentinel_ssl,
        )
        if isinstance(pool_size, bool) or not isinstance(pool_size, int):
            raise TypeError(f"pool_size must be an int, not {type(pool_size).__name__}")
        if pool_size < 1 or pool_size > 1024:
            raise InvalidArgumentError(f"pool_size must be between 1 and 1024, got {pool_size}")
        if max_name_len is None:
            max_name_len = _native.DEFAULT_MAX_NAME_LEN
        elif isinstance(max_name_len, bool) or not isinstance(max_name_len, int):
            raise TypeError(f"max_name_len must be an int, not {type(max_name_len).__name__}")
        elif not 1 <= max_name_len <= _native.HARD_MAX_NAME_LEN:
            raise InvalidArgumentError(
                f"max_name_len must be between 1 and {_native.HARD_MAX_NAME_LEN}, "
                f"got {max_name_len}"
            )
        if not isinstance(stats, bool):
            raise TypeError(f"stats must be a bool, not {type(stats).__name__}")
        if key_prefix is not None:
            if not isinstance(key_prefix, str):
                raise TypeError(f"key_prefix must be a str, not {type(key_prefix).__name__}")
            if not key_prefix:
                raise InvalidArgumentError("key_prefix must not be empty (None: no prefix)")
        self._connect = functools.partial(
            _native.Client,
            url,
            connect_timeout_ms=_duration_ms(connect_timeout, "connect_timeout"),
            command_timeout_ms=_duration_ms(command_timeout, "command_timeout"),
            pool_size=pool_size,
            watchdog_lease_ms=_duration_ms(watchdog_lease, "watchdog_lease"),
            poll_cap_ms=_duration_ms(poll_cap, "poll_cap"),
            max_name_len=max_name_len,
            **tls,
            stats=_native.STATS_ON if stats else _native.STATS_OFF,
            key_prefix=key_prefix,
        )
        self._pid = os.getpid()
        self._native = self._connect()
        with _live_clients_mu:
            _live_clients.add(self)

    # -- lifetime

    def close(self) -> None:
        """Releases what this client's locks still hold (best effort; the rest expire by their
        lease), wakes their waiters with ``ClientClosedError`` and closes connections.
        Idempotent."""
        if os.getpid() != self._pid:
            return  # the parent's connections, not used in this child: the parent closes them
        self._native.close()

    @property
    def closed(self) -> bool:
        return self._native.closed

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self.closed else "open"
        return f"<rlock.Client id={self._native.id} {state}>"  # no reconnect in a child

    @property
    def id(self) -> str:
        """The client's id (a UUID): the first half of every owner field it writes. A new one
        in a forked child (see ``fork()`` in docs/python.md)."""
        return self._checked().id

    # -- observability

    def stats(self) -> Stats:
        """A snapshot of this client's statistics since it was made: acquires by outcome,
        releases, lost locks, renewals, reconnects, holds and waiters now, and histograms of
        wait, hold, hand-off and round-trip times (seconds). No network call; about a
        microsecond. Lock names never appear here (``on_event`` has them)."""
        return Stats._from_native(self._checked().stats())

    def on_event(self, handler: Optional[Callable[[Event], Any]]) -> None:
        """Calls ``handler(event)`` with an ``rlock.Event`` for each lock acquired, released or
        lost, watchdog renewal failed, Sentinel failover and Cluster redirect of this client,
        in the order they happened, on a thread of the library started for it. Off by default;
        None turns it off again. While on, each event costs the calling thread about a
        microsecond (a copy and a queue push); the handler should return quickly: up to 65536
        events wait, further ones are dropped and counted (``Stats.events_dropped``).
        Exceptions it raises are reported through ``sys.unraisablehook``. Events still queued
        when the client closes are delivered before ``close()`` returns. The handler should not
        keep a strong reference to the client (that would keep it from being
        garbage-collected)."""
        native = self._checked()
        if handler is None:
            native.set_event_callback(None)
            return
        if not callable(handler):
            raise TypeError(f"handler must be callable, not {type(handler).__name__}")
        native.set_event_callback(event_dispatcher(handler))

    def watch_key_events(self, *, expired: bool = True, deleted: bool = True) -> None:
        """Reports keys of this client's names that expire (``EventKind.KEY_EXPIRED``) or are
        deleted (``KEY_DELETED``: ``DEL``, ``UNLINK``, an unlock that frees a lock) to the
        ``on_event`` handler, named as you name them (Redisson's ``ExpiredObjectListener`` and
        ``DeletedObjectListener``). With a ``key_prefix`` only keys under it are reported;
        without one, every key of the database. Both False stops. Returns once the server
        confirmed the subscription. They come from Redis keyspace notifications: the server's
        ``notify-keyspace-events`` must include ``E`` and ``x`` (expired) or ``g`` (deleted),
        and ``RedisError`` names what is missing when the server shows it. Not on a
        Redis Cluster (``RedisError``)."""
        if not isinstance(expired, bool) or not isinstance(deleted, bool):
            raise TypeError("expired and deleted must be bools")
        kinds = (1 if expired else 0) | (2 if deleted else 0)
        self._checked().watch_key_events(kinds)

    def _checked(self) -> "_native.Client":
        if _process_id != self._pid:
            self._reconnect()
        return self._native

    def _reconnect(self) -> None:
        """In a forked child, at the first use: a client of the child's own, with the same
        settings and a new id. The parent's native client is left alone (its connections and
        watchdog are the parent's; the C library refuses its handles here, RLOCK_EFORKED), and
        so is everything made from it: locks the parent held stay the parent's."""
        with _reconnect_mu:
            if os.getpid() == self._pid:
                return  # another thread of the child did it
            if self._native.closed:
                raise ClientClosedError("this rlock.Client was closed (before the fork)")
            self._native = self._connect()
            self._pid = os.getpid()

    # -- locks

    def lock(
        self,
        name: Name,
        *,
        lease: Optional[float] = None,
        blocking_timeout: Optional[float] = None,
        owner: str = "object",
        thread_local: bool = True,
        owner_id: "Union[str, bytes, int, None]" = None,
    ) -> "Lock":
        """A reentrant lock (Redisson ``RLock`` layout), woken by pub/sub.

        ``lease`` (seconds) is the default lease of its acquires; None means the watchdog:
        the lock is held until released, renewed while this process lives. ``blocking_timeout``
        bounds how long ``with lock:`` waits before raising ``LockTimeoutError`` (None: no
        bound). ``owner`` says who holds what this object acquires: "object" (each Lock object
        is its own owner in each thread or greenlet that uses it, or, with
        ``thread_local=False``, in all of them at once) or "thread" (the calling thread is one
        owner across every Lock object, as in Redisson). ``owner_id`` (a str, bytes or int)
        makes the owner the caller's instead: every Lock object naming the same id, in any
        process, is that one owner, so one process may release or extend what another
        acquired (its holds are not released when this client closes; they last their lease).
        Makes no network call."""
        return Lock._make(
            self,
            name,
            _native.KIND_REENTRANT,
            lease,
            blocking_timeout,
            owner,
            thread_local,
            owner_id=owner_id,
        )

    def locked(
        self,
        name: "Union[str, Callable[..., Any]]",
        *,
        wait: Optional[float] = None,
        lease: Optional[float] = None,
        on_held: str = "raise",
        default: Any = None,
        min_hold: Optional[float] = None,
    ) -> "Callable[[_F], _F]":
        """A decorator: each call of the function runs holding the lock named ``name`` formatted
        with the call's arguments (``"report:{0}"`` by position, ``"user:{user_id}"`` by name,
        defaults applied), or ``name(*args, **kwargs)`` when ``name`` is callable.

        ``wait``: None waits for the lock as long as it takes, 0 tries once, seconds bound the
        wait. When the lock stays held, ``on_held="raise"`` raises ``LockTimeoutError`` and
        ``on_held="skip"`` returns ``default`` without calling the function. ``lease``: as for
        ``lock()`` (None: the watchdog). The owner is the calling thread, so a nested call of
        the same name re-enters. ``min_hold`` (seconds, with a ``lease`` at least as long):
        a call that returns sooner leaves the lock held until ``min_hold`` after it was taken
        (its lease is cut to what is left) instead of releasing it, so a scheduler on another
        host whose timer fires a little later finds the tick taken; each call is then an owner
        of its own (no re-entry). A field no call can fill is
        refused here; coroutine and
        generator functions are refused too (use ``rlock.asyncio.Client.locked`` for
        ``async def``)."""
        return _decorate.locked_sync(self, name, wait, lease, on_held, default, min_hold)

    def leader(self, name: Name, *, wait: Optional[float] = None) -> "_leader.Leading":
        """Leader election (docs/leader.md): ``with client.leader("scheduler") as lead:`` waits
        until this process leads ``name`` among every candidate on the same Redis (any process,
        host or language), then runs the body. ``lead.term`` grows with every new leader: pass
        it to ``fenced_write`` (or your store's own check) with each write. ``lead.is_leader()``
        is False, and ``lead.lost`` True, from the moment leadership ends (the key was deleted
        or taken, Redis stayed unreachable until the lease's deadline, the client closed);
        check it before each action. Leaving the block resigns, so another candidate takes
        over at once; if leadership was lost inside, leaving raises ``LeadershipLostError``.
        ``wait``: None campaigns as long as it takes, seconds bound it (``LockTimeoutError``).
        The lease is the client's ``watchdog_lease``: a leader that dies is replaced within it.
        """
        from . import _leader

        return _leader.Leading(self._new_election(name, False), _name_bytes(name), _wait_s(wait))

    def election(self, name: Name, *, requeue: bool = True) -> "_leader.Election":
        """The callback form of ``leader()``: ``election.campaign(on_elected, on_revoked)``
        (called on library threads with the term, and the term and a ``RevokeReason``);
        after a loss it campaigns again unless ``requeue=False``. ``close()`` resigns."""
        from . import _leader

        if not isinstance(requeue, bool):
            raise TypeError(f"requeue must be a bool, not {type(requeue).__name__}")
        return _leader.Election(self._new_election(name, requeue), _name_bytes(name))

    def _new_election(self, name: Name, requeue: bool) -> "_native.Election":
        return _native.Election(self._checked(), _name_bytes(name, "election name"), requeue)

    def fenced_lock(
        self,
        name: Name,
        *,
        lease: Optional[float] = None,
        blocking_timeout: Optional[float] = None,
        owner: str = "object",
        thread_local: bool = True,
        owner_id: "Union[str, bytes, int, None]" = None,
    ) -> "Lock":
        """A reentrant lock whose every acquire gets a fencing token (``lock.token``), strictly
        increasing across holders (Redisson ``RFencedLock``). ``owner``, ``thread_local``: as
        for ``lock()``."""
        return Lock._make(
            self,
            name,
            _native.KIND_FENCED,
            lease,
            blocking_timeout,
            owner,
            thread_local,
            owner_id=owner_id,
        )

    def spin_lock(
        self,
        name: Name,
        *,
        lease: Optional[float] = None,
        blocking_timeout: Optional[float] = None,
        initial_backoff: float = _LOCK_DEFAULTS["spin_initial_ms"] / 1000.0,
        max_backoff: float = _LOCK_DEFAULTS["spin_max_ms"] / 1000.0,
        owner: str = "object",
        thread_local: bool = True,
        owner_id: "Union[str, bytes, int, None]" = None,
    ) -> "Lock":
        """A reentrant lock that waits by retrying with jittered exponential backoff from
        ``initial_backoff`` to ``max_backoff`` seconds instead of subscribing (Redisson
        ``RSpinLock``). ``owner``, ``thread_local``: as for ``lock()``."""
        return Lock._make(
            self,
            name,
            _native.KIND_SPIN,
            lease,
            blocking_timeout,
            owner,
            thread_local,
            spin_initial_ms=_duration_ms(initial_backoff, "initial_backoff"),
            spin_max_ms=_duration_ms(max_backoff, "max_backoff"),
            owner_id=owner_id,
        )

    def fair_lock(
        self,
        name: Name,
        *,
        lease: Optional[float] = None,
        blocking_timeout: Optional[float] = None,
        waiter_timeout: float = _LOCK_DEFAULTS["fair_wait_ms"] / 1000.0,
        owner: str = "object",
        thread_local: bool = True,
        owner_id: "Union[str, bytes, int, None]" = None,
    ) -> "Lock":
        """A reentrant lock served first come, first served across processes (Redisson
        ``RFairLock``). A waiter that stops coming back (its process died) keeps its place in
        the queue for at most ``waiter_timeout`` seconds. ``owner``, ``thread_local``: as for
        ``lock()``."""
        return Lock._make(
            self,
            name,
            _native.KIND_FAIR,
            lease,
            blocking_timeout,
            owner,
            thread_local,
            fair_wait_ms=_duration_ms(waiter_timeout, "waiter_timeout"),
            owner_id=owner_id,
        )

    def non_reentrant_lock(
        self,
        name: Name,
        *,
        lease: Optional[float] = None,
        blocking_timeout: Optional[float] = None,
        owner: str = "object",
        thread_local: bool = True,
        owner_id: "Union[str, bytes, int, None]" = None,
    ) -> "Lock":
        """A lock its holder cannot acquire again (Redisson ``getNonReentrantLock``): a second
        ``acquire()`` by the owner holding it raises ``DeadlockError`` at once, whatever the
        timeout, and leaves its one hold as it was. Otherwise as ``lock()``, with the same keys
        on Redis. ``owner``, ``thread_local``: as for ``lock()``."""
        return Lock._make(
            self,
            name,
            _native.KIND_NON_REENTRANT,
            lease,
            blocking_timeout,
            owner,
            thread_local,
            owner_id=owner_id,
        )

    def non_reentrant_fair_lock(
        self,
        name: Name,
        *,
        lease: Optional[float] = None,
        blocking_timeout: Optional[float] = None,
        waiter_timeout: float = _LOCK_DEFAULTS["fair_wait_ms"] / 1000.0,
        owner: str = "object",
        thread_local: bool = True,
        owner_id: "Union[str, bytes, int, None]" = None,
    ) -> "Lock":
        """``fair_lock()`` that its holder cannot acquire again (Redisson
        ``getNonReentrantFairLock``): a second ``acquire()`` by the owner holding it raises
        ``DeadlockError`` at once. ``waiter_timeout``, ``owner``, ``thread_local``: as for
        ``fair_lock()``."""
        return Lock._make(
            self,
            name,
            _native.KIND_NON_REENTRANT_FAIR,
            lease,
            blocking_timeout,
            owner,
            thread_local,
            fair_wait_ms=_duration_ms(waiter_timeout, "waiter_timeout"),
            owner_id=owner_id,
        )

    def read_write_lock(
        self,
        name: Name,
        *,
        lease: Optional[float] = None,
        blocking_timeout: Optional[float] = None,
        owner: str = "object",
        thread_local: bool = True,
    ) -> "ReadWriteLock":
        """A lock with a shared read half and an exclusive write half (Redisson
        ``RReadWriteLock``). ``owner``, ``thread_local``: as for ``lock()``, the two halves
        of one ReadWriteLock object being one owner (so a writer can also read)."""
        return ReadWriteLock(self, name, lease, blocking_timeout, owner, thread_local)

    # -- semaphores and latches

    def semaphore(self, name: Name) -> "Semaphore":
        """A counting semaphore (Redisson ``RSemaphore``): see ``rlock.Semaphore``."""
        from ._semaphore import Semaphore

        return Semaphore._make(self, name)

    def expirable_semaphore(
        self, name: Name, *, lease: "Union[float, PermitLease, None]" = None
    ) -> "ExpirableSemaphore":
        """A semaphore whose permits have ids and leases (Redisson
        ``RPermitExpirableSemaphore``): see ``rlock.ExpirableSemaphore``. ``lease`` is the
        default lease of its permits: None (the watchdog), seconds, or ``rlock.NO_LEASE``."""
        from ._semaphore import ExpirableSemaphore

        return ExpirableSemaphore._make(self, name, lease)

    def count_down_latch(self, name: Name) -> "CountDownLatch":
        """A count-down latch (Redisson ``RCountDownLatch``): see ``rlock.CountDownLatch``."""
        from ._semaphore import CountDownLatch

        return CountDownLatch._make(self, name)

    def fenced_write(self, key: Name, value: Union[str, bytes], token: int) -> bool:
        """Sets the string ``key`` to ``value`` only if ``token`` is at least the highest token
        seen for ``key``, atomically: a holder whose lock was taken over (by a newer token)
        cannot overwrite the newer holder's write. Returns False when refused."""
        if isinstance(token, bool) or not isinstance(token, int):
            raise TypeError(f"token must be an int, not {type(token).__name__}")
        if isinstance(value, str):
            value = _utf8(value, "value")
        elif not isinstance(value, (bytes, bytearray, memoryview)):
            raise TypeError(f"value must be str or bytes, not {type(value).__name__}")
        if not 0 < token < 2**63:
            raise InvalidArgumentError(f"token must be a positive 64-bit integer, got {token}")
        return _native.fenced_write(self._checked(), _name_bytes(key, "key"), bytes(value), token)


# ---- locks ----------------------------------------------------------------------------------


class Holder(NamedTuple):
    """Who holds a lock and since when (``Lock.holder()``), from the small record every rlock
    client keeps on Redis while it holds anything (``rlock_holder:{<client id>}``). The lock's
    own keys are Redisson's, unchanged: an owner no rlock client recorded (a Redisson JVM, an
    ``owner_id``) has ``host``, ``pid``, ``command``, ``started`` and ``since`` None."""

    owner: str  #: the owner field, ``"<client id>:<number>"`` (``":write"`` for a writer)
    host: Optional[str]  #: the holding client's host name
    pid: Optional[int]  #: its process id
    command: Optional[str]  #: its command line, arguments joined by spaces (256 bytes at most)
    started: Optional[float]  #: when that client was made, seconds since the epoch
    #: when this hold was first acquired, seconds since the epoch; None also for a hold under a
    #: second old (the record lists holds from one second on)
    since: Optional[float]


class Lock:
    """A named lock on Redis, made by ``Client.lock()`` and its siblings.

    Used like ``threading.RLock``: ``with lock: ...``, or ``acquire()`` / ``release()``.
    By default (``owner="object"``) ownership is per Lock object and per thread, or greenlet
    under gevent and eventlet: the thread that acquired must release, and may acquire again
    through the same object (each acquire needs one release; the non-reentrant kinds raise
    ``DeadlockError`` instead); other threads sharing the
    object, and other Lock objects even in the same thread, contend. See ``Client.lock`` for
    the other owners. Dropping the object without releasing stops its lease renewal, so the
    lock frees itself within the lease.
    """

    __slots__ = (
        "_client",
        "_handle",
        "_name",
        "_kind",
        "_lease",
        "_blocking_timeout",
        "_owners",
        "_owner_prefix",
        "_pid",
        "__weakref__",
    )
    _client: Client
    _handle: _native.Lock
    _name: Name
    _kind: int
    _lease: Optional[float]
    _blocking_timeout: Optional[float]
    _owners: Owners
    _owner_prefix: Optional[str]
    _pid: int

    _KIND_NAMES = {
        _native.KIND_REENTRANT: "Lock",
        _native.KIND_FENCED: "FencedLock",
        _native.KIND_SPIN: "SpinLock",
        _native.KIND_FAIR: "FairLock",
        _native.KIND_READ: "ReadLock",
        _native.KIND_WRITE: "WriteLock",
        _native.KIND_NON_REENTRANT: "NonReentrantLock",
        _native.KIND_NON_REENTRANT_FAIR: "NonReentrantFairLock",
    }

    def __init__(self) -> None:
        raise TypeError(
            "locks are made by a Client: client.lock(name), client.fair_lock(name), ..."
        )

    @classmethod
    def _make(
        cls,
        client: Client,
        name: Name,
        kind: int,
        lease: Optional[float],
        blocking_timeout: Optional[float],
        owner: Union[str, Owners] = "object",
        thread_local: bool = True,
        *,
        spin_initial_ms: int = 0,
        spin_max_ms: int = 0,
        fair_wait_ms: int = 0,
        owner_id: "Union[str, bytes, int, None]" = None,
    ) -> "Lock":
        if not isinstance(client, Client):
            raise TypeError(f"client must be an rlock.Client, not {type(client).__name__}")
        raw_name = _name_bytes(name)
        lease_ms = _native.LEASE_WATCHDOG if lease is None else _duration_ms(lease, "lease")
        if blocking_timeout is not None:
            _wait_ms(True, blocking_timeout)  # checks it now rather than at the first `with`
        raw_owner_id = None if owner_id is None else _owner_id_bytes(owner_id)
        if isinstance(owner, (_owners.PerContext, _owners.Fixed)):
            owners: Owners = owner  # shared by the halves of a read-write lock
        elif raw_owner_id is not None:
            if owner != "object" or thread_local is not True:
                raise InvalidArgumentError(
                    "owner_id names the owner: leave owner and thread_local at their defaults"
                )
            owners = _owners.Fixed(_owners.CALLING_THREAD)  # the library's number 1 for the id
        else:
            owners = _owners.for_mode(owner, thread_local)
        self = object.__new__(cls)
        self._owners = owners
        self._owner_prefix = None if raw_owner_id is None else _owners.owner_id_prefix(raw_owner_id)
        self._pid = os.getpid()
        self._client = client  # keeps the client open while its locks live
        self._name = name
        self._kind = kind
        self._lease = lease
        self._blocking_timeout = blocking_timeout
        self._handle = _native.Lock(
            client._checked(),
            raw_name,
            kind,
            lease_ms,
            spin_initial_ms,
            spin_max_ms,
            fair_wait_ms,
            raw_owner_id,
        )
        return self

    # -- properties

    @property
    def name(self) -> Name:
        return self._name

    @property
    def client(self) -> Client:
        return self._client

    def __repr__(self) -> str:
        return f"<rlock.{self._KIND_NAMES.get(self._kind, 'Lock')} {self._name!r}>"

    def _checked(self) -> _native.Lock:
        _made_here(self._pid, "lock")
        self._client._checked()
        return self._handle

    # -- acquire and release

    def acquire(
        self, blocking: bool = True, timeout: float = -1, lease: Optional[float] = None
    ) -> bool:
        """Acquires the lock for the calling thread, like ``threading.Lock.acquire``.

        Blocks until acquired when ``blocking`` (for at most ``timeout`` seconds unless it is
        -1), or tries once. Returns True when acquired, False when the time ran out. ``lease``
        (seconds) overrides the lock's default lease for this hold. The GIL is released while
        waiting; Ctrl-C interrupts the wait and leaves nothing locked."""
        wait_ms = _wait_ms(blocking, timeout)
        lease_ms = _lease_ms(lease)
        native = self._checked()
        want_token = self._kind == _native.KIND_FENCED
        owner = self._owners.current()
        if wait_ms != 0 and _green.active():
            if native.acquire(0, lease_ms, owner, None, want_token, False, []):
                return True

            def start(cancel: _native.CancelToken, loop: Any, done: _green.Done) -> None:
                native.acquire_async(wait_ms, lease_ms, owner, cancel, want_token, loop, done)

            return _green.acquire(start, lambda _grant: native.release(owner)) is not None
        # _acquire's work, inline: this is the hot path.
        receipt: List[Any] = []
        try:
            return native.acquire(
                wait_ms, lease_ms, owner, None, want_token, _in_main_thread(), receipt
            )
        except BaseException:
            if receipt:
                native.release(owner)
            raise

    def release(self) -> None:
        """Releases one hold of the calling thread; at the last one the lock is free and the
        next waiter is woken. Raises ``NotHeldError`` if this thread does not hold it (the lock
        is then untouched) and ``LockLostError`` if it held it but the lock expired or was
        taken in the meantime."""
        self._checked().release(self._owners.current())

    def extend(self, additional_time: float, replace_ttl: bool = False) -> None:
        """Adds ``additional_time`` seconds to the remaining lease of the calling thread's hold,
        as redis-py's ``Lock.extend``; with ``replace_ttl=True`` the remaining lease becomes
        ``additional_time``. Same errors as ``release()``. The add is one round trip (a read
        lock: to this owner's own read lease). A hold taken without a lease (the watchdog renews
        it), or a key without expiry on Redis, has no lease to add to: ``InvalidArgumentError``,
        nothing changed; with
        ``replace_ttl=True`` it gets that lease until the watchdog's next renewal (a third of
        the watchdog lease later), which sets the watchdog lease again."""
        add_ms = _duration_ms(additional_time, "additional_time")
        if not isinstance(replace_ttl, bool):
            raise TypeError(f"replace_ttl must be a bool, not {type(replace_ttl).__name__}")
        if replace_ttl:
            self._checked().extend(add_ms, self._owners.current())
        else:
            self._checked().extend_by(add_ms, self._owners.current())

    def __enter__(self) -> "Lock":
        if self._blocking_timeout is None:
            self.acquire()
        elif not self.acquire(timeout=self._blocking_timeout):
            raise LockTimeoutError(
                f"lock {self._name!r} was not acquired within {self._blocking_timeout} s"
            )
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.release()

    async def __aenter__(self) -> None:
        raise TypeError(
            "a blocking rlock.Lock does not support 'async with': "
            "make the lock from an rlock.asyncio.Client"
        )

    async def __aexit__(self, *exc_info: Any) -> None:  # pragma: no cover - never entered
        return None

    def cancel(self) -> None:
        """Wakes every acquire now waiting on this Lock object, in any thread; they raise
        ``AcquireCancelledError``."""
        self._checked().cancel()

    def force_unlock(self) -> bool:
        """Deletes the lock whoever holds it and wakes a waiter. Returns True if it was
        locked. The holder finds out at its next renewal or release (``LockLostError``)."""
        return self._checked().force_unlock()

    # -- state

    def held(self) -> bool:
        """True if the calling thread holds the lock (local view, no network call; becomes
        False once the watchdog finds the lock lost)."""
        return self._checked().is_held(self._owners.current())

    def lost(self) -> bool:
        """True if the calling thread held the lock and it was found lost, until it releases
        or acquires again (local view)."""
        return self._checked().is_lost(self._owners.current())

    def locked(self) -> bool:
        """True if anyone holds the lock (asks Redis)."""
        return self._checked().query(self._owners.current()).locked

    def hold_count(self) -> int:
        """How many times the calling thread holds the lock (asks Redis; 0 if not held)."""
        return self._checked().query(self._owners.current()).hold_count

    def remaining_ttl(self) -> Optional[float]:
        """Seconds until the lock expires (asks Redis): None if it is not locked,
        ``math.inf`` if it is locked without expiry."""
        return _ttl_seconds(self._checked().query(self._owners.current()).ttl_ms)

    def holder(self) -> Optional[Holder]:
        """Who holds the lock now (its first owner, for a shared read lock) and since when: None
        when it is free. Asks Redis (two round trips, and one more for the holder record)."""
        found = _native.lock_holder(self._client._checked(), _name_bytes(self._name))
        if found is None:
            return None
        owner, known, host, pid, command, started_ms, since_ms = found
        return Holder(
            owner.decode("utf-8", "surrogateescape"),
            host,
            pid,
            command,
            started_ms / 1000.0 if known and started_ms is not None else None,
            since_ms / 1000.0 if since_ms is not None else None,
        )

    @property
    def owner(self) -> str:
        """The owner this Lock object acquires as when called from here, as its field in the
        lock's hash on Redis: ``"<client id>:<number>"`` (``":write"`` added for a write
        lock). The number is the OS thread id under ``owner="thread"`` (in a real thread), else
        one rlock made for this object (and thread, under ``thread_local``); with an
        ``owner_id``, ``"<UUID of the id>:1"``. No network call."""
        suffix = ":write" if self._kind == _native.KIND_WRITE else ""
        if self._owner_prefix is not None:
            return f"{self._owner_prefix}:1{suffix}"
        number = self._owners.current() or _native.current_thread_id()
        return f"{self._client.id}:{number}{suffix}"

    @property
    def token(self) -> Optional[int]:
        """The fencing token of the calling thread's hold of a fenced lock (local view), or None
        when it holds none. Pass it to the resource you protect (``Client.fenced_write``)."""
        return self._checked().token(self._owners.current())

    def on_lost(self, callback: Optional[Callable[["Lock", LostReason], Any]]) -> None:
        """Calls ``callback(lock, reason)`` when a hold acquired through this Lock object is
        found lost (its key expired, was deleted or taken, or Redis stayed unreachable past the
        lease). It runs on the client's watchdog thread and should return quickly; exceptions
        it raises are reported through ``sys.unraisablehook``. None removes it. The callback
        should not keep a strong reference to the lock (that would keep it from being
        garbage-collected)."""
        native = self._checked()
        if callback is None:
            native.set_lost_callback(None)
            return
        if not callable(callback):
            raise TypeError(f"callback must be callable, not {type(callback).__name__}")
        lock_ref = weakref.ref(self)

        def dispatch(name: bytes, thread_id: int, reason: int) -> None:
            lock = lock_ref()
            if lock is not None:
                callback(lock, LostReason(reason))

        native.set_lost_callback(dispatch)

    def close(self) -> None:
        """Frees the native handle now (no network call: a hold left expires by its lease).
        The Lock is unusable afterwards. Garbage collection does the same."""
        self._handle.close()


class ReadWriteLock:
    """A read-write lock: ``read_lock()`` is shared between readers, ``write_lock()`` excludes
    readers and other writers. The writer may also take the read lock (downgrade: release the
    write lock afterwards and keep reading); a reader asking for the write lock gets
    ``DeadlockError`` at once rather than waiting for itself."""

    __slots__ = ("_read", "_write", "_name")

    def __init__(
        self,
        client: Client,
        name: Name,
        lease: Optional[float] = None,
        blocking_timeout: Optional[float] = None,
        owner: str = "object",
        thread_local: bool = True,
    ) -> None:
        self._name = name
        owners = _owners.for_mode(owner, thread_local)  # one for both halves
        self._read = Lock._make(client, name, _native.KIND_READ, lease, blocking_timeout, owners)
        self._write = Lock._make(client, name, _native.KIND_WRITE, lease, blocking_timeout, owners)

    @property
    def name(self) -> Name:
        return self._name

    def read_lock(self) -> Lock:
        return self._read

    def write_lock(self) -> Lock:
        return self._write

    def __repr__(self) -> str:
        return f"<rlock.ReadWriteLock {self._name!r}>"


class MultiLock:
    """Several locks taken as one: held only when every member is held. Each attempt asks
    every member at once and never waits while holding some, so two callers locking the same
    members in opposite orders cannot deadlock; an attempt that falls short releases what it
    got. Members may come from different clients."""

    _redlock = False

    def __init__(
        self, locks: Iterable[Lock], *, owner: str = "object", thread_local: bool = True
    ) -> None:
        """``owner``, ``thread_local``: who holds what this object acquires, as for
        ``Client.lock`` (the members' own owner settings apply to their own calls only)."""
        members = list(locks)
        if not members:
            raise InvalidArgumentError(f"{type(self).__name__} needs at least one lock")
        for member in members:
            if not isinstance(member, Lock):
                raise TypeError(f"members must be rlock locks, not {type(member).__name__}")
        given = {member._owner_prefix for member in members}
        if given == {None}:
            self._owners = _owners.for_mode(owner, thread_local)
        elif len(given) == 1 and owner == "object" and thread_local is True:
            # Every member names one owner_id: the group is that owner too, so another process
            # with the same members and id may release or extend it (redsync's WithValue).
            self._owners = _owners.Fixed(_owners.CALLING_THREAD)
        else:
            raise InvalidArgumentError(
                f"{type(self).__name__}: members name the same owner_id or none does, and with "
                "one, owner and thread_local stay at their defaults"
            )
        self._locks: Sequence[Lock] = tuple(members)  # keeps members and their clients alive
        self._native = _native.Multi([m._checked() for m in members], self._redlock)
        self._pid = os.getpid()
        self.validity: Optional[float] = None
        """After a successful acquire: the seconds the group was sure to be held for at that
        moment (shortest member lease minus the time spent and a clock-drift allowance)."""

    @property
    def locks(self) -> Sequence[Lock]:
        return self._locks

    def _checked(self) -> _native.Multi:
        _made_here(self._pid, "multi-lock")
        for member in self._locks:
            member._checked()
        return self._native

    def acquire(
        self, blocking: bool = True, timeout: float = -1, lease: Optional[float] = None
    ) -> bool:
        """Like ``Lock.acquire``; sets ``validity`` when it returns True."""
        wait_ms = _wait_ms(blocking, timeout)
        lease_ms = _lease_ms(lease)
        native = self._checked()
        owner = self._owners.current()

        def attempt(interruptible: bool, receipt: List[Any]) -> Optional[int]:
            return native.acquire(wait_ms, lease_ms, owner, None, interruptible, receipt)

        if wait_ms != 0 and _green.active():

            def start(cancel: _native.CancelToken, loop: Any, done: _green.Done) -> None:
                native.acquire_async(wait_ms, lease_ms, owner, cancel, loop, done)

            validity_ms = _green.acquire(start, lambda _grant: native.release(owner))
        else:
            validity_ms = _acquire(attempt, lambda: native.release(owner))
        if validity_ms is None:
            return False
        self.validity = validity_ms / 1000.0
        return True

    def release(self) -> None:
        """Releases every member held by the calling thread."""
        self._checked().release(self._owners.current())

    def held(self) -> bool:
        """True if the calling thread holds the group (local view)."""
        return self._checked().is_held(self._owners.current())

    def cancel(self) -> None:
        """Wakes every acquire waiting on this group (``AcquireCancelledError``)."""
        self._checked().cancel()

    def __enter__(self) -> "MultiLock":
        self.acquire()
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.release()

    def __repr__(self) -> str:
        return f"<rlock.{type(self).__name__} of {len(self._locks)} locks>"


class RedLock(MultiLock):
    """The RedLock algorithm: each member on its own independent Redis server (its own client);
    held when a majority (n/2 + 1) granted it within the lease. Release skips members that are
    down, and succeeds when a majority was released."""

    _redlock = True
