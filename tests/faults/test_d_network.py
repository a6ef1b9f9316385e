"""FAULTS.md group D: network faults between a client and Redis, made by the fault proxy
(partitions, lost replies, latency, a dead subscriber connection)."""

from __future__ import annotations

import statistics
import threading
import time
from pathlib import Path
from typing import Any, Dict, Optional

import checkers
import pytest
from harness import Case, now_ns, slack, wait_until

LEASE_MS = 1000
MS = 1_000_000
BLACKHOLE = {"name": "blackhole"}


def test_D1_partitioned_holder_knows_before_the_server_frees_the_lock(
    case: Case, tls: Optional[Path]
):
    # [tls]: every connection is TLS through the proxy, which drops what it blackholes: the
    # partitioned connections' TLS streams are broken for good (records missing), so they must
    # be dropped and replaced, not read on.
    server, resource = case.redis(tls=tls), case.redis(tls=tls)
    proxy = case.proxy(server)
    names = [f"d1-{i}" for i in range(5)]
    holders = [
        case.worker(
            "hold",
            proxy.url,
            names=n,
            kind="fenced",
            counters=False,
            watchdog_lease_ms=LEASE_MS,
            command_timeout_ms=500,
            resource_url=resource.url,
        )
        for n in names
    ]
    tokens = {}
    for h, n in zip(holders, names):
        fields = h.expect("acquired")
        assert fields[1] == "0"
        tokens[n] = int(fields[2])
        assert h.ask("write")[1] == "1"
    waiters = [
        case.worker(
            "hold",
            server.url,
            names=n,
            kind="fenced",
            counters=False,
            lease_ms=30000,
            wait_ms=10000,
            resource_url=resource.url,
        )
        for n in names
    ]
    time.sleep(0.1)
    proxy.set("all", BLACKHOLE)  # both directions: a partition
    partitioned = now_ns()
    expired: Dict[str, int] = {}

    def watch_expiry() -> None:
        watcher = server.conn()
        while len(expired) < len(names) and now_ns() - partitioned < 5000 * MS:
            for n in names:
                # Gone, or already the waiter's (its lease is 30 s): the holder's key expired.
                pttl = watcher.pttl(n) if n not in expired else 0
                if n not in expired and (pttl == -2 or pttl > 2000):
                    expired[n] = now_ns()
            time.sleep(0.002)
        watcher.close()

    t = threading.Thread(target=watch_expiry)
    t.start()
    lost = {}
    for h, n in zip(holders, names):
        fields = h.expect("lost", 5)
        lost[n] = int(fields[2])
        assert h.ask("held")[1] == "0"
    for w, n in zip(waiters, names):
        fields = w.expect("acquired", 10)
        assert fields[1] == "0" and int(fields[2]) > tokens[n]
        assert w.ask("write")[1] == "1"
    t.join()
    time.sleep(3 * LEASE_MS / 1000 - (now_ns() - partitioned) / 1e9)
    proxy.pass_all()
    for h, n in zip(holders, names):
        assert h.ask("write")[1] == "0", f"{n}: the partitioned holder's write was accepted"
        assert int(h.ask("release")[1]) == -11
    margins = [(expired[n] - lost[n]) / MS for n in names]
    print(
        f"D1{' over TLS' if tls else ''}: holders knew {min(margins):.0f}-{max(margins):.0f} ms "
        "before the server freed their lock"
    )
    assert min(margins) > 0, (
        f"a holder learned of its loss after the server freed the lock: {margins}"
    )
    history = checkers.read_history(case.log)
    assert checkers.fencing(history).violations == [] and checkers.mutex_history(history) == []
    assert checkers.linearizable(history, lapses=True) == []


def test_D2_lost_acquire_replies_leave_no_orphan(case: Case):
    server = case.redis()
    proxy = case.proxy(server)
    conn = server.conn()
    worker = case.worker(
        "loop",
        proxy.url,
        names=[f"d2-{i}" for i in range(500)],
        threads=64,
        pool_size=16,
        wait_ms=0,
        lease_ms=30000,
        hold_us=0,
        command_timeout_ms=200,
        duration_ms=12000,
        counters=False,
    )
    time.sleep(0.5)
    proxy.set("command", BLACKHOLE, "down")  # requests reach Redis, replies never come back
    oldest_ms = 0.0
    deadline = time.monotonic() + 11.5
    while time.monotonic() < deadline:
        for key in conn.scan_iter("d2-*", count=1000):
            pttl = conn.pttl(key)
            if pttl > 0:
                oldest_ms = max(oldest_ms, 30000 - pttl)
        time.sleep(0.01)
    worker.finish(30)
    proxy.pass_all()
    h = checkers.read_history(case.log)
    lost_replies = sum(1 for op, _, _, _, rc in h.calls if op == "acq" and rc == -5)
    print(f"D2: {lost_replies} acquires lost their reply; the oldest key lived {oldest_ms:.0f} ms")
    assert lost_replies >= 1000
    # The undo is the caller's no longer (its time is up): the renewer sends it with the next
    # round of clean-ups, which may wait for the round in flight: two timeouts at most.
    assert oldest_ms <= 2 * 200 + slack(250), "an acquire whose reply was lost left its key behind"
    assert wait_until(lambda: not checkers.library_keys(conn), 1), checkers.library_keys(conn)[:5]


# --kind and --read of the fault worker for each lock kind.
D2_KINDS: Dict[str, Dict[str, Any]] = {
    "reentrant": {"kind": "reentrant"},
    "fenced": {"kind": "fenced"},
    "fair": {"kind": "fair"},
    "read": {"kind": "rw", "read": 1},
    "write": {"kind": "rw"},
}
D2_LEASE_MS = 30000
D2_COMMAND_TIMEOUT_MS = 3000  # room for the fair waiter to start and queue before the undo
D2_FAIR_WAIT_MS = 20000  # a fair waiter comes back every quarter of it: 5 s


@pytest.mark.parametrize("kind", list(D2_KINDS))
def test_D2_each_kind_takes_back_an_acquire_whose_reply_was_lost(case: Case, kind: str):
    """One acquire of each kind is applied but its reply dropped: the call fails with ECONN and
    its hold is gone from Redis at once, not at the end of its 30 s lease. A fair lock's queue
    head (another client's waiter) is woken on its own channel, well before it polls."""
    server = case.redis()
    proxy = case.proxy(server)
    conn = server.conn()
    name = f"d2-{kind}"
    holder = case.worker(
        "hold",
        proxy.url,
        names=name,
        defer_acquire=1,
        lease_ms=D2_LEASE_MS,
        wait_ms=0,
        command_timeout_ms=D2_COMMAND_TIMEOUT_MS,
        counters=False,
        **D2_KINDS[kind],
    )
    # Once through, so Redis knows the scripts: a lost NOSCRIPT answer would mean nothing ran.
    assert holder.ask("acquire")[1] == "0"
    assert holder.ask("release")[1] == "0"
    proxy.set("command", BLACKHOLE, "down")  # the request reaches Redis, its reply never returns
    holder.send("acquire")
    sent = now_ns()
    assert wait_until(lambda: conn.exists(name), 2), "the acquire never reached Redis"
    fields = [f for f in conn.hkeys(name) if f != b"mode"]
    assert len(fields) == 1

    def held_by_holder() -> bool:
        return bool(conn.hexists(name, fields[0]))

    waiter = None
    if kind == "fair":
        # Another client queues behind the hold the lost reply granted, before its undo.
        waiter = case.worker(
            "hold",
            server.url,
            names=name,
            kind="fair",
            lease_ms=D2_LEASE_MS,
            wait_ms=D2_FAIR_WAIT_MS,
            poll_cap_ms=30000,
            counters=False,
        )
        queue = f"redisson_lock_queue:{{{name}}}"
        assert wait_until(lambda: conn.llen(queue) == 1, 2.5), "the waiter did not queue"
        assert held_by_holder(), "the undo ran before the waiter queued: nothing to wake"
    # The undo follows the acquire's command timeout: the hold goes then, not with its lease.
    assert wait_until(lambda: not held_by_holder(), D2_COMMAND_TIMEOUT_MS / 1000 + 3, 0.002), (
        f"the {kind} hold outlived the acquire whose reply was lost"
    )
    gone = now_ns()
    print(f"D2 {kind}: the hold was gone {(gone - sent) / MS:.0f} ms after the acquire was sent")
    rc = holder.expect("acquired", 10)[1]
    assert rc == "-5", f"the acquire whose reply was lost returned {rc}, not ECONN"
    if waiter is not None:
        assert waiter.expect("acquired", 10)[1] == "0"
        granted = next(
            ret
            for op, owner, _, ret, code in checkers.read_history(case.log).calls
            if op == "acq" and code == 0 and owner.startswith(f"{waiter.pid}.")
        )
        print(f"D2 fair: the queue head got the lock {(granted - gone) / MS:.0f} ms after that")
        # It polls only every 5 s (a quarter of its wait): it was woken, not polling.
        assert granted - gone < slack(1000) * MS, "the queue head was not woken by the undo"
    else:
        # The token counter never expires, the warm-up release's latch by itself.
        kept = (b"redisson_lock_token:", b"redisson_unlock_latch:")
        leftovers = [k for k in conn.scan_iter(f"*{name}*") if not k.startswith(kept)]
        assert leftovers == [], f"keys left behind: {leftovers}"
    proxy.pass_all()


def test_D3_latency_and_jitter_keep_exclusion_and_bounds(case: Case, tls: Optional[Path]):
    # [tls]: the workers' connections (lock server and fenced resource) are TLS, delayed in
    # pieces by the proxy.
    server, resource = case.redis(tls=tls), case.redis(tls=tls)
    proxy = case.proxy(server)
    proxy.set("all", {"name": "delay", "ms": 50})
    workers = [
        case.worker(
            "loop",
            proxy.url,
            names=[f"d3-{i}" for i in range(8)],
            threads=8,
            kind="fenced",
            duration_ms=6000,
            wait_ms=3000,
            hold_us=1000,
            lease_ms=LEASE_MS,
            command_timeout_ms=1500,
            resource_url=resource.url,
        )
        for _ in range(2)
    ]
    time.sleep(3)
    proxy.set("all", {"name": "delay", "ms": 200, "jitter": 100})
    for w in workers:
        w.finish(60)
    h = checkers.read_history(case.log)
    checkers.assert_clean_run(h, case.counters)
    # A call's bound: its wait, plus round trips of up to 600 ms, plus a command timeout.
    assert checkers.slow_calls(h, 3000 + 1500 + 1200 + slack(50, handshakes=2 if tls else 0)) == []
    total = sum(w.summary()["acquired"] for w in workers)
    print(f"D3{' over TLS' if tls else ''}: {total} sections at 50 ms and 200 +- 100 ms each way")
    assert total > 100


def test_D4_dead_subscriber_connection_costs_at_most_a_poll(case: Case):
    server = case.redis()
    proxy = case.proxy(server)
    conn = server.conn()
    gaps = []
    for run in range(5):
        name = f"d4-{run}"
        holder = case.worker("hold", server.url, names=name, counters=False, lease_ms=30000)
        assert holder.expect("acquired")[1] == "0"
        waiter = case.worker(
            "loop",
            proxy.url,
            names=name,
            threads=1,
            cycles=1,
            wait_ms=20000,
            lease_ms=30000,
            hold_us=0,
        )
        assert wait_until(
            lambda: conn.pubsub_numsub(f"redisson_lock__channel:{{{name}}}")[0][1] == 1, 5
        )
        proxy.set("pubsub", BLACKHOLE)
        time.sleep(0.2)
        assert holder.ask("release")[1] == "0"
        released = now_ns()
        waiter.finish(10)
        acquired = [
            x.start
            for x in checkers.read_history(case.log).holds
            if x.name == name and x.pid == waiter.pid
        ]
        assert acquired
        gaps.append((acquired[0] - released) / MS)
        proxy.pass_all()
        holder.send("quit")
        holder.finish(10)
    print(f"D4: acquired {statistics.median(gaps):.0f} ms (max {max(gaps):.0f}) after the release")
    assert max(gaps) <= 1000 + slack(100), gaps


def _kind_lock(client, kind: str, name: str):
    if kind == "reentrant":
        return client.lock(name)
    rw = client.read_write_lock(name)
    return rw.read_lock() if kind == "read" else rw.write_lock()


def _acquire_once_settled(lock) -> None:
    """Acquires after a lost release. The replay of that release may have been sent into the
    blackhole just before it lifted: until it times out, the owner's next acquire says
    ConnectionError (the outcome is still unknown) rather than guess. On a loaded machine an
    attempt may also outlast the 300 ms command timeout; its own outcome is then unknown too and
    cleaned up the same way. Within a few timeouts it must succeed, and only that way."""
    import rlock

    deadline = time.monotonic() + 5.0
    while True:
        try:
            assert lock.acquire(blocking=False), "the owner's next acquire found the lock held"
            return
        except rlock.ConnectionError as e:
            assert "clean-up" in str(e) or "no reply within" in str(e), f"unexpected failure: {e}"
            assert time.monotonic() < deadline, f"the clean-up never settled: {e}"
            time.sleep(0.05)


@pytest.mark.parametrize("kind", ["reentrant", "read", "write"])
@pytest.mark.parametrize("lost", ["request", "reply"])
def test_D5_release_without_answer_leaves_no_stale_hold(case: Case, kind: str, lost: str):
    """A release whose request or reply the proxy drops fails with ConnectionError: whether it
    ran is unknown. The same owner's next acquire must not inherit a hold count nobody
    releases: after its release the lock is free and nothing renews it."""
    import rlock

    server = case.redis()
    proxy = case.proxy(server)
    conn = server.conn()
    name = f"d5-{kind}-{lost}"
    client = rlock.Client(proxy.url, command_timeout=0.3, watchdog_lease=1.0)
    try:
        lock = _kind_lock(client, kind, name)
        assert lock.acquire(blocking=False)
        proxy.set("command", BLACKHOLE, "up" if lost == "request" else "down")
        with pytest.raises(rlock.ConnectionError):
            lock.release()
        proxy.pass_all()
        _acquire_once_settled(lock)
        lock.release()
        assert conn.exists(name) == 0, f"{name} is still held after its last release"
        time.sleep(1.5)  # a few renewal periods of the 1 s watchdog lease
        assert conn.exists(name) == 0, f"{name} came back: something renews a released hold"
        assert not lock.locked()
    finally:
        client.close()


def test_D5_a_lost_release_of_an_owner_id_is_not_sent_again_later(case: Case):
    """A release with a caller-given owner id whose request the proxy drops fails with
    ConnectionError and is not sent again later: another process may meanwhile hold the lock
    with the same id (after this hold expired), and a late retry would free its hold."""
    import rlock

    server = case.redis()
    proxy = case.proxy(server)
    conn = server.conn()
    name = "d5-owner-id"
    client = rlock.Client(proxy.url, command_timeout=0.3, watchdog_lease=1.0)
    other = rlock.Client(server.url)
    try:
        lock = client.lock(name, owner_id="job-d5")
        assert lock.acquire(blocking=False)
        proxy.set("command", BLACKHOLE, "up")
        with pytest.raises(rlock.ConnectionError):
            lock.release()
        # The release never arrived: the hold expires by its 1 s lease (renewal stopped).
        deadline = time.monotonic() + 5
        while conn.exists(name) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert conn.exists(name) == 0, "the unrenewed hold never expired"
        taken = other.lock(name, owner_id="job-d5")
        assert taken.acquire(blocking=False, lease=30)
        proxy.pass_all()
        time.sleep(2.5)  # two rounds of the first client's clean-ups (every second)
        assert conn.exists(name) == 1, "a late retry of the lost release freed the new hold"
        assert taken.locked()
        taken.release()
    finally:
        client.close()
        other.close()


def test_D1_a_stuck_renewal_waits_no_longer_than_its_validity(case: Case):
    """Two watchdog holds (2 s lease, the default 3 s command timeout) renewed in separate
    batches on one renewer thread. The proxy blackholes both ways from 0.5 s to 1.0 s, so A's
    renewal (sent at 0.67 s) never gets an answer. A is told of its loss by its validity
    deadline; and since that renewal gives up there, not at its 3 s command timeout, B's renewal
    (due at 1.07 s, behind it) is sent in time: B stays held."""
    import rlock

    server = case.redis()
    proxy = case.proxy(server)
    client = rlock.Client(proxy.url, command_timeout=3.0, watchdog_lease=2.0)
    try:
        told: Dict[str, float] = {}

        def on_lost(lock: "rlock.Lock", _reason: object) -> None:
            told[str(lock.name)] = time.monotonic()

        a, b = client.lock("d1-a"), client.lock("d1-b")
        for lock in (a, b):
            lock.on_lost(on_lost)
        start = time.monotonic()
        assert a.acquire(blocking=False)
        time.sleep(0.4 - (time.monotonic() - start))
        b_sent = time.monotonic()
        assert b.acquire(blocking=False)
        time.sleep(0.5 - (time.monotonic() - start))
        proxy.set("all", BLACKHOLE)
        time.sleep(1.0 - (time.monotonic() - start))
        proxy.pass_all()
        validity = 2.0 - (2.0 / 100 + 0.002)  # lease minus the drift allowance
        assert wait_until(lambda: "d1-a" in told, 5), "A's loss was never told"
        late = told["d1-a"] - (start + validity)
        print(f"D1 bound: A's loss was told {late * 1000:.0f} ms after its validity deadline")
        assert late < slack(300) / 1000, "A's loss was told after its validity deadline"
        assert not a.held()
        time.sleep(max(0.0, b_sent + 2 * validity - time.monotonic()))  # past B's first deadline
        assert "d1-b" not in told, (
            "B was lost: its renewal waited behind A's stuck one until A's command timeout"
        )
        assert b.held()
        b.release()
    finally:
        proxy.pass_all()
        client.close()
