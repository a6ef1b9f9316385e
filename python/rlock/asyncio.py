"""rlock for asyncio: ``await lock.acquire()``, ``async with lock:``.

Connect with ``client = await rlock.asyncio.connect(url)``, which connects off the event loop.
Each lock object is an owner of its own in each task (as in each thread in the blocking API):
a lock acquired in a task must be released by that task, and re-acquiring through the same
object in the holding task nests. Acquire,
release and extend are the C library's asynchronous calls: the task awaits their completion on
the event loop, so a waiting task costs no thread, and nothing blocks the loop. Cancelling a
task that waits (directly, or through ``asyncio.timeout`` / ``wait_for``) cancels its wait; if
the lock was granted at that moment it is released before the cancellation goes on: nothing is
left locked, and no queue entry is left behind.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
import weakref
from typing import Any, Callable, Iterable, List, Optional, Sequence, Tuple, TypeVar, Union

from . import _client, _decorate, _errors, _leader, _native, _owners, _semaphore
from ._client import LostReason, Name, _duration_ms, _lease_ms, _ttl_seconds, _wait_ms
from ._errors import InvalidArgumentError, LockError, LockTimeoutError
from ._stats import Event, Stats

__all__ = [
    "connect",
    "Client",
    "Lock",
    "ReadWriteLock",
    "MultiLock",
    "RedLock",
    "Semaphore",
    "ExpirableSemaphore",
    "Permit",
    "CountDownLatch",
]

_T = TypeVar("_T")
_F = TypeVar("_F", bound=Callable[..., Any])


def _current_task() -> "asyncio.Task[Any]":
    task = asyncio.current_task()
    if task is None:
        raise RuntimeError("rlock.asyncio locks are used from inside an asyncio task")
    return task


# owner="task": one scope for every lock of the process.
_TASKS = _owners.PerContext(_current_task)


def _owners_for(owner: str, task_local: bool) -> _owners.Owners:
    """The owners of a new lock object for Client.lock(owner=, task_local=)."""
    return _owners.for_mode(owner, task_local, unit="task", context=_current_task, shared=_TASKS)


# ---- native asynchronous calls ----------------------------------------------------------------

_OK = _errors._CODES["RLOCK_OK"]
_TIMED_OUT = _errors._CODES["RLOCK_ETIMEDOUT"]

# What a native asynchronous call reports: status, value, message. The value is an int, or the
# permit ids (list[str]) of an expirable semaphore's acquire.
_Outcome = Tuple[int, Any, str]
# done(status, value, message), run once on the loop the call was started with.
_Done = Callable[[int, Any, str], object]
# Starts one native asynchronous call that reports to done on loop.
_Start = Callable[[asyncio.AbstractEventLoop, _Done], None]


def _error(status: int, message: str) -> LockError:
    """The exception of a failed native call, as the blocking API raises it."""
    error = _errors._BY_CODE.get(status, LockError)(message)
    error.code = status
    return error


def _start(start: _Start) -> "asyncio.Future[_Outcome]":
    """Starts a native asynchronous call (raising if it could not start); the future gets its
    outcome on the running loop, handed over by the library thread that completed it."""
    loop = asyncio.get_running_loop()
    outcome: "asyncio.Future[_Outcome]" = loop.create_future()

    def done(status: int, value: int, message: str) -> None:
        if not outcome.done():  # a release awaited by a task cancelled meanwhile
            outcome.set_result((status, value, message))

    start(loop, done)
    return outcome


async def _call(start: _Start) -> int:
    """Runs a call that does not wait (release, extend): its value, or its error raised. A
    cancelled caller does not stop it."""
    status, value, message = await _start(start)
    if status != _OK:
        raise _error(status, message)
    return int(value)


async def _settled(outcome: "asyncio.Future[_Outcome]") -> _Outcome:
    """The outcome, awaited through any number of cancellations of the calling task (used only
    for the bounded clean-up after a cancel)."""
    while True:
        try:
            return await asyncio.shield(outcome)
        except asyncio.CancelledError:
            continue


async def _give_back(release: _Start) -> None:
    try:
        outcome = _start(release)
    except LockError:
        return  # the handle or its client was closed, which released it
    await _settled(outcome)


async def _acquire(
    start: Callable[[_native.CancelToken, asyncio.AbstractEventLoop, _Done], None],
    release: _Start,
) -> Optional[int]:
    """Runs start(cancel_token, loop, done), a native asynchronous acquire: the value of the
    grant, or None when the wait ran out. If the calling task is cancelled, the wait is
    cancelled through the token, and a grant that raced it is given back with release before
    the CancelledError goes on."""
    cancel = _native.CancelToken()
    outcome = _start(lambda loop, done: start(cancel, loop, done))
    try:
        status, value, message = await asyncio.shield(outcome)
    except asyncio.CancelledError:
        cancel.cancel()
        status, _, _ = await _settled(outcome)
        if status == _OK:
            await _give_back(release)
        raise
    if status == _TIMED_OUT:
        return None
    if status != _OK:
        raise _error(status, message)
    return int(value)


# Calls the C ABI has no asynchronous form of (queries, force_unlock, fenced_write, closing a
# client) share a small pool; none of them waits for a lock.
_io_pool: Optional[concurrent.futures.ThreadPoolExecutor] = None
_io_pool_mu = threading.Lock()
_IO_THREADS = 4


def _pool() -> concurrent.futures.ThreadPoolExecutor:
    global _io_pool
    with _io_pool_mu:
        if _io_pool is None:
            _io_pool = concurrent.futures.ThreadPoolExecutor(
                max_workers=_IO_THREADS, thread_name_prefix="rlock-io"
            )
        return _io_pool


async def _off_loop(fn: Callable[..., _T], *args: Any) -> _T:
    """Runs a call that does not wait on the I/O pool. A cancelled caller does not stop it."""
    return await asyncio.get_running_loop().run_in_executor(_pool(), fn, *args)


async def connect(url: Optional[str] = None, **options: Any) -> "Client":
    """A connected ``Client`` (the arguments of ``rlock.Client``), made on the I/O pool: the
    event loop runs on while it connects, for up to ``connect_timeout`` per try. Use
    ``async with await rlock.asyncio.connect(url) as client:``."""
    sync = await _off_loop(lambda: _client.Client(url, **options))
    return Client._wrap(sync)


class Client:
    """The asyncio face of ``rlock.Client`` (same arguments). ``await connect(...)`` makes one
    without blocking the event loop; calling ``Client(...)`` directly connects in the calling
    thread, a blocking call (for up to ``connect_timeout``), fine before the loop runs."""

    def __init__(self, url: Optional[str] = None, **options: Any) -> None:
        self._sync = _client.Client(url, **options)

    @classmethod
    def _wrap(cls, sync: _client.Client) -> "Client":
        self = object.__new__(cls)
        self._sync = sync
        return self

    @property
    def id(self) -> str:
        return self._sync.id

    @property
    def closed(self) -> bool:
        return self._sync.closed

    @property
    def sync_client(self) -> _client.Client:
        """The blocking client underneath (shares connections and the watchdog)."""
        return self._sync

    def stats(self) -> Stats:
        """See ``rlock.Client.stats``: no network call, so not a coroutine."""
        return self._sync.stats()

    def on_event(self, handler: Optional[Callable[[Event], Any]]) -> None:
        """See ``rlock.Client.on_event``. The handler runs on a library thread, not on the
        event loop: hand events to the loop with ``loop.call_soon_threadsafe`` if needed."""
        self._sync.on_event(handler)

    async def watch_key_events(self, *, expired: bool = True, deleted: bool = True) -> None:
        """See ``rlock.Client.watch_key_events``; its round trips run on a helper thread."""
        await _off_loop(lambda: self._sync.watch_key_events(expired=expired, deleted=deleted))

    async def close(self) -> None:
        """Releases what is still held (best effort), wakes waiting tasks with
        ``ClientClosedError`` and closes connections. The closing round trips run on a helper
        thread (the I/O pool), not on the event loop."""
        await _off_loop(self._sync.close)

    async def __aenter__(self) -> "Client":
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        await self.close()

    def __repr__(self) -> str:
        return f"<rlock.asyncio.Client id={self.id} {'closed' if self.closed else 'open'}>"

    def lock(
        self,
        name: Name,
        *,
        lease: Optional[float] = None,
        blocking_timeout: Optional[float] = None,
        owner: str = "object",
        task_local: bool = True,
        owner_id: "Union[str, bytes, int, None]" = None,
    ) -> "Lock":
        """See ``rlock.Client.lock``; ``owner`` is "object" (the default: each Lock object is
        its own owner in each task, or in all of them with ``task_local=False``) or "task"
        (the task is one owner across every Lock object). ``owner_id``: as for
        ``rlock.Client.lock``, the same owner as a blocking lock naming the id."""
        return Lock(
            self._sync.lock(
                name, lease=lease, blocking_timeout=blocking_timeout, owner_id=owner_id
            ),
            owner=owner,
            task_local=task_local,
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
        """See ``rlock.Client.locked``: the same decorator for ``async def`` functions, waiting
        without blocking the event loop. The owner is the task, so a nested call of the same
        name in the task re-enters. Plain functions are refused (use ``rlock.Client.locked``)."""
        return _decorate.locked_async(self, name, wait, lease, on_held, default, min_hold)

    def leader(self, name: Name, *, wait: Optional[float] = None) -> "_leader.AsyncLeading":
        """See ``rlock.Client.leader``: ``async with client.leader(name) as lead:`` campaigns on
        the event loop (no thread waits); ``await lead.wait_lost()`` returns the reason once
        leadership ends. Leaving resigns off the loop."""
        return _leader.AsyncLeading(
            self._sync._new_election(name, False), _client._name_bytes(name), _client._wait_s(wait)
        )

    def election(self, name: Name, *, requeue: bool = True) -> "_leader.Election":
        """See ``rlock.Client.election`` (its callbacks run on library threads: hop to the loop
        with ``loop.call_soon_threadsafe``)."""
        return self._sync.election(name, requeue=requeue)

    def fenced_lock(
        self,
        name: Name,
        *,
        lease: Optional[float] = None,
        blocking_timeout: Optional[float] = None,
        owner: str = "object",
        task_local: bool = True,
        owner_id: "Union[str, bytes, int, None]" = None,
    ) -> "Lock":
        """See ``rlock.Client.fenced_lock``; ``owner``, ``task_local`` as for ``lock()``."""
        return Lock(
            self._sync.fenced_lock(
                name, lease=lease, blocking_timeout=blocking_timeout, owner_id=owner_id
            ),
            owner=owner,
            task_local=task_local,
        )

    def spin_lock(
        self,
        name: Name,
        *,
        lease: Optional[float] = None,
        blocking_timeout: Optional[float] = None,
        initial_backoff: float = _client._LOCK_DEFAULTS["spin_initial_ms"] / 1000.0,
        max_backoff: float = _client._LOCK_DEFAULTS["spin_max_ms"] / 1000.0,
        owner: str = "object",
        task_local: bool = True,
        owner_id: "Union[str, bytes, int, None]" = None,
    ) -> "Lock":
        """See ``rlock.Client.spin_lock``; ``owner``, ``task_local`` as for ``lock()``."""
        return Lock(
            self._sync.spin_lock(
                name,
                lease=lease,
                blocking_timeout=blocking_timeout,
                initial_backoff=initial_backoff,
                max_backoff=max_backoff,
                owner_id=owner_id,
            ),
            owner=owner,
            task_local=task_local,
        )

    def fair_lock(
        self,
        name: Name,
        *,
        lease: Optional[float] = None,
        blocking_timeout: Optional[float] = None,
        waiter_timeout: float = _client._LOCK_DEFAULTS["fair_wait_ms"] / 1000.0,
        owner: str = "object",
        task_local: bool = True,
        owner_id: "Union[str, bytes, int, None]" = None,
    ) -> "Lock":
        """See ``rlock.Client.fair_lock``; ``owner``, ``task_local`` as for ``lock()``."""
        return Lock(
            self._sync.fair_lock(
                name,
                lease=lease,
                blocking_timeout=blocking_timeout,
                waiter_timeout=waiter_timeout,
                owner_id=owner_id,
            ),
            owner=owner,
            task_local=task_local,
        )

    def non_reentrant_lock(
        self,
        name: Name,
        *,
        lease: Optional[float] = None,
        blocking_timeout: Optional[float] = None,
        owner: str = "object",
        task_local: bool = True,
        owner_id: "Union[str, bytes, int, None]" = None,
    ) -> "Lock":
        """See ``rlock.Client.non_reentrant_lock``; ``owner``, ``task_local`` as for
        ``lock()``."""
        return Lock(
            self._sync.non_reentrant_lock(
                name, lease=lease, blocking_timeout=blocking_timeout, owner_id=owner_id
            ),
            owner=owner,
            task_local=task_local,
        )

    def non_reentrant_fair_lock(
        self,
        name: Name,
        *,
        lease: Optional[float] = None,
        blocking_timeout: Optional[float] = None,
        waiter_timeout: float = _client._LOCK_DEFAULTS["fair_wait_ms"] / 1000.0,
        owner: str = "object",
        task_local: bool = True,
        owner_id: "Union[str, bytes, int, None]" = None,
    ) -> "Lock":
        """See ``rlock.Client.non_reentrant_fair_lock``; ``owner``, ``task_local`` as for
        ``lock()``."""
        return Lock(
            self._sync.non_reentrant_fair_lock(
                name,
                lease=lease,
                blocking_timeout=blocking_timeout,
                waiter_timeout=waiter_timeout,
                owner_id=owner_id,
            ),
            owner=owner,
            task_local=task_local,
        )

    def read_write_lock(
        self,
        name: Name,
        *,
        lease: Optional[float] = None,
        blocking_timeout: Optional[float] = None,
        owner: str = "object",
        task_local: bool = True,
    ) -> "ReadWriteLock":
        """See ``rlock.Client.read_write_lock``; ``owner``, ``task_local`` as for ``lock()``,
        the two halves being one owner."""
        return ReadWriteLock(
            self._sync.read_write_lock(name, lease=lease, blocking_timeout=blocking_timeout),
            owner=owner,
            task_local=task_local,
        )

    def semaphore(self, name: Name) -> "Semaphore":
        """See ``rlock.Client.semaphore``."""
        return Semaphore(self._sync.semaphore(name))

    def expirable_semaphore(
        self, name: Name, *, lease: _semaphore.Lease = None
    ) -> "ExpirableSemaphore":
        """See ``rlock.Client.expirable_semaphore``."""
        return ExpirableSemaphore(self._sync.expirable_semaphore(name, lease=lease))

    def count_down_latch(self, name: Name) -> "CountDownLatch":
        """See ``rlock.Client.count_down_latch``."""
        return CountDownLatch(self._sync.count_down_latch(name))

    async def fenced_write(self, key: Name, value: Any, token: int) -> bool:
        """See ``rlock.Client.fenced_write``."""
        return await _off_loop(self._sync.fenced_write, key, value, token)


class Lock:
    """An ``rlock`` lock for asyncio tasks: the same lock on Redis as the blocking
    ``rlock.Lock`` of the same name, owned per task instead of per thread."""

    __slots__ = ("_lock", "_owners", "__weakref__")

    def __init__(
        self,
        lock: _client.Lock,
        *,
        owner: Union[str, _owners.Owners] = "object",
        task_local: bool = True,
    ) -> None:
        """``owner``: "object" (each Lock object is its own owner in each task that uses it,
        or, with ``task_local=False``, in all of them at once) or "task" (the task is one
        owner across every Lock object)."""
        if not isinstance(lock, _client.Lock):
            raise TypeError("rlock.asyncio.Lock wraps an rlock.Lock; use client.lock(name)")
        self._lock = lock
        if lock._owner_prefix is not None:  # a caller-given owner_id is the owner
            if owner not in ("object", lock._owners) or task_local is not True:
                raise InvalidArgumentError(
                    "owner_id names the owner: leave owner and task_local at their defaults"
                )
            self._owners: _owners.Owners = lock._owners
        elif isinstance(owner, (_owners.PerContext, _owners.Fixed)):
            self._owners = owner  # shared by the halves of a read-write lock
        else:
            self._owners = _owners_for(owner, task_local)

    @property
    def name(self) -> Name:
        return self._lock.name

    def __repr__(self) -> str:
        return "<rlock.asyncio." + repr(self._lock)[len("<rlock.") :]

    async def acquire(
        self, blocking: bool = True, timeout: float = -1, lease: Optional[float] = None
    ) -> bool:
        """Acquires the lock for the current task, like ``threading.Lock.acquire`` but
        awaited: True when acquired, False when ``timeout`` seconds passed (``blocking=False``
        tries once). The event loop keeps running while it waits, and no thread waits for
        the task."""
        wait_ms = _wait_ms(blocking, timeout)
        lease_ms = _lease_ms(lease)
        owner = self._owners.current()
        native = self._lock._checked()
        want_token = self._lock._kind == _native.KIND_FENCED

        def start(
            cancel: _native.CancelToken, loop: asyncio.AbstractEventLoop, done: _Done
        ) -> None:
            native.acquire_async(wait_ms, lease_ms, owner, cancel, want_token, loop, done)

        def release(loop: asyncio.AbstractEventLoop, done: _Done) -> None:
            native.release_async(owner, loop, done)

        return await _acquire(start, release) is not None

    async def release(self) -> None:
        """Releases one hold of the current task (``NotHeldError``, ``LockLostError`` as for
        ``rlock.Lock.release``)."""
        owner = self._owners.current()
        native = self._lock._checked()
        await _call(lambda loop, done: native.release_async(owner, loop, done))

    async def extend(self, additional_time: float, replace_ttl: bool = False) -> None:
        """Adds ``additional_time`` seconds to the remaining lease of the current task's hold,
        or sets it with ``replace_ttl=True``, as ``rlock.Lock.extend``."""
        add_ms = _duration_ms(additional_time, "additional_time")
        if not isinstance(replace_ttl, bool):
            raise TypeError(f"replace_ttl must be a bool, not {type(replace_ttl).__name__}")
        owner = self._owners.current()
        native = self._lock._checked()
        if replace_ttl:
            await _call(lambda loop, done: native.extend_async(add_ms, owner, loop, done))
        else:
            await _off_loop(native.extend_by, add_ms, owner)

    async def __aenter__(self) -> "Lock":
        timeout = self._lock._blocking_timeout
        if timeout is None:
            await self.acquire()
        elif not await self.acquire(timeout=timeout):
            raise LockTimeoutError(f"lock {self.name!r} was not acquired within {timeout} s")
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        await self.release()

    def held(self) -> bool:
        """True if the current task holds the lock (local view, no network call)."""
        return self._lock._checked().is_held(self._owners.current())

    def lost(self) -> bool:
        """True if the current task's hold was found lost (local view)."""
        return self._lock._checked().is_lost(self._owners.current())

    async def locked(self) -> bool:
        """True if anyone holds the lock (asks Redis)."""
        state = await _off_loop(self._lock._checked().query, self._owners.current())
        return state.locked

    async def hold_count(self) -> int:
        """How many times the current task holds the lock (asks Redis)."""
        state = await _off_loop(self._lock._checked().query, self._owners.current())
        return state.hold_count

    async def remaining_ttl(self) -> Optional[float]:
        """Seconds until the lock expires: None if not locked, ``math.inf`` without expiry."""
        state = await _off_loop(self._lock._checked().query, self._owners.current())
        return _ttl_seconds(state.ttl_ms)

    async def holder(self) -> Optional[_client.Holder]:
        """Who holds the lock now and since when (see ``rlock.Lock.holder``); None when free."""
        return await _off_loop(self._lock.holder)

    async def force_unlock(self) -> bool:
        """Deletes the lock whoever holds it; True if it was locked."""
        return await _off_loop(self._lock._checked().force_unlock)

    @property
    def owner(self) -> str:
        """The owner field this object acquires as from the current task (see
        ``rlock.Lock.owner``)."""
        if self._lock._owner_prefix is not None:
            return self._lock.owner
        suffix = ":write" if self._lock._kind == _native.KIND_WRITE else ""
        return f"{self._lock.client.id}:{self._owners.current()}{suffix}"

    @property
    def token(self) -> Optional[int]:
        """The fencing token of the current task's hold of a fenced lock, or None."""
        return self._lock._checked().token(self._owners.current())

    def cancel(self) -> None:
        """Wakes every acquire waiting on this lock (``AcquireCancelledError``)."""
        self._lock.cancel()

    def on_lost(self, callback: Optional[Callable[["Lock", LostReason], Any]]) -> None:
        """Calls ``callback(lock, reason)`` on the watchdog thread when a hold is found lost.
        To act on the event loop, use ``loop.call_soon_threadsafe`` inside it."""
        if callback is None:
            self._lock.on_lost(None)
            return
        if not callable(callback):
            raise TypeError(f"callback must be callable, not {type(callback).__name__}")
        self_ref = weakref.ref(self)

        def dispatch(_lock: _client.Lock, reason: LostReason) -> None:
            me = self_ref()
            if me is not None:
                callback(me, reason)

        self._lock.on_lost(dispatch)

    def close(self) -> None:
        """Frees the native handle now (a hold left expires by its lease)."""
        self._lock.close()


class ReadWriteLock:
    """See ``rlock.ReadWriteLock``; its halves are asyncio locks."""

    __slots__ = ("_rw", "_read", "_write")

    def __init__(
        self, rw: _client.ReadWriteLock, *, owner: str = "object", task_local: bool = True
    ) -> None:
        self._rw = rw
        owners = _owners_for(owner, task_local)  # one for both halves: a writer may read
        self._read = Lock(rw.read_lock(), owner=owners)
        self._write = Lock(rw.write_lock(), owner=owners)

    @property
    def name(self) -> Name:
        return self._rw.name

    def read_lock(self) -> Lock:
        return self._read

    def write_lock(self) -> Lock:
        return self._write


class MultiLock:
    """See ``rlock.MultiLock``: asyncio locks taken as one, owned per task."""

    _redlock = False

    def __init__(
        self, locks: Iterable[Lock], *, owner: str = "object", task_local: bool = True
    ) -> None:
        """``owner``, ``task_local``: who holds what this object acquires, as for
        ``rlock.asyncio.Lock``."""
        self._owners = _owners_for(owner, task_local)
        members = list(locks)
        for member in members:
            if not isinstance(member, Lock):
                raise TypeError(f"members must be rlock.asyncio locks, not {type(member).__name__}")
        group = _client.RedLock if self._redlock else _client.MultiLock
        self._group = group([member._lock for member in members])
        self._locks: Sequence[Lock] = tuple(members)
        self.validity: Optional[float] = None
        """After a successful acquire: the seconds the group was sure to be held for then."""

    @property
    def locks(self) -> Sequence[Lock]:
        return self._locks

    async def acquire(
        self, blocking: bool = True, timeout: float = -1, lease: Optional[float] = None
    ) -> bool:
        """Like ``Lock.acquire``; sets ``validity`` when it returns True."""
        wait_ms = _wait_ms(blocking, timeout)
        lease_ms = _lease_ms(lease)
        owner = self._owners.current()
        for member in self._locks:
            member._lock._checked()
        native = self._group._checked()

        def start(
            cancel: _native.CancelToken, loop: asyncio.AbstractEventLoop, done: _Done
        ) -> None:
            native.acquire_async(wait_ms, lease_ms, owner, cancel, loop, done)

        def release(loop: asyncio.AbstractEventLoop, done: _Done) -> None:
            native.release_async(owner, loop, done)

        validity_ms = await _acquire(start, release)
        if validity_ms is None:
            return False
        self.validity = validity_ms / 1000.0
        return True

    async def release(self) -> None:
        """Releases every member held by the current task."""
        owner = self._owners.current()
        native = self._group._checked()
        await _call(lambda loop, done: native.release_async(owner, loop, done))

    def held(self) -> bool:
        """True if the current task holds the group (local view)."""
        return self._group._checked().is_held(self._owners.current())

    def cancel(self) -> None:
        """Wakes every acquire waiting on this group (``AcquireCancelledError``)."""
        self._group.cancel()

    async def __aenter__(self) -> "MultiLock":
        await self.acquire()
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        await self.release()

    def __repr__(self) -> str:
        return f"<rlock.asyncio.{type(self).__name__} of {len(self._locks)} locks>"


class RedLock(MultiLock):
    """See ``rlock.RedLock``: members on independent Redis servers, held by a majority."""

    _redlock = True


# ---- semaphores and latches -------------------------------------------------------------------


async def _run_through_cancel(fn: Callable[..., Any], *args: Any) -> None:
    """Runs fn(*args) on the I/O pool to the end, whatever cancellations of the calling task
    come meanwhile (a bounded clean-up); its errors are dropped (a closed handle or client:
    nothing left to give back through it)."""
    future = asyncio.get_running_loop().run_in_executor(_pool(), fn, *args)
    while True:
        try:
            await asyncio.shield(future)
            return
        except asyncio.CancelledError:
            if future.cancelled():
                return
        except LockError:
            return


async def _take_permits(
    native: _native.Semaphore,
    permits: int,
    wait_ms: int,
    lease_ms: int,
    give_back: Callable[[Any], None],
) -> Optional[Any]:
    """A native asynchronous acquire: its value (the permit ids of an expirable semaphore, the
    count of a plain one), None when the wait ran out. A cancelled task cancels the wait, and
    permits granted as it did are given back (give_back(value), on the I/O pool: the C ABI has
    no asynchronous release) before the CancelledError goes on."""
    cancel = _native.CancelToken()
    outcome = _start(
        lambda loop, done: native.acquire_async(permits, wait_ms, lease_ms, cancel, loop, done)
    )
    try:
        status, value, message = await asyncio.shield(outcome)
    except asyncio.CancelledError:
        cancel.cancel()
        status, value, _ = await _settled(outcome)
        if status == _OK:
            await _run_through_cancel(give_back, value)
        raise
    if status == _TIMED_OUT:
        return None
    if status != _OK:
        raise _error(status, message)
    return value


class Semaphore:
    """See ``rlock.Semaphore``: the same semaphore on Redis, for asyncio. Acquires are the C
    library's asynchronous calls (a waiting task costs no thread; cancelling the task cancels
    the wait and leaves nothing taken); calls that do not wait run on the I/O pool."""

    __slots__ = ("_sem", "__weakref__")

    def __init__(self, sem: _semaphore.Semaphore) -> None:
        if not isinstance(sem, _semaphore.Semaphore):
            raise TypeError("rlock.asyncio.Semaphore wraps an rlock.Semaphore")
        self._sem = sem

    @property
    def name(self) -> Name:
        return self._sem.name

    def __repr__(self) -> str:
        return "<rlock.asyncio." + repr(self._sem)[len("<rlock.") :]

    async def try_set_permits(self, permits: int, ttl: Optional[float] = None) -> bool:
        return await _off_loop(self._sem.try_set_permits, permits, ttl)

    async def add_permits(self, delta: int) -> int:
        return await _off_loop(self._sem.add_permits, delta)

    async def acquire(self, permits: int = 1, timeout: Optional[float] = None) -> bool:
        """Takes ``permits`` permits, waiting up to ``timeout`` seconds (None: for ever, 0: one
        try): True when taken, False when the time ran out."""
        count = _semaphore._whole(permits, "permits")
        wait_ms = _semaphore._timeout_ms(timeout)
        native = self._sem._checked()
        taken = await _take_permits(native, count, wait_ms, 0, lambda _: native.release(count))
        return taken is not None

    async def try_acquire(self, permits: int = 1) -> bool:
        return await self.acquire(permits, timeout=0)

    async def release(self, permits: int = 1) -> None:
        await _off_loop(self._sem.release, permits)

    async def release_if_exists(self, permits: int = 1) -> bool:
        """See ``rlock.Semaphore.release_if_exists``."""
        return await _off_loop(self._sem.release_if_exists, permits)

    async def available_permits(self) -> int:
        return await _off_loop(self._sem.available_permits)

    async def exists(self) -> bool:
        return await _off_loop(self._sem.exists)

    async def drain_permits(self) -> int:
        return await _off_loop(self._sem.drain_permits)

    async def delete(self) -> bool:
        return await _off_loop(self._sem.delete)

    def held_permits(self) -> int:
        """The permits this client holds (local view, no network call)."""
        return self._sem.held_permits()

    def permits(self, permits: int = 1, timeout: Optional[float] = None) -> "HeldPermits":
        """``async with sem.permits(n, timeout=...):`` (``LockTimeoutError`` on timeout)."""
        _semaphore._whole(permits, "permits")
        _semaphore._timeout_ms(timeout)
        return HeldPermits(self, permits, timeout)

    async def __aenter__(self) -> "Semaphore":
        await self.acquire()
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        await self.release()

    def cancel(self) -> None:
        """Wakes every acquire waiting on this object (``AcquireCancelledError``)."""
        self._sem.cancel()

    def close(self) -> None:
        self._sem.close()


class HeldPermits:
    """``Semaphore.permits(n, timeout)`` for ``async with``."""

    __slots__ = ("_semaphore", "_permits", "_timeout")

    def __init__(self, semaphore: Semaphore, permits: int, timeout: Optional[float]) -> None:
        self._semaphore = semaphore
        self._permits = permits
        self._timeout = timeout

    async def __aenter__(self) -> Semaphore:
        if not await self._semaphore.acquire(self._permits, self._timeout):
            raise LockTimeoutError(
                f"semaphore {self._semaphore.name!r}: {self._permits} permit(s) not acquired "
                f"within {self._timeout} s"
            )
        return self._semaphore

    async def __aexit__(self, *exc_info: Any) -> None:
        await self._semaphore.release(self._permits)


class Permit:
    """See ``rlock.Permit``; ``await permit.release()``, ``async with permit:``."""

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

    async def release(self) -> None:
        await self._semaphore.release(self._id)

    async def update_lease(self, lease: _semaphore.Lease = None) -> bool:
        return await self._semaphore.update_lease(self._id, lease)

    async def lease_time(self) -> Optional[float]:
        return await self._semaphore.lease_time(self._id)

    async def __aenter__(self) -> "Permit":
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        await self.release()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, (Permit, _semaphore.Permit)) and other.id == self._id

    def __hash__(self) -> int:
        return hash(self._id)

    def __repr__(self) -> str:
        return f"<rlock.asyncio.Permit {self._id} of {self._semaphore.name!r}>"


_PermitRef = Union[str, Permit, _semaphore.Permit]


def _ids_of(permits: Union[_PermitRef, Iterable[_PermitRef]]) -> List[str]:
    if isinstance(permits, Permit):
        return [permits.id]
    if isinstance(permits, (str, _semaphore.Permit)):
        return _semaphore._id_list(permits)
    if isinstance(permits, (bytes, bytearray, memoryview)):
        raise TypeError("a permit id is a str of 32 hex digits, not bytes")
    return [p.id if isinstance(p, Permit) else _semaphore._id_text(p) for p in permits]


class ExpirableSemaphore:
    """See ``rlock.ExpirableSemaphore``, for asyncio."""

    __slots__ = ("_sem", "__weakref__")

    def __init__(self, sem: _semaphore.ExpirableSemaphore) -> None:
        if not isinstance(sem, _semaphore.ExpirableSemaphore):
            raise TypeError("rlock.asyncio.ExpirableSemaphore wraps an rlock.ExpirableSemaphore")
        self._sem = sem

    @property
    def name(self) -> Name:
        return self._sem.name

    def __repr__(self) -> str:
        return "<rlock.asyncio." + repr(self._sem)[len("<rlock.") :]

    async def try_set_permits(self, permits: int) -> bool:
        return await _off_loop(self._sem.try_set_permits, permits)

    async def add_permits(self, delta: int) -> int:
        return await _off_loop(self._sem.add_permits, delta)

    async def acquire_many(
        self, permits: int, timeout: Optional[float] = None, lease: _semaphore.Lease = None
    ) -> Optional[List[Permit]]:
        """Takes ``permits`` permits at once (see ``rlock.ExpirableSemaphore.acquire_many``);
        None when the time ran out."""
        count = _semaphore._whole(permits, "permits")
        wait_ms = _semaphore._timeout_ms(timeout)
        lease_ms = _semaphore._permit_lease_ms(lease, 0)
        native = self._sem._checked()
        ids = await _take_permits(native, count, wait_ms, lease_ms, native.release_ids)
        return None if ids is None else [Permit(self, one) for one in ids]

    async def acquire(
        self, timeout: Optional[float] = None, lease: _semaphore.Lease = None
    ) -> Optional[Permit]:
        taken = await self.acquire_many(1, timeout, lease)
        return None if taken is None else taken[0]

    async def try_acquire(self, lease: _semaphore.Lease = None) -> Optional[Permit]:
        return await self.acquire(0, lease)

    def permit(
        self, timeout: Optional[float] = None, lease: _semaphore.Lease = None
    ) -> "HeldPermit":
        """``async with sem.permit(timeout=...) as p:`` (``LockTimeoutError`` on timeout)."""
        _semaphore._timeout_ms(timeout)
        _semaphore._permit_lease_ms(lease, 0)
        return HeldPermit(self, timeout, lease)

    async def release(self, permits: Union[_PermitRef, Iterable[_PermitRef]]) -> None:
        await _off_loop(self._sem.release, _ids_of(permits))

    async def update_lease(self, permit: _PermitRef, lease: _semaphore.Lease = None) -> bool:
        return await _off_loop(self._sem.update_lease, _ids_of(permit)[0], lease)

    async def set_permits(self, permits: int) -> int:
        """See ``rlock.ExpirableSemaphore.set_permits``."""
        return await _off_loop(self._sem.set_permits, permits)

    async def lease_time(self, permit: _PermitRef) -> Optional[float]:
        """See ``rlock.ExpirableSemaphore.lease_time``."""
        return await _off_loop(self._sem.lease_time, _ids_of(permit)[0])

    async def available_permits(self) -> int:
        return await _off_loop(self._sem.available_permits)

    async def acquired_permits(self) -> int:
        return await _off_loop(self._sem.acquired_permits)

    async def exists(self) -> bool:
        return await _off_loop(self._sem.exists)

    async def delete(self) -> bool:
        return await _off_loop(self._sem.delete)

    def cancel(self) -> None:
        self._sem.cancel()

    def close(self) -> None:
        self._sem.close()


class HeldPermit:
    """``ExpirableSemaphore.permit(timeout, lease)`` for ``async with``."""

    __slots__ = ("_semaphore", "_timeout", "_lease", "_permit")

    def __init__(
        self, semaphore: ExpirableSemaphore, timeout: Optional[float], lease: _semaphore.Lease
    ) -> None:
        self._semaphore = semaphore
        self._timeout = timeout
        self._lease = lease
        self._permit: Optional[Permit] = None

    async def __aenter__(self) -> Permit:
        permit = await self._semaphore.acquire(self._timeout, self._lease)
        if permit is None:
            raise LockTimeoutError(
                f"semaphore {self._semaphore.name!r}: no permit acquired within {self._timeout} s"
            )
        self._permit = permit
        return permit

    async def __aexit__(self, *exc_info: Any) -> None:
        permit, self._permit = self._permit, None
        if permit is not None:
            await permit.release()


class CountDownLatch:
    """See ``rlock.CountDownLatch``, for asyncio: ``await latch.wait()`` is the C library's
    asynchronous await (no thread per waiting task)."""

    __slots__ = ("_latch", "__weakref__")

    def __init__(self, latch: _semaphore.CountDownLatch) -> None:
        if not isinstance(latch, _semaphore.CountDownLatch):
            raise TypeError("rlock.asyncio.CountDownLatch wraps an rlock.CountDownLatch")
        self._latch = latch

    @property
    def name(self) -> Name:
        return self._latch.name

    def __repr__(self) -> str:
        return "<rlock.asyncio." + repr(self._latch)[len("<rlock.") :]

    async def try_set_count(self, count: int) -> bool:
        return await _off_loop(self._latch.try_set_count, count)

    async def count_down(self) -> int:
        return await _off_loop(self._latch.count_down)

    async def count(self) -> int:
        return await _off_loop(self._latch.count)

    async def wait(self, timeout: Optional[float] = None) -> bool:
        """True once the latch is open, False when ``timeout`` seconds (None: for ever) ran
        out. Cancelling the task cancels the wait."""
        wait_ms = _semaphore._timeout_ms(timeout)
        native = self._latch._checked()
        cancel = _native.CancelToken()
        outcome = _start(lambda loop, done: native.wait_async(wait_ms, cancel, loop, done))
        try:
            status, _, message = await asyncio.shield(outcome)
        except asyncio.CancelledError:
            cancel.cancel()
            await _settled(outcome)
            raise
        if status == _TIMED_OUT:
            return False
        if status != _OK:
            raise _error(status, message)
        return True

    async def delete(self) -> bool:
        return await _off_loop(self._latch.delete)

    def cancel(self) -> None:
        self._latch.cancel()

    def close(self) -> None:
        self._latch.close()
