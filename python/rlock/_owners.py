"""Who owns a hold. Every lock call passes the library an owner number, the ``<n>`` of the
owner field ``<client id>:<n>`` on Redis; the modes of ``Client.lock(owner=...)`` differ only
in how that number is chosen:

- "object" (the default): each Lock object is an owner of its own for each thread (greenlet,
  under gevent or eventlet) that uses it, as redis-py's ``Lock`` with ``thread_local=True``;
  with ``thread_local=False`` the object is one owner whichever thread calls.
- "thread": each thread (greenlet) is one owner across every Lock object of the client, as
  Redisson's ``RLock``.

- a caller-given ``owner_id`` (a str, bytes or int): every Lock object naming the id, in any
  process, is one owner, so one process can release or extend what another acquired. Its field
  is ``"<U>:1"``, U the version-5 UUID of the id (UTF-8; an int as its decimal digits) in the
  namespace OWNER_ID_NAMESPACE.

Numbers made here start at 2**40: OS thread ids stay below 2**22 on Linux, so they never meet
the number of a thread's own (the "thread" mode of a real thread) on the same client."""

from __future__ import annotations

import hashlib
import itertools
import os
import sys
import threading
import uuid
import weakref
from typing import Any, Callable, Optional, Union

from ._errors import InvalidArgumentError

CALLING_THREAD = 0  # RLOCK_THREAD_CURRENT: the library uses the calling OS thread's id

_numbers = itertools.count(1 << 40)
_numbers_mu = threading.Lock()


def _new_lock() -> None:
    # A thread of the parent may have held it at the fork.
    global _numbers_mu
    _numbers_mu = threading.Lock()


os.register_at_fork(after_in_child=_new_lock)


def new_number() -> int:
    """An owner number no other owner of this process has or will have."""
    with _numbers_mu:
        return next(_numbers)


def current_context() -> Any:
    """What the calling code runs as: its greenlet when it runs in one that is not a thread's
    main greenlet (gevent, eventlet), else its thread."""
    greenlet = sys.modules.get("greenlet")
    if greenlet is not None:
        current = greenlet.getcurrent()
        if current.parent is not None:
            return current
    return threading.current_thread()


class PerContext:
    """An owner number per context (a thread or greenlet by default; asyncio passes its task),
    made at its first use. Dead contexts drop out (weak keys), and a number is never reused, so
    a new thread or task never inherits what a dead one held."""

    __slots__ = ("_numbers", "_context", "_threads_as_themselves", "_last")

    def __init__(
        self, context: Callable[[], Any] = current_context, threads_as_themselves: bool = False
    ) -> None:
        self._numbers: "weakref.WeakKeyDictionary[Any, int]" = weakref.WeakKeyDictionary()
        self._context = context
        # True for the "thread" mode: a real thread is its OS thread id, as in the C API and
        # every other binding, so C code in the same thread is the same owner.
        self._threads_as_themselves = threads_as_themselves
        # The last context asked for and its number: a lock is mostly used by one thread at a
        # time, and a hit needs neither the mutex nor a new weak reference. Weak, so that a dead
        # context is never matched (its number is never reused) and never kept alive.
        self._last: "Optional[tuple[weakref.ref[Any], int]]" = None

    def current(self) -> int:
        context = self._context()
        last = self._last  # one read: other threads replace the tuple, never change it
        if last is not None and last[0]() is context:
            return last[1]
        if self._threads_as_themselves and isinstance(context, threading.Thread):
            return CALLING_THREAD
        with _numbers_mu:
            number = self._numbers.get(context)
            if number is None:
                number = next(_numbers)
                self._numbers[context] = number
        self._last = (weakref.ref(context), number)
        return number


class Fixed:
    """One owner number whichever thread calls."""

    __slots__ = ("_number",)

    def __init__(self, number: int) -> None:
        self._number = number

    def current(self) -> int:
        return self._number


Owners = Union[PerContext, Fixed]

# The "thread" mode: one scope shared by every lock of the process.
THREADS = PerContext(threads_as_themselves=True)


def for_mode(
    owner: str,
    local: bool,
    *,
    unit: str = "thread",
    context: Callable[[], Any] = current_context,
    shared: Optional[PerContext] = None,
) -> Owners:
    """The owners of a new lock object for Client.lock(owner=, thread_local=). asyncio calls it
    with unit="task": owner="task", task_local=, a context function giving the running task and
    its process-wide scope as shared."""
    if not isinstance(owner, str):
        raise TypeError(f"owner must be 'object' or '{unit}', not {type(owner).__name__}")
    if not isinstance(local, bool):
        raise TypeError(f"{unit}_local must be a bool, not {type(local).__name__}")
    if owner == "object":
        return PerContext(context) if local else Fixed(new_number())
    if owner == unit:
        if not local:
            raise InvalidArgumentError(
                f"owner='{unit}' is per {unit} by definition: {unit}_local=False needs "
                "owner='object'"
            )
        return THREADS if shared is None else shared
    raise InvalidArgumentError(f"owner must be 'object' or '{unit}', not {owner!r}")


# rlock.h RLOCK_OWNER_ID_NAMESPACE: a constant of the on-Redis format.
OWNER_ID_NAMESPACE = uuid.UUID("582a18c8-c685-423e-bc63-c2b861deff6c")
MAX_OWNER_ID_BYTES = 1024


def owner_id_prefix(raw: bytes) -> str:
    """The first half of a caller-given owner's field (uuid.uuid5 of the bytes; uuid5 itself
    takes only str on older Pythons)."""
    digest = hashlib.sha1(OWNER_ID_NAMESPACE.bytes + raw).digest()
    return str(uuid.UUID(bytes=digest[:16], version=5))
