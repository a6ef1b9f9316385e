"""Group S: semaphores under the fault harness. S1: 8 worker processes, two each on the C
library and the Python, Go and Java bindings, take permits of one permit-expirable semaphore of 3
for 20,000 sections while holders are SIGKILLed and relaunched:
never more than 3 inside at once (the permit checker), and no permit lost or created (the
semaphore's total stays 3). S2: a SIGKILLed holder's permit reaches a waiter within its lease
plus 200 ms. S3: with the replies of a plain semaphore's acquires and releases dropped now and
then, the background clean-ups leave the count exactly where it started. S4: with sync_replicas
a failover right after grants admits no extra holder."""

from __future__ import annotations

import random
import signal
import time
from typing import Any, Dict, List

import checkers
import pytest
from harness import Case, SentinelDeployment, slack, wait_until

MS = 1_000_000
PERMITS = 3
LEASE_MS = 1000
SECTIONS = 20_000
LANGS = ["c", "python", "go", "java"] * 2
EPSILON_MS = 200
BLACKHOLE = {"name": "blackhole"}


@pytest.fixture(autouse=True)
def _semaphores_have_permits(case: Case) -> None:
    """The closing linearizability check (conftest) judges the semaphores of these cases."""
    case.permits = PERMITS


def _total_permits(conn, name: str) -> int:
    """Available plus held: constant unless a permit was lost or created."""
    available = int(conn.get(name) or b"0")
    return available + conn.zcard("{" + name + "}:timeout")


def test_S1_eight_processes_never_exceed_three_permits_under_kills(case: Case):
    server = case.redis()
    conn = server.conn()
    rng = random.Random(case.seed)
    name = "s1-sem"
    common: Dict[str, Any] = dict(
        names=name,
        kind="permits",
        permits=PERMITS,
        counters=False,
        threads=1,
        hold_us=1000,
        wait_ms=20000,
        watchdog_lease_ms=LEASE_MS,
    )
    per_worker = SECTIONS // len(LANGS)

    def launch(lang: str):
        return case.worker("loop", server.url, lang=lang, cycles=per_worker, **common)

    workers = [launch(lang) for lang in LANGS]
    kills = 0
    deadline = time.monotonic() + 240
    while any(w.proc.poll() is None for w in workers) and time.monotonic() < deadline:
        time.sleep(rng.uniform(0.3, 1.0))
        alive = [i for i, w in enumerate(workers) if w.proc.poll() is None]
        if not alive or kills >= 8:
            continue
        i = rng.choice(alive)
        workers[i].kill()
        kills += 1
        # Its share is run again by a new process of its language: the sections still add up.
        workers[i] = launch(LANGS[i])
    for w in workers:
        w.finish(120)
    h = checkers.read_history(case.log, case.ended())
    by_lang = {lang: 0 for lang in LANGS}
    pids = {w.pid: LANGS[i % len(LANGS)] for i, w in enumerate(workers)}
    for hold in h.holds:
        if hold.pid in pids:
            by_lang[pids[hold.pid]] += 1
    assert all(n > 0 for n in by_lang.values()), f"a language took no permit: {by_lang}"
    granted = [hold for hold in h.holds if hold.name == name]
    assert len(granted) >= SECTIONS, f"only {len(granted)} sections"
    assert checkers.over_permits(h, PERMITS) == []
    assert checkers.linearizable(h, PERMITS) == []
    most = checkers.most_inside(h, name)
    assert most == PERMITS, f"at most {most} inside at once: the permits were not all used"
    failed = [f for f in h.failed_acquires if f[1] == name]
    assert failed == [], failed[:5]
    # Every release of a surviving worker succeeded.
    assert [c for c in h.calls if c[0] == "rel" and c[4] != 0] == []
    # The killed holders' permits are still in the set until reclaimed; the total is exact.
    assert _total_permits(conn, name) == PERMITS
    time.sleep(LEASE_MS / 1000 + 0.3)
    probe = case.worker("loop", server.url, cycles=1, **common)
    probe.finish(30)
    assert conn.zcard("{" + name + "}:timeout") == 0, "a dead holder's permit was not reclaimed"
    assert int(conn.get(name) or b"-1") == PERMITS, "the count did not return to 3"
    print(
        f"S1: {len(granted)} sections by {len(case.workers)} processes ({by_lang} by the last "
        f"of each language), {kills} SIGKILLs, at most {most} inside at once, {PERMITS} "
        f"permits at the end"
    )


def test_S2_a_killed_holders_permit_comes_back_within_its_lease(case: Case):
    server = case.redis()
    rounds: List[float] = []
    for r in range(5):
        name = f"s2-sem-{r}"
        # The victim's permit has the short lease; the others outlive the round.
        holders = [
            case.worker(
                "hold",
                server.url,
                names=name,
                kind="permits",
                permits=PERMITS,
                counters=False,
                lease_ms=LEASE_MS if i == 0 else 60000,
            )
            for i in range(PERMITS)
        ]
        for holder in holders:
            assert holder.expect("acquired")[1] == "0"
        waiter = case.worker(
            "hold",
            server.url,
            names=name,
            kind="permits",
            permits=PERMITS,
            counters=False,
            lease_ms=LEASE_MS,
            wait_ms=10000,
            poll_cap_ms=30000,  # no periodic retry: only the lease's end brings the permit back
            defer_acquire=1,
        )
        stdin = waiter.proc.stdin
        assert stdin is not None
        stdin.write("acquire\n")
        stdin.flush()
        time.sleep(0.1)
        victim = holders[0]
        killed = victim.kill()
        fields = waiter.expect("acquired", timeout=10)
        assert fields[1] == "0", f"the waiter did not get the permit: {fields}"
        h = checkers.read_history(case.log, case.ended())
        assert checkers.linearizable(h, PERMITS) == []
        mine = [hold for hold in h.holds if hold.name == name]
        taken = max(hold.start for hold in mine if hold.pid == victim.pid)
        came_back = max(hold.start for hold in mine if hold.pid == waiter.pid)
        # The lease runs from when the holder's acquire was sent at the latest.
        late_ms = (came_back - taken) / MS - LEASE_MS
        assert (came_back - killed) / MS < LEASE_MS + slack(EPSILON_MS), (
            f"the permit came back {(came_back - killed) / MS:.0f} ms after the kill"
        )
        rounds.append(late_ms)
        for holder in holders:
            if holder is not victim:
                assert holder.ask("release")[1] == "0"
        assert waiter.ask("release")[1] == "0"
    print(f"S2: permits came back {['%.0f' % x for x in rounds]} ms after their lease ran out")
    assert max(rounds) < slack(EPSILON_MS)


S3_PERMITS = 3
S3_TIMEOUT_MS = 200


def test_S3_lost_acquire_and_release_replies_never_leak_or_create_a_permit(case: Case):
    """Plain semaphore of 3 through the fault proxy, whose replies are dropped in bursts longer
    than the command timeout: acquires and releases fail with ECONN while applied or not. Their
    clean-ups (the undo of an acquire, the resend of a release under its latch) run in the
    background, so at the end the count is 3 again: no permit leaked, none created."""
    server = case.redis()
    proxy = case.proxy(server)
    conn = server.conn()
    rng = random.Random(case.seed)
    name = "s3-sem"
    workers = [
        case.worker(
            "loop",
            proxy.url,
            names=name,
            kind="semaphore",
            permits=S3_PERMITS,
            counters=False,
            threads=2,
            hold_us=2000,
            # A waiting acquire retries a lost reply within its wait; a try-once one fails.
            wait_ms=1000 if i % 2 else 0,
            command_timeout_ms=S3_TIMEOUT_MS,
            duration_ms=22000,
        )
        for i in range(4)
    ]
    time.sleep(1.0)
    bursts = 0
    faults_end = time.monotonic() + 15
    while time.monotonic() < faults_end:
        proxy.set("command", BLACKHOLE, "down")  # requests reach Redis, replies never return
        time.sleep(rng.uniform(0.25, 0.6))
        # The connections that lost replies are dead (faultproxy.py): resetting them spares
        # their clients the wait for the command timeout.
        proxy.control(op="reset", kind="command")
        proxy.pass_all()
        bursts += 1
        time.sleep(rng.uniform(0.5, 1.2))
    for w in workers:
        w.finish(60)
    h = checkers.read_history(case.log, case.ended())
    lost_acquires = sum(1 for op, _, _, _, rc in h.calls if op == "acq" and rc == -5)
    lost_releases = sum(1 for op, _, _, _, rc in h.calls if op == "rel" and rc == -5)
    granted = [hold for hold in h.holds if hold.name == name]
    print(
        f"S3: {len(granted)} sections, {bursts} bursts of lost replies: {lost_acquires} "
        f"acquires and {lost_releases} releases failed with ECONN; workers' return codes "
        f"{[{k: v for k, v in w.summary().items() if k.startswith('-')} for w in workers]}"
    )
    assert lost_acquires >= 5 and lost_releases >= 1, "too few lost replies to test anything"
    assert checkers.over_permits(h, S3_PERMITS) == []
    assert checkers.linearizable(h, S3_PERMITS) == []
    # The clients closed after their clean-ups ran: the count is exact, now and later.
    assert int(conn.get(name) or b"-1") == S3_PERMITS, f"count {conn.get(name)!r}, not 3"
    assert not wait_until(lambda: int(conn.get(name) or b"-1") != S3_PERMITS, 1.5), (
        f"the count moved after the end: {conn.get(name)!r}"
    )


def test_S4_a_failover_right_after_a_grant_never_admits_more_holders_than_permits(case: Case):
    """With sync_replicas=1 a permit is reported taken only once the replica has it: the
    replica's link lags 300 ms, the master is SIGKILLed right after two grants, and on the
    promoted replica no further holder gets in while the two hold their permits (without WAIT
    the lagging replica would have both permits free)."""
    links: List[Any] = []
    made: List[Any] = []

    def make_redis(*config: str):
        # The replica reaches the master through a fault proxy, to make its link lag.
        if "--replicaof" in config:
            links.append(case.proxy(made[0]))
            at = config.index("--replicaof") + 2
            config = config[:at] + (str(links[-1].port),) + config[at + 1 :]
        server = case.redis(*config)
        made.append(server)
        return server

    dep = SentinelDeployment(case, make_redis=make_redis)
    permits = 2
    case.permits = permits
    name = "s4-sem"
    url = dep.url + "?sync_replicas=1&sync_timeout_ms=1500"
    common: Dict[str, Any] = dict(
        names=name, kind="permits", permits=permits, counters=False, lease_ms=-1
    )
    links[0].set("all", {"name": "delay", "ms": 300}, "down")
    holders = [case.worker("hold", url, wait_ms=10000, **common) for _ in range(permits)]
    for holder in holders:
        assert holder.expect("acquired", timeout=20)[1] == "0"
    old = dep.master
    old.kill(signal.SIGKILL)
    assert wait_until(lambda: dep.master_port() not in (None, old.port), 15), (
        "the sentinels did not promote the replica"
    )
    late = [
        case.worker("hold", url, wait_ms=3000, defer_acquire=1, **common) for _ in range(permits)
    ]
    for worker in late:
        rc = worker.ask("acquire", timeout=30)[1]
        assert rc in ("0", "-2"), f"the late acquire failed otherwise: {rc}"
    for worker in holders + late:
        worker.ask("release", timeout=30)
    h = checkers.read_history(case.log, case.ended())
    assert checkers.over_permits(h, permits) == []
    assert checkers.linearizable(h, permits) == []
    assert len([x for x in h.holds if x.name == name]) >= permits
