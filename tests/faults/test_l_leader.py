"""Leader election under faults (issue 35, docs/leader.md): candidates in three processes (the
C worker's `--kind election`: each thread campaigns, leads up to five sections that it makes
only while rlock_election_is_leader says so, and resigns) while the leader is killed, its
network is cut, the server restarts, or Sentinel fails the master over. Checked: one leader at
a time, each term led once, terms that grow, and a store that never accepted a stale term."""

from __future__ import annotations

import signal
import time
from collections import Counter
from typing import List, Optional

import checkers
from harness import Case, SentinelDeployment, now_ns, slack, wait_until

LEASE_MS = 3000
MS = 1_000_000
BLACKHOLE = {"name": "blackhole"}


def _candidates(
    case: Case, urls: List[str], resource_url: str, duration_ms: int, sections: int
) -> list:
    """Three processes of two candidates each. A leadership lasts `sections` sections (about
    1 ms each), or until it is lost or the run ends."""
    return [
        case.worker(
            "loop",
            url,
            names="leader",
            kind="election",
            threads=2,
            wait_ms=-1,
            duration_ms=duration_ms,
            hold_us=500,
            sections=sections,
            watchdog_lease_ms=LEASE_MS,
            command_timeout_ms=1000,
            resource_url=resource_url,
        )
        for url in urls
    ]


def _leader(case: Case, exclude: tuple = ()) -> Optional[checkers.Hold]:
    """The leadership in progress now (a hold not yet left), if any."""
    h = checkers.read_history(case.log, case.ended())
    open_now = [x for x in h.holds if x.end == checkers.INF and x.pid not in exclude]
    return max(open_now, key=lambda x: x.start) if open_now else None


def _first_after(case: Case, at_ns: float, exclude: tuple = ()) -> Optional[checkers.Hold]:
    h = checkers.read_history(case.log, case.ended())
    later = [x for x in h.holds if x.start > at_ns and x.pid not in exclude and x.token > 0]
    return min(later, key=lambda x: x.start) if later else None


def _terms_led_twice(history: checkers.History) -> List[str]:
    """No two leaderships share a term."""
    counts = Counter(x.token for x in history.holds if x.token > 0)
    return [f"term {t} was led {n} times" for t, n in counts.items() if n > 1]


def test_L1_killed_and_partitioned_leaders_are_replaced_one_at_a_time(case: Case):
    server, resource = case.redis(), case.redis()
    proxies = [case.proxy(server) for _ in range(3)]
    conn = server.conn()
    baseline = len(conn.client_list())
    # Leaderships end only by the faults: each leader is killed or cut while it leads.
    workers = _candidates(case, [p.url for p in proxies], resource.url, 14000, 10**9)
    by_pid = {w.pid: (w, p) for w, p in zip(workers, proxies)}
    assert wait_until(lambda: _leader(case) is not None, 10), "nobody was elected"

    # SIGKILL the process that leads: another leads once the lease has run out.
    hold = _leader(case)
    assert hold is not None
    killed = by_pid[hold.pid][0]
    killed_at = killed.kill()
    assert wait_until(lambda: _first_after(case, killed_at, (killed.pid,)) is not None, 10)
    takeover = _first_after(case, killed_at, (killed.pid,))
    assert takeover is not None
    kill_ms = (takeover.start - killed_at) / MS
    h = checkers.read_history(case.log, case.ended())
    was_leading = any(x.pid == killed.pid and x.start < killed_at <= x.end for x in h.holds)
    print(f"L1: a new leader {kill_ms:.0f} ms after the leader was killed (lease {LEASE_MS} ms)")
    assert was_leading
    assert kill_ms <= LEASE_MS + slack(200)

    # Cut the network of the process that leads now: it is told it lost leadership (at its
    # hold's deadline) before anyone else leads.
    assert wait_until(lambda: _leader(case, (killed.pid,)) is not None, 10)
    hold = _leader(case, (killed.pid,))
    assert hold is not None
    _, proxy = by_pid[hold.pid]
    cut_at = now_ns()
    proxy.set("all", BLACKHOLE)
    assert wait_until(lambda: _first_after(case, cut_at, (hold.pid, killed.pid)) is not None, 10)
    proxy.pass_all()
    takeover = _first_after(case, cut_at, (hold.pid, killed.pid))
    assert takeover is not None

    def told() -> List[int]:
        h = checkers.read_history(case.log, case.ended())
        return [t for owner, _, t, _ in h.lost if owner == hold.owner and t > hold.start]

    # Told at its hold's deadline, which comes before the key can expire on Redis: only a
    # leader whose threads stall past the drift allowance (a loaded machine) hears it later,
    # and then the term still fences its writes (checked below).
    assert wait_until(lambda: told() != [], 5), "the partitioned leader was never told"
    cut_ms = (takeover.start - cut_at) / MS
    print(
        f"L1: a new leader {cut_ms:.0f} ms after the leader's network was cut; the old one was "
        f"told {(takeover.start - told()[0]) / MS:.0f} ms before that"
    )
    assert cut_ms <= LEASE_MS + slack(200)

    for w in workers:
        if w is not killed:
            w.finish(30)
    h = checkers.read_history(case.log, case.ended())
    leaderships = [x for x in h.holds if x.token > 0]
    assert len({x.pid for x in leaderships}) == 3, "not every process led"
    problems = checkers.overlaps(h) + checkers.lost_updates(h, case.counters)
    problems += checkers.mutex_history(h) + checkers.fencing(h).violations + _terms_led_twice(h)
    problems += checkers.linearizable(h)
    assert not problems, "\n".join(problems)
    fences = checkers.fencing(h)
    print(f"L1: {len(leaderships)} leaderships, {fences.accepted} writes accepted")
    assert wait_until(lambda: not checkers.cleanliness(conn, baseline), 6), checkers.cleanliness(
        conn, baseline
    )


def _assert_terms_grow_past(case: Case, at: float) -> None:
    """No term led twice, no stale write accepted, every term begun after `at` (monotonic ns)
    above every term begun before it, and, but for the leadership the data loss at `at` took
    (two leaders are then expected), the leaderships linearizable as one lock's holds."""
    h = checkers.read_history(case.log, case.ended())
    problems = checkers.fencing(h).violations + _terms_led_twice(h)
    others = checkers.History(holds=[x for x in h.holds if not x.start < at < x.end])
    problems += checkers.linearizable(others)
    assert not problems, "\n".join(problems)
    after = [x for x in h.holds if x.token > 0 and x.start > at]
    before = [x for x in h.holds if x.token > 0 and x.start < at]
    assert after and before
    assert min(x.token for x in after) > max(x.token for x in before), "terms went down"


def test_L2_a_restart_never_gives_two_leaders_one_term(case: Case):
    """A restart without persistence loses the leader's key, so a second leader can start while
    the first still thinks it leads (until its next renewal): that is what terms are for. The
    token counter is made again above every term before it, so terms still grow, no term is
    led twice, and the store accepts no write older than one it has."""
    case.loses_data = True
    server, resource = case.redis(), case.redis()
    workers = _candidates(case, [server.url] * 3, resource.url, 8000, 100)
    assert wait_until(lambda: _leader(case) is not None, 10), "nobody was elected"
    time.sleep(1.5)
    up = server.restart("kill")
    assert wait_until(lambda: _first_after(case, up) is not None, 10), "nobody led after it"
    for w in workers:
        w.finish(30)
    _assert_terms_grow_past(case, up)


def test_L3_a_sentinel_failover_never_gives_two_leaders_one_term(case: Case):
    """The master is SIGKILLed under candidates that reach it through the sentinels. The replica
    promoted may lack the last writes (replication is asynchronous), the leader's key among
    them, so a second leader may start while the first still thinks it leads: the terms tell
    them apart. Terms keep growing across the failover, no term is led twice, and the store
    accepts no write older than one it has."""
    case.loses_data = True
    dep = SentinelDeployment(case)
    resource = case.redis()
    workers = _candidates(case, [dep.url] * 3, resource.url, 16000, 100)
    assert wait_until(lambda: _leader(case) is not None, 10), "nobody was elected"
    time.sleep(1.5)
    old = dep.master
    killed = now_ns()
    old.kill(signal.SIGKILL)
    assert wait_until(lambda: dep.master_port() not in (None, old.port), 15), (
        "the sentinels did not promote the replica"
    )
    assert wait_until(lambda: _first_after(case, killed) is not None, 15), "nobody led after it"
    first = _first_after(case, killed)
    assert first is not None
    print(f"L3: a leader {(first.start - killed) / MS:.0f} ms after the master was killed")
    for w in workers:
        w.finish(40)
    _assert_terms_grow_past(case, killed)
