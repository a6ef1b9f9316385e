"""Runs one scenario of test_green.py under eventlet's monkey_patch(), in a process of its
own. Prints one JSON line of what it saw; the test asserts on it.

    python eventlet_worker.py URL NAME SCENARIO"""

import eventlet

eventlet.monkey_patch()

import json  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import redis  # noqa: E402
import rlock  # noqa: E402

url, name, scenario = sys.argv[1:4]
client = rlock.Client(url)
r = redis.Redis.from_url(url)
GREENLETS, ROUNDS, HOLD = 8, 5, 0.01


def contend(make_lock) -> dict:
    """GREENLETS green threads each take the lock ROUNDS times and sleep inside, so the
    others run and try; counts who is inside and checks the hash holds the holder's field."""
    seen = {"inside": 0, "most": 0, "entries": 0, "foreign": 0}
    failed = []

    def work(i: int) -> None:
        lock = make_lock(i)
        try:
            for _ in range(ROUNDS):
                with lock:
                    seen["inside"] += 1
                    seen["most"] = max(seen["most"], seen["inside"])
                    seen["entries"] += 1
                    if r.hkeys(name) != [lock.owner.encode()]:
                        seen["foreign"] += 1
                    eventlet.sleep(HOLD)
                    seen["inside"] -= 1
        except Exception as e:  # reported, not raised in the pool
            failed.append(repr(e))

    pool = eventlet.GreenPool()
    for i in range(GREENLETS):
        pool.spawn(work, i)
    with eventlet.Timeout(60):
        pool.waitall()
    return {
        "most_inside": seen["most"],
        "entries": seen["entries"],
        "foreign": seen["foreign"],
        "failed": failed,
        "left": r.exists(name),
    }


def waiting_lets_others_run() -> dict:
    """One green thread holds for 0.5 s while another waits; a third ticks every 10 ms. A wait
    that blocked the OS thread would stop the ticks (and the holder)."""
    ticks = []
    holder = client.lock(name)
    holder.acquire()

    def ticker() -> None:
        for _ in range(50):
            ticks.append(time.monotonic())
            eventlet.sleep(0.01)

    def waiter() -> float:
        t = time.monotonic()
        with client.lock(name):
            return time.monotonic() - t

    tick = eventlet.spawn(ticker)
    wait = eventlet.spawn(waiter)
    eventlet.sleep(0.5)
    holder.release()
    with eventlet.Timeout(10):
        waited = wait.wait()
        tick.wait()
    return {"ticks": len(ticks), "waited": waited, "left": r.exists(name)}


def timed_out_waiter_leaves_nothing() -> dict:
    """A green thread whose wait an eventlet.Timeout ends gives up its place: after the holder
    releases, the lock is free, not taken by the abandoned wait."""
    holder = client.lock(name)
    holder.acquire()
    timed_out = []

    def with_timeout() -> None:
        try:
            with eventlet.Timeout(0.2):
                client.lock(name).acquire()
        except eventlet.Timeout:
            timed_out.append(True)

    eventlet.spawn(with_timeout).wait()
    holder.release()
    eventlet.sleep(0.3)  # a grant racing the timeout would have shown up by now
    after = client.lock(name)
    free = after.acquire(blocking=False)
    if free:
        after.release()
    return {"timed_out": timed_out == [True], "free_after_release": free, "left": r.exists(name)}


def shared_object() -> dict:
    """One lock object shared by every green thread: each is an owner of its own in it."""
    shared = client.lock(name)
    return contend(lambda i: shared)


SCENARIOS = {
    "defaults": lambda: contend(lambda i: client.lock(name)),
    "shared-object": shared_object,
    "waiting": waiting_lets_others_run,
    "timeout": timed_out_waiter_leaves_nothing,
}
result = SCENARIOS[scenario]()
client.close()
print(json.dumps(result))
