"""Waiting that lets other greenlets run, once gevent or eventlet has patched the process.

A native blocking wait would stop the whole OS thread, so every greenlet on it, the holder
included: the waiter would wait for a release that cannot come. Under those runtimes a wait
runs as the library's asynchronous call instead; the library thread that completes it hands
the outcome over through a pipe, and the greenlet waits for the pipe through the runtime's
patched ``select``, which switches to other greenlets meanwhile."""

from __future__ import annotations

import os
import select
import sys
from typing import Any, Callable, List, Tuple

from . import _errors, _native

_OK = _errors._CODES["RLOCK_OK"]
_TIMED_OUT = _errors._CODES["RLOCK_ETIMEDOUT"]

# done(status, value, message), as the native asynchronous calls report.
Done = Callable[[int, Any, str], object]


def active() -> bool:
    """True once gevent or eventlet has patched threading in this process."""
    gevent_monkey = sys.modules.get("gevent.monkey")
    if gevent_monkey is not None and gevent_monkey.is_module_patched("threading"):
        return True
    eventlet_patcher = sys.modules.get("eventlet.patcher")
    return eventlet_patcher is not None and eventlet_patcher.is_monkey_patched("thread")


class _Handover:
    """Stands in for the event loop a native asynchronous call reports to: the completing
    library thread calls call_soon_threadsafe(delivery), which wakes the waiting greenlet."""

    def __init__(self) -> None:
        self._read, self._write = os.pipe()
        self._deliveries: List[Callable[[], None]] = []

    def call_soon_threadsafe(self, delivery: Callable[[], None]) -> None:
        self._deliveries.append(delivery)
        os.write(self._write, b"x")

    def wait(self) -> None:
        """Until the outcome arrived and was delivered; may raise what the runtime throws into
        the greenlet (a kill, a timeout, KeyboardInterrupt)."""
        while not self._deliveries:
            select.select([self._read], [], [])
        self._deliveries.pop()()

    def close(self) -> None:
        os.close(self._read)
        os.close(self._write)


def acquire(
    start: Callable[[_native.CancelToken, Any, Done], None], give_back: Callable[[Any], None]
) -> Any:
    """Runs start(cancel_token, loop, done), a native asynchronous acquire or wait, and waits
    for it cooperatively: the value of the grant (an int, or an expirable semaphore's permit
    ids), or None when the wait ran out. If the greenlet is interrupted while waiting, the wait
    is cancelled through the token, and a grant that raced the interrupt is given back with
    give_back(value) before the interrupt goes on."""
    outcome: List[Tuple[int, Any, str]] = []

    def done(status: int, value: Any, message: str) -> None:
        outcome.append((status, value, message))

    cancel = _native.CancelToken()
    handover = _Handover()
    try:
        start(cancel, handover, done)
        try:
            handover.wait()
        except BaseException:
            cancel.cancel()
            _settle(handover)
            if outcome and outcome[0][0] == _OK:
                give_back(outcome[0][1])
            raise
    finally:
        handover.close()
    status, value, message = outcome[0]
    if status == _TIMED_OUT:
        return None
    if status != _OK:
        error = _errors._BY_CODE.get(status, _errors.LockError)(message)
        error.code = status
        raise error
    return value


def _settle(handover: _Handover) -> None:
    """Waits for a cancelled call's outcome through any further interrupts (the cancel makes
    it come back at once)."""
    while True:
        try:
            handover.wait()
            return
        except BaseException:
            continue
