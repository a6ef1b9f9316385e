"""Lost-lock notification: the on_lost callback, held(), lost(), and LockLostError."""

from __future__ import annotations

import gc
import sys
import threading

import pytest
import rlock
from helpers import wait_until


def test_on_lost_fires_once_when_the_key_is_deleted(make_client, name, r):
    client = make_client(watchdog_lease=0.6)
    lock = client.lock(name)
    events = []
    fired = threading.Event()

    def on_lost(lk, reason):
        events.append((lk, reason, threading.current_thread() is threading.main_thread()))
        fired.set()

    lock.on_lost(on_lost)
    lock.acquire()
    r.delete(name)
    assert fired.wait(3), "the watchdog did not report the loss"
    assert wait_until(lambda: not lock.held(), timeout=1)
    assert lock.lost()
    with pytest.raises(rlock.LockLostError):
        lock.release()
    assert not lock.lost()
    assert len(events) == 1
    got_lock, reason, on_main = events[0]
    assert got_lock is lock
    assert reason is rlock.LostReason.GONE
    assert not on_main  # the watchdog thread
    assert r.exists(name) == 0  # nothing was re-created


def test_on_lost_when_taken_by_someone_else(make_client, name, r):
    client = make_client(watchdog_lease=0.6)
    lock = client.lock(name)
    reasons = []
    fired = threading.Event()
    lock.on_lost(lambda lk, reason: (reasons.append(reason), fired.set()))
    lock.acquire()
    r.delete(name)
    r.hset(name, "someone-else:1", 1)
    r.pexpire(name, 10_000)
    assert fired.wait(3)
    assert reasons == [rlock.LostReason.GONE]
    assert r.hgetall(name) == {b"someone-else:1": b"1"}  # the new holder is untouched
    with pytest.raises(rlock.LockLostError):
        lock.release()
    assert r.hgetall(name) == {b"someone-else:1": b"1"}


def test_on_lost_for_an_expired_explicit_lease(client, name):
    lock = client.lock(name)
    fired = threading.Event()
    reasons = []
    lock.on_lost(lambda lk, reason: (reasons.append(reason), fired.set()))
    lock.acquire(lease=0.3)
    assert fired.wait(3)
    assert reasons == [rlock.LostReason.EXPIRED]


def test_callback_exception_is_reported_not_raised(make_client, name, r, monkeypatch):
    client = make_client(watchdog_lease=0.6)
    lock = client.lock(name)
    reported = []
    monkeypatch.setattr(sys, "unraisablehook", lambda info: reported.append(info))
    lock.on_lost(lambda lk, reason: 1 / 0)
    lock.acquire()
    r.delete(name)
    assert wait_until(lambda: reported, timeout=3)
    assert reported[0].exc_type is ZeroDivisionError
    # The watchdog survived the exception: a second lock is still renewed and reported.
    other = client.lock(name + ":2")
    fired = threading.Event()
    other.on_lost(lambda lk, reason: fired.set())
    other.acquire()
    r.delete(name + ":2")
    assert fired.wait(3)


def test_clearing_the_callback(make_client, name, r):
    client = make_client(watchdog_lease=0.6)
    lock = client.lock(name)
    calls = []
    lock.on_lost(lambda lk, reason: calls.append(reason))
    lock.on_lost(None)
    lock.acquire()
    r.delete(name)
    assert wait_until(lambda: lock.lost(), timeout=3)
    assert calls == []
    with pytest.raises(TypeError):
        lock.on_lost("not callable")


def test_h21_callback_does_not_keep_the_lock_alive(client, name):
    lock = client.lock(name)
    lock.on_lost(lambda lk, reason: None)
    ref = __import__("weakref").ref(lock)
    del lock
    gc.collect()
    assert ref() is None


def test_h20_callback_may_call_the_library(make_client, name, r):
    client = make_client(watchdog_lease=0.6)
    lock = client.lock(name)
    results = []
    done = threading.Event()

    def on_lost(lk, reason):
        results.append(lk.held())
        results.append(lk.locked())  # a round trip from the watchdog thread
        try:
            lk.release()  # the watchdog thread is another owner
        except rlock.LockError as exc:
            results.append(type(exc))
        done.set()

    lock.on_lost(on_lost)
    lock.acquire()
    r.delete(name)
    assert done.wait(5), "the callback's calls did not return"
    assert results == [False, False, rlock.NotHeldError]
    with pytest.raises(rlock.LockLostError):
        lock.release()
    assert r.exists(name) == 0
