"""Runs one scenario of test_green.py under gevent's monkey.patch_all(), in a process of its
own (patching the test process would change every other test). Prints one JSON line of what
it saw; the test asserts on it.

    python green_worker.py URL NAME SCENARIO"""

from gevent import monkey

monkey.patch_all()

import json  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import gevent  # noqa: E402
import redis  # noqa: E402
import rlock  # noqa: E402

url, name, scenario = sys.argv[1:4]
client = rlock.Client(url)
r = redis.Redis.from_url(url)
GREENLETS, ROUNDS, HOLD = 8, 5, 0.01


class Overlap:
    """Counts who is inside; also checks Redis while inside: one owner field, the holder's."""

    def __init__(self) -> None:
        self.inside = self.most = self.entries = self.foreign = 0

    def enter(self, lock: rlock.Lock) -> None:
        self.inside += 1
        self.most = max(self.most, self.inside)
        self.entries += 1
        if r.hkeys(name) != [lock.owner.encode()]:
            self.foreign += 1

    def leave(self) -> None:
        self.inside -= 1


def contend(make_lock) -> dict:
    """GREENLETS greenlets each take the lock ROUNDS times (make_lock(i) gives greenlet i's
    lock) and sleep inside, so the others run and try."""
    seen = Overlap()

    def work(i: int) -> None:
        lock = make_lock(i)
        for _ in range(ROUNDS):
            with lock:
                seen.enter(lock)
                gevent.sleep(HOLD)
                seen.leave()

    start = time.monotonic()
    done = gevent.joinall([gevent.spawn(work, i) for i in range(GREENLETS)], timeout=60)
    return {
        "most_inside": seen.most,
        "entries": seen.entries,
        "foreign": seen.foreign,
        "finished": len(done),
        "failed": [repr(g.exception) for g in done if g.exception is not None],
        "seconds": time.monotonic() - start,
        "left": r.exists(name),
    }


def waiting_lets_others_run() -> dict:
    """One greenlet holds for 0.5 s while another waits for the lock; a third ticks every 10
    ms meanwhile. A wait that blocked the OS thread would stop the ticks (and the holder)."""
    ticks = []
    holder = client.lock(name)
    holder.acquire()

    def ticker() -> None:
        for _ in range(50):
            ticks.append(time.monotonic())
            gevent.sleep(0.01)

    def waiter() -> float:
        t = time.monotonic()
        with client.lock(name):
            return time.monotonic() - t

    tick = gevent.spawn(ticker)
    wait = gevent.spawn(waiter)
    gevent.sleep(0.5)
    holder.release()
    waited = wait.get(timeout=10)
    tick.join(10)
    return {"ticks": len(ticks), "waited": waited, "left": r.exists(name)}


def killed_waiter_leaves_nothing() -> dict:
    """A greenlet killed while it waits (gevent.kill, then a gevent.Timeout on another) gives
    up its place: after the holder releases, the lock is free, not taken by the dead waiter."""
    holder = client.lock(name)
    holder.acquire()
    killed = gevent.spawn(lambda: client.lock(name).acquire())
    timed_out = []

    def with_timeout() -> None:
        try:
            with gevent.Timeout(0.2):
                client.lock(name).acquire()
        except gevent.Timeout:
            timed_out.append(True)

    other = gevent.spawn(with_timeout)
    gevent.sleep(0.1)
    killed.kill(block=True, timeout=5)
    other.join(5)
    holder.release()
    gevent.sleep(0.3)  # a grant racing the kill would have shown up by now
    after = client.lock(name)
    free = after.acquire(blocking=False)
    if free:
        after.release()
    return {
        "killed_dead": killed.dead,
        "timed_out": timed_out == [True],
        "left_after_release": 0 if free else 1,
        "left": r.exists(name),
    }


def handed_over() -> dict:
    """owner="object", thread_local=False: one greenlet acquires, another releases."""
    lock = client.lock(name, thread_local=False)
    gevent.spawn(lock.acquire).join(5)
    held = r.exists(name)
    gevent.spawn(lock.release).join(5)
    return {"held_between": held, "left": r.exists(name)}


def multi_lock() -> dict:
    """MultiLocks of the same two names, one per greenlet, exclude each other."""
    seen = Overlap()

    def work(i: int) -> None:
        group = rlock.MultiLock([client.lock(name), client.lock(name + ":b")])
        for _ in range(ROUNDS):
            with group:
                seen.inside += 1
                seen.most = max(seen.most, seen.inside)
                seen.entries += 1
                gevent.sleep(HOLD)
                seen.inside -= 1

    done = gevent.joinall([gevent.spawn(work, i) for i in range(4)], timeout=60)
    return {
        "most_inside": seen.most,
        "entries": seen.entries,
        "finished": len(done),
        "failed": [repr(g.exception) for g in done if g.exception is not None],
        "left": r.exists(name, name + ":b"),
    }


def semaphore_and_latch() -> dict:
    """A semaphore of 2 permits shared by 6 greenlets, and an expirable one of 1, never have
    more holders than permits; a latch waited on by 4 greenlets opens for all of them when a
    fifth counts it down, the ticker running all along."""
    plain = client.semaphore(name)
    plain.try_set_permits(2)
    expirable = client.expirable_semaphore(name + ":x")
    expirable.try_set_permits(1)
    latch = client.count_down_latch(name + ":latch")
    latch.try_set_count(1)
    seen = {"plain": Overlap(), "expirable": Overlap()}

    def use_plain() -> None:
        for _ in range(ROUNDS):
            assert plain.acquire(timeout=30)
            seen["plain"].inside += 1
            seen["plain"].most = max(seen["plain"].most, seen["plain"].inside)
            gevent.sleep(HOLD)
            seen["plain"].inside -= 1
            plain.release()

    def use_expirable() -> None:
        for _ in range(ROUNDS):
            permit = expirable.acquire(timeout=30)
            assert permit is not None
            seen["expirable"].inside += 1
            seen["expirable"].most = max(seen["expirable"].most, seen["expirable"].inside)
            gevent.sleep(HOLD)
            seen["expirable"].inside -= 1
            permit.release()

    opened = []
    waiters = [gevent.spawn(lambda: opened.append(latch.wait(timeout=30))) for _ in range(4)]
    users = [gevent.spawn(use_plain) for _ in range(6)]
    users += [gevent.spawn(use_expirable) for _ in range(3)]
    gevent.sleep(0.2)
    latch.count_down()
    done = gevent.joinall(users + waiters, timeout=60)
    return {
        "plain_most": seen["plain"].most,
        "expirable_most": seen["expirable"].most,
        "opened": opened,
        "finished": len(done),
        "failed": [repr(g.exception) for g in done if g.exception is not None],
        "available": [plain.available_permits(), expirable.available_permits()],
    }


def shared_object():
    """One Lock object for every greenlet."""
    shared = client.lock(name)
    return lambda i: shared


SCENARIOS = {
    "defaults": lambda: contend(lambda i: client.lock(name)),
    "fair": lambda: contend(lambda i: client.fair_lock(name)),
    "shared-object": lambda: contend(shared_object()),
    "object-not-thread-local": lambda: contend(lambda i: client.lock(name, thread_local=False)),
    "thread-owner": lambda: contend(lambda i: client.lock(name, owner="thread")),
    "waiting-lets-others-run": waiting_lets_others_run,
    "killed-waiter": killed_waiter_leaves_nothing,
    "handed-over": handed_over,
    "multi-lock": multi_lock,
    "semaphore-and-latch": semaphore_and_latch,
}

print(json.dumps(SCENARIOS[scenario]()), flush=True)
client.close()
