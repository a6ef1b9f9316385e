"""The blocking API: acquire/release semantics, threads, timeouts, every lock kind."""

from __future__ import annotations

import math
import threading
import time

import pytest
import rlock
from helpers import wait_until


def test_acquire_release_writes_redisson_layout(client, name, r):
    lock = client.lock(name)
    assert lock.acquire() is True
    field = lock.owner.encode()
    assert field.startswith(client.id.encode() + b":")
    assert r.hgetall(name) == {field: b"1"}
    assert 29_000 < r.pttl(name) <= 30_000  # the watchdog lease
    assert lock.held() and lock.locked() and lock.hold_count() == 1
    lock.release()
    assert r.exists(name) == 0
    assert not lock.held() and not lock.locked() and lock.hold_count() == 0


def test_reentrant_per_thread(client, name, r):
    lock = client.lock(name)
    with lock:
        with lock:
            assert lock.hold_count() == 2
            assert r.hget(name, lock.owner) == b"2"
        assert lock.hold_count() == 1
    assert r.exists(name) == 0


def test_h18_other_thread_is_another_owner(client, name):
    lock = client.lock(name)
    lock.acquire()
    seen = {}

    def other():
        seen["try"] = lock.acquire(blocking=False)
        seen["held"] = lock.held()
        try:
            lock.release()
        except rlock.NotHeldError as exc:
            seen["release"] = exc

    t = threading.Thread(target=other)
    t.start()
    t.join()
    assert seen["try"] is False and seen["held"] is False
    assert isinstance(seen["release"], rlock.NotHeldError)
    assert seen["release"].code == -12  # RLOCK_ENOTOWNER: the lock was left alone
    assert lock.held()
    lock.release()


def test_threads_exclude_each_other(client, name, r):
    lock = client.lock(name)
    counter = f"{name}:counter"
    inside = [0]
    overlaps = []
    threads_n, rounds = 6, 40

    def work():
        for _ in range(rounds):
            with lock:
                inside[0] += 1
                if inside[0] != 1:
                    overlaps.append(inside[0])
                value = int(r.get(counter) or 0)
                time.sleep(0.0005)
                r.set(counter, value + 1)
                inside[0] -= 1

    threads = [threading.Thread(target=work) for _ in range(threads_n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert overlaps == []
    assert int(r.get(counter)) == threads_n * rounds


def test_timeout_semantics(client, name):
    holder = client.lock(name)
    holder_ready, done = threading.Event(), threading.Event()

    def hold():
        holder.acquire()
        holder_ready.set()
        done.wait()
        holder.release()

    t = threading.Thread(target=hold)
    t.start()
    holder_ready.wait()
    lock = client.lock(name)
    try:
        start = time.monotonic()
        assert lock.acquire(blocking=False) is False
        assert lock.acquire(timeout=0) is False
        assert lock.acquire(timeout=0.3) is False
        waited = time.monotonic() - start
        assert 0.3 <= waited < 3.0
        assert not lock.held()
    finally:
        done.set()
        t.join()
    assert lock.acquire(timeout=5) is True
    lock.release()


def test_waiter_is_woken_promptly_on_release(client, name):
    lock = client.lock(name)
    lock.acquire()
    got = {}

    def wait():
        got["ok"] = lock.acquire(timeout=10)
        got["at"] = time.monotonic()
        lock.release()

    t = threading.Thread(target=wait)
    t.start()
    time.sleep(0.2)  # let it subscribe and wait
    released_at = time.monotonic()
    lock.release()
    t.join()
    assert got["ok"] is True
    assert got["at"] - released_at < 0.5  # woken by pub/sub, not by the 1 s poll


def test_threading_argument_rules(client, name):
    lock = client.lock(name)
    with pytest.raises(ValueError, match="can't specify a timeout for a non-blocking call"):
        lock.acquire(blocking=False, timeout=1)
    with pytest.raises(ValueError, match="non-negative"):
        lock.acquire(timeout=-2)
    with pytest.raises(OverflowError):
        lock.acquire(timeout=1e300)
    with pytest.raises(ValueError):
        lock.acquire(timeout=math.nan)
    with pytest.raises(TypeError):
        lock.acquire(timeout="1")
    assert not lock.locked()


def test_with_blocking_timeout_raises_timeout_error(client, make_client, name):
    make_client().lock(name).acquire()  # another client (owner) holds it
    lock = client.lock(name, blocking_timeout=0.2)
    start = time.monotonic()
    with pytest.raises(rlock.LockTimeoutError) as info:
        with lock:
            pytest.fail("entered a lock held elsewhere")
    assert isinstance(info.value, TimeoutError)
    assert time.monotonic() - start >= 0.2


def test_explicit_lease_and_extend(client, name, r):
    lock = client.lock(name)
    assert lock.acquire(lease=2.0)
    assert 1500 < r.pttl(name) <= 2000
    ttl = lock.remaining_ttl()
    assert ttl is not None and 1.5 < ttl <= 2.0
    lock.extend(10.0)  # adds, as redis-py
    assert 11000 < r.pttl(name) <= 12000
    lock.extend(3.0, replace_ttl=True)
    assert 2000 < r.pttl(name) <= 3000
    lock.release()
    assert lock.remaining_ttl() is None
    with pytest.raises(rlock.NotHeldError):
        lock.extend(1.0)
    with pytest.raises(rlock.NotHeldError):
        lock.extend(1.0, replace_ttl=True)


def test_extend_of_a_watchdog_hold(client, name, r):
    """A hold without a lease has none to add to (redis-py: a lock without timeout cannot be
    extended); replacing the TTL is allowed and lasts until the watchdog's next renewal."""
    lock = client.lock(name)
    with lock:
        assert 20_000 < r.pttl(name) <= 30_000  # the watchdog's lease, shown as the TTL
        with pytest.raises(rlock.InvalidArgumentError, match="renewed by the watchdog"):
            lock.extend(5)
        assert 20_000 < r.pttl(name) <= 30_000
        lock.extend(60, replace_ttl=True)
        assert r.pttl(name) > 30_000
        with pytest.raises(TypeError, match="replace_ttl"):
            lock.extend(5, replace_ttl="yes")
    assert r.exists(name) == 0


def test_default_lease_of_the_lock(client, name, r):
    lock = client.lock(name, lease=1.5)
    with lock:
        assert 1000 < r.pttl(name) <= 1500


def test_h15_lease_expiry_then_release_raises_lost(client, name, r):
    lock = client.lock(name)
    assert lock.acquire(lease=0.2)
    assert wait_until(lambda: r.exists(name) == 0, timeout=3)
    with pytest.raises(rlock.LockLostError):
        lock.release()
    assert not lock.held()


def test_force_unlock(client, make_client, name, r):
    held = make_client().lock(name)
    held.acquire()
    lock = client.lock(name)
    assert lock.force_unlock() is True
    assert r.exists(name) == 0
    assert lock.force_unlock() is False
    assert lock.acquire(blocking=False)
    lock.release()
    with pytest.raises(rlock.LockLostError):
        held.release()


def test_cancel_wakes_a_waiter(client, name):
    lock = client.lock(name)
    lock.acquire()
    outcome = {}

    def wait():
        try:
            lock.acquire()
            outcome["acquired"] = True
        except rlock.AcquireCancelledError as exc:
            outcome["error"] = exc

    t = threading.Thread(target=wait)
    t.start()
    time.sleep(0.2)
    lock.cancel()
    t.join(timeout=3)
    assert not t.is_alive()
    assert isinstance(outcome.get("error"), rlock.AcquireCancelledError)
    lock.release()


def test_fenced_lock_tokens_increase(client, name):
    lock = client.fenced_lock(name)
    tokens = []
    for _ in range(3):
        assert lock.token is None
        with lock:
            tokens.append(lock.token)
    assert all(isinstance(t, int) for t in tokens)
    assert tokens == sorted(tokens) and len(set(tokens)) == 3


def test_fenced_write_refuses_stale_token(client, name, r):
    key = f"{name}:resource"
    assert client.fenced_write(key, "new", 5) is True
    assert client.fenced_write(key, b"stale", 4) is False
    assert r.get(key) == b"new"
    assert client.fenced_write(key, "newer", 6) is True
    assert r.get(key) == b"newer"


def test_spin_lock_does_not_subscribe(client, name, r):
    lock = client.spin_lock(name, initial_backoff=0.001, max_backoff=0.02)
    lock.acquire()
    got = {}

    def wait():
        got["ok"] = lock.acquire(timeout=5)
        lock.release()

    t = threading.Thread(target=wait)
    t.start()
    time.sleep(0.2)
    channels = [c.decode() for c in r.pubsub_channels(f"*{name}*")]
    assert channels == []
    lock.release()
    t.join()
    assert got["ok"] is True


def test_fair_lock_serves_in_arrival_order(client, name):
    lock = client.fair_lock(name)
    lock.acquire()
    order = []
    threads = []
    for i in range(4):

        def wait(i=i):
            with lock:
                order.append(i)

        t = threading.Thread(target=wait)
        t.start()
        threads.append(t)
        time.sleep(0.15)  # arrival order
    lock.release()
    for t in threads:
        t.join(timeout=10)
    assert order == [0, 1, 2, 3]


@pytest.mark.parametrize("kind", ["non_reentrant_lock", "non_reentrant_fair_lock"])
def test_non_reentrant_lock_refuses_its_holder(client, make_client, name, r, kind):
    lock = getattr(client, kind)(name)
    assert repr(lock).startswith("<rlock.NonReentrant")
    assert lock.acquire() is True
    assert r.hgetall(name) == {lock.owner.encode(): b"1"}  # Redisson's layout
    for attempt in (dict(), dict(blocking=False), dict(timeout=5)):
        start = time.monotonic()
        with pytest.raises(rlock.DeadlockError, match="not reentrant") as info:
            lock.acquire(**attempt)
        assert info.value.code == -21  # RLOCK_EDEADLK
        assert time.monotonic() - start < 1.0  # at once, not after the wait
    with pytest.raises(rlock.DeadlockError):
        with lock:
            pass
    assert r.hgetall(name) == {lock.owner.encode(): b"1"}
    assert lock.hold_count() == 1 and lock.held()

    # Another owner is excluded, then woken by the one release that frees the lock.
    other = getattr(make_client(), kind)(name)
    assert other.acquire(blocking=False) is False
    got = {}

    def wait():
        got["ok"] = other.acquire(timeout=10)
        got["at"] = time.monotonic()
        got["owner"] = other.owner  # this thread's

    t = threading.Thread(target=wait)
    t.start()
    time.sleep(0.3)
    assert "ok" not in got
    released_at = time.monotonic()
    lock.release()
    t.join(timeout=15)
    assert got["ok"] is True
    assert got["at"] - released_at < 1.0
    assert r.hgetall(name) == {got["owner"].encode(): b"1"}
    with pytest.raises(rlock.NotHeldError):
        lock.release()
    assert other.force_unlock() is True
    assert r.exists(name) == 0


def test_non_reentrant_fair_lock_serves_in_arrival_order(client, name, r):
    lock = client.non_reentrant_fair_lock(name, waiter_timeout=30)
    lock.acquire()
    order = []
    threads = []
    for i in range(3):

        def wait(i=i):
            with lock:
                order.append(i)

        t = threading.Thread(target=wait)
        t.start()
        threads.append(t)
        assert wait_until(lambda i=i: r.llen(f"redisson_lock_queue:{{{name}}}") == i + 1)
    with pytest.raises(rlock.DeadlockError):
        lock.acquire()
    assert r.llen(f"redisson_lock_queue:{{{name}}}") == 3  # the holder did not queue
    lock.release()
    for t in threads:
        t.join(timeout=10)
    assert order == [0, 1, 2]
    assert r.exists(name, f"redisson_lock_queue:{{{name}}}") == 0


def test_read_write_lock(client, name):
    rw = client.read_write_lock(name)
    read, write = rw.read_lock(), rw.write_lock()
    assert rw.read_lock() is read and rw.write_lock() is write
    other = client.read_write_lock(name)
    with read:
        seen = {}

        def reader_and_writer():
            seen["read"] = other.read_lock().acquire(blocking=False)
            if seen["read"]:
                other.read_lock().release()
            seen["write"] = other.write_lock().acquire(blocking=False)

        t = threading.Thread(target=reader_and_writer)
        t.start()
        t.join()
        assert seen == {"read": True, "write": False}
        with pytest.raises(rlock.DeadlockError):
            write.acquire()  # a reader asking for the write lock would wait for itself
    with write:
        with read:  # downgrade
            assert read.held() and write.held()


def test_multi_lock_all_or_nothing(client, make_client, name, r):
    a, b = client.lock(f"{name}:a"), client.lock(f"{name}:b")
    group = rlock.MultiLock([a, b])
    with group:
        # The group is the owner of what it acquires, not the members' own objects.
        assert group.held() and not a.held() and not b.held()
        assert r.exists(f"{name}:a", f"{name}:b") == 2
        assert group.validity is not None and group.validity > 0
    assert r.exists(f"{name}:a", f"{name}:b") == 0
    make_client().lock(f"{name}:b").acquire()  # another owner holds one member
    assert group.acquire(timeout=0.2) is False
    assert r.exists(f"{name}:a") == 0  # what it got was given back
    assert not group.held()


def test_redlock_needs_a_majority(start_redis, make_client, make_redis, name):
    servers = [start_redis() for _ in range(3)]
    views = [make_redis(s.url) for s in servers]
    group = rlock.RedLock(
        [make_client(s.url, connect_timeout=0.5, command_timeout=0.5).lock(name) for s in servers]
    )
    servers[2].stop()
    assert group.acquire(timeout=2, lease=5.0) is True  # 2 of 3
    assert group.held() and 0 < group.validity <= 5.0
    assert [v.exists(name) for v in views[:2]] == [1, 1]
    group.release()
    assert [v.exists(name) for v in views[:2]] == [0, 0]
    servers[1].stop()
    with pytest.raises(rlock.LockError):  # 1 of 3: never held; the error names the failures
        group.acquire(timeout=0.5, lease=5.0)
    assert not group.held()
    assert views[0].exists(name) == 0


def test_h19_context_manager_client_closes_and_releases(redis_url, name, r):
    with rlock.Client(redis_url) as c:
        lock = c.lock(name)
        lock.acquire()
        assert r.exists(name) == 1
    assert c.closed
    assert r.exists(name) == 0  # closing released it
    with pytest.raises(rlock.ClientClosedError):
        lock.acquire()


def test_unix_socket_url(private_redis, name):
    with rlock.Client(private_redis.unix_url) as c:
        with c.lock(name) as lock:
            assert lock.held()


def test_h3_binary_and_unicode_names(client, r):
    for n in ["zaï:锁", b"\x00\xffbin"]:
        lock = client.lock(n)
        with lock:
            key = n.encode() if isinstance(n, str) else n
            assert r.exists(key) == 1
        assert lock.name == n


def test_holder_names_this_process_and_when_it_took_the_lock(client, name, r):
    """Lock.holder(): who holds the lock (host, pid, command) and since when, from the holder
    record of the owner's client; an owner no rlock client recorded shows the field only."""
    import os
    import socket
    import sys

    lock = client.lock(name)
    assert lock.holder() is None
    before = time.time()
    lock.acquire()
    after = time.time()
    # Listed once the hold is a second old, off the caller's path.
    assert wait_until(lambda: lock.holder().since is not None, 5)
    h = lock.holder()
    assert isinstance(h, rlock.Holder)
    assert h.owner == lock.owner
    assert (h.host, h.pid) == (socket.gethostname(), os.getpid())
    assert os.path.basename(sys.executable).split(".")[0][:6] in h.command
    assert h.started <= before + 0.005
    assert before - 0.005 <= h.since <= after + 0.005
    assert 0 < r.pttl(f"rlock_holder:{{{client.id}}}") <= 30_000
    lock.release()
    assert lock.holder() is None

    foreign = name + ":foreign"
    r.hset(foreign, "0b7bd3ab-6f41-4d2c-9d3b-0d0f6c1c5a11:1", 1)
    try:
        h = client.lock(foreign).holder()
        assert h == rlock.Holder("0b7bd3ab-6f41-4d2c-9d3b-0d0f6c1c5a11:1", *[None] * 5)
    finally:
        r.delete(foreign)


def test_main_thread_acquire_first_attempt_and_wait(client, name):
    """In the main thread a blocking acquire makes its first attempt and, when the lock is
    taken, waits on a helper thread (so that Ctrl-C works): both ends, and a closed lock
    object is refused on that path too."""
    assert threading.current_thread() is threading.main_thread()
    lock = client.lock(name)
    assert lock.acquire() is True  # the first attempt settles it
    lock.release()

    holder = client.lock(name)
    taken, let_go = threading.Event(), threading.Event()

    def hold() -> None:
        with holder:
            taken.set()
            let_go.wait(10)

    t = threading.Thread(target=hold)
    t.start()
    try:
        assert taken.wait(10)
        assert lock.acquire(timeout=0.2) is False  # the first attempt fails, the wait runs out
        threading.Timer(0.2, let_go.set).start()
        assert lock.acquire() is True  # waits until the holder releases
        lock.release()
    finally:
        let_go.set()
        t.join()

    lock.close()
    with pytest.raises(rlock.ClientClosedError):
        lock.acquire()


def test_owner_per_thread_through_one_object(client, name):
    """One Lock object used by threads in turn: each call is the calling thread's owner, a dead
    thread's number is never given to a new thread, and each thread's holds stay its own."""
    lock = client.lock(name)
    main_owner = lock.owner
    owners = []

    def turn() -> None:
        owners.append(lock.owner)
        assert lock.acquire(blocking=False)
        assert lock.held()
        lock.release()

    for _ in range(5):
        assert lock.owner == main_owner
        assert lock.acquire(blocking=False)
        t = threading.Thread(target=lambda: owners.append(lock.acquire(blocking=False)))
        t.start()
        t.join()
        assert owners.pop() is False  # another thread: another owner, the lock is taken
        assert lock.owner == main_owner and lock.held()
        lock.release()
        t = threading.Thread(target=turn)
        t.start()
        t.join()
    assert len(set(owners)) == len(owners) == 5
    assert main_owner not in owners
