"""Interpreter exit with rlock threads still waiting: no abort, nothing left locked."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

CHILD = textwrap.dedent("""
    import sys, threading, time
    import rlock
    url, name = sys.argv[1], sys.argv[2]
    holder = rlock.Client(url)
    held = holder.lock(name)
    held.acquire()                       # never released by hand: the exit handler does it
    waiters = rlock.Client(url)
    lock = waiters.lock(name)

    def wait():
        try:
            lock.acquire()               # woken at exit (the lock is freed, or the client closed)
        except rlock.LockError:
            pass

    for _ in range(16):
        threading.Thread(target=wait, daemon=True).start()
    time.sleep(0.2)
    print("exiting", flush=True)
""")


@pytest.mark.timeout(120)
def test_exit_with_daemon_threads_waiting(redis_url, name, r):
    """Daemon threads woken from a wait while the interpreter exits used to abort the process
    now and then ("terminate called without an active exception": the thread was ended by
    pthread_exit inside a noexcept destructor). Several runs, three at a time."""
    failures = []
    for batch in range(6):
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", CHILD, redis_url, f"{name}:{batch}:{i}"],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for i in range(3)
        ]
        for proc in procs:
            out, err = proc.communicate(timeout=30)
            if proc.returncode != 0 or "exiting" not in out or err.strip():
                failures.append((proc.returncode, err.strip()[-300:]))
    assert failures == []
    leftovers = [k for k in r.scan_iter(match=f"{name}:*")]
    assert leftovers == []  # every holder released at exit, no waiter left holding


UNWIND_CHILD = textwrap.dedent("""
    import os, sys, threading, time
    import redis, rlock
    url, name = sys.argv[1], sys.argv[2]
    # Held by "someone else" for one second: the waiter gets it when the lease runs out, a wait
    # that ends with no C++ exception thrown anywhere in the process.
    redis.Redis.from_url(url).eval(
        "redis.call('hset', KEYS[1], 'other:1', 1); redis.call('pexpire', KEYS[1], 1000)", 1, name)
    waiters = rlock.Client(url)
    rlock._client._live_clients.discard(waiters)  # not closed at exit: the wait ends by itself
    threading.Thread(target=waiters.lock(name).acquire, daemon=True).start()

    class SlowToGo:  # keeps the interpreter finalizing until the wait has ended
        def __del__(self, os=os, time=time):
            os.write(1, b"finalizing\\n")
            time.sleep(2)

    keep = SlowToGo()
    print("exiting", flush=True)
""")


@pytest.mark.timeout(60)
def test_exit_ends_a_daemon_thread_inside_a_native_call(redis_url, name):
    """The waiter's acquire returns while the interpreter is finalizing, so taking the GIL back
    ends the thread with pthread_exit, unwinding through rlock's C++ frames. That unwind runs
    in the process's libgcc_s; with a second, static unwinder linked into the extension it
    aborted every time (the flake of the test above, made certain)."""
    proc = subprocess.run(
        [sys.executable, "-c", UNWIND_CHILD, redis_url, name],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert proc.stdout.split() == ["exiting", "finalizing"], (proc.stdout, proc.stderr)
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-500:])
