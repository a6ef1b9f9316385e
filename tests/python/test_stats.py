"""Client.stats() against a workload with known counts, Client(stats=False), and the events of
Client.on_event(): their order and fields."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
import time

import pytest
import rlock
import rlock.asyncio
from helpers import Holder, wait_until

# A short watchdog lease (renewed every third of it) makes the watchdog find a forced unlock
# within about 0.1 s.
SHORT_LEASE = 0.3


class Recorder:
    """An event handler that keeps what it gets, thread-safely."""

    def __init__(self) -> None:
        self.events: list[rlock.Event] = []
        self._mu = threading.Lock()

    def __call__(self, event: rlock.Event) -> None:
        with self._mu:
            self.events.append(event)

    def of(self, name) -> list[rlock.Event]:
        with self._mu:
            return [e for e in self.events if e.name == name]


def lose(client: rlock.Client, other: rlock.Client, name: str) -> rlock.Lock:
    """Acquires `name` with the watchdog on `client`, deletes it through `other`, and returns
    once `client`'s watchdog found it gone."""
    lock = client.lock(name)
    lost = threading.Event()
    lock.on_lost(lambda _lock, reason: lost.set())
    assert lock.acquire()
    assert other.lock(name).force_unlock()
    assert lost.wait(10), "the watchdog did not find the lock gone"
    return lock


def test_histogram_bounds_are_the_library_ones():
    stats_bounds = rlock.Histogram.__dataclass_fields__  # the type is public
    assert "bounds" in stats_bounds
    bounds = rlock._stats.HISTOGRAM_BOUNDS
    assert len(bounds) == 22
    assert bounds[0] == 25e-6 and bounds[-1] == 3600.0
    assert list(bounds) == sorted(bounds)


def test_a_new_client_counts_nothing_yet(make_client):
    stats = make_client().stats()
    assert stats.enabled is True
    assert stats.acquires_granted == stats.acquires_timed_out == stats.releases == 0
    assert stats.holds == stats.waiters == 0
    assert stats.acquire_wait.count == 0 and stats.acquire_wait.cumulative()[-1] == 0


def test_counters_gauges_and_histograms_match_a_known_workload(make_client, name):
    client = make_client(watchdog_lease=SHORT_LEASE)
    other = make_client()
    granted, timeouts = 4, 3

    # N acquires granted and released, one of them nested (reentrant: two acquires, one hold).
    lock = client.lock(name + ":a")
    for _ in range(granted - 1):
        assert lock.acquire()
        lock.release()
    # holds now: two different locks held by this thread
    second = client.lock(name + ":b")
    assert lock.acquire() and second.acquire()
    assert client.stats().holds == 2
    lock.release()
    second.release()
    granted += 1  # `second`

    # M try-once timeouts on a lock another client holds, and a waiter seen by the gauge.
    held = other.lock(name + ":held")
    holder = Holder(held)
    contended = client.lock(name + ":held")
    for _ in range(timeouts):
        assert contended.acquire(blocking=False) is False
    outcome: list = []
    waiter = threading.Thread(target=lambda: outcome.append(_acquire_or_error(contended)))
    waiter.start()
    assert wait_until(lambda: client.stats().waiters == 1)
    contended.cancel()  # ends the waiter with AcquireCancelledError: one canceled acquire
    waiter.join(10)
    assert outcome and isinstance(outcome[0], rlock.AcquireCancelledError)
    holder.release()

    # A failed release, and a failed acquire by code (a read holder asking for the write lock).
    with pytest.raises(rlock.NotHeldError):
        client.lock(name + ":free").release()
    rw = client.read_write_lock(name + ":rw")
    assert rw.read_lock().acquire()
    with pytest.raises(rlock.DeadlockError):
        rw.write_lock().acquire()
    rw.read_lock().release()
    granted += 1  # the read lock

    # A forced loss: deleted by another client, found gone by the watchdog's renewal.
    lost_lock = lose(client, other, name + ":lost")
    granted += 1
    assert lost_lock.lost()

    stats = client.stats()
    assert stats.enabled is True
    assert stats.acquires_granted == granted
    assert stats.acquires_timed_out == timeouts
    assert stats.acquires_canceled == 1
    assert stats.acquires_failed == 1
    assert dict(stats.acquires_failed_by_code) == {"EDEADLK": 1}
    assert stats.releases == granted - 1  # every grant but the lost one was released
    assert stats.releases_failed == 1
    assert (stats.locks_lost_gone, stats.locks_lost_unreachable, stats.locks_lost_expired) == (
        1,
        0,
        0,
    )
    assert stats.locks_lost == 1
    assert stats.renewals_sent >= 1  # the renewal that found it gone, at least
    assert stats.renewals_failed == 0  # a hold found gone is a lost lock, not a failed renewal
    assert stats.holds == 0 and stats.waiters == 0
    assert (stats.reconnects, stats.failovers, stats.cluster_redirects) == (0, 0, 0)
    assert stats.scripts_sent >= granted + timeouts + stats.releases
    assert stats.events_dropped == 0
    # Histograms: one wait per grant; one hold per released hold; per-bucket counts add up.
    assert stats.acquire_wait.count == granted
    assert stats.hold.count == stats.releases
    assert stats.command_rtt.count >= granted + timeouts
    for histogram in (stats.acquire_wait, stats.hold, stats.handoff, stats.command_rtt):
        assert len(histogram.counts) == len(histogram.bounds) + 1
        assert sum(histogram.counts) == histogram.count
        assert histogram.cumulative()[-1] == histogram.count
        assert histogram.sum >= 0
    assert stats.hold.sum > 0 and stats.acquire_wait.sum > 0


def _acquire_or_error(lock: rlock.Lock) -> object:
    try:
        return lock.acquire()
    except rlock.LockError as e:
        return e


def test_handoff_is_counted_when_an_unlock_message_wakes_a_waiter(make_client, name, r):
    client = make_client()
    other = make_client()
    held = other.lock(name)
    holder = Holder(held)
    result: list = []
    waiter = threading.Thread(target=lambda: result.append(client.lock(name).acquire(timeout=10)))
    waiter.start()
    assert wait_until(lambda: client.stats().waiters == 1)
    # Released once the waiter listens for the unlock message (else it would find the lock
    # free when its subscription comes into effect, and no message would wake it).
    channel = f"redisson_lock__channel:{{{name}}}"
    assert wait_until(lambda: r.pubsub_numsub(channel)[0][1] == 1)
    time.sleep(0.05)
    holder.release()
    waiter.join(10)
    assert result == [True]
    stats = client.stats()
    assert stats.handoff.count == 1
    assert stats.acquire_wait.count == 1 and stats.acquire_wait.sum > 0


def test_a_waiting_acquire_in_the_main_thread_counts_once(make_client, name):
    """In the main thread a blocking acquire first tries once, then waits (so that Ctrl-C
    works): still one acquire, timed out or granted."""
    assert threading.current_thread() is threading.main_thread()
    client, other = make_client(), make_client()
    holder = Holder(other.lock(name))
    lock = client.lock(name)
    assert lock.acquire(timeout=0.1) is False
    stats = client.stats()
    assert (stats.acquires_timed_out, stats.acquires_granted) == (1, 0)
    releaser = threading.Timer(0.1, holder.release)
    releaser.start()
    assert lock.acquire(timeout=10)
    releaser.join()
    lock.release()
    stats = client.stats()
    assert (stats.acquires_timed_out, stats.acquires_granted) == (1, 1)
    assert stats.acquire_wait.count == 1 and stats.acquire_wait.sum >= 0.05


def test_stats_off_counts_nothing(make_client, name):
    client = make_client(stats=False)
    lock = client.lock(name)
    assert lock.acquire()
    assert client.lock(name + ":other").acquire(blocking=False)
    lock.release()
    with pytest.raises(rlock.NotHeldError):
        lock.release()
    stats = client.stats()
    assert stats.enabled is False
    for field, value in vars(stats).items():
        if isinstance(value, rlock.Histogram):
            assert value.count == 0 and value.sum == 0 and not any(value.counts), field
        elif field in ("acquires_failed_by_code", "leaderships_revoked_by_reason"):
            assert dict(value) == {}
        elif field != "enabled":
            assert value == 0, field


def test_stats_must_be_a_bool(redis_url):
    with pytest.raises(TypeError):
        rlock.Client(redis_url, stats="off")  # type: ignore[arg-type]


def test_stats_of_a_closed_client_raise(make_client):
    client = make_client()
    client.close()
    with pytest.raises(rlock.ClientClosedError):
        client.stats()


def test_stats_is_a_frozen_snapshot(make_client, name):
    client = make_client()
    before = client.stats()
    with client.lock(name):
        pass
    assert before.acquires_granted == 0 and client.stats().acquires_granted == 1
    with pytest.raises(AttributeError):
        before.acquires_granted = 5  # type: ignore[misc]
    with pytest.raises(TypeError):
        before.acquires_failed_by_code["ECONN"] = 1  # type: ignore[index]


def test_asyncio_client_has_the_same_stats(redis_url, name):
    async def main() -> rlock.Stats:
        async with rlock.asyncio.Client(redis_url) as client:
            lock = client.lock(name)
            for _ in range(3):
                async with lock:
                    pass
            kept = client.lock(name + ":b")
            assert await kept.acquire(timeout=1)
            stats = client.stats()
            assert stats.holds == 1
            await kept.release()
            return stats

    stats = asyncio.run(main())
    assert stats.acquires_granted == 4 and stats.releases == 3  # taken before the last release
    assert stats.acquire_wait.count == 4


def test_importing_rlock_imports_no_exporter_package():
    code = (
        "import sys, rlock, rlock.asyncio\n"
        "exporters = ('prometheus_client', 'opentelemetry')\n"
        "bad = [m for m in sys.modules if m.split('.')[0] in exporters]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


# ---- events -----------------------------------------------------------------------------------


def test_events_of_an_acquire_and_release_in_order_with_their_fields(make_client, name):
    client = make_client()
    recorder = Recorder()
    client.on_event(recorder)
    lock = client.fenced_lock(name)
    before = time.time()
    assert lock.acquire()
    token = lock.token
    time.sleep(0.02)
    lock.release()
    assert wait_until(lambda: len(recorder.of(name)) == 2)
    acquired, released = recorder.of(name)
    thread_id = int(lock.owner.rsplit(":", 1)[1])  # the owner number of this object and thread
    assert acquired.kind is rlock.EventKind.ACQUIRED
    assert released.kind is rlock.EventKind.RELEASED
    for event in (acquired, released):
        assert event.name == name and isinstance(event.name, str)
        assert event.owner == f"{client.id}:{thread_id}"
        assert event.thread_id == thread_id
        assert before - 1 <= event.time <= time.time() + 1
        assert event.reason is None and event.error is None
    assert acquired.token == token and token is not None
    assert acquired.waited is not None and acquired.waited > 0
    assert acquired.duration == acquired.waited and acquired.held is None
    assert released.held is not None and released.held >= 0.02
    assert released.token is None and released.waited is None
    assert acquired.time <= released.time


def test_a_lost_lock_is_an_event_with_its_reason(make_client, name):
    client = make_client(watchdog_lease=SHORT_LEASE)
    other = make_client()
    recorder = Recorder()
    client.on_event(recorder)
    lock = lose(client, other, name)
    assert wait_until(lambda: len(recorder.of(name)) == 2)
    acquired, lost = recorder.of(name)
    assert acquired.kind is rlock.EventKind.ACQUIRED
    assert lost.kind is rlock.EventKind.LOST
    assert lost.reason is rlock.LostReason.GONE
    assert lost.owner == lock.owner
    assert lost.duration is None and lost.token is None
    assert client.stats().locks_lost_gone == 1


def test_a_name_that_is_not_utf8_comes_as_bytes(make_client):
    client = make_client()
    recorder = Recorder()
    client.on_event(recorder)
    name = b"pytest:\xff\xfe"
    with client.lock(name):
        pass
    assert wait_until(lambda: len(recorder.of(name)) == 2)
    assert all(isinstance(e.name, bytes) for e in recorder.of(name))


def test_events_stop_when_the_handler_is_removed(make_client, name):
    client = make_client()
    recorder = Recorder()
    client.on_event(recorder)
    with client.lock(name):
        pass
    assert wait_until(lambda: len(recorder.of(name)) == 2)
    client.on_event(None)
    with client.lock(name):
        pass
    time.sleep(0.2)
    assert len(recorder.of(name)) == 2


def test_events_queued_at_close_are_delivered(make_client, name):
    client = make_client()
    recorder = Recorder()
    client.on_event(recorder)
    lock = client.lock(name)
    for _ in range(50):
        assert lock.acquire()
        lock.release()
    lock.close()
    client.close()
    assert len(recorder.of(name)) == 100
    kinds = [e.kind for e in recorder.of(name)]
    assert kinds == [rlock.EventKind.ACQUIRED, rlock.EventKind.RELEASED] * 50


def test_a_handler_must_be_callable(make_client):
    with pytest.raises(TypeError):
        make_client().on_event("print")  # type: ignore[arg-type]


def test_asyncio_client_events(redis_url, name):
    recorder = Recorder()

    async def main() -> None:
        async with rlock.asyncio.Client(redis_url) as client:
            client.on_event(recorder)
            async with client.lock(name):
                pass

    asyncio.run(main())
    assert [e.kind for e in recorder.of(name)] == [
        rlock.EventKind.ACQUIRED,
        rlock.EventKind.RELEASED,
    ]


def test_an_unreachable_server_fails_renewals_then_loses_the_lock(private_redis, name):
    """Redis stops while a watchdog hold is kept: RENEWAL_FAILED events (ECONN), then LOST with
    reason UNREACHABLE once the lease ran out; back up, the client reconnects."""
    client = rlock.Client(private_redis.url, watchdog_lease=SHORT_LEASE, command_timeout=0.2)
    try:
        recorder = Recorder()
        client.on_event(recorder)
        lock = client.lock(name)
        assert lock.acquire()
        private_redis.stop()
        assert wait_until(lambda: lock.lost(), timeout=10)
        assert wait_until(lambda: any(e.kind is rlock.EventKind.LOST for e in recorder.of(name)))
        events = recorder.of(name)
        kinds = [e.kind for e in events]
        assert kinds[0] is rlock.EventKind.ACQUIRED and kinds[-1] is rlock.EventKind.LOST
        failed = [e for e in events if e.kind is rlock.EventKind.RENEWAL_FAILED]
        assert failed and set(kinds[1:-1]) == {rlock.EventKind.RENEWAL_FAILED}
        assert all(e.error == "ECONN" and e.detail and e.reason is None for e in failed)
        assert events[-1].reason is rlock.LostReason.UNREACHABLE
        stats = client.stats()
        assert stats.locks_lost_unreachable == 1 and stats.locks_lost == 1
        assert stats.renewals_failed >= len(failed) and stats.holds == 0

        private_redis.start()
        assert wait_until(lambda: _granted(client, name + ":after"), timeout=10)
        assert client.stats().reconnects >= 1
    finally:
        client.close()


def _granted(client: rlock.Client, name: str) -> bool:
    try:
        lock = client.lock(name)
        if lock.acquire(blocking=False):
            lock.release()
            return True
    except rlock.ConnectionError:
        pass
    return False


EXIT_CHILD = """
import sys, threading
import rlock
url, name = sys.argv[1], sys.argv[2]
client = rlock.Client(url)
seen = []
client.on_event(seen.append)         # still set at exit, with events queued

def churn():
    lock = client.lock(name + ":" + str(threading.get_native_id()))
    while True:
        try:
            lock.acquire()
            lock.release()
        except rlock.LockError:
            return

for _ in range(4):
    threading.Thread(target=churn, daemon=True).start()
while len(seen) < 200:
    pass
print("exiting", flush=True)
"""


@pytest.mark.timeout(120)
def test_exit_with_events_flowing(redis_url, name):
    """The interpreter exits while the event thread delivers and daemon threads drop their
    Lock objects (their loops end with ClientClosedError at exit): no abort, no error output.
    (A daemon thread freeing a handle at exit used to abort the process now and then.)"""
    for attempt in range(8):
        proc = subprocess.run(
            [sys.executable, "-c", EXIT_CHILD, redis_url, f"{name}:{attempt}"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert (proc.returncode, proc.stdout, proc.stderr.strip()) == (0, "exiting\n", "")
