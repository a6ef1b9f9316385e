"""FAULTS.md group A: faults of the process that holds the lock (killed, paused, starved).
Repetitions run side by side on names of their own, so 100 of them take a few rounds.
A5 (the owner goes away without unlocking) is in tests/python/test_processes.py."""

from __future__ import annotations

import random
import signal
import statistics
import subprocess
import sys
import time
from typing import Dict, List, Tuple, cast

import checkers
import pytest
from harness import Case, now_ns, slack

EPSILON_MS = 200
LEASE_MS = 1000
RENEW_MS = LEASE_MS / 3
MS = 1_000_000


def _assert_exclusive(case: Case) -> checkers.History:
    h = checkers.read_history(case.log, case.ended())
    checkers.assert_clean_run(h, case.counters)
    return h


@pytest.mark.sanitized
@pytest.mark.parametrize("mode", ["lease", "watchdog"])
def test_A1_killed_holder_frees_the_lock_at_its_ttl_and_not_before(case: Case, mode: str):
    server = case.redis()
    conn = server.conn()
    rng = random.Random(case.seed)
    rounds, width = 10, 10
    expiry = {}  # name -> (earliest, latest) legitimate first acquisition by a waiter, ns
    killed_at = {}
    for r in range(rounds):
        names = [f"a1-{r}-{i}" for i in range(width)]
        holders = [
            case.worker(
                "hold",
                server.url,
                names=n,
                counters=False,
                lease_ms=LEASE_MS if mode == "lease" else -1,
                watchdog_lease_ms=LEASE_MS,
            )
            for n in names
        ]
        for h in holders:
            assert h.expect("acquired")[1] == "0"
        waiters = [
            case.worker(
                "loop", server.url, names=n, threads=3, cycles=1, wait_ms=10000, hold_us=500
            )
            for n in names
        ]
        time.sleep(rng.uniform(0.05, 0.6))  # die anywhere in the lease or renewal period
        for h, n in zip(holders, names):
            before = now_ns()
            pttl = conn.pttl(n)
            assert pttl > 0, f"{n} was not held before the kill (PTTL {pttl})"
            killed_at[n] = h.kill()
            # The key expires PTTL after the PTTL was read (ms rounding aside); a watchdog
            # renewal just before the kill can only move that to kill + lease.
            earliest = before + (pttl - 1) * MS
            latest = (now_ns() if mode == "lease" else killed_at[n]) + (pttl + 1) * MS
            if mode == "watchdog":
                latest = max(latest, killed_at[n] + LEASE_MS * MS)
            expiry[n] = (earliest, latest)
        for w in waiters:
            w.finish(20)
            assert w.summary()["acquired"] == 3, w.lines
    history = _assert_exclusive(case)
    epsilon_ms = slack(EPSILON_MS)
    first: Dict[str, int] = {}
    for hold in history.holds:
        if hold.pid not in case.ended() and (
            hold.name not in first or hold.start < first[hold.name]
        ):
            first[hold.name] = hold.start
    early = [n for n, t in first.items() if t < expiry[n][0]]
    late = {
        n: (t - expiry[n][1]) / MS for n, t in first.items() if t > expiry[n][1] + epsilon_ms * MS
    }
    free_ms = [(first[n] - killed_at[n]) / MS for n in first]
    print(
        f"A1 {mode}: {len(first)} kills, free latency after kill p50 "
        f"{statistics.median(free_ms):.0f} ms, max {max(free_ms):.0f} ms"
    )
    assert len(first) == rounds * width
    assert not early, f"acquired before the server TTL ran out: {early}"
    assert not late, f"free later than TTL + {epsilon_ms:.0f} ms (ms past the TTL): {late}"


def _pause_round(case: Case, server, resource, names):
    """Holders (watchdog, fenced) acquire and write, then are stopped."""
    holders = [
        case.worker(
            "hold",
            server.url,
            names=n,
            kind="fenced",
            counters=False,
            watchdog_lease_ms=LEASE_MS,
            resource_url=resource.url,
        )
        for n in names
    ]
    tokens = []
    for h in holders:
        fields = h.expect("acquired")
        assert fields[1] == "0"
        tokens.append(int(fields[2]))
        assert h.ask("write")[1] == "1"
    for h in holders:
        h.signal(signal.SIGSTOP)
    return holders, tokens, now_ns()


@pytest.mark.sanitized
def test_A2_holder_paused_past_its_lease_is_fenced_out_and_told(case: Case):
    server, resource = case.redis(), case.redis()
    conn = server.conn()
    rounds, width = 5, 20
    callback_ms = []
    for r in range(rounds):
        names = [f"a2-{r}-{i}" for i in range(width)]
        holders, tokens, stopped = _pause_round(case, server, resource, names)
        # The waiters take an explicit lease, so nothing but the old holder could extend it.
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
        keys_before: Dict[str, List[bytes]] = {}
        for w, n, t in zip(waiters, names, tokens):
            fields = w.expect("acquired", 20)
            assert fields[1] == "0", f"{n}: the waiter did not get the lock of a paused holder"
            assert int(fields[2]) > t, f"{n}: token {fields[2]} is not above the paused {t}"
            assert w.ask("write")[1] == "1"
            keys_before[n] = cast(List[bytes], conn.hkeys(n))
        time.sleep(max(0.0, 3 * LEASE_MS / 1000 - (now_ns() - stopped) / 1e9))
        before: Dict[str, Tuple[List[bytes], int]] = {}
        for n in names:
            before[n] = (keys_before[n], conn.pttl(n))
        resumed = now_ns()
        for h in holders:
            h.signal(signal.SIGCONT)
        for h, n in zip(holders, names):
            assert h.ask("write")[1] == "0", f"{n}: the stale holder's write was accepted"
            rc = int(h.ask("release")[1])
            assert rc in (-11, -12), f"{n}: the stale holder's release returned {rc}"
            lost = h.expect("lost", 5)
            callback_ms.append((int(lost[2]) - resumed) / MS)
        time.sleep(0.2)  # a renewal from the old holder would land by now
        for n in names:
            keys, pttl = before[n]
            assert conn.hkeys(n) == keys, f"{n}: the new holder's key was modified"
            assert conn.pttl(n) <= pttl, f"{n}: the new holder's lease was extended"
        for w in waiters:
            assert w.ask("release")[1] == "0"
        for w in holders + waiters:
            w.send("quit")
            w.finish(10)
    h = checkers.read_history(case.log)
    overlapped = {v.split(":")[0] for v in checkers.overlaps(h, limit=10**6)}
    assert len(overlapped) == rounds * width, "the checker missed expected overlaps"
    fence = checkers.fencing(h)
    assert fence.violations == [] and fence.refused == rounds * width
    assert checkers.mutex_history(h) == []
    # As a lock whose leases may lapse the history is linearizable; as one whose may not, not.
    assert checkers.linearizable(h, lapses=True) == []
    assert checkers.linearizable(h), "the double grants were not found unlinearizable"
    print(
        f"A2: lost callback after SIGCONT p50 {statistics.median(callback_ms):.0f} ms, "
        f"max {max(callback_ms):.0f} ms"
    )
    assert max(callback_ms) <= RENEW_MS + slack(250), (
        f"lost callbacks after SIGCONT (ms): {callback_ms}"
    )


def test_A3_short_pause_keeps_the_lock(case: Case):
    server, resource = case.redis(), case.redis()
    rounds, width = 5, 20
    for r in range(rounds):
        names = [f"a3-{r}-{i}" for i in range(width)]
        holders, _, _ = _pause_round(case, server, resource, names)
        waiters = [
            case.worker("loop", server.url, names=n, threads=1, cycles=1, wait_ms=20000)
            for n in names
        ]
        time.sleep(0.5 * LEASE_MS / 1000)
        for h in holders:
            h.signal(signal.SIGCONT)
        time.sleep(0.3)
        for h, n in zip(holders, names):
            assert h.ask("held")[1] == "1", f"{n}: the holder lost its lock to a short pause"
            assert h.ask("write")[1] == "1"
        for h in holders:
            assert h.ask("release")[1] == "0"
            h.send("quit")
        for w in holders + waiters:
            w.finish(20)
    h = _assert_exclusive(case)
    assert not h.lost, f"lost callbacks: {h.lost}"
    assert len(h.holds) == 2 * rounds * width


def test_A4_cpu_starvation_does_not_stop_renewal(case: Case):
    server = case.redis()
    holder = case.worker("hold", server.url, names="a4", counters=False, watchdog_lease_ms=LEASE_MS)
    assert holder.expect("acquired")[1] == "0"
    # Try-once acquires all along: any success means the holder lost the lock.
    rival = case.worker(
        "loop", server.url, names="a4", threads=1, wait_ms=0, hold_us=0, duration_ms=10 * LEASE_MS
    )
    hogs = [
        subprocess.Popen(
            [
                sys.executable,
                "-c",
                "import time\nend = time.time() + 10\nwhile time.time() < end: pass",
            ]
        )
        for _ in range(4)
    ]
    try:
        holder.send(f"spin {10 * LEASE_MS}")  # the owner's own thread is busy as well
        holder.expect("spin", 30)
    finally:
        for p in hogs:
            p.kill()
            p.wait()
    assert holder.ask("held")[1] == "1"
    rival.finish(30)
    assert rival.summary()["acquired"] == 0, "another owner got the lock during starvation"
    assert rival.summary()["cycles"] > 10
    assert holder.ask("release")[1] == "0"
    h = _assert_exclusive(case)
    assert not h.lost
