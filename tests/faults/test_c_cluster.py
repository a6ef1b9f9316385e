"""Redis Cluster: locks on names in many slots under looping owners while slots migrate between
masters and a master is killed and its replica promoted (the topology issue's cluster run)."""

from __future__ import annotations

import signal
import time
from collections import defaultdict
from typing import TypedDict

import checkers
import pytest
from harness import Case, ClusterDeployment, now_ns, run_every_kind, slack, wait_until

MS = 1_000_000

# The cluster transport, the per-node subscribers and their threads run under ASan/UBSan and
# TSan too (scripts/test.sh).
pytestmark = [pytest.mark.sanitized, pytest.mark.threads]


class HoldOptions(TypedDict):
    """The options the wake-up test gives each of its hold workers."""

    names: str
    counters: bool
    lease_ms: int
    poll_cap_ms: int
    wait_ms: int


def _lock_keys(dep: ClusterDeployment) -> list:
    keys = []
    for s in dep.masters():
        keys += [
            k for k in s.conn().scan_iter(count=1000) if not k.startswith(b"redisson_lock_token:")
        ]
    return keys


def _errors(server, kind: str) -> int:
    """How many error replies of a kind (MOVED, ASK, TRYAGAIN) the node has sent."""
    return int(server.conn().info("errorstats").get(f"errorstat_{kind}", {}).get("count", 0))


def test_cluster_locks_in_many_slots_survive_migration_and_failover(case: Case):
    dep = ClusterDeployment(case)
    resource = case.redis()
    names = [f"cl-{i}" for i in range(24)]
    by_owner = defaultdict(list)
    for n in names:
        by_owner[dep.owner(dep.key_slot(n)).port].append(n)
    assert len(by_owner) == 3, f"the names do not cover every master: {dict(by_owner)}"

    loops = [
        case.worker(
            "loop",
            dep.url,
            names=names,
            threads=3,
            kind="fenced",
            wait_ms=20000,
            hold_us=300,
            lease_ms=-1,
            watchdog_lease_ms=5000,
            resource_url=resource.url,
            duration_ms=120000,
        )
        for _ in range(4)
    ]
    assert wait_until(
        lambda: case.log.exists() and case.log.read_text().count("\nrel ") >= 500, 30
    ), "the workers did not get going"

    # Move the slots of the names on one master to another while the workers run.
    masters = sorted(dep.masters(), key=lambda s: s.port)
    src, dst = masters[0], masters[1]
    moving = by_owner[src.port]
    moved_keys = sum(dep.migrate_slot(dep.key_slot(n), src, dst) for n in moving)
    for n in moving:
        assert dep.owner(dep.key_slot(n)).port == dst.port
    migrated = now_ns()
    assert wait_until(
        lambda: (
            sum(
                1
                for h in checkers.read_history(case.log).holds
                if h.name in moving and h.acq_call > migrated
            )
            >= 20
        ),
        10,
    ), "no acquires on the moved names after the migration"
    # The clients were redirected while the slots moved (ASK, or TRYAGAIN for a lock whose
    # keys were half moved) and after (MOVED), and got through.
    redirects = {k: _errors(src, k) for k in ("ASK", "TRYAGAIN", "MOVED")}
    assert redirects["MOVED"] > 0 and redirects["ASK"] + redirects["TRYAGAIN"] > 0, redirects

    # Kill the master that now serves the most names; its replica takes over.
    victim = dst
    victims = [n for n in names if dep.owner(dep.key_slot(n)).port == victim.port]
    killed = now_ns()
    victim.kill(signal.SIGKILL)
    assert wait_until(
        lambda: all(dep.owner(dep.key_slot(n)).port != victim.port for n in victims), 20
    ), "no replica took over"
    promoted = now_ns()

    def resumed() -> bool:
        h = checkers.read_history(case.log)
        return {x.name for x in h.holds if x.name in victims and x.acq_call > killed} == set(
            victims
        )

    assert wait_until(resumed, 15, 0.05), "not every name of the killed master was locked again"
    h = checkers.read_history(case.log)
    first = min(x.start for x in h.holds if x.name in victims and x.acq_call > killed)
    print(
        f"cluster: {moved_keys} keys migrated with {len(moving)} slots ({redirects}); "
        f"replica promoted "
        f"{(promoted - killed) / MS:.0f} ms after the kill, first acquire there at "
        f"{(first - killed) / MS:.0f} ms"
    )

    for w in loops:
        w.signal(signal.SIGTERM)
    for w in loops:
        w.finish(60)
    h = checkers.read_history(case.log, case.ended())
    checkers.assert_clean_run(h, case.counters)
    summaries = [w.summary() for w in loops]
    assert sum(s["acquired"] for s in summaries) > 1000
    # Nothing is left behind but the token counters, on any master.
    assert wait_until(lambda: _lock_keys(dep) == [], 10), _lock_keys(dep)[:10]


def test_cluster_rejects_names_whose_keys_span_slots_and_runs_every_kind(case: Case):
    dep = ClusterDeployment(case)
    # A name whose braces put the lock key and its channel in different slots is refused.
    bad = case.worker("hold", dep.url, names="a{}b{c", counters=False, defer_acquire=1)
    assert bad.wait(15) != 0
    assert any("different slots" in line for line in bad.err), bad.err[-3:]
    # Every kind works, with names landing on each master; multi-locks span slots.
    run_every_kind(case, dep.url, "k", names=6, cycles=200)
    h = checkers.read_history(case.log)
    checkers.assert_clean_run(h, case.counters)
    assert wait_until(lambda: _lock_keys(dep) == [], 10), _lock_keys(dep)[:10]


def _shardnumsub(server, channel: str) -> int:
    reply = server.conn().execute_command("PUBSUB", "SHARDNUMSUB", channel)
    return int(reply[1])


def _numsub(server, channel: str) -> int:
    return int(server.conn().execute_command("PUBSUB", "NUMSUB", channel)[1])


def _handoff(holder, waiter) -> float:
    """The holder releases; seconds until the waiter (already waiting) has the lock."""
    started = time.monotonic()
    holder.send("release")
    fields = waiter.expect("acquired", 15)
    assert fields[1] == "0", fields
    took = time.monotonic() - started
    assert holder.expect("release")[1] == "0"
    return took


def test_cluster_wakeups_use_sharded_pubsub_and_follow_a_moved_slot(case: Case):
    """On Redis 7 the default is sharded pub/sub, as Redisson's: the waiter listens with
    SSUBSCRIBE on the node serving the lock's slot, is woken by the holder's SPUBLISH (well
    before its 10 s poll), and when the slot moves while it waits, it listens on the new
    owner and is still woken there. pubsub=classic listens with SUBSCRIBE instead."""
    dep = ClusterDeployment(case)
    name = "wake-me"
    channel = "redisson_lock__channel:{" + name + "}"
    slot = dep.key_slot(name)
    opts: HoldOptions = {
        "names": name,
        "counters": False,
        "lease_ms": -1,
        "poll_cap_ms": 10000,
        "wait_ms": 30000,
    }

    holder = case.worker("hold", dep.url, **opts)
    assert holder.expect("acquired")[1] == "0"
    waiter = case.worker("hold", dep.url, defer_acquire=1, **opts)
    waiter.send("acquire")
    owner = dep.owner(slot)
    assert wait_until(lambda: _shardnumsub(owner, channel) == 1, 5), "no SSUBSCRIBE on the owner"
    assert all(_numsub(s, channel) == 0 for s in dep.masters())
    took = _handoff(holder, waiter)
    assert took < slack(500) / 1000, (
        f"the waiter got the lock {took:.2f} s after the release (its poll is 10 s)"
    )

    # The waiter holds it now; the first holder waits for it while the slot moves: it follows.
    holder.send("acquire")
    assert wait_until(lambda: _shardnumsub(owner, channel) >= 1, 5)
    target = next(m for m in dep.masters() if m.port != owner.port)
    dep.migrate_slot(slot, owner, target)
    assert wait_until(lambda: _shardnumsub(target, channel) == 1, 5), (
        "the waiter did not listen on the slot's new owner"
    )
    took = _handoff(waiter, holder)
    assert took < slack(500) / 1000, (
        f"after the move the waiter got the lock {took:.2f} s after the release"
    )
    holder.send("release")
    assert holder.expect("release")[1] == "0"

    # pubsub=classic: SUBSCRIBE, and PUBLISH reaches it from any node.
    classic: HoldOptions = {**opts, "names": "classic-wake"}
    cchannel = "redisson_lock__channel:{classic-wake}"
    holder3 = case.worker("hold", dep.url + "?pubsub=classic", **classic)
    assert holder3.expect("acquired")[1] == "0"
    waiter3 = case.worker("hold", dep.url + "?pubsub=classic", defer_acquire=1, **classic)
    waiter3.send("acquire")
    assert wait_until(lambda: sum(_numsub(s, cchannel) for s in dep.masters()) >= 1, 5)
    assert all(_shardnumsub(s, cchannel) == 0 for s in dep.masters())
    took = _handoff(holder3, waiter3)
    assert took < slack(500) / 1000, (
        f"classic: the waiter got the lock {took:.2f} s after the release"
    )


def test_cluster_watchdog_renews_holds_in_many_slots(case: Case):
    """One client holds 12 locks spread over every master (a multi-lock) with a 1 s watchdog
    lease: renewals, one script call per slot, keep every key alive for 4 leases."""
    dep = ClusterDeployment(case)
    names = [f"renew-{i}" for i in range(12)]
    assert len({dep.owner(dep.key_slot(n)).port for n in names}) == 3
    holder = case.worker(
        "hold",
        dep.url,
        names="+".join(names),
        multi=1,
        counters=False,
        lease_ms=-1,
        watchdog_lease_ms=1000,
    )
    assert holder.expect("acquired")[1] == "0"
    time.sleep(4)
    assert holder.ask("held")[1] == "1", "a hold was lost: renewals failed"
    assert not [line for line in holder.lines if line.startswith("lost")], holder.lines
    for n in names:
        ttl = dep.owner(dep.key_slot(n)).conn().pttl(n)
        assert 0 < ttl <= 1000, f"{n}: PTTL {ttl}"
    assert holder.ask("release")[1] == "0"
    assert not any(dep.owner(dep.key_slot(n)).conn().exists(n) for n in names)
    assert wait_until(lambda: _lock_keys(dep) == [], 10), _lock_keys(dep)[:10]  # latches expire
