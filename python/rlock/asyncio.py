"""rlock for asyncio: ``await lock.acquire()``, ``async with lock:``.

Each asyncio task is its own owner (as each thread is in the blocking API): a lock acquired in
a task must be released by that task, and re-acquiring in the holding task nests. Waiting and
Redis I/O happen on threads, never on the event loop. Cancelling a task that waits (directly,
or through ``asyncio.timeout`` / ``wait_for``) cancels the wait, and if the lock was granted at
that moment it is released before the cancellation goes on: nothing is left locked.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import itertools
import threading
import weakref
from typing import Any, Callable, Optional, TypeVar

from . import _client, _native
from ._client import LostReason, Name, _duration_ms, _lease_ms, _ttl_seconds, _wait_ms
from ._errors import LockError, LockTimeoutError

__all__ = ["Client", "Lock", "ReadWriteLock"]

_T = TypeVar("_T")

# Owner ids of tasks. OS thread ids stay below 2**22 on Linux, so ids from 2**40 up never
# collide with a thread's owner id on the same client.
_task_ids = itertools.count(1 << 40)
_task_owners: "weakref.WeakKeyDictionary[asyncio.Task[Any], int]" = weakref.WeakKeyDictionary()
_task_owners_mu = threading.Lock()


def _task_owner() -> int:
    task = asyncio.current_task()
    if task is None:
        raise RuntimeError("rlock.asyncio locks are used from inside an asyncio task")
    with _task_owners_mu:
        owner = _task_owners.get(task)
        if owner is None:
            owner = next(_task_ids)
            _task_owners[task] = owner
        return owner


# Calls that do not wait (try-once, release, extend, queries) share a small pool; a call that
# may wait gets a thread of its own, so any number of waiters cannot starve the releases that
# would let them in.
_io_pool: Optional[concurrent.futures.ThreadPoolExecutor] = None
_io_pool_mu = threading.Lock()


def _pool() -> concurrent.futures.ThreadPoolExecutor:
    global _io_pool
    with _io_pool_mu:
        if _io_pool is None:
            _io_pool = concurrent.futures.ThreadPoolExecutor(
                max_workers=4, thread_name_prefix="rlock-io"
            )
        return _io_pool


async def _off_loop(fn: Callable[..., _T], *args: Any) -> _T:
    """Runs a call that does not wait on the I/O pool. A cancelled caller does not stop it."""
    return await asyncio.get_running_loop().run_in_executor(_pool(), fn, *args)


async def _until_done(fut: "asyncio.Future[_T]") -> None:
    """Waits for fut through any number of cancellations of the calling task (used only for a
    bounded clean-up)."""
    while not fut.done():
        try:
            await asyncio.shield(fut)
        except asyncio.CancelledError:
            continue
        except BaseException:
            return


async def _acquire_off_loop(
    attempt: Callable[[Any], _T], undo: Callable[[], None], waits: bool
) -> _T:
    """Runs attempt(cancel_token) off the event loop. If the calling task is cancelled, the
    attempt is cancelled too; if it had got the lock by then, undo() releases it."""
    loop = asyncio.get_running_loop()
    cancel = _native.CancelToken()
    fut: "asyncio.Future[_T]" = loop.create_future()

    def deliver(result: Any, exc: Optional[BaseException]) -> None:
        if fut.done():
            return
        if exc is not None:
            fut.set_exception(exc)
        else:
            fut.set_result(result)

    def work() -> None:
        result: Any = None
        exc: Optional[BaseException] = None
        try:
            result = attempt(cancel)
        except BaseException as e:  # handed to the task
            exc = e
        try:
            loop.call_soon_threadsafe(deliver, result, exc)
        except RuntimeError:  # the loop is closed: nobody is left to use the lock
            if exc is None and result:
                try:
                    undo()
                except LockError:
                    pass

    if waits:
        threading.Thread(target=work, name="rlock-acquire", daemon=True).start()
    else:
        _pool().submit(work)
    try:
        return await asyncio.shield(fut)
    except asyncio.CancelledError:
        cancel.cancel()
        await _until_done(fut)
        if fut.done() and not fut.cancelled() and fut.exception() is None and fut.result():
            release = loop.run_in_executor(_pool(), undo)
            await _until_done(release)
        raise


class Client:
    """The asyncio face of ``rlock.Client`` (same arguments). Creating it connects once, a
    short blocking call; use ``async with rlock.asyncio.Client(...) as client:``."""

    def __init__(self, url: Optional[str] = None, **options: Any) -> None:
        self._sync = _client.Client(url, **options)

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

    async def close(self) -> None:
        """Releases what is still held (best effort) and closes connections."""
        await _off_loop(self._sync.close)

    async def __aenter__(self) -> "Client":
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        await self.close()

    def __repr__(self) -> str:
        return f"<rlock.asyncio.Client id={self.id} {'closed' if self.closed else 'open'}>"

    def lock(
        self, name: Name, *, lease: Optional[float] = None, blocking_timeout: Optional[float] = None
    ) -> "Lock":
        """See ``rlock.Client.lock``."""
        return Lock(self._sync.lock(name, lease=lease, blocking_timeout=blocking_timeout))

    def fenced_lock(
        self, name: Name, *, lease: Optional[float] = None, blocking_timeout: Optional[float] = None
    ) -> "Lock":
        """See ``rlock.Client.fenced_lock``."""
        return Lock(self._sync.fenced_lock(name, lease=lease, blocking_timeout=blocking_timeout))

    def spin_lock(
        self,
        name: Name,
        *,
        lease: Optional[float] = None,
        blocking_timeout: Optional[float] = None,
        initial_backoff: float = _client._LOCK_DEFAULTS["spin_initial_ms"] / 1000.0,
        max_backoff: float = _client._LOCK_DEFAULTS["spin_max_ms"] / 1000.0,
    ) -> "Lock":
        """See ``rlock.Client.spin_lock``."""
        return Lock(
            self._sync.spin_lock(
                name,
                lease=lease,
                blocking_timeout=blocking_timeout,
                initial_backoff=initial_backoff,
                max_backoff=max_backoff,
            )
        )

    def fair_lock(
        self,
        name: Name,
        *,
        lease: Optional[float] = None,
        blocking_timeout: Optional[float] = None,
        waiter_timeout: float = _client._LOCK_DEFAULTS["fair_wait_ms"] / 1000.0,
    ) -> "Lock":
        """See ``rlock.Client.fair_lock``."""
        return Lock(
            self._sync.fair_lock(
                name, lease=lease, blocking_timeout=blocking_timeout, waiter_timeout=waiter_timeout
            )
        )

    def read_write_lock(
        self, name: Name, *, lease: Optional[float] = None, blocking_timeout: Optional[float] = None
    ) -> "ReadWriteLock":
        """See ``rlock.Client.read_write_lock``."""
        return ReadWriteLock(
            self._sync.read_write_lock(name, lease=lease, blocking_timeout=blocking_timeout)
        )

    async def fenced_write(self, key: Name, value: Any, token: int) -> bool:
        """See ``rlock.Client.fenced_write``."""
        return await _off_loop(self._sync.fenced_write, key, value, token)


class Lock:
    """An ``rlock`` lock for asyncio tasks: the same lock on Redis as the blocking
    ``rlock.Lock`` of the same name, owned per task instead of per thread."""

    __slots__ = ("_lock", "__weakref__")

    def __init__(self, lock: _client.Lock) -> None:
        if not isinstance(lock, _client.Lock):
            raise TypeError("rlock.asyncio.Lock wraps an rlock.Lock; use client.lock(name)")
        self._lock = lock

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
        tries once). The event loop keeps running while it waits."""
        wait_ms = _wait_ms(blocking, timeout)
        lease_ms = _lease_ms(lease)
        owner = _task_owner()
        native = self._lock._checked()
        want_token = self._lock._kind == _native.KIND_FENCED

        def attempt(cancel: Any) -> bool:
            return native.acquire(wait_ms, lease_ms, owner, cancel, want_token)

        return await _acquire_off_loop(attempt, lambda: native.release(owner), wait_ms != 0)

    async def release(self) -> None:
        """Releases one hold of the current task (``NotHeldError``, ``LockLostError`` as for
        ``rlock.Lock.release``)."""
        owner = _task_owner()
        await _off_loop(self._lock._checked().release, owner)

    async def extend(self, lease: float) -> None:
        """Sets the remaining lease of the current task's hold to ``lease`` seconds."""
        lease_ms = _duration_ms(lease, "lease")
        owner = _task_owner()
        await _off_loop(self._lock._checked().extend, lease_ms, owner)

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
        return self._lock._checked().is_held(_task_owner())

    def lost(self) -> bool:
        """True if the current task's hold was found lost (local view)."""
        return self._lock._checked().is_lost(_task_owner())

    async def locked(self) -> bool:
        """True if anyone holds the lock (asks Redis)."""
        state = await _off_loop(self._lock._checked().query, _task_owner())
        return state.locked

    async def hold_count(self) -> int:
        """How many times the current task holds the lock (asks Redis)."""
        state = await _off_loop(self._lock._checked().query, _task_owner())
        return state.hold_count

    async def remaining_ttl(self) -> Optional[float]:
        """Seconds until the lock expires: None if not locked, ``math.inf`` without expiry."""
        state = await _off_loop(self._lock._checked().query, _task_owner())
        return _ttl_seconds(state.ttl_ms)

    async def force_unlock(self) -> bool:
        """Deletes the lock whoever holds it; True if it was locked."""
        return await _off_loop(self._lock._checked().force_unlock)

    @property
    def token(self) -> Optional[int]:
        """The fencing token of the current task's hold of a fenced lock, or None."""
        return self._lock._checked().token(_task_owner())

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

    def __init__(self, rw: _client.ReadWriteLock) -> None:
        self._rw = rw
        self._read = Lock(rw.read_lock())
        self._write = Lock(rw.write_lock())

    @property
    def name(self) -> Name:
        return self._rw.name

    def read_lock(self) -> Lock:
        return self._read

    def write_lock(self) -> Lock:
        return self._write
