"""Semaphores (plain and permit-expirable) and count-down latches from Python, blocking and
asyncio, against the session's redis-server: each call's effect on Redis (Redisson's keys: the
count in N, the held permits' deadlines in {N}:timeout with the raw 16-byte ids), waiters woken
by another client, bad input refused with Redis unchanged, leases running out, the watchdog,
and asyncio waits that cost no thread and leave nothing taken when cancelled."""

from __future__ import annotations

import asyncio
import math
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest
import rlock
import rlock.asyncio
from helpers import wait_until

NEVER = 922337203685477  # Redisson's score of a permit without lease
# Waiters' clients poll this rarely, so a waiter that wakes in time was woken by a message.
SLOW_POLL = 60.0


def deadlines_key(name: str) -> str:
    return "{" + name + "}:timeout"


def snapshot(r, name: str) -> dict:
    """Every key that names `name`, with its serialized value and whether it expires; but not
    the plain acquires' and releases' request records ("redisson_unlock_latch:{N}:<id>", which
    let a resent request answer the first one's result, and expire by themselves)."""
    keys = [k for k in r.keys(f"*{name}*") if not k.startswith(b"redisson_unlock_latch:")]
    return {key: (r.dump(key), r.pttl(key) > 0) for key in keys}


def now_ms() -> int:
    return int(time.time() * 1000)


class Waiter:
    """Runs fn() on a thread of its own; result() waits for what it returned or raised."""

    def __init__(self, fn) -> None:
        self._fn = fn
        self._outcome: list = []
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self._outcome.append(("ok", self._fn()))
        except BaseException as e:  # handed to the test
            self._outcome.append(("error", e))
        self._done.set()

    def done(self) -> bool:
        return self._done.is_set()

    def result(self, timeout: float = 10.0):
        assert self._done.wait(timeout), "the waiter did not finish"
        kind, value = self._outcome[0]
        if kind == "error":
            raise value
        return value


# ---- plain semaphore ------------------------------------------------------------------------


def test_try_set_permits_sets_the_count_once(client, r, name):
    sem = client.semaphore(name)
    assert not sem.exists()
    assert sem.try_set_permits(3) is True
    assert r.get(name) == b"3"
    assert r.pttl(name) == -1
    assert sem.try_set_permits(5) is False
    assert r.get(name) == b"3"
    assert sem.available_permits() == 3
    assert sem.exists()


def test_try_set_permits_with_ttl_expires(client, r, name):
    sem = client.semaphore(name)
    assert sem.try_set_permits(2, ttl=30.0)
    assert 0 < r.pttl(name) <= 30000


def test_add_permits_returns_the_new_count(client, r, name):
    sem = client.semaphore(name)
    assert sem.add_permits(2) == 2  # a missing semaphore counts as 0
    assert r.get(name) == b"2"
    assert sem.add_permits(-3) == -1
    assert r.get(name) == b"-1"
    assert sem.available_permits() == -1


def test_acquire_and_release_move_the_count(client, make_client, r, name):
    sem = client.semaphore(name)
    sem.try_set_permits(3)
    assert sem.acquire(2) is True
    assert r.get(name) == b"1"
    assert sem.held_permits() == 2
    assert sem.try_acquire(2) is False
    assert r.get(name) == b"1"
    assert sem.try_acquire() is True
    assert r.get(name) == b"0"
    assert sem.held_permits() == 3
    sem.release(2)
    assert r.get(name) == b"2"
    sem.release()
    assert r.get(name) == b"3"
    assert sem.held_permits() == 0
    # Held by the client, not the thread: another thread gives back what this one took.
    assert sem.acquire(timeout=0)
    threading.Thread(target=sem.release).start()
    assert wait_until(lambda: r.get(name) == b"3")
    # Another client's object holds nothing.
    assert sem.acquire()
    other = make_client().semaphore(name)
    assert other.held_permits() == 0
    with pytest.raises(rlock.NotHeldError):
        other.release()
    assert r.get(name) == b"2"


def test_acquire_of_a_missing_semaphore_times_out_and_creates_nothing(client, r, name):
    sem = client.semaphore(name)
    assert sem.acquire(timeout=0.2) is False
    assert sem.try_acquire() is False
    assert snapshot(r, name) == {}


def test_release_of_more_than_held_is_refused(client, r, name):
    sem = client.semaphore(name)
    sem.try_set_permits(3)
    assert sem.acquire()
    with pytest.raises(rlock.NotHeldError) as e:
        sem.release(2)
    assert e.value.code == -3
    assert "use add_permits" in str(e.value)
    assert r.get(name) == b"2"
    assert sem.held_permits() == 1
    sem.release()
    with pytest.raises(rlock.NotHeldError):
        sem.release()
    assert r.get(name) == b"3"


def test_release_after_delete_is_lost(client, r, name):
    sem = client.semaphore(name)
    sem.try_set_permits(1)
    assert sem.acquire()
    assert sem.delete() is True
    assert sem.delete() is False
    with pytest.raises(rlock.LockLostError):
        sem.release()
    assert not r.exists(name)  # the release did not bring it back


def test_release_if_exists_gives_back_only_to_a_semaphore_that_exists(client, r, name):
    sem = client.semaphore(name)
    sem.try_set_permits(3)
    assert sem.acquire(3)
    assert sem.release_if_exists(2) is True
    assert r.get(name) == b"2"
    assert sem.release_if_exists(0) is False  # as Redisson's releaseIfExists(0)
    assert sem.held_permits() == 1
    with pytest.raises(rlock.NotHeldError):
        sem.release_if_exists(2)
    with pytest.raises(rlock.InvalidArgumentError, match="permits must be from 0 to"):
        sem.release_if_exists(-1)
    with pytest.raises(TypeError):
        sem.release_if_exists(1.5)
    assert r.get(name) == b"2"
    r.delete(name)
    assert sem.release_if_exists() is False
    assert not r.exists(name)  # not created
    assert sem.held_permits() == 0
    psem = client.expirable_semaphore(name)
    with pytest.raises(rlock.InvalidArgumentError, match="only for a plain semaphore"):
        psem._checked().release_if_exists(1)


def test_drain_takes_every_available_permit(client, r, name):
    sem = client.semaphore(name)
    assert sem.drain_permits() == 0
    sem.try_set_permits(4, ttl=60.0)
    assert sem.drain_permits() == 4
    assert r.get(name) == b"0"
    assert sem.held_permits() == 0


def test_with_takes_one_permit_and_permits_takes_several(client, r, name):
    sem = client.semaphore(name)
    sem.try_set_permits(3)
    with sem as entered:
        assert entered is sem
        assert r.get(name) == b"2"
    assert r.get(name) == b"3"
    with sem.permits(3, timeout=1.0):
        assert r.get(name) == b"0"
        with pytest.raises(rlock.LockTimeoutError):
            with sem.permits(1, timeout=0.1):
                pass  # pragma: no cover
    assert r.get(name) == b"3"
    assert sem.held_permits() == 0


def test_a_waiter_is_woken_by_another_clients_release(make_client, r, name):
    holder = make_client().semaphore(name)
    holder.try_set_permits(1)
    assert holder.acquire()
    waiting = make_client(poll_cap=SLOW_POLL).semaphore(name)
    waiter = Waiter(lambda: waiting.acquire(timeout=30))
    time.sleep(0.3)
    assert not waiter.done()
    started = time.monotonic()
    holder.release()
    assert waiter.result() is True
    assert time.monotonic() - started < 5  # woken by the message, not a poll
    assert r.get(name) == b"0"
    assert waiting.held_permits() == 1


def test_a_waiter_is_woken_by_add_permits(make_client, r, name):
    waiting = make_client(poll_cap=SLOW_POLL).semaphore(name)
    waiter = Waiter(lambda: waiting.acquire(2, timeout=30))  # the semaphore does not exist yet
    time.sleep(0.3)
    assert not waiter.done()
    adder = make_client().semaphore(name)
    assert adder.add_permits(1) == 1
    time.sleep(0.3)
    assert not waiter.done()  # one permit is not two
    started = time.monotonic()
    assert adder.add_permits(2) == 3
    assert waiter.result() is True
    assert time.monotonic() - started < 5
    assert r.get(name) == b"1"


def test_cancel_wakes_a_waiting_acquire(client, r, name):
    sem = client.semaphore(name)
    sem.try_set_permits(0)
    waiter = Waiter(lambda: sem.acquire(timeout=30))
    time.sleep(0.2)
    sem.cancel()
    with pytest.raises(rlock.AcquireCancelledError):
        waiter.result()
    assert r.get(name) == b"0"


@pytest.mark.parametrize("permits", [-1, 2**31])
def test_bad_permit_counts_are_refused_and_change_nothing(client, r, name, permits):
    sem = client.semaphore(name)
    sem.try_set_permits(5)
    assert sem.acquire()
    before = snapshot(r, name)
    calls = [
        lambda: sem.acquire(permits),
        lambda: sem.acquire(permits, timeout=0.1),
        lambda: sem.try_acquire(permits),
        lambda: sem.release(permits),
    ]
    for call in calls:
        with pytest.raises(rlock.InvalidArgumentError) as e:
            call()
        assert e.value.code == -6
        assert "permits must be from 0 to 2147483647" in str(e.value)
    assert snapshot(r, name) == before
    assert sem.held_permits() == 1


def test_zero_and_many_permits_as_redisson(client, r, name):
    """0 permits are taken and given back at once (no round trip, even with no semaphore), and a
    call is not capped at 1000 permits as an expirable semaphore's is."""
    sem = client.semaphore(name)
    assert sem.acquire(0) and sem.try_acquire(0)
    sem.release(0)
    assert r.exists(name) == 0
    sem.try_set_permits(5000)
    assert sem.acquire(4500, timeout=0)
    assert r.get(name) == b"500" and sem.held_permits() == 4500
    assert sem.try_acquire(501) is False
    sem.release(4500)
    assert r.get(name) == b"5000"


def test_bad_argument_types_and_ranges(client, r, name):
    sem = client.semaphore(name)
    for bad in ("1", 1.0, True, None):
        with pytest.raises(TypeError):
            sem.acquire(bad)
    with pytest.raises(rlock.InvalidArgumentError):
        sem.acquire(2**64)
    with pytest.raises(rlock.InvalidArgumentError):
        sem.acquire(timeout=-1)
    with pytest.raises(rlock.InvalidArgumentError):
        sem.try_set_permits(-1)
    with pytest.raises(rlock.InvalidArgumentError):
        sem.try_set_permits(2**31)
    with pytest.raises(rlock.InvalidArgumentError):
        sem.try_set_permits(1, ttl=0)
    with pytest.raises(rlock.InvalidArgumentError):
        sem.add_permits(0)
    with pytest.raises(TypeError):
        client.semaphore(42)
    assert snapshot(r, name) == {}


def test_wrong_key_type_is_a_redis_error_and_changes_nothing(client, r, name):
    r.hset(name, "field", "value")
    before = snapshot(r, name)
    sem = client.semaphore(name)
    psem = client.expirable_semaphore(name)
    latch = client.count_down_latch(name)
    calls = [
        lambda: sem.try_set_permits(1),
        lambda: sem.add_permits(1),
        lambda: sem.acquire(timeout=0),
        lambda: sem.acquire(timeout=0.2),
        lambda: sem.available_permits(),
        lambda: sem.drain_permits(),
        lambda: psem.try_set_permits(1),
        lambda: psem.acquire(timeout=0),
        lambda: psem.available_permits(),
        lambda: latch.try_set_count(1),
        lambda: latch.count_down(),
        lambda: latch.count(),
        lambda: latch.wait(timeout=0.2),
    ]
    for call in calls:
        with pytest.raises(rlock.RedisError) as e:
            call()
        assert "WRONGTYPE" in str(e.value) or "not " in str(e.value), str(e.value)
        assert snapshot(r, name) == before
    assert r.hgetall(name) == {b"field": b"value"}


INTERRUPTED_CHILD = textwrap.dedent("""
    import sys, rlock
    client = rlock.Client(sys.argv[1])
    kind, name = sys.argv[2], sys.argv[3]
    if kind == "latch":
        waiting = client.count_down_latch(name)
        wait = waiting.wait
    elif kind == "plain":
        waiting = client.semaphore(name)
        wait = waiting.acquire
    else:
        waiting = client.expirable_semaphore(name)
        wait = waiting.acquire
    print("waiting", flush=True)
    try:
        wait()
        print("returned", flush=True)
    except KeyboardInterrupt:
        held = waiting.held_permits() if kind == "plain" else 0
        print(f"interrupted held={held}", flush=True)
""")


@pytest.mark.parametrize("kind", ["plain", "expirable", "latch"])
def test_ctrl_c_interrupts_a_wait_in_the_main_thread(redis_url, client, r, name, kind):
    if kind == "latch":
        client.count_down_latch(name).try_set_count(1)
    else:
        client.semaphore(name).try_set_permits(0)
    with subprocess.Popen(
        [sys.executable, "-c", INTERRUPTED_CHILD, redis_url, kind, name],
        stdout=subprocess.PIPE,
        text=True,
    ) as child:
        try:
            assert child.stdout.readline().strip() == "waiting"
            time.sleep(0.5)
            child.send_signal(signal.SIGINT)
            assert child.stdout.readline().strip() == "interrupted held=0"
            assert child.wait(timeout=10) == 0
        finally:
            if child.poll() is None:
                child.kill()
    assert r.get(name) == (b"1" if kind == "latch" else b"0")
    assert r.zcard(deadlines_key(name)) == 0


# ---- permit-expirable semaphore -------------------------------------------------------------


def test_expirable_acquire_stores_the_raw_id_with_its_deadline(make_client, r, name):
    client = make_client(watchdog_lease=30.0)
    psem = client.expirable_semaphore(name, lease=10.0)
    assert psem.try_set_permits(3)
    assert r.get(name) == b"3"
    before = now_ms()
    permit = psem.acquire()
    after = now_ms()
    assert isinstance(permit, rlock.Permit)
    assert len(permit.id) == 32 and permit.id == permit.id.lower()
    int(permit.id, 16)
    assert r.get(name) == b"2"
    score = r.zscore(deadlines_key(name), bytes.fromhex(permit.id))
    assert before + 10000 <= score <= after + 10000
    assert r.zscore(deadlines_key(name), permit.id) is None  # not the hex text
    # Per acquire: seconds, no lease, or the watchdog's lease.
    timed = psem.acquire(lease=2.5)
    never = psem.acquire(lease=rlock.NO_LEASE)
    assert abs(r.zscore(deadlines_key(name), bytes.fromhex(timed.id)) - (now_ms() + 2500)) < 1000
    assert r.zscore(deadlines_key(name), bytes.fromhex(never.id)) == NEVER
    assert psem.acquired_permits() == 3
    assert psem.available_permits() == 0
    psem.release([permit, timed.id])
    never.release()
    assert r.zcard(deadlines_key(name)) == 0
    assert r.get(name) == b"3"
    watched = psem.acquire(lease=rlock.WATCHDOG)
    score = r.zscore(deadlines_key(name), bytes.fromhex(watched.id))
    assert abs(score - (now_ms() + 30000)) < 1000


def test_expirable_default_lease_is_the_watchdogs(make_client, r, name):
    client = make_client(watchdog_lease=30.0)
    psem = client.expirable_semaphore(name)
    psem.try_set_permits(1)
    permit = psem.acquire()
    assert abs(r.zscore(deadlines_key(name), bytes.fromhex(permit.id)) - (now_ms() + 30000)) < 1000
    permit.release()
    forever = client.expirable_semaphore(name, lease=rlock.NO_LEASE).acquire()
    assert r.zscore(deadlines_key(name), bytes.fromhex(forever.id)) == NEVER


def test_acquire_many_and_release_all_or_none(client, r, name):
    psem = client.expirable_semaphore(name)
    psem.try_set_permits(5)
    permits = psem.acquire_many(3, lease=30.0)
    assert len({p.id for p in permits}) == 3
    assert r.zcard(deadlines_key(name)) == 3
    assert r.get(name) == b"2"
    assert psem.acquire_many(3, timeout=0) is None
    assert r.get(name) == b"2"
    unknown = "0" * 32
    before = snapshot(r, name)
    with pytest.raises(rlock.NotHeldError):
        psem.release([permits[0], unknown])  # all or none
    for bad in ("xyz", "0" * 31, "g" * 32, "0" * 40):
        with pytest.raises(rlock.InvalidArgumentError):
            psem.release(bad)
    with pytest.raises(rlock.InvalidArgumentError):
        psem.release([permits[0], permits[0]])
    with pytest.raises(rlock.InvalidArgumentError):
        psem.release([])
    with pytest.raises(TypeError):
        psem.release(bytes.fromhex(permits[0].id))
    assert snapshot(r, name) == before
    psem.release([p.id.upper() for p in permits[:2]])  # any case of hex
    assert r.get(name) == b"4"
    with pytest.raises(rlock.NotHeldError):
        permits[0].release()  # twice
    permits[2].release()
    assert r.get(name) == b"5"
    assert r.zcard(deadlines_key(name)) == 0


@pytest.mark.parametrize("permits", [0, -1, 1001])
def test_expirable_bad_permit_counts_change_nothing(client, r, name, permits):
    psem = client.expirable_semaphore(name)
    psem.try_set_permits(2)
    before = snapshot(r, name)
    with pytest.raises(rlock.InvalidArgumentError):
        psem.acquire_many(permits)
    with pytest.raises(rlock.InvalidArgumentError):
        psem.acquire_many(permits, timeout=0)
    assert snapshot(r, name) == before


def test_expirable_bad_leases_are_refused(client, r, name):
    with pytest.raises(rlock.InvalidArgumentError):
        client.expirable_semaphore(name, lease=0)
    with pytest.raises(rlock.InvalidArgumentError):
        client.expirable_semaphore(name, lease=-1.0)
    psem = client.expirable_semaphore(name)
    psem.try_set_permits(1)
    before = snapshot(r, name)
    with pytest.raises(rlock.InvalidArgumentError):
        psem.acquire(lease=0)
    with pytest.raises(TypeError):
        psem.acquire(lease="1")
    assert snapshot(r, name) == before


def test_update_lease(client, r, name):
    psem = client.expirable_semaphore(name, lease=5.0)
    psem.try_set_permits(1)
    permit = psem.acquire()
    key, member = deadlines_key(name), bytes.fromhex(permit.id)
    assert psem.update_lease(permit, 60.0) is True
    assert abs(r.zscore(key, member) - (now_ms() + 60000)) < 1000
    assert permit.update_lease(rlock.NO_LEASE) is True
    assert r.zscore(key, member) == NEVER
    assert permit.update_lease() is True  # the semaphore's default: 5 s
    assert abs(r.zscore(key, member) - (now_ms() + 5000)) < 1000
    permit.release()
    assert psem.update_lease(permit.id, 60.0) is False
    assert r.zscore(key, member) is None
    with pytest.raises(rlock.InvalidArgumentError):
        psem.update_lease("nothex", 1.0)


def test_set_permits_sets_the_total_with_held_permits_counted(client, r, name):
    psem = client.expirable_semaphore(name, lease=60.0)
    assert psem.set_permits(3) == 3
    assert r.get(name) == b"3"  # made with the total
    held = psem.acquire_many(2)
    assert r.get(name) == b"1"
    assert psem.set_permits(5) == 3  # 5 in all, 2 held
    assert r.get(name) == b"3"
    assert psem.set_permits(1) == -1  # 1 in all while 2 are held
    assert r.get(name) == b"-1"
    assert psem.acquired_permits() == 2
    psem.release(held)
    assert r.get(name) == b"1"
    before = snapshot(r, name)
    for bad in (-1, 2**31):
        with pytest.raises(rlock.InvalidArgumentError, match="permits must be from 0 to"):
            psem.set_permits(bad)
    with pytest.raises(TypeError):
        psem.set_permits("3")
    with pytest.raises(rlock.InvalidArgumentError, match="only for a permit-expirable"):
        client.semaphore(name)._checked().set_permits(3)
    assert snapshot(r, name) == before


def test_lease_time_of_a_permit(client, r, name):
    psem = client.expirable_semaphore(name)
    psem.try_set_permits(4)
    leased = psem.acquire(lease=60.0)
    assert 50.0 < psem.lease_time(leased) <= 60.0
    assert 50.0 < leased.lease_time() <= 60.0
    assert 50.0 < psem.lease_time(leased.id.upper()) <= 60.0
    forever = psem.acquire(lease=rlock.NO_LEASE)
    assert psem.lease_time(forever) == math.inf
    watched = psem.acquire()  # the watchdog's lease, 30 s by default
    assert 0.0 < psem.lease_time(watched) <= 30.0
    leased.release()
    assert psem.lease_time(leased) is None  # not held: None (Redisson throws)
    assert psem.lease_time("0123456789abcdef0123456789abcdef") is None
    brief = psem.acquire(lease=0.1)
    count = int(r.get(name))
    time.sleep(0.25)
    assert brief.lease_time() is None
    assert int(r.get(name)) == count + 1  # the expired permit went back
    before = snapshot(r, name)
    for bad in ("nothex", "", "g123456789abcdef0123456789abcdef", "a\0b"):
        with pytest.raises(rlock.InvalidArgumentError):
            psem.lease_time(bad)
    with pytest.raises(TypeError):
        psem.lease_time(b"0123456789abcdef0123456789abcdef")
    assert snapshot(r, name) == before


def test_an_expired_lease_frees_the_permit_for_a_waiter(make_client, r, name):
    holder = make_client().expirable_semaphore(name)
    holder.try_set_permits(1)
    dead = holder.acquire(lease=0.5)
    assert r.get(name) == b"0"
    waiting = make_client(poll_cap=SLOW_POLL).expirable_semaphore(name, lease=30.0)
    started = time.monotonic()
    permit = waiting.acquire(timeout=20)
    waited = time.monotonic() - started
    assert permit is not None
    assert waited < 5  # at the lease's end, not at a poll
    assert r.zscore(deadlines_key(name), bytes.fromhex(dead.id)) is None
    assert r.zscore(deadlines_key(name), bytes.fromhex(permit.id)) is not None
    with pytest.raises(rlock.NotHeldError):
        dead.release()  # reclaimed
    assert r.get(name) == b"0"


def test_an_expired_but_unreclaimed_permit_is_lost_on_release(client, r, name):
    psem = client.expirable_semaphore(name)
    psem.try_set_permits(1)
    permit = psem.acquire(lease=0.2)
    time.sleep(0.4)
    before = snapshot(r, name)
    with pytest.raises(rlock.LockLostError):
        permit.release()
    assert snapshot(r, name) == before
    assert psem.available_permits() == 1  # reclaimed by this read
    assert r.zcard(deadlines_key(name)) == 0


def test_the_watchdog_renews_a_permit_while_the_client_lives(make_client, r, name):
    client = make_client(watchdog_lease=0.6)
    psem = client.expirable_semaphore(name)
    psem.try_set_permits(1)
    permit = psem.acquire()
    member = bytes.fromhex(permit.id)
    time.sleep(1.5)  # 2.5 leases
    assert r.zscore(deadlines_key(name), member) > now_ms()
    assert psem.available_permits() == 0
    psem.close()  # the client goes on renewing it
    time.sleep(1.0)
    other = make_client().expirable_semaphore(name)
    assert other.available_permits() == 0
    assert r.zscore(deadlines_key(name), member) > now_ms()
    client.close()  # gives it back
    assert other.available_permits() == 1
    assert r.zscore(deadlines_key(name), member) is None


def test_permit_context_manager(client, r, name):
    psem = client.expirable_semaphore(name)
    psem.try_set_permits(1)
    with psem.permit(timeout=1.0, lease=30.0) as permit:
        assert r.zscore(deadlines_key(name), bytes.fromhex(permit.id)) is not None
        with pytest.raises(rlock.LockTimeoutError):
            with psem.permit(timeout=0.1):
                pass  # pragma: no cover
    assert r.zcard(deadlines_key(name)) == 0
    assert r.get(name) == b"1"
    with psem.acquire() as permit:
        assert r.get(name) == b"0"
    assert r.get(name) == b"1"


def test_plain_and_expirable_share_the_count_and_wake_each_other(make_client, r, name):
    plain = make_client().semaphore(name)
    plain.try_set_permits(1)
    assert plain.acquire()
    psem = make_client(poll_cap=SLOW_POLL).expirable_semaphore(name)
    waiter = Waiter(lambda: psem.acquire(timeout=30, lease=30.0))
    time.sleep(0.3)
    assert not waiter.done()
    plain.release()
    permit = waiter.result()
    assert permit is not None
    assert r.get(name) == b"0"
    permit.release()
    assert r.get(name) == b"1"


# ---- count-down latch -------------------------------------------------------------------------


def test_latch_counts_down_to_open(client, r, name):
    latch = client.count_down_latch(name)
    assert latch.count() == 0
    assert latch.wait(timeout=0) is True  # open: nothing to wait for
    assert latch.try_set_count(2) is True
    assert r.get(name) == b"2"
    assert latch.try_set_count(5) is False
    assert r.get(name) == b"2"
    assert latch.count() == 2
    assert latch.wait(timeout=0.1) is False
    assert latch.count_down() == 1
    assert r.get(name) == b"1"
    assert latch.count_down() == 0
    assert not r.exists(name)
    assert latch.wait(timeout=0) is True
    assert latch.count_down() == 0  # stays open
    assert not r.exists(name)
    assert latch.try_set_count(1)
    assert latch.delete() is True
    assert latch.delete() is False
    assert latch.count() == 0


@pytest.mark.parametrize("count", [0, -1, 10**15])
def test_latch_bad_counts_change_nothing(client, r, name, count):
    latch = client.count_down_latch(name)
    with pytest.raises(rlock.InvalidArgumentError):
        latch.try_set_count(count)
    assert snapshot(r, name) == {}


def test_latch_waiters_are_woken_by_another_clients_count_down(make_client, name):
    setter = make_client().count_down_latch(name)
    setter.try_set_count(2)
    latch = make_client(poll_cap=SLOW_POLL).count_down_latch(name)
    waiters = [Waiter(lambda: latch.wait(timeout=30)) for _ in range(5)]
    time.sleep(0.3)
    assert setter.count_down() == 1
    time.sleep(0.3)
    assert not any(w.done() for w in waiters)
    started = time.monotonic()
    assert setter.count_down() == 0
    assert [w.result() for w in waiters] == [True] * 5
    assert time.monotonic() - started < 5


# ---- asyncio --------------------------------------------------------------------------------


@pytest.fixture
def aclient(redis_url):
    c = rlock.asyncio.Client(redis_url, poll_cap=SLOW_POLL)
    yield c
    c.sync_client.close()


def run(coro, timeout=60):
    return asyncio.run(asyncio.wait_for(coro, timeout))


def os_threads() -> int:
    return len(os.listdir("/proc/self/task"))


def test_async_semaphore_acquire_release_and_context_managers(aclient, make_client, r, name):
    async def main():
        sem = aclient.semaphore(name)
        assert await sem.try_set_permits(3)
        assert await sem.acquire(2)
        assert r.get(name) == b"1"
        assert sem.held_permits() == 2
        assert not await sem.try_acquire(2)
        assert not await sem.acquire(2, timeout=0.1)
        await sem.release(2)
        async with sem:
            assert r.get(name) == b"2"
        async with sem.permits(3, timeout=1.0):
            assert r.get(name) == b"0"
            with pytest.raises(rlock.LockTimeoutError):
                async with sem.permits(1, timeout=0.1):
                    pass  # pragma: no cover
        assert r.get(name) == b"3"
        with pytest.raises(rlock.NotHeldError):
            await sem.release()
        assert await sem.acquire(0)  # at once, as Redisson
        with pytest.raises(rlock.InvalidArgumentError):
            await sem.acquire(-1)
        assert await sem.available_permits() == 3
        assert await sem.drain_permits() == 3
        assert await sem.add_permits(1) == 1
        assert await sem.delete()

    run(main())


def test_async_waiter_is_woken_by_another_clients_release(aclient, make_client, r, name):
    holder = make_client().semaphore(name)
    holder.try_set_permits(1)
    assert holder.acquire()

    async def main():
        sem = aclient.semaphore(name)
        task = asyncio.create_task(sem.acquire(timeout=30))
        await asyncio.sleep(0.3)
        assert not task.done()
        await asyncio.get_running_loop().run_in_executor(None, holder.release)
        started = time.monotonic()
        assert await task is True
        assert time.monotonic() - started < 5
        assert r.get(name) == b"0"
        await sem.release()

    run(main())
    assert r.get(name) == b"1"


def test_async_expirable_semaphore(aclient, r, name):
    async def main():
        psem = aclient.expirable_semaphore(name, lease=30.0)
        assert await psem.try_set_permits(2)
        permit = await psem.acquire()
        assert isinstance(permit, rlock.asyncio.Permit)
        assert r.zscore(deadlines_key(name), bytes.fromhex(permit.id)) is not None
        assert await psem.acquire_many(2, timeout=0) is None
        assert await psem.update_lease(permit, rlock.NO_LEASE)
        assert r.zscore(deadlines_key(name), bytes.fromhex(permit.id)) == NEVER
        async with psem.permit(timeout=1.0) as second:
            assert r.zcard(deadlines_key(name)) == 2
            assert await psem.try_acquire() is None
        assert r.zscore(deadlines_key(name), bytes.fromhex(second.id)) is None
        await permit.release()
        with pytest.raises(rlock.NotHeldError):
            await psem.release(permit)
        assert await psem.available_permits() == 2
        assert await psem.acquired_permits() == 0
        third = await psem.acquire(lease=rlock.NO_LEASE)
        assert await psem.lease_time(third) == math.inf
        assert await third.lease_time() == math.inf
        assert await psem.set_permits(3) == 2
        await third.release()
        assert await psem.lease_time(third) is None
        assert await psem.set_permits(2) == 2

    run(main())
    assert r.get(name) == b"2"


def test_async_release_if_exists(aclient, r, name):
    async def main():
        sem = aclient.semaphore(name)
        assert await sem.try_set_permits(2)
        assert await sem.acquire(2)
        assert await sem.release_if_exists(1) is True
        r.delete(name)
        assert await sem.release_if_exists(1) is False

    run(main())
    assert not r.exists(name)


@pytest.mark.parametrize("kind", ["plain", "expirable"])
def test_async_cancel_ends_the_wait_and_leaves_nothing_taken(aclient, r, name, kind):
    async def main():
        sem = aclient.semaphore(name) if kind == "plain" else aclient.expirable_semaphore(name)
        assert await sem.try_set_permits(0)
        task = asyncio.create_task(sem.acquire(timeout=30))
        await asyncio.sleep(0.3)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        # A permit that comes now finds no waiter left to take it.
        assert await sem.add_permits(1) == 1
        await asyncio.sleep(0.3)
        assert r.get(name) == b"1"
        if kind == "plain":
            assert sem.held_permits() == 0
        assert r.zcard(deadlines_key(name)) == 0

    run(main())


@pytest.mark.parametrize("kind", ["plain", "expirable"])
def test_async_cancel_racing_a_grant_gives_it_back(aclient, make_client, r, name, kind):
    """A cancel that lands as the permit is granted: the permit is either taken by the task
    (which then returned) or given back; the count always comes back to 1."""
    adder = make_client().semaphore(name)

    async def main():
        sem = aclient.semaphore(name) if kind == "plain" else aclient.expirable_semaphore(name)
        await sem.try_set_permits(0)
        loop = asyncio.get_running_loop()
        got = 0
        for i in range(30):
            task = asyncio.create_task(sem.acquire(timeout=30))
            await asyncio.sleep(0.02)
            await loop.run_in_executor(None, adder.add_permits, 1)
            await asyncio.sleep((i % 5) * 0.001)
            task.cancel()
            try:
                taken = await task
            except asyncio.CancelledError:
                taken = None
            if taken:
                got += 1
                await (sem.release() if kind == "plain" else taken.release())
            assert await loop.run_in_executor(None, lambda: wait_until(lambda: r.get(name) == b"1"))
            assert await sem.add_permits(-1) == 0
        return got

    run(main(), timeout=120)
    assert r.get(name) == b"0"
    assert r.zcard(deadlines_key(name)) == 0


def test_200_async_latch_waits_add_no_threads(aclient, make_client, name):
    """The client's engine has a small pool of workers (at most 4), grown on demand; a first
    round of 200 waits may grow it to its bound, after which 200 more add no thread at all."""
    setter = make_client().count_down_latch(name)
    setter.try_set_count(1)

    async def main():
        latch = aclient.count_down_latch(name)
        start = os_threads()
        first = [asyncio.create_task(latch.wait(timeout=0.5)) for _ in range(200)]
        assert await asyncio.gather(*first) == [False] * 200
        assert os_threads() <= start + 8
        threads_before, tasks_before = threading.active_count(), os_threads()
        waits = [asyncio.create_task(latch.wait(timeout=60)) for _ in range(200)]
        await asyncio.sleep(1.0)
        assert not any(w.done() for w in waits)
        assert threading.active_count() == threads_before
        assert os_threads() == tasks_before
        setter.count_down()  # blocks the loop for a round trip; no thread of its own
        assert await asyncio.gather(*waits) == [True] * 200
        assert os_threads() == tasks_before

    run(main())


def test_async_latch_timeout_cancel_and_wake(aclient, make_client, name):
    setter = make_client().count_down_latch(name)

    async def main():
        latch = aclient.count_down_latch(name)
        assert await latch.try_set_count(2)
        assert await latch.count() == 2
        assert await latch.wait(timeout=0.2) is False
        cancelled = asyncio.create_task(latch.wait())
        waiting = asyncio.create_task(latch.wait(timeout=30))
        await asyncio.sleep(0.3)
        cancelled.cancel()
        with pytest.raises(asyncio.CancelledError):
            await cancelled
        assert await latch.count_down() == 1
        await asyncio.sleep(0.2)
        assert not waiting.done()
        await asyncio.get_running_loop().run_in_executor(None, setter.count_down)
        started = time.monotonic()
        assert await waiting is True
        assert time.monotonic() - started < 5
        assert await latch.count() == 0
        with pytest.raises(rlock.InvalidArgumentError):
            await latch.try_set_count(0)

    run(main())
