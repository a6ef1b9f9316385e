"""Many threads sharing one Client: locks (one shared Lock object and one each), semaphores,
stats(), and event and lost callbacks set, replaced and removed while they fire; then close()
racing with calls in flight. Meant for free-threaded CPython without the GIL (PYTHON_GIL=0)
as much as for the GIL build: the binding's state must not rely on the GIL. Properties only:
mutual exclusion (in Python and on Redis), every thread done within a generous bound, no
unexpected exception."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

import pytest
import rlock
from helpers import FREE_THREADED, wait_until

THREADS = 16
ROUNDS = 8
BOUND = 60.0  # seconds for every thread to finish: liveness, not speed


class Crew:
    """Runs body(i) on THREADS threads started together; keeps what they raised."""

    def __init__(self, body, count: int = THREADS) -> None:
        self.errors: list = []
        self._start = threading.Barrier(count)
        self._threads = [
            threading.Thread(target=self._run, args=(body, i), name=f"stress-{i}", daemon=True)
            for i in range(count)
        ]

    def _run(self, body, i: int) -> None:
        try:
            self._start.wait(BOUND)
            body(i)
        except BaseException as e:  # reported by the test
            self.errors.append((threading.current_thread().name, repr(e)))

    def start(self) -> "Crew":
        for t in self._threads:
            t.start()
        return self

    def join(self) -> None:
        deadline = time.monotonic() + BOUND
        for t in self._threads:
            t.join(max(0.0, deadline - time.monotonic()))
        stuck = [t.name for t in self._threads if t.is_alive()]
        assert not stuck, f"threads still running after {BOUND} s: {stuck}"


class Churn:
    """A thread that calls step(n) in a loop until stopped (setting callbacks, reading stats)."""

    def __init__(self, step) -> None:
        self.errors: list = []
        self.steps = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(step,), daemon=True)

    def _run(self, step) -> None:
        try:
            while not self._stop.is_set():
                step(self.steps)
                self.steps += 1
        except BaseException as e:  # reported by the test
            self.errors.append(repr(e))

    def __enter__(self) -> "Churn":
        self._thread.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self._stop.set()
        self._thread.join(BOUND)
        assert not self._thread.is_alive(), "a churning thread did not stop"


def test_threads_share_locks_semaphores_and_callbacks(make_client, name, r):
    client = make_client(watchdog_lease=0.6)
    shared = client.lock(name)  # each thread is an owner of its own (thread_local)
    sem = client.semaphore(name + ":sem")
    permits = 3
    assert sem.try_set_permits(permits)
    mu = threading.Lock()
    inside = {"lock": 0, "sem": 0}
    most = {"lock": 0, "sem": 0}
    redis_seen: list = []  # owner fields on Redis while a thread was inside, when not just its own
    events: list = []
    lost_calls: list = []

    def enter(what: str) -> None:
        with mu:
            inside[what] += 1
            most[what] = max(most[what], inside[what])

    def leave(what: str) -> None:
        with mu:
            inside[what] -= 1

    def body(i: int) -> None:
        own = client.lock(f"{name}:own:{i}")
        for n in range(ROUNDS):
            assert shared.acquire(timeout=BOUND), "the shared lock was not acquired"
            try:
                enter("lock")
                fields = r.hgetall(name)
                if fields != {shared.owner.encode(): b"1"}:
                    redis_seen.append((shared.owner, fields))
                time.sleep(0.001)
                leave("lock")
            finally:
                shared.release()
            with own:  # a lock of its own: never contended, always held at once
                assert own.held()
            assert sem.acquire(timeout=BOUND), "no permit acquired"
            try:
                enter("sem")
                time.sleep(0.001)
                leave("sem")
            finally:
                sem.release()
            stats = client.stats()
            assert stats.acquires_granted >= 1
            if n % 3 == i % 3:  # lost callbacks replaced and removed from many threads at once
                shared.on_lost(None if n % 2 else (lambda lk, reason: lost_calls.append(reason)))

    def set_handler(n: int) -> None:
        client.on_event(None if n % 4 == 3 else (lambda e: events.append(e.kind)))

    # A lock lost over and over while its callback is replaced: the watchdog runs callbacks as
    # Python threads swap them.
    victim = client.lock(name + ":victim")

    def lose(n: int) -> None:
        victim.on_lost(lambda lk, reason: lost_calls.append(reason))
        if victim.acquire(timeout=1):
            r.delete(name + ":victim")
            victim.on_lost(None)
            wait_until(lambda: not victim.held(), timeout=2, interval=0.005)
            try:
                victim.release()
            except (rlock.LockLostError, rlock.NotHeldError):
                pass

    with Churn(set_handler) as handlers, Churn(set_handler) as handlers2, Churn(lose) as losses:
        crew = Crew(body).start()
        crew.join()
    assert crew.errors == []
    assert handlers.errors == [] and handlers2.errors == [] and losses.errors == []
    assert most["lock"] == 1, "two threads were inside the shared lock at once"
    assert 1 <= most["sem"] <= permits
    assert redis_seen == []
    assert inside == {"lock": 0, "sem": 0}
    assert handlers.steps > 0 and losses.steps > 0
    assert r.exists(name) == 0
    assert sem.available_permits() == permits
    assert client.stats().holds == 0

    # The callbacks still work after the churn: one event and one loss, each seen once.
    seen = threading.Event()
    client.on_event(lambda e: seen.set() if e.name == name else None)
    with shared:
        pass
    assert seen.wait(5), "no event after the handlers were swapped"
    lost = threading.Event()
    shared.on_lost(lambda lk, reason: lost.set())
    shared.acquire()
    r.delete(name)
    assert lost.wait(5), "no lost callback after the callbacks were swapped"
    with pytest.raises(rlock.LockLostError):
        shared.release()


def test_close_races_calls_in_flight(make_client, name, r):
    """close() while 16 threads lock, take permits, read stats and set callbacks: each call
    succeeds or raises ClientClosedError (a release of a hold close() already gave back may
    also say NotHeldError / LockLostError); no thread crashes or hangs, and nothing stays
    held on Redis for longer than a lease: close() releases holds best effort, and an acquire
    granted on Redis just as the client closes is left to expire by its lease."""
    client = make_client(watchdog_lease=3)
    sem = client.semaphore(name + ":sem")
    assert sem.try_set_permits(4)
    shared = client.lock(name)
    calls = [0] * THREADS
    closed_seen = [False] * THREADS
    after_close = (rlock.ClientClosedError, rlock.NotHeldError, rlock.LockLostError)

    def body(i: int) -> None:
        deadline = time.monotonic() + BOUND
        while time.monotonic() < deadline:
            try:
                own = client.lock(f"{name}:own:{i}")
                if shared.acquire(timeout=2):
                    try:
                        own.acquire(timeout=2)
                        own.release()
                    finally:
                        shared.release()
                if sem.acquire(timeout=2):
                    sem.release()
                client.stats()
                client.on_event(None if i % 2 else (lambda e: None))
                shared.on_lost(lambda lk, reason: None)
                calls[i] += 1
            except rlock.ClientClosedError:
                closed_seen[i] = True
                return
            except after_close:
                if client.closed:
                    closed_seen[i] = True
                    return
                raise

    crew = Crew(body).start()
    assert wait_until(lambda: sum(calls) >= THREADS, timeout=BOUND), "no progress before close"
    closer = threading.Thread(target=client.close, daemon=True)
    closer.start()
    closer.join(BOUND)
    assert not closer.is_alive(), "close() did not return"
    crew.join()
    assert crew.errors == []
    assert all(closed_seen), "a thread did not see the client closed"
    assert client.closed
    with pytest.raises(rlock.ClientClosedError):
        client.stats()
    for key in [name.encode(), *r.scan_iter(f"{name}:own:*")]:
        ttl = r.pttl(key)
        assert ttl == -2 or 0 < ttl <= 3000, f"{key!r} left held with TTL {ttl} ms"


@pytest.mark.skipif(not FREE_THREADED, reason="a GIL build of CPython has the GIL anyway")
def test_import_keeps_the_gil_disabled():
    """The extension declares that it runs without the GIL: importing rlock (and using it)
    leaves it off where the interpreter's default is off; CPython would turn it on and warn
    for a module that does not declare it."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHON_GIL"}
    code = (
        "import sys\n"
        "assert not sys._is_gil_enabled(), 'the GIL is on before the import'\n"
        "import rlock, rlock.asyncio, rlock._native\n"
        "print(sys._is_gil_enabled())\n"
    )
    out = subprocess.run(
        [sys.executable, "-W", "error", "-c", code],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False", out.stderr


def test_close_while_on_event_none_waits_for_a_running_handler(make_client, name):
    """on_event(None) waits for a running handler, holding the client open; a close() in
    another thread meanwhile must wait without the GIL, or the handler could never finish."""
    client = make_client()
    running = threading.Event()

    def handler(event) -> None:
        running.set()
        time.sleep(0.5)  # the GIL is released meanwhile

    client.on_event(handler)
    with client.lock(name):
        pass
    assert running.wait(5), "the handler did not run"
    errors: list = []

    def remove() -> None:
        try:
            client.on_event(None)
        except rlock.ClientClosedError:
            pass  # close() came first
        except BaseException as e:  # reported by the test
            errors.append(repr(e))

    remover = threading.Thread(target=remove, daemon=True)
    remover.start()
    time.sleep(0.1)  # the remover now waits for the handler
    closer = threading.Thread(target=client.close, daemon=True)
    closer.start()
    closer.join(BOUND)
    remover.join(BOUND)
    assert not closer.is_alive(), "close() did not return"
    assert not remover.is_alive(), "on_event(None) did not return"
    assert errors == []
    assert client.closed
