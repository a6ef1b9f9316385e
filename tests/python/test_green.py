"""Green threads: after gevent's monkey.patch_all(), greenlets on one OS thread are owners of
their own and a waiting greenlet lets the others run (each scenario in a process of its own:
green_worker.py). Plus the owner modes of the blocking API in real threads."""

import json
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import rlock
from helpers import require_green

WORKER = Path(__file__).with_name("green_worker.py")
GREENLETS, ROUNDS = 8, 5  # as in green_worker.py


def run_green(redis_url: str, name: str, scenario: str) -> dict:
    require_green("gevent")  # the real-thread tests below run without it
    out = subprocess.run(
        [sys.executable, str(WORKER), redis_url, name, scenario],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, f"{scenario}: exit {out.returncode}\n{out.stderr}"
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize(
    "scenario",
    ["defaults", "fair", "shared-object", "object-not-thread-local", "thread-owner"],
)
def test_greenlets_never_overlap(redis_url, name, scenario):
    """8 greenlets x 5 rounds on one name, sleeping (so switching) inside: never two inside,
    the hash holds only the holder's field, everyone got every round, nothing left."""
    seen = run_green(redis_url, name, scenario)
    assert seen["failed"] == []
    assert seen["most_inside"] == 1, seen
    assert seen["foreign"] == 0, seen
    assert seen["finished"] == GREENLETS and seen["entries"] == GREENLETS * ROUNDS, seen
    assert seen["left"] == 0


def test_a_waiting_greenlet_lets_the_others_run(redis_url, name):
    """While one greenlet waits 0.5 s for the lock, a ticker greenlet keeps ticking every
    10 ms and the holder can release: the wait does not block the OS thread."""
    seen = run_green(redis_url, name, "waiting-lets-others-run")
    assert seen["ticks"] >= 40, seen  # 50 ticks of 10 ms span the wait; a blocked hub gives ~1
    assert 0.4 <= seen["waited"] < 10, seen
    assert seen["left"] == 0


def test_a_killed_or_timed_out_waiting_greenlet_leaves_nothing(redis_url, name):
    seen = run_green(redis_url, name, "killed-waiter")
    assert seen == {
        "killed_dead": True,
        "timed_out": True,
        "left_after_release": 0,
        "left": 0,
    }


def test_an_object_owner_is_released_by_another_greenlet(redis_url, name):
    assert run_green(redis_url, name, "handed-over") == {"held_between": 1, "left": 0}


def test_greenlet_multi_locks_exclude_each_other(redis_url, name):
    seen = run_green(redis_url, name, "multi-lock")
    assert seen["failed"] == [] and seen["finished"] == 4
    assert seen["most_inside"] == 1 and seen["entries"] == 4 * ROUNDS
    assert seen["left"] == 0


def test_greenlet_semaphores_and_latches_wait_cooperatively(redis_url, name):
    seen = run_green(redis_url, name, "semaphore-and-latch")
    assert seen["failed"] == [] and seen["finished"] == 6 + 3 + 4, seen
    assert seen["plain_most"] == 2 and seen["expirable_most"] == 1, seen
    assert seen["opened"] == [True] * 4
    assert seen["available"] == [2, 1]


# ---- owner modes in real threads ----------------------------------------------------------


def in_thread(fn):
    """fn() run in a new thread: its value, or its exception raised here."""
    result = []

    def run() -> None:
        try:
            result.append((fn(), None))
        except Exception as exc:
            result.append((None, exc))

    t = threading.Thread(target=run)
    t.start()
    t.join(10)
    value, error = result[0]
    if error is not None:
        raise error
    return value


def test_two_lock_objects_in_one_thread_contend_by_default(client, name):
    first, second = client.lock(name), client.lock(name)
    assert first.acquire(blocking=False)
    assert second.acquire(blocking=False) is False  # as redis-py: another object, another owner
    assert first.acquire(blocking=False)  # the same object re-enters
    assert first.hold_count() == 2 and second.hold_count() == 0
    first.release()
    first.release()
    assert second.acquire(blocking=False)
    second.release()


def test_one_lock_object_shared_by_threads_is_an_owner_per_thread(client, name, r):
    lock = client.lock(name)
    assert lock.acquire(blocking=False)
    assert in_thread(lambda: lock.acquire(blocking=False)) is False
    assert in_thread(lambda: lock.held()) is False
    with pytest.raises(rlock.NotHeldError):
        in_thread(lock.release)
    lock.release()
    assert r.exists(name) == 0


def test_the_thread_owner_re_enters_through_any_lock_object(client, name, r):
    first, second = client.lock(name, owner="thread"), client.lock(name, owner="thread")
    assert first.acquire(blocking=False) and second.acquire(blocking=False)
    assert first.owner == second.owner == f"{client.id}:{rlock._native.current_thread_id()}"
    assert r.hgetall(name) == {first.owner.encode(): b"2"}
    assert in_thread(lambda: client.lock(name, owner="thread").acquire(blocking=False)) is False
    second.release()
    first.release()
    assert r.exists(name) == 0


def test_an_object_not_thread_local_is_released_from_another_thread(client, name, r):
    lock = client.lock(name, thread_local=False)
    assert lock.acquire(blocking=False)
    assert in_thread(lambda: lock.owner) == lock.owner
    assert in_thread(lambda: lock.held()) is True
    in_thread(lock.release)
    assert r.exists(name) == 0


def test_a_read_write_lock_is_one_owner_for_both_halves(client, name, r):
    rw = client.read_write_lock(name)
    with rw.write_lock():
        assert rw.read_lock().acquire(blocking=False)  # the writer may read
        rw.read_lock().release()
        other = client.read_write_lock(name)
        assert other.read_lock().acquire(blocking=False) is False  # another object: excluded
    assert r.exists(name) == 0


@pytest.mark.parametrize(
    "kwargs,error,words",
    [
        ({"owner": "greenlet"}, rlock.InvalidArgumentError, "'object' or 'thread'"),
        ({"owner": 7}, TypeError, "owner must be"),
        ({"thread_local": "yes"}, TypeError, "thread_local must be a bool"),
        ({"owner": "thread", "thread_local": False}, rlock.InvalidArgumentError, "per thread"),
    ],
)
def test_owner_arguments_are_checked(client, name, kwargs, error, words):
    with pytest.raises(error, match=words):
        client.lock(name, **kwargs)
