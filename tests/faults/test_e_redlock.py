"""FAULTS.md group E: RedLock over five independent masters, and multi-locks. E4 and E5(i) are
expected-violation self-tests: RedLock cannot survive them, and the checker must say so."""

from __future__ import annotations

import statistics
import time

import checkers
import rlock
from harness import Case, now_ns, percentile, script_calls, slack, wait_until

MS = 1_000_000
BLACKHOLE = {"name": "blackhole"}


def _masters(case: Case, n: int = 5):
    return [case.redis() for _ in range(n)]


def _keys(servers, pattern: str):
    return {s.port: [k for k in s.conn().scan_iter(pattern)] for s in servers}


def test_E1_one_master_down_costs_nothing(case: Case):
    servers = _masters(case)
    worker = case.worker(
        "loop",
        redlock=[s.url for s in servers],
        names=[f"e1-{i}" for i in range(64)],
        threads=4,
        wait_ms=1000,
        lease_ms=5000,
        hold_us=200,
        command_timeout_ms=50,
        cycles=2600,
    )
    time.sleep(0.3)
    servers[2].kill()
    worker.finish(120)
    h = checkers.read_history(case.log)
    checkers.assert_clean_run(h, case.counters)
    s = worker.summary()
    took = sorted((ret - call) / MS for op, _, call, ret, rc in h.calls if op == "acq")
    p99 = percentile(took, 0.99)
    # The latency is a figure here, not a bound: on a loaded machine it measures the machine
    # (bench/ compares it with the peers). What must hold is that every call returns within its
    # wait and per-node timeout, and that the down master costs no more as the run goes on
    # (test_E1_a_master_down_keeps_one_pending_release_per_owner).
    print(
        f"E1: {s['acquired']} of {s['cycles']} acquires with 1 of 5 masters down; "
        f"acquire p50 {statistics.median(took):.2f} ms, p99 {p99:.2f} ms"
    )
    assert s["cycles"] >= 10_000
    assert s["acquired"] >= 0.999 * s["cycles"]
    assert checkers.slow_calls(h, 1000 + 50 + slack(50)) == []
    live = [x for i, x in enumerate(servers) if i != 2]
    assert wait_until(lambda: not any(_keys(live, "e1-*").values()), 1), _keys(live, "e1-*")


def test_E1_a_master_down_keeps_one_pending_release_per_owner(case: Case):
    """A release that cannot reach a RedLock member is kept, to be sent when the member answers
    again (it may have run). While the member stays down each new release of the same owner
    replaces the kept one, so a member that comes back after 300 cycles gets one release, not
    300. (Before, the kept releases piled up without bound, and the latency of every acquire
    grew with them: 0.6 ms at first, 30 ms after 40 s, which failed E1's p99.)"""
    servers = _masters(case, 3)
    clients = [rlock.Client(s.url, command_timeout=0.2, connect_timeout=0.2) for s in servers]
    try:
        group = rlock.RedLock([c.lock("e1-pending") for c in clients])
        servers[2].kill()
        for _ in range(300):
            assert group.acquire(timeout=5, lease=10)
            group.release()
        servers[2].start()  # empty, on the same port
        back = servers[2].conn()
        # Its next acquire on the member sends the kept release first (settle), then its own.
        assert group.acquire(timeout=5, lease=10)
        group.release()
        calls = script_calls(back)
        print(f"E1 pending: the member that came back got {calls} script calls after 300 cycles")
        assert calls <= 6, f"{calls} script calls: the releases kept while it was down piled up"
        assert not any(_keys(servers, "e1-pending*").values())
    finally:
        for c in clients:
            c.close()


def test_E2_a_slow_master_is_bounded_by_the_per_node_timeout(case: Case):
    """Criterion 11 with one master 200 ms away and a 50 ms per-node timeout: uncontended
    acquires (four processes, names of their own) succeed, p99 within the timeout + 10 ms; and
    no call, release included, takes longer than the timeout + 50 ms (criterion 15: a retry
    after a timeout would double it)."""
    servers = _masters(case)
    proxy = case.proxy(servers[4])
    urls = [s.url for s in servers[:4]] + [proxy.url]
    workers = [
        case.worker(
            "loop",
            redlock=urls,
            names=[f"e2-{w}-{i}" for i in range(16)],
            threads=1,
            wait_ms=0,
            lease_ms=5000,
            hold_us=200,
            command_timeout_ms=50,
            duration_ms=6000,
        )
        for w in range(4)
    ]
    time.sleep(0.5)  # connected (a client checks every server when it is made)
    slow_from = now_ns()
    proxy.set("all", {"name": "delay", "ms": 200})
    for w in workers:
        w.finish(60)
    h = checkers.read_history(case.log)
    checkers.assert_clean_run(h, case.counters)
    slow = [(op, rc, (ret - call) / MS) for op, _, call, ret, rc in h.calls if call > slow_from]
    acquires = sorted(took for op, _, took in slow if op == "acq")
    granted = sum(1 for op, rc, _ in slow if op == "acq" and rc == 0)
    p99 = percentile(acquires, 0.99)
    print(
        f"E2: {len(acquires)} acquires with a master 200 ms away, {granted} granted, p50 "
        f"{statistics.median(acquires):.1f} ms, p99 {p99:.1f} ms, slowest call "
        f"{max(t for _, _, t in slow):.1f} ms"
    )
    assert len(acquires) >= 150
    assert granted >= 0.999 * len(acquires), f"only {granted} of {len(acquires)} granted"
    assert p99 <= 50 + slack(10)
    assert checkers.slow_calls(h, 50 + slack(50)) == []
    # The validity never claims more than the lease minus the clock-drift allowance (each
    # attempt's own time comes off as well).
    assert all(0 < v <= 5000 - (5000 // 100 + 2) for _, _, _, v in h.valid), h.valid[:5]


def test_E3_three_masters_down_no_success_and_nothing_left(case: Case):
    servers = _masters(case)
    w = case.worker(
        "hold",
        redlock=[s.url for s in servers],
        names="e3",
        counters=False,
        defer_acquire=1,
        wait_ms=0,
        lease_ms=5000,
        command_timeout_ms=50,
    )
    time.sleep(0.2)
    for s in servers[:3]:
        s.kill()
    live = servers[3:]
    before = sum(script_calls(s.conn()) for s in live)
    for _ in range(100):
        fields = w.ask("acquire")
        assert fields[1] != "0", "acquired with 3 of 5 masters down"
        assert not any(_keys(live, "e3").values()), "a partial lock was left on a live master"
    after = sum(script_calls(s.conn()) for s in live)
    assert after - before >= 2 * 100, "the live masters were not even tried"


def test_E4_expected_violation_a_clock_jump_on_one_master_double_grants(case: Case):
    """Kleppmann's scenario: C's clock jumps and drops client 1's key early; client 2 then gets
    a majority (C, D, E) while client 1 still holds A, B and believes it holds the lock. RedLock
    cannot prevent this; the overlap checker must flag it every time."""
    servers = _masters(case)
    flagged = 0
    for run in range(3):
        name = f"e4-{run}"
        proxies = [case.proxy(s) for s in servers]
        one = case.worker(
            "hold",
            redlock=[p.url for p in proxies],
            names=name,
            counters=False,
            defer_acquire=1,
            wait_ms=0,
            lease_ms=10000,
            command_timeout_ms=50,
        )
        two = case.worker(
            "hold",
            redlock=[p.url for p in proxies],
            names=name,
            counters=False,
            defer_acquire=1,
            wait_ms=0,
            lease_ms=10000,
            command_timeout_ms=50,
        )
        time.sleep(0.2)
        # Client 1 is cut off from D and E: only A, B, C grant it.
        for p in proxies[3:]:
            p.set("all", BLACKHOLE)
        assert one.ask("acquire")[1] == "0"
        assert servers[3].conn().exists(name) == 0
        for p in proxies[3:]:
            p.pass_all()
        servers[2].conn().pexpire(name, 1)  # C's clock jumped: its key expires at once
        time.sleep(0.01)
        for p in proxies[:2]:
            p.set("all", BLACKHOLE)  # client 2 reaches only C, D, E (and so would client 1)
        assert two.ask("acquire", 10)[1] == "0", "client 2 did not get C, D, E"
        for p in proxies[:2]:
            p.pass_all()
        one.ask("release")
        two.ask("release")
        h = checkers.read_history(case.log)
        overlapped = any(v.startswith(f"{name}:") for v in checkers.overlaps(h, limit=10**6))
        flagged += overlapped
        unlinearizable = any(v.startswith(f"{name}:") for v in checkers.linearizable(h))
        assert unlinearizable == overlapped, "the linearizability checker disagrees"
        for w in (one, two):
            w.send("quit")
            w.wait(10)
    assert flagged == 3, "the checker missed a RedLock double grant"


def test_E5_restarted_master_without_persistence(case: Case):
    """(i) C restarts at once with no data: client 2 gets C, D, E while client 1 holds A, B, C:
    an expected double grant, which the checker flags. (ii) C stays down longer than the
    lease: client 1's lock has expired everywhere before C can grant it again: no overlap."""
    servers = _masters(case)
    proxies = [case.proxy(s) for s in servers]
    for delayed, run in ((False, "i"), (True, "ii")):
        name = f"e5-{run}"
        lease = 1500
        one = case.worker(
            "hold",
            redlock=[p.url for p in proxies],
            names=name,
            counters=False,
            defer_acquire=1,
            wait_ms=0,
            lease_ms=lease,
            command_timeout_ms=50,
        )
        two = case.worker(
            "hold",
            redlock=[p.url for p in proxies],
            names=name,
            counters=False,
            defer_acquire=1,
            wait_ms=6000,
            lease_ms=lease,
            command_timeout_ms=50,
        )
        time.sleep(0.2)
        for p in proxies[3:]:
            p.set("all", BLACKHOLE)
        got = now_ns()
        assert one.ask("acquire")[1] == "0"
        for p in proxies[3:]:
            p.pass_all()
        for p in proxies[:2]:
            p.set("all", BLACKHOLE)  # client 2 reaches only C, D, E from here on
        servers[2].kill()
        if delayed:
            # Client 1 works only within its validity, then stops; C comes back only after
            # the lease (the delayed restart of the Redis docs).
            time.sleep(max(0.0, (got + (lease - 100) * MS - now_ns()) / 1e9))
            one.ask("release")
            time.sleep(max(0.0, (got + (lease + 200) * MS - now_ns()) / 1e9))
        servers[2].start()
        assert two.ask("acquire", 10)[1] == "0"
        if not delayed:
            one.ask("release")
        two.ask("release")
        for p in proxies:
            p.pass_all()
        h = checkers.read_history(case.log)
        overlapped = any(v.startswith(f"{name}:") for v in checkers.overlaps(h, limit=10**6))
        assert overlapped != delayed, f"E5({run}): overlap {overlapped}"
        unlinearizable = any(v.startswith(f"{name}:") for v in checkers.linearizable(h))
        assert unlinearizable == overlapped, f"E5({run}): linearizability disagrees"
        for w in (one, two):
            w.send("quit")
            w.wait(10)


def test_E6_simultaneous_contenders_one_winner_per_round(case: Case):
    """FAULTS.md E6. Single tries: 16 clients try a RedLock over five masters at the same
    instant, 30 rounds: never more than one winner, and the losers leave no partial lock. How
    often nobody wins (a split vote) is printed, not asserted: with every try at the same
    instant and no retry, it measures how simultaneous this machine made them (one run: 10 of
    30 rounds), not the library. Waiting tries: 16 owners in four processes take the same
    RedLock with a wait, 25 times each; the library's retries, each after a random delay, get
    every one of them in, one at a time."""
    servers = _masters(case)
    contenders = [
        case.worker(
            "hold",
            redlock=[s.url for s in servers],
            names="e6",
            counters=False,
            defer_acquire=1,
            wait_ms=0,
            lease_ms=5000,
            command_timeout_ms=50,
        )
        for _ in range(16)
    ]
    time.sleep(0.5)
    rounds_to_win = []
    tries = 0
    for _ in range(30):
        tries += 1
        for c in contenders:
            c.send("acquire")  # as close to the same instant as a loop gets
        winners = [c for c in contenders if c.expect("acquired", 10)[1] == "0"]
        assert len(winners) <= 1, f"{len(winners)} winners in one round"
        for c in winners:
            assert c.ask("release")[1] == "0"
        assert not any(_keys(servers, "e6").values()), "partial locks left after a round"
        if winners:
            rounds_to_win.append(tries)
            tries = 0
    print(
        f"E6 single tries: {len(rounds_to_win)} of 30 rounds had a winner; rounds to a winner "
        f"{sorted(rounds_to_win)}"
    )
    for c in contenders:
        c.send("quit")
    waiting = [
        case.worker(
            "loop",
            redlock=[s.url for s in servers],
            names="e6-wait",
            threads=4,
            cycles=25,
            wait_ms=30000,
            hold_us=200,
            lease_ms=5000,
            command_timeout_ms=50,
        )
        for _ in range(4)
    ]
    started = time.monotonic()
    for w in waiting:
        w.finish(60)
    h = checkers.read_history(case.log)
    checkers.assert_clean_run(h, case.counters)
    summaries = [w.summary() for w in waiting]
    print(
        f"E6 waiting tries: {sum(s['acquired'] for s in summaries)} acquires by 16 owners in "
        f"{time.monotonic() - started:.1f} s"
    )
    assert all(s["acquired"] == s["cycles"] == 4 * 25 for s in summaries), summaries
    assert wait_until(lambda: not any(_keys(servers, "e6*").values()), 1), _keys(servers, "e6*")


def test_E7_multi_locks_in_opposite_orders_never_deadlock_or_half_hold(case: Case):
    server = case.redis()
    holder = case.worker("hold", server.url, names="e7c", counters=False)
    assert holder.expect("acquired")[1] == "0"
    workers = [
        case.worker(
            "loop",
            server.url,
            multi=1,
            names=names,
            threads=4,
            wait_ms=200,
            lease_ms=5000,
            hold_us=0,
            cycles=1300,
        )
        for names in (["e7a+e7b"], ["e7b+e7a"])
    ]
    workers.append(
        case.worker(
            "loop",
            server.url,
            multi=1,
            names="e7a+e7c",
            threads=2,
            wait_ms=200,
            lease_ms=5000,
            duration_ms=5000,
        )
    )
    for w in workers:
        w.finish(60)
    h = checkers.read_history(case.log)
    assert checkers.overlaps(h) == [] and checkers.mutex_history(h) == []
    assert checkers.linearizable(h) == []
    attempts = sum(w.summary()["cycles"] for w in workers)
    blocked = workers[2].summary()
    print(f"E7: {attempts} multi-lock attempts; (a, c) with c held: {blocked}")
    assert attempts >= 10_000
    assert blocked["acquired"] == 0
    conn = server.conn()
    assert conn.exists("e7a") == 0 and conn.exists("e7b") == 0, "a member stayed locked"
