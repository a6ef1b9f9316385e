"""FAULTS.md group F: contention, fairness, read-write, reentrancy and leaks."""

from __future__ import annotations

import statistics
import time
from typing import Dict, cast

import checkers
import pytest
import rlock
from harness import Case, Chaos, now_ns, percentile, script_calls, slack, wait_until

MS = 1_000_000
LEASE_MS = 1000


def test_F1_herd_of_1000_waiters_each_acquires_once(case: Case):
    server = case.redis()
    conn = server.conn()
    holder = case.worker("hold", server.url, names="f1", counters=False, lease_ms=60000)
    assert holder.expect("acquired")[1] == "0"
    processes, threads = 8, 125
    waiters = [
        case.worker(
            "loop",
            server.url,
            names="f1",
            threads=threads,
            cycles=1,
            wait_ms=-1,
            lease_ms=60000,
            hold_us=1000,
        )
        for _ in range(processes)
    ]
    assert wait_until(
        lambda: conn.pubsub_numsub("redisson_lock__channel:{f1}")[0][1] == processes, 20
    )
    time.sleep(1.0)  # every thread is parked in its acquire
    connections = len(conn.client_list())
    before = script_calls(conn)
    assert holder.ask("release")[1] == "0"
    for w in waiters:
        w.finish(120)
    calls = script_calls(conn) - before
    h = checkers.read_history(case.log)
    checkers.assert_clean_run(h, case.counters)
    per_owner: Dict[str, int] = {}
    for x in h.holds:
        per_owner[x.owner] = per_owner.get(x.owner, 0) + 1
    holds = sorted((x for x in h.holds if x.pid != holder.pid), key=lambda x: x.start)
    gaps = sorted((b.start - a.rel_ret) / MS for a, b in zip(holds, holds[1:]))
    p99 = percentile(gaps, 0.99)
    print(
        f"F1: {len(holds)} hand-offs, {calls / len(holds):.2f} script calls each; gap p50 "
        f"{statistics.median(gaps):.2f} ms, p99 {p99:.2f} ms, max {gaps[-1]:.2f} ms; "
        f"{connections} connections"
    )
    assert len(holds) == processes * threads
    assert all(n == 1 for o, n in per_owner.items()), "a waiter acquired more than once"
    assert calls / len(holds) <= 2 * processes
    assert connections <= processes * (8 + 1) + 2
    assert p99 <= slack(5) and gaps[-1] <= slack(50)


def test_F2_fair_queue_survives_killed_waiters_in_order(case: Case):
    server = case.redis()
    conn = server.conn()
    fair_wait = 1500
    count = 20
    workers = [
        case.worker(
            "hold",
            server.url,
            names="f2",
            kind="fair",
            counters=False,
            defer_acquire=1,
            wait_ms=-1,
            lease_ms=LEASE_MS,
            fair_wait_ms=fair_wait,
        )
        for _ in range(count)
    ]
    assert workers[0].ask("acquire")[1] == "0"
    for i, w in enumerate(workers[1:], 1):
        w.send("acquire")
        assert wait_until(lambda: conn.llen("redisson_lock_queue:{f2}") == i, 5), i
    killed = {1, 10}  # the head of the queue and one in the middle
    for i in killed:
        workers[i].kill()
    order = []
    stalls = []
    released = now_ns()
    assert workers[0].ask("release")[1] == "0"
    for i in range(1, count):
        if i in killed:
            continue
        fields = workers[i].expect("acquired", (LEASE_MS + fair_wait + 2000) / 1000)
        assert fields[1] == "0"
        got = now_ns()
        stalls.append((got - released) / MS)
        order.append(i)
        released = now_ns()
        assert workers[i].ask("release")[1] == "0"
    print(f"F2: served in order {order}; longest stall {max(stalls):.0f} ms")
    assert order == [i for i in range(1, count) if i not in killed]
    # A dead head keeps its place until its deadline (Redisson's rule: the lease left when it
    # queued plus the wait allowance); the next waiter polls every quarter allowance; epsilon.
    assert max(stalls) <= LEASE_MS + fair_wait + fair_wait / 4 + slack(200)
    assert conn.llen("redisson_lock_queue:{f2}") == 0


def test_F3_read_write_with_a_killed_reader(case: Case):
    server = case.redis()
    reader = case.worker(
        "hold",
        server.url,
        names="f3",
        kind="rw",
        read=1,
        counters=False,
        watchdog_lease_ms=LEASE_MS,
    )
    assert reader.expect("acquired")[1] == "0"
    workers = [
        case.worker(
            "loop",
            server.url,
            names="f3",
            kind="rw",
            threads=2,
            write_share=0.25,
            duration_ms=5000,
            wait_ms=4000,
            hold_us=1000,
            lease_ms=LEASE_MS,
        )
        for _ in range(5)
    ]
    time.sleep(0.5)
    killed = reader.kill()
    for w in workers:
        w.finish(60)
    h = checkers.read_history(case.log, case.ended())
    assert checkers.overlaps(h) == [], checkers.overlaps(h)
    assert checkers.mutex_history(h) == [] and checkers.linearizable(h) == []
    writes_after = sorted(x.start for x in h.holds if x.mode == "W" and x.start > killed)
    assert writes_after, "no writer got in after the reader died"
    first_ms = (writes_after[0] - killed) / MS
    print(
        f"F3: first write {first_ms:.0f} ms after the reader was killed; "
        f"{len(writes_after)} writes after"
    )
    assert first_ms <= LEASE_MS + slack(200) + 1000  # its lease, epsilon, other readers' turn


def test_F4_reentrancy_to_depth_100_through_renewals(case: Case):
    server = case.redis()
    conn = server.conn()
    client = rlock.Client(server.url, watchdog_lease=0.3)
    try:
        lock = client.lock("f4")
        for depth in range(1, 101):
            assert lock.acquire(blocking=False)
            assert lock.hold_count() == depth
        time.sleep(0.5)  # renewals every 100 ms
        assert lock.hold_count() == 100 and conn.pttl("f4") > 0
        for depth in range(99, -1, -1):
            lock.release()
            if depth:
                assert int(cast(bytes, conn.hget("f4", next(iter(conn.hkeys("f4")))))) == depth
        assert conn.exists("f4") == 0
        with pytest.raises(rlock.NotHeldError):
            lock.release()
        assert conn.exists("f4") == 0
    finally:
        client.close()


def test_F5_many_cycles_with_faults_leave_nothing_and_do_not_grow(case: Case):
    server = case.redis()
    conn = server.conn()
    baseline = len(conn.client_list())
    worker = case.worker(
        "loop",
        server.url,
        names=[f"f5-{i}" for i in range(1000)],
        threads=16,
        cycles=6250,
        wait_ms=3,
        lease_ms=5000,
        hold_us=200,
        command_timeout_ms=1000,
        counters=False,
    )
    chaos = Chaos(
        server.port,
        lambda c, rng: c.client_kill_filter(_type=rng.choice(["normal", "pubsub"]), skipme=True),
        0.05,
        0.2,
        case.seed,
    )
    try:
        worker.finish(180)
    finally:
        chaos.stop()
    s = worker.summary()
    print(f"F5: {s}")
    assert s["cycles"] == 100_000
    growth = (s["rss_end_kb"] - s["rss_warm_kb"]) / s["rss_warm_kb"]
    assert growth < 0.05, f"RSS grew {growth:.1%} after warm-up"
    assert worker.descriptor_growth() is None, worker.descriptor_growth()
    h = checkers.read_history(case.log)
    assert checkers.overlaps(h) == [] and checkers.linearizable(h) == []
    assert wait_until(lambda: not checkers.cleanliness(conn, baseline), 6), checkers.cleanliness(
        conn, baseline
    )
