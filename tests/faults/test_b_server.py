"""FAULTS.md group B: faults of a lone Redis master (restarts, killed connections, pauses,
busy scripts, full memory, flushed scripts, wrong server or credentials). B5 is in
test_faultproxy.py."""

from __future__ import annotations

import statistics
import threading
import time
from pathlib import Path
from typing import Optional

import checkers
import pytest
import redis
import rlock
from harness import (
    CYCLE_CAP_S,
    Case,
    Chaos,
    cycle_share,
    min_cycles,
    now_ns,
    slack,
    wait_until,
)

LEASE_MS = 1000
RENEW_MS = LEASE_MS / 3
MS = 1_000_000


def _errors(workers) -> dict:
    total: dict = {}
    for w in workers:
        for k, v in w.summary().items():
            total[k] = total.get(k, 0) + v
    return total


@pytest.mark.sanitized
def test_B1_restart_without_persistence_is_reported_and_fenced(case: Case):
    server, resource = case.redis(), case.redis()
    holder = case.worker(
        "hold",
        server.url,
        names="b1",
        kind="fenced",
        counters=False,
        watchdog_lease_ms=LEASE_MS,
        resource_url=resource.url,
    )
    fields = holder.expect("acquired")
    assert fields[1] == "0"
    old_token = int(fields[2])
    assert holder.ask("write")[1] == "1"
    waiters = [
        case.worker(
            "loop",
            server.url,
            names="b1",
            threads=3,
            cycles=2,
            wait_ms=20000,
            resource_url=resource.url,
            watchdog_lease_ms=LEASE_MS,
        )
    ]
    time.sleep(0.3)  # the waiters are queued
    up = server.restart("kill")
    lost = holder.expect("lost", 5)
    lost_ms = (int(lost[2]) - up) / MS
    assert lost[1] == "1", f"lost reason {lost[1]}, expected 1 (gone)"
    waiters[0].finish(20)
    h = checkers.read_history(case.log)
    firsts = sorted(x.start for x in h.holds if x.owner.split(".")[0] != str(holder.pid))
    assert len(firsts) == 6
    first_ms = (firsts[0] - up) / MS
    new_tokens = [x.token for x in h.holds if x.token and x.owner.split(".")[0] != str(holder.pid)]
    assert min(new_tokens) > old_token, "tokens after the restart are not above the old holder's"
    assert holder.ask("write")[1] == "0", "the old holder's write was accepted after the restart"
    assert int(holder.ask("release")[1]) == -11
    summary = _errors(waiters)
    assert summary["errors"] == 0, f"errors surfaced to the waiters: {summary}"
    print(
        f"B1: lost callback {lost_ms:.0f} ms after the server was up, first waiter in "
        f"{first_ms:.0f} ms"
    )
    assert lost_ms <= RENEW_MS + slack(250)
    assert first_ms <= slack(1000)
    # The restart lost the holder's lock, so a waiter got in while the old holder was still
    # inside (expected: only fencing can stop it); among the waiters nothing overlaps.
    h = checkers.read_history(case.log)
    overlaps = checkers.overlaps(h)
    assert overlaps and all(f" {holder.pid}.0 " in v for v in overlaps), overlaps
    assert checkers.fencing(h).violations == []
    assert checkers.mutex_history(h) == [] and checkers.linearizable(h, lapses=True) == []
    h.holds = [x for x in h.holds if x.pid != holder.pid]
    assert checkers.overlaps(h) == [] and checkers.lost_updates(h, case.counters) == []


@pytest.mark.parametrize("how", ["shutdown", "kill"])
def test_B2_restart_with_appendfsync_always_keeps_locks_and_tokens(case: Case, how: str):
    server = case.redis("--appendonly", "yes", "--appendfsync", "always")
    resource = case.redis()
    workers = [
        case.worker(
            "loop",
            server.url,
            names=["b2a", "b2b"],
            threads=2,
            kind="fenced",
            duration_ms=11000,
            wait_ms=5000,
            hold_us=3000,
            watchdog_lease_ms=2000,
            resource_url=resource.url,
        )
        for _ in range(4)
    ]
    holder = case.worker(
        "hold", server.url, names="b2-held", kind="fenced", counters=False, watchdog_lease_ms=2000
    )
    assert holder.expect("acquired")[1] == "0"
    time.sleep(0.5)
    downtimes = []
    for _ in range(25):
        before = now_ns()
        downtimes.append((server.restart(how) - before) / MS)
        time.sleep(0.4)  # renewals get a chance between restarts
    for w in workers:
        w.finish(40)
    assert holder.ask("held")[1] == "1", (
        "the holder lost its lock to restarts shorter than its lease"
    )
    assert not [line for line in holder.lines if line.startswith("lost")]
    assert holder.ask("release")[1] == "0"
    h = checkers.read_history(case.log)
    checkers.assert_clean_run(h, case.counters)
    total = _errors(workers)
    print(
        f"B2 {how}: 25 restarts of {statistics.median(downtimes):.0f} ms (max "
        f"{max(downtimes):.0f} ms), {total}"
    )
    assert total["acquired"] > 200


@pytest.mark.sanitized
@pytest.mark.threads
def test_B3_killed_command_connections_never_admit_two_owners(case: Case, tls: Optional[Path]):
    # [tls]: the workers connect over TLS (the kills and watches use the plaintext port), so
    # connections also die mid-handshake and mid-record. Every kill costs each worker new
    # handshakes, so a loop makes fewer cycles per second, how many fewer depends on the machine:
    # each thread loops until it made its share of the cycles the case needs (and a tenth
    # more) and for at least 8 s, up to CYCLE_CAP_S; a slow machine takes longer, it does not
    # fail.
    server = case.redis(tls=tls)
    watch = checkers.TtlWatch(server.port)
    needed = min_cycles(10_000)
    threads = 16
    workers = [
        case.worker(
            "loop",
            server.url,
            names=["b3a", "b3b"],
            threads=threads // 4,
            duration_ms=CYCLE_CAP_S * 1000,
            min_duration_ms=8000,
            cycles=cycle_share(needed, threads),
            wait_ms=3000,
            hold_us=300,
            lease_ms=LEASE_MS,
            command_timeout_ms=1000,
            # Kills every few ms may cut many first connects in a row (over TLS, handshakes).
            connect_retry_ms=30000,
        )
        for _ in range(4)
    ]
    chaos = Chaos(
        server.port,
        lambda c, _: c.client_kill_filter(_type="normal", skipme=True),
        0.001,
        0.020,
        case.seed,
    )
    started = time.monotonic()
    try:
        for w in workers:
            w.finish(CYCLE_CAP_S + 30)
    finally:
        kills = chaos.stop()
    took = time.monotonic() - started
    no_ttl = watch.stop()
    h = checkers.read_history(case.log)
    checkers.assert_clean_run(h, case.counters)
    total = _errors(workers)
    print(
        f"B3{' over TLS' if tls else ''}: {kills} CLIENT KILLs in {took:.1f} s, "
        f"{total['cycles'] / took:.0f} cycles/s, {total}"
    )
    assert total["cycles"] >= needed, (
        f"{total['cycles']} cycles when the case needs {needed}: the loops hit the {CYCLE_CAP_S} s "
        f"cap ({total})"
    )
    # A connection killed mid-handshake or mid-record is a connection error (transient: waits
    # retry it), never a TLS failure (RLOCK_ETLS, -25: a bad certificate, not retried).
    assert "-25" not in total, total
    # Every call returns within its bound: wait + command timeout (+ a retry) + slack.
    assert checkers.slow_calls(h, 3000 + 2 * 1000 + slack(250, handshakes=2 if tls else 0)) == []
    assert no_ttl == [], f"keys without expiry: {no_ttl[:5]}"
    conn = server.conn()

    def lock_keys():
        return [
            k for k in checkers.library_keys(conn) if not k.startswith(b"redisson_unlock_latch:")
        ]

    assert wait_until(lambda: not lock_keys(), (LEASE_MS + slack(200)) / 1000), (
        f"orphan keys after the lease: {lock_keys()[:10]}"
    )
    # Release results (for retries) expire after twice the command timeout.
    assert wait_until(lambda: not checkers.library_keys(conn), (2 * 1000 + slack(200)) / 1000), (
        f"unlock latches outlived their expiry: {checkers.library_keys(conn)[:10]}"
    )


def test_B4_waiters_come_back_after_their_subscriptions_are_killed(case: Case):
    server = case.redis()
    conn = server.conn()
    holder = case.worker("hold", server.url, names="b4", counters=False, lease_ms=30000)
    assert holder.expect("acquired")[1] == "0"
    # The poll cap is long, so only resubscribing (not polling) can wake them in time.
    waiters = [
        case.worker(
            "loop",
            server.url,
            names="b4",
            threads=5,
            cycles=1,
            wait_ms=30000,
            lease_ms=30000,
            hold_us=1000,
            poll_cap_ms=20000,
        )
        for _ in range(2)
    ]
    assert wait_until(lambda: conn.pubsub_numsub("redisson_lock__channel:{b4}")[0][1] == 2, 5)
    assert conn.client_kill_filter(_type="pubsub") == 2
    time.sleep(0.05)
    assert holder.ask("release")[1] == "0"
    for w in waiters:
        w.finish(20)
    h = checkers.read_history(case.log)
    checkers.assert_clean_run(h, case.counters)
    holds = sorted(h.holds, key=lambda x: x.start)
    gaps = [(b.start - a.rel_ret) / MS for a, b in zip(holds, holds[1:])]
    print(
        f"B4: hand-off after the kill p50 {statistics.median(gaps):.1f} ms, "
        f"max {max(gaps):.1f} ms over {len(gaps)}"
    )
    assert len(holds) == 11
    assert max(gaps) <= slack(1000), f"hand-offs (ms): {gaps}"


@pytest.mark.parametrize("what", ["WRITE", "ALL"])
def test_B6_client_pause_lets_the_lease_run_out_and_the_holder_knows(case: Case, what: str):
    server, resource = case.redis(), case.redis()
    conn = server.conn()
    holder = case.worker(
        "hold",
        server.url,
        names="b6",
        kind="fenced",
        counters=False,
        watchdog_lease_ms=LEASE_MS,
        resource_url=resource.url,
    )
    assert holder.expect("acquired")[1] == "0"
    assert holder.ask("write")[1] == "1"
    waiter = case.worker(
        "hold",
        server.url,
        names="b6",
        kind="fenced",
        counters=False,
        lease_ms=30000,
        wait_ms=10000,
        resource_url=resource.url,
    )
    time.sleep(0.2)
    paused = now_ns()
    conn.execute_command("CLIENT", "PAUSE", 2000, what)
    # Readers see the lease run out on time (only WRITE keeps reads going).
    if what == "WRITE":
        assert wait_until(lambda: conn.exists("b6") == 0, (LEASE_MS + slack(200)) / 1000)
    time.sleep(max(0.0, (paused + (LEASE_MS + 50) * MS - now_ns()) / 1e9))
    assert holder.ask("held")[1] == "0", "the holder still claims the lock past its validity"
    lost = holder.expect("lost", 1)
    assert (int(lost[2]) - paused) / MS <= LEASE_MS + slack(50)
    fields = waiter.expect("acquired", 10)
    assert fields[1] == "0"
    assert waiter.ask("write")[1] == "1"
    assert holder.ask("write")[1] == "0", "the paused-out holder's write was accepted"
    assert int(holder.ask("release")[1]) == -11
    assert waiter.ask("release")[1] == "0"
    h = checkers.read_history(case.log)
    assert checkers.fencing(h).violations == []
    assert checkers.mutex_history(h) == [] and checkers.linearizable(h, lapses=True) == []


def test_B8_busy_script_is_never_an_acquire_and_recovery_is_quick(case: Case):
    server = case.redis("--busy-reply-threshold", "500")
    workers = [
        case.worker(
            "loop",
            server.url,
            names="b8",
            threads=2,
            duration_ms=9000,
            wait_ms=1000,
            lease_ms=LEASE_MS,
            command_timeout_ms=1000,
        )
        for _ in range(2)
    ]
    time.sleep(1.0)

    def busy() -> None:
        try:
            server.conn(timeout=30).eval("while true do end", 0)
        except redis.RedisError:
            pass  # killed

    t = threading.Thread(target=busy)
    busy_from = now_ns()
    t.start()
    time.sleep(6)
    killer = server.conn()
    assert wait_until(lambda: _script_kill(killer), 5)
    killed = now_ns()
    t.join(10)
    for w in workers:
        w.finish(30)
    h = checkers.read_history(case.log)
    checkers.assert_clean_run(h, case.counters)
    # Nothing can be granted while the script runs: an acquire that returned ok after the
    # script started and had been sent before the kill would be a false one.
    false = [x for x in h.holds if x.acq_call > busy_from + 50 * MS and x.start < killed]
    assert not false, f"acquires reported ok during the busy script: {false[:3]}"
    after = [x.start for x in h.holds if x.start > killed]
    assert after, "nobody acquired after SCRIPT KILL"
    recovery_ms = (min(after) - killed) / MS
    codes = _errors(workers)
    print(f"B8: first acquire {recovery_ms:.0f} ms after SCRIPT KILL; {codes}")
    assert recovery_ms <= slack(1000)


def _script_kill(conn) -> bool:
    try:
        conn.script_kill()
        return True
    except redis.ResponseError:
        return False  # NOTBUSY: the script has not started yet


def test_B9_full_memory_is_a_typed_error_and_unlock_still_works(case: Case):
    server = case.redis("--maxmemory", "2mb", "--maxmemory-policy", "noeviction")
    conn = server.conn()
    client = rlock.Client(server.url)
    try:
        held = client.lock("b9-held")
        assert held.acquire(blocking=False)
        i = 0
        for size in (1000, 100, 10, 1):  # until not even a tiny write fits
            with pytest.raises(redis.exceptions.OutOfMemoryError):
                while i < 100_000:
                    conn.set(f"filler:{i}", "x" * size)
                    i += 1
        other = client.lock("b9-other")
        start = time.monotonic()
        with pytest.raises(rlock.RedisError) as err:
            other.acquire(timeout=5)
        took = time.monotonic() - start
        assert err.value.code == -17, err.value  # RLOCK_EOOM
        assert "maxmemory" in str(err.value) or "OOM" in str(err.value)
        assert took < slack(500) / 1000, f"the OOM error took {took:.2f} s (retried?)"
        held.release()
        assert conn.exists("b9-held") == 0
        assert conn.exists("b9-other") == 0
        assert [k for k in conn.scan_iter("b9*") if conn.pttl(k) == -1] == []
    finally:
        client.close()


def test_B10_evicted_lock_is_reported_and_a_lost_counter_starts_a_new_epoch(case: Case):
    server = case.redis("--maxmemory", "3mb", "--maxmemory-policy", "volatile-ttl")
    resource = case.redis()
    conn = server.conn()
    holder = case.worker(
        "hold",
        server.url,
        names="b10",
        kind="fenced",
        counters=False,
        watchdog_lease_ms=LEASE_MS,
        resource_url=resource.url,
    )
    fields = holder.expect("acquired")
    old_token = int(fields[2])
    assert holder.ask("write")[1] == "1"
    # Volatile keys with long TTLs push the lock key (the shortest TTL) out.
    i = 0
    while conn.exists("b10") and i < 20_000:
        conn.set(f"filler:{i}", "x" * 1000, ex=3600)
        i += 1
    evicted = now_ns()
    assert not conn.exists("b10"), "the lock key was not evicted"
    lost = holder.expect("lost", 3)
    assert lost[1] == "1"
    assert (int(lost[2]) - evicted) / MS <= RENEW_MS + slack(250)
    conn.delete("redisson_lock_token:{b10}")  # an allkeys-* policy would evict it too
    conn.flushdb()  # room for the next holder
    waiter = case.worker(
        "hold",
        server.url,
        names="b10",
        kind="fenced",
        counters=False,
        lease_ms=30000,
        resource_url=resource.url,
    )
    fields = waiter.expect("acquired")
    assert fields[1] == "0" and int(fields[2]) > old_token, (fields, old_token)
    assert waiter.ask("write")[1] == "1"
    assert holder.ask("write")[1] == "0"
    assert waiter.ask("release")[1] == "0"


@pytest.mark.sanitized
@pytest.mark.threads
def test_B11_script_flushes_are_invisible(case: Case):
    # The loops run until they made the cycles the case needs, and for at least 6 s so that a
    # dozen flushes land among them; up to CYCLE_CAP_S.
    server = case.redis()
    needed = min_cycles(10_000)
    workers = [
        case.worker(
            "loop",
            server.url,
            names=["b11a", "b11b"],
            threads=4,
            duration_ms=CYCLE_CAP_S * 1000,
            min_duration_ms=6000,
            cycles=cycle_share(needed, 12),
            wait_ms=5000,
            hold_us=200,
        )
        for _ in range(3)
    ]
    chaos = Chaos(server.port, lambda c, _: c.script_flush(), 0.5, 0.5, case.seed)
    started = time.monotonic()
    try:
        for w in workers:
            w.finish(CYCLE_CAP_S + 30)
    finally:
        flushes = chaos.stop()
    total = _errors(workers)
    print(f"B11: {flushes} SCRIPT FLUSHes in {time.monotonic() - started:.1f} s, {total}")
    assert flushes >= 8
    assert total["errors"] == 0, total
    assert total["cycles"] >= needed, (
        f"{total['cycles']} cycles when the case needs {needed}: the loops hit the {CYCLE_CAP_S} s "
        f"cap ({total})"
    )
    checkers.assert_clean_run(checkers.read_history(case.log), case.counters)


def test_B13_a_replica_is_refused_never_acquired(case: Case):
    master = case.redis()
    replica = case.redis("--replicaof", "127.0.0.1", str(master.port))
    client = rlock.Client(replica.url)
    try:
        lock = client.lock("b13")
        with pytest.raises(rlock.RedisError) as err:
            lock.acquire(timeout=2)
        assert err.value.code == -19, err.value  # RLOCK_EREADONLY
        assert not lock.held()
        assert master.conn().exists("b13") == 0
    finally:
        client.close()


def test_B14_eval_renamed_away_fails_fast_as_unsupported(case: Case):
    server = case.redis("--rename-command", "EVAL", "", "--rename-command", "EVALSHA", "")
    start = time.monotonic()
    with pytest.raises(rlock.LockError) as err:
        rlock.Client(server.url)
    took = time.monotonic() - start
    assert err.value.code == -15, err.value  # RLOCK_EUNSUPPORTED
    assert took < slack(2000) / 1000
