"""FAULTS.md group G (soak) and the replication self-test C1: a mixed workload of every lock
kind under a seeded schedule of faults, and a failover that loses a lock."""

from __future__ import annotations

import os
import random
import signal
import time

import checkers
import pytest
from harness import Case, now_ns, slack, wait_until

MS = 1_000_000
LEASE_MS = 1000
SOAK_S = float(os.environ.get("RLOCK_SOAK_SECONDS", "300"))


def test_C1_expected_violation_failover_without_wait_double_grants(case: Case):
    """The master's writes stop reaching its replica (the proxy between them blackholes), a
    client locks on the master, the master dies and the replica is promoted: a second client
    gets the same lock. Without WAIT this cannot be prevented; the checker must flag it and the
    fenced resource must refuse the first holder's late write."""
    master, resource = case.redis(), case.redis()
    link = case.proxy(master)
    replica = case.redis(
        "--replicaof", "127.0.0.1", str(link.port), "--repl-diskless-sync-delay", "0"
    )
    rconn = replica.conn()
    assert wait_until(lambda: rconn.info("replication")["master_link_status"] == "up", 10)
    link.set("all", {"name": "blackhole"})
    first = case.worker(
        "hold",
        master.url,
        names="c1",
        kind="fenced",
        counters=False,
        lease_ms=30000,
        resource_url=resource.url,
    )
    fields = first.expect("acquired")
    assert fields[1] == "0"
    assert master.conn().execute_command("WAIT", 1, 200) == 0, "the replica acknowledged"
    assert first.ask("write")[1] == "1"
    master.kill()
    rconn.replicaof("NO", "ONE")
    second = case.worker(
        "hold",
        replica.url,
        names="c1",
        kind="fenced",
        counters=False,
        lease_ms=30000,
        resource_url=resource.url,
    )
    fields = second.expect("acquired")
    assert fields[1] == "0", "the promoted replica did not grant the lost lock"
    assert second.ask("write")[1] == "1"
    assert first.ask("write")[1] == "0", "the first holder's late write was accepted"
    second.ask("release")
    h = checkers.read_history(case.log)
    assert [v for v in checkers.overlaps(h) if v.startswith("c1:")], "double grant not flagged"
    assert [v for v in checkers.linearizable(h) if v.startswith("c1:")], "not found unlinearizable"
    assert checkers.fencing(h).violations == []


class Soak:
    """The G1 workload: workers of every kind through a fault proxy, relaunched when killed."""

    def __init__(self, case: Case, seconds: float) -> None:
        self.case = case
        self.server = case.redis("--appendonly", "yes", "--appendfsync", "always")
        self.resource = case.redis()
        self.proxy = case.proxy(self.server)
        self.end = time.monotonic() + seconds
        self.paused: dict = {}  # pid -> [(from_ns, to_ns)]
        common = dict(
            watchdog_lease_ms=LEASE_MS, command_timeout_ms=1000, wait_ms=5000, hold_us=2000
        )
        self.configs = [
            dict(
                names=["g-x0", "g-x1", "g-x2"],
                kind="fenced",
                threads=3,
                resource_url=self.resource.url,
                **common,
            ),
            dict(
                names=["g-x0", "g-x1", "g-x2"],
                kind="fenced",
                threads=3,
                resource_url=self.resource.url,
                **common,
            ),
            dict(names=["g-f0", "g-f1"], kind="fair", threads=2, **common),
            dict(names=["g-f0", "g-f1"], kind="fair", threads=2, **common),
            dict(names=["g-rw"], kind="rw", threads=3, **common),
            dict(names=["g-rw"], kind="rw", threads=3, **common),
            dict(names=["g-ma+g-mb", "g-mb+g-ma"], multi=1, threads=2, **common),
        ]
        self.workers = [self.launch(c) for c in self.configs]
        self.python = case.worker(
            "loop",
            self.proxy.url,
            lang="python",
            names=["g-x0", "g-x1"],
            kind="fenced",
            threads=2,
            resource_url=self.resource.url,
            duration_ms=int(seconds * 1000),
            watchdog_lease_ms=LEASE_MS,
            wait_ms=5000,
            hold_us=2000,
        )

    def launch(self, config: dict):
        left_ms = int((self.end - time.monotonic()) * 1000)
        return self.case.worker("loop", self.proxy.url, duration_ms=max(left_ms, 1), **config)

    def fault(self, rng: random.Random) -> str:
        kind = rng.choice(
            [
                "kill",
                "stop",
                "restart",
                "client_kill",
                "pubsub_kill",
                "pause",
                "latency",
                "sub_blackhole",
            ]
        )
        conn = self.server.conn()
        try:
            if kind == "kill":  # A1
                i = rng.randrange(len(self.workers))
                self.workers[i].kill()
                self.workers[i] = self.launch(self.configs[i])
            elif kind == "stop":  # A2: longer than the lease, so its locks are lost
                w = rng.choice(self.workers)
                start = now_ns()
                w.signal(signal.SIGSTOP)
                time.sleep(1.5 * LEASE_MS / 1000)
                w.signal(signal.SIGCONT)
                self.paused.setdefault(w.pid, []).append((start, now_ns()))
            elif kind == "restart":  # B1/B2 with AOF
                self.server.restart(rng.choice(["kill", "shutdown"]))
            elif kind == "client_kill":  # B3
                for _ in range(5):
                    conn.client_kill_filter(_type="normal", skipme=True)
                    time.sleep(0.02)
            elif kind == "pubsub_kill":  # B4
                conn.client_kill_filter(_type="pubsub", skipme=True)
            elif kind == "pause":  # B6
                conn.execute_command("CLIENT", "PAUSE", 500, "WRITE")
            elif kind == "latency":  # D3
                self.proxy.set("all", {"name": "delay", "ms": 50, "jitter": 25})
                time.sleep(2)
                self.proxy.pass_all()
            elif kind == "sub_blackhole":  # D4
                self.proxy.set("pubsub", {"name": "blackhole"})
                time.sleep(2)
                self.proxy.pass_all()
        finally:
            conn.close()
        return kind

    def paused_owners(self, holds):
        """Owners with a hold (from its acquire call to its end) that a stop overlapped."""
        owners = set()
        for hold in holds:
            for start, end in self.paused.get(hold.pid, []):
                if hold.acq_call < end and hold.end > start:
                    owners.add(f" {hold.owner} ")
        return owners


@pytest.mark.timeout(SOAK_S + 300)
def test_G1_soak_mixed_kinds_under_seeded_faults(case: Case):
    soak = Soak(case, SOAK_S)
    rng = random.Random(case.seed)
    faults = []
    while time.monotonic() < soak.end - 12:
        time.sleep(rng.uniform(2, 10) * min(1.0, SOAK_S / 300))
        faults.append(soak.fault(rng))
    for w in soak.workers + [soak.python]:
        w.finish(60)
    h = checkers.read_history(case.log, case.ended())
    owners = soak.paused_owners(h.holds)
    overlaps = checkers.overlaps(h, limit=10**6)
    unexpected = [v for v in overlaps if not any(o in v for o in owners)]
    assert unexpected == [], unexpected[:5]
    suspect = {v.split(":")[0] for v in overlaps}
    lost = [v for v in checkers.lost_updates(h, case.counters) if v.split(":")[0] not in suspect]
    assert lost == [], lost
    # A holder stopped past its lease may also stamp an acquire's return after the lease ran
    # out (the grant was earlier): the same exemption as for overlaps.
    history = [v for v in checkers.mutex_history(h, limit=10**6) if not any(o in v for o in owners)]
    assert history == [], history[:5]
    fence = checkers.fencing(h)
    assert fence.violations == []
    # The stopped holders' leases ran out: as a lock whose leases may lapse, still linearizable.
    assert checkers.linearizable(h, lapses=True) == []
    # No call outlives its bound: the wait, two command timeouts, and the longest fault.
    assert checkers.slow_calls(h, 5000 + 2 * 1000 + 2000 + 1500 + slack(50)) == []
    summaries = [w.summary() for w in soak.workers if w.ended_ns is None]
    rss = [(s["rss_end_kb"] - s["rss_warm_kb"]) / s["rss_warm_kb"] for s in summaries]
    heap = [(s["heap_end_kb"] - s["heap_warm_kb"]) / s["heap_warm_kb"] for s in summaries]
    cycles = sum(s["cycles"] for s in summaries)
    print(
        f"G1: {SOAK_S:.0f} s, faults {faults}, {len(h.holds)} sections, {cycles} cycles in "
        f"surviving workers, {len(overlaps)} expected overlaps (stopped holders), "
        f"{fence.refused} stale writes refused, growth max: heap {max(heap):.1%}, "
        f"RSS {max(rss):.1%}"
    )
    # A leak shows in the heap (bytes allocated and not freed). RSS also moves with how the
    # allocator's arenas lie after fault bursts: 12 % of a 6 MB worker failed a CI run, and its
    # replay saw 6 % RSS beside 0.4 % heap, so RSS only catches gross growth.
    assert max(heap) < 0.10, heap
    assert max(rss) < 0.25, rss
    growth = [w.descriptor_growth() for w in soak.workers if w.ended_ns is None]
    assert growth == [None] * len(growth), growth
    conn = soak.server.conn()
    assert wait_until(lambda: not checkers.library_keys(conn), LEASE_MS / 1000 + 5), (
        checkers.library_keys(conn)[:5]
    )
