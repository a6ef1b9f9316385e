"""Group C: replica sync (WAIT) refuses a grant the replica did not get (C1 with WAIT), and with
Sentinel the master is killed under looping owners, a holder and its waiters, and the client
follows the sentinels to the promoted replica (C2, the kill run)."""

from __future__ import annotations

import signal
import time
from typing import Any, Dict, List, Optional, Tuple, cast

import checkers
import pytest
import redis
from harness import (
    Case,
    FaultProxy,
    NetnsPair,
    SentinelDeployment,
    SentinelServer,
    now_ns,
    run_every_kind,
    slack,
    wait_until,
)

MS = 1_000_000

# The sentinel watch, the reconnects and replica sync run under ASan/UBSan and TSan too.
pytestmark = [pytest.mark.sanitized, pytest.mark.threads]
LEASE_MS = 2000


def _role(port: int) -> str:
    try:
        return redis.Redis(port=port, socket_timeout=2).execute_command("ROLE")[0].decode()
    except redis.RedisError:
        return ""


def _numsub(port: int, channel: str) -> int:
    try:
        conn = redis.Redis(port=port, socket_timeout=2)
        return dict(conn.pubsub_numsub(channel)).get(channel.encode(), 0)
    except redis.RedisError:
        return -1


@pytest.mark.parametrize("fault", ["kill", "stop"])
def test_C2_sentinel_failover_resumes_within_5s_and_waiters_resubscribe(case: Case, fault: str):
    """The master is SIGKILLed, or SIGSTOPped for 5 s and then resumed (the sentinels demote it
    when it is back)."""
    dep = SentinelDeployment(case)
    resource = case.redis()
    names = [f"c2-{i}" for i in range(4)]
    loops = [
        case.worker(
            "loop",
            dep.url,
            names=names,
            threads=2,
            kind="fenced",
            wait_ms=20000,
            hold_us=500,
            lease_ms=-1,
            watchdog_lease_ms=LEASE_MS,
            resource_url=resource.url,
            duration_ms=60000,
        )
        for _ in range(4)
    ]
    held = "c2-held"
    channel = "redisson_lock__channel:{" + held + "}"
    # The holder's lease outlasts the failover (a 2 s one would rightly be reported lost).
    holder = case.worker(
        "hold",
        dep.url,
        names=held,
        kind="fenced",
        lease_ms=-1,
        watchdog_lease_ms=15000,
        counters=False,
    )
    assert holder.expect("acquired")[1] == "0"
    waiters = [
        case.worker(
            "loop",
            dep.url,
            names=held,
            threads=1,
            wait_ms=30000,
            hold_us=100,
            lease_ms=-1,
            watchdog_lease_ms=LEASE_MS,
            duration_ms=60000,
        )
        for _ in range(3)
    ]
    old = dep.master
    assert wait_until(lambda: _numsub(old.port, channel) == 3, 10), "the waiters never subscribed"
    assert wait_until(lambda: case.log.exists() and case.log.read_text().count("\nrel ") >= 200, 20)

    killed = now_ns()
    old.kill(signal.SIGKILL if fault == "kill" else signal.SIGSTOP)
    assert wait_until(lambda: dep.master_port() not in (None, old.port), 15), (
        "the sentinels did not promote the replica"
    )
    promoted_port = dep.master_port()
    assert promoted_port is not None
    promoted = dep.server(promoted_port)
    switched = now_ns()
    # Every waiter process listens again, on the new master.
    assert wait_until(lambda: _numsub(promoted.port, channel) == 3, 5), (
        f"waiters subscribed on the new master: {_numsub(promoted.port, channel)} of 3"
    )
    resubscribed = now_ns()

    # Lock operations resume: an acquire that began after the kill returns ok.
    def resumed() -> bool:
        h = checkers.read_history(case.log)
        return any(x.acq_call > killed and x.name in names for x in h.holds)

    assert wait_until(resumed, 8, 0.05)
    h = checkers.read_history(case.log)
    first = min(x.start for x in h.holds if x.acq_call > killed and x.name in names)
    print(
        f"C2: promoted {(switched - killed) / MS:.0f} ms after the kill, waiters resubscribed "
        f"by {(resubscribed - killed) / MS:.0f} ms, first acquire ok at "
        f"{(first - killed) / MS:.0f} ms"
    )
    assert first - killed <= slack(5000) * MS, (
        f"operations resumed {(first - killed) / MS:.0f} ms after the kill"
    )
    if fault == "stop":
        time.sleep(max(0.0, 5 - (now_ns() - killed) / 1e9))
        old.kill(signal.SIGCONT)
        # Back, it is made a replica of the new master; nobody followed it meanwhile.
        assert wait_until(lambda: _role(old.port) == "slave", 15), "the old master was not demoted"
        time.sleep(1)

    # The holder's lock was replicated long before the kill: it still holds it on the new
    # master, and its release wakes a waiter there, well within a lease.
    assert holder.ask("held")[1] == "1"
    released = now_ns()
    assert holder.ask("release")[1] == "0"

    def waiter_in() -> bool:
        hist = checkers.read_history(case.log)
        return any(x.name == held and x.start > released for x in hist.holds)

    assert wait_until(waiter_in, 2, 0.01), "no waiter got the lock within 2 s of its release"

    for w in loops + waiters:
        w.signal(signal.SIGTERM)
    for w in loops + waiters:
        w.finish(30)
    h = checkers.read_history(case.log, case.ended())
    # Replica sync is on by default with Sentinel: every grant reached the replica before it was
    # reported, so the failover lost none and no two owners overlapped.
    checkers.assert_clean_run(h, case.counters)
    assert sum(w.summary()["acquired"] for w in loops) > 0


def test_C1_with_wait_an_acquire_the_replica_missed_is_refused_and_not_held(case: Case):
    """The replica stops receiving the master's writes (blackholed link): with sync_replicas=1 the
    grant is taken back and reported as RLOCK_ENOTSYNCED, nothing is held; once the link heals
    the acquire succeeds, the replica has it, and after the master dies and the replica is
    promoted nobody else gets the lock (FAULTS.md C1, with WAIT)."""
    master = case.redis("--repl-diskless-sync-delay", "0")
    link = case.proxy(master)
    replica = case.redis("--replicaof", "127.0.0.1", str(link.port))
    rconn = replica.conn()
    assert wait_until(lambda: rconn.info("replication")["master_link_status"] == "up", 10)
    link.set("all", {"name": "blackhole"})
    url = master.url + "?sync_replicas=1&sync_timeout_ms=200"
    first = case.worker(
        "hold", url, names="c1w", kind="fenced", counters=False, lease_ms=30000, defer_acquire=1
    )
    started = time.monotonic()
    assert first.ask("acquire")[1] == "-23", "an unconfirmed grant was reported"
    took = time.monotonic() - started
    assert took < slack(2000) / 1000, f"two tries of a 200 ms WAIT took {took:.2f} s"
    assert master.conn().exists("c1w") == 0, "the unconfirmed grant was left on the master"
    assert first.ask("held")[1] == "0"

    # The blackhole swallowed part of the replication stream: the replica reconnects and
    # resynchronises before it can confirm anything again.
    link.pass_all()
    rconn.client_kill_filter(_type="master")
    mconn = master.conn()
    assert wait_until(
        lambda: (
            rconn.info("replication")["master_link_status"] == "up"
            and mconn.execute_command("WAIT", 1, 100) == 1
        ),
        10,
    )
    assert first.ask("acquire")[1] == "0"
    assert rconn.exists("c1w") == 1, "a confirmed grant is missing on the replica"
    master.kill()
    rconn.replicaof("NO", "ONE")
    second = case.worker(
        "hold",
        replica.url,
        names="c1w",
        kind="fenced",
        counters=False,
        lease_ms=30000,
        defer_acquire=1,
        wait_ms=0,
    )
    assert second.ask("acquire")[1] == "-2", "the promoted replica granted a held lock again"


def test_sentinel_every_kind_and_a_demoted_master_is_refused(case: Case):
    """Every lock kind works through a sentinel URL (replica sync on); and a master demoted
    behind the sentinels' back answers the acquire with READONLY: RLOCK_EREADONLY, never
    acquired, nothing written."""
    dep = SentinelDeployment(case)
    run_every_kind(case, dep.url, "s", names=4, cycles=100)
    h = checkers.read_history(case.log)
    checkers.assert_clean_run(h, case.counters)

    holder = case.worker(
        "hold", dep.url, names="demoted", counters=False, defer_acquire=1, wait_ms=0
    )
    assert holder.ask("acquire")[1] == "0"
    assert holder.ask("release")[1] == "0"
    other = case.redis()
    dep.master.conn().replicaof("127.0.0.1", other.port)  # the sentinels do not know yet
    assert holder.ask("acquire")[1] == "-19", "a replica's answer was taken for a grant"
    assert holder.ask("held")[1] == "0"
    assert dep.master.conn().exists("demoted") == 0


def test_sentinel_credentials_master_and_sentinels_of_their_own(case: Case):
    """The master (and replica) require a password and the sentinels one of their own: the URL
    gives the master's as userinfo and the sentinels' as sentinel_password; a wrong sentinel
    password fails client creation with a message that never shows it."""
    dep = SentinelDeployment(case, password="m-secret", sentinel_password="s-secret")
    hosts = dep.url.split("://", 1)[1]
    good = f"redis-sentinel://:m-secret@{hosts}?sentinel_password=s-secret"
    w = case.worker(
        "loop",
        good,
        names=["auth-a", "auth-b"],
        threads=2,
        kind="fenced",
        wait_ms=5000,
        hold_us=200,
        lease_ms=-1,
        watchdog_lease_ms=3000,
        cycles=50,
        counters=False,
    )
    w.finish(60)
    assert w.summary()["acquired"] == 100
    # The worker prints the URL it was given, then the library's code and message.
    for url, words in [
        (
            f"redis-sentinel://:m-secret@{hosts}?sentinel_password=wrong-pw",
            ["-13 ", "sentinels refused the credentials"],
        ),
        (f"redis-sentinel://:m-secret@{hosts}", ["-13 ", "NOAUTH"]),
        (f"redis-sentinel://{hosts}?sentinel_password=s-secret", ["-13 "]),
    ]:
        bad = case.worker("hold", url, names="auth-a", counters=False)
        assert bad.wait(30) != 0
        said = " ".join(bad.err).split(url, 1)[-1]
        assert all(w in said for w in words), (url, bad.err[-3:])
        assert "wrong-pw" not in said and "m-secret" not in said and "s-secret" not in said


def _names(sentinel: SentinelServer, name: str) -> Optional[int]:
    try:
        reply = sentinel.conn().sentinel_get_master_addr_by_name(name)
        return int(cast(Tuple[str, int], reply)[1]) if reply else None
    except redis.RedisError:
        return None


def test_sentinel_a_stale_sentinel_listed_first_does_not_choose_the_master(case: Case):
    """A sentinel that still names an old master (one that still answers ROLE master, as a
    partitioned old master does) is listed first in the URL: the client takes the address the
    majority of the sentinels names, and keeps it through the watch's later rounds. With two
    sentinels that disagree at the same config epoch the client refuses (RLOCK_ECONN naming
    both addresses); once a failover raised the good ones' epoch, the newest configuration
    wins."""
    dep = SentinelDeployment(case)
    old = case.redis()
    stale = SentinelServer(case.root, old.port, dep.NAME, 1, 1000, 5000)
    case.servers.append(stale)
    good = [f"127.0.0.1:{s.port}" for s in dep.sentinels]
    url = f"redis-sentinel://127.0.0.1:{stale.port},{','.join(good)}/{dep.NAME}"
    holder = case.worker(
        "hold", url, names="stale-first", counters=False, defer_acquire=1, wait_ms=0
    )
    for _ in range(2):
        assert holder.ask("acquire")[1] == "0"
        assert old.conn().exists("stale-first") == 0, "the client locked on the stale master"
        assert dep.master.conn().exists("stale-first") == 1
        assert holder.ask("release")[1] == "0"
        time.sleep(2.5)  # the watch asks the sentinels again every 2 s

    # A sentinel that accepts the connection and never answers, listed first, does not hold
    # the client up: the other three agree, and that is a majority of four.
    silent = FaultProxy(case.root, dep.sentinels[0].port)
    case.proxies.append(silent)
    silent.set("all", {"name": "blackhole"})
    url = f"redis-sentinel://127.0.0.1:{silent.port},{','.join(good)}/{dep.NAME}"
    quick = case.worker("hold", url, names="silent", counters=False, command_timeout_ms=10000)
    assert quick.expect("acquired", 20)[1] == "0"
    took = time.monotonic() - quick.started
    print(f"sentinel: created and acquired in {took * 1000:.0f} ms past a silent sentinel")
    assert took < 10, "the client waited for the silent sentinel's 10 s timeout"

    two = f"redis-sentinel://127.0.0.1:{stale.port},{good[0]}/{dep.NAME}"
    split = case.worker("hold", two, names="split", counters=False)
    assert split.wait(30) != 0, "a client chose between two sentinels of the same epoch"
    said = " ".join(split.err).split(two, 1)[-1]
    assert "-5 " in said and "disagree" in said, split.err[-3:]
    assert f":{old.port} " in said and f":{dep.master.port} " in said, split.err[-3:]

    dep.sentinels[0].conn().execute_command("SENTINEL", "FAILOVER", dep.NAME)
    promoted = dep.replicas[0]
    assert wait_until(
        lambda: all(_names(s, dep.NAME) == promoted.port for s in dep.sentinels), 20, 0.1
    ), "the failover did not reach every sentinel"
    newest = case.worker("hold", two, names="epoch", counters=False, defer_acquire=1, wait_ms=0)
    assert newest.ask("acquire")[1] == "0"
    assert promoted.conn().exists("epoch") == 1
    assert old.conn().exists("epoch") == 0, "the client followed the stale sentinel's epoch"


# The sentinels wait this long before they call the cut-off master down: well above the 1-3 s
# that min-replicas-max-lag 1 takes to stop its writes (the lag is counted in whole seconds
# and checked once a second), so the old side stops before the new side starts.
C3_DOWN_AFTER_MS = 3000


def _acquires(h: checkers.History, pid: int, since: int) -> List[Tuple[int, int]]:
    """(call, rc) of each acquire by worker `pid` that began after `since`."""
    return [
        (call, rc)
        for op, owner, call, _, rc in h.calls
        if op == "acq" and int(owner.split(".")[0]) == pid and call > since
    ]


@pytest.mark.parametrize("min_replicas", [True, False], ids=["min-replicas", "none"])
def test_C3_partitioned_master_and_its_clients_stop_and_fencing_refuses_them(
    netns: NetnsPair, case: Case, min_replicas: bool
):
    """Namespace a holds the master and its clients, namespace b the replica, three sentinels
    and the fenced resource; nft in a cuts a off from b except the resource's port. Side a
    grants nothing after the cut (replica sync, the Sentinel default, refuses what the replica
    did not confirm). With `min-replicas-to-write 1` the master also refuses writes
    (NOREPLICAS: RLOCK_EREADONLY), so the old holder's renewals fail and it reports the loss.
    The sentinels promote the replica, a new holder there gets the lock with a higher token,
    and the resource refuses the old holder. Without the option the old holder renews on the
    cut-off master and still holds: the overlap checker flags the double grant and fencing
    keeps the resource safe (FAULTS.md C3)."""
    a, b = netns.ADDRESS["a"], netns.ADDRESS["b"]
    sync = ["--repl-diskless-sync-delay", "0"]
    limits = ["--min-replicas-to-write", "1", "--min-replicas-max-lag", "1"]
    master = case.redis(*sync, *(limits if min_replicas else []), netns=netns, side="a", port=6379)
    replica = case.redis(*sync, "--replicaof", a, "6379", netns=netns, side="b", port=6380)
    resource = case.redis(netns=netns, side="b", port=7000)
    assert wait_until(
        lambda: master.conn().info("replication")["connected_slaves"] == 1, 10, 0.05
    ), "the replica did not connect"
    name = SentinelDeployment.NAME
    sentinels = [
        SentinelServer(
            case.root,
            6379,
            name,
            2,
            C3_DOWN_AFTER_MS,
            5000,
            netns=netns,
            side="b",
            port=26379 + i,
            master_host=a,
        )  # fmt: skip
        for i in range(3)
    ]
    case.servers.extend(sentinels)

    def ready() -> bool:
        infos = [cast(Dict[str, Any], s.conn().sentinel_master(name)) for s in sentinels]
        return all(i["num-other-sentinels"] == 2 and i["num-slaves"] == 1 for i in infos)

    assert wait_until(ready, 20, 0.1), "the sentinels did not find each other"
    url = "redis-sentinel://" + ",".join(f"{b}:{s.port}" for s in sentinels) + "/" + name
    held, names = "c3-held", [f"c3-{i}" for i in range(2)]
    common: Dict[str, Any] = dict(
        kind="fenced", lease_ms=-1, watchdog_lease_ms=LEASE_MS, counters=False,
        resource_url=resource.url,
    )  # fmt: skip
    old = case.worker("hold", url, names=held, netns=netns, side="a", **common)
    fields = old.expect("acquired")
    assert fields[1] == "0", old.err[-3:]
    old_token = int(fields[2])
    assert old.ask("write")[1] == "1"
    minority = case.worker(
        "loop", url, names=names, threads=2, wait_ms=500, hold_us=500, duration_ms=60000,
        netns=netns, side="a", **common,
    )  # fmt: skip
    assert wait_until(
        lambda: len(_acquires(checkers.read_history(case.log), minority.pid, 0)) >= 100, 20, 0.05
    ), minority.err[-3:]

    netns.partition([resource.port])
    partitioned = now_ns()

    def promoted() -> bool:
        try:
            addr = sentinels[0].conn().sentinel_get_master_addr_by_name(name)
            return int(cast(Tuple[str, int], addr)[1]) == replica.port
        except (redis.RedisError, TypeError):
            return False

    assert wait_until(promoted, 20, 0.05), "the sentinels did not promote the replica"
    switched = now_ns()
    new = case.worker("hold", url, names=held, wait_ms=20000, netns=netns, side="b", **common)
    majority = case.worker(
        "loop", url, names=names, threads=2, wait_ms=5000, hold_us=500, duration_ms=60000,
        netns=netns, side="b", **common,
    )  # fmt: skip
    fields = new.expect("acquired", 20)
    assert fields[1] == "0", new.err[-3:]
    assert int(fields[2]) > old_token, "the new holder's token is not above the old holder's"
    assert new.ask("write")[1] == "1"
    assert old.ask("write")[1] == "0", "the resource accepted the old holder's write"
    if min_replicas:
        lost_at = int(old.expect("lost", 10)[2])
        print(
            f"C3: the old holder reported the loss "
            f"{(lost_at - partitioned) / MS:.0f} ms after the partition"
        )
        assert old.ask("held")[1] == "0"
    else:
        assert old.ask("held")[1] == "1"  # it still renews on the cut-off master
    time.sleep(2)
    for w in (minority, majority):
        w.signal(signal.SIGTERM)
    for w in (minority, majority):
        w.finish(30)

    h = checkers.read_history(case.log)
    late = _acquires(h, minority.pid, partitioned)
    codes = {rc: sum(1 for _, x in late if x == rc) for rc in sorted({rc for _, rc in late})}
    refusals = [call for call, rc in late if rc == -19]
    first_new = min(x.start for x in h.holds if x.pid in (new.pid, majority.pid))
    print(
        f"C3 ({'with' if min_replicas else 'without'} min-replicas): promoted "
        f"{(switched - partitioned) / MS:.0f} ms after the partition; side a's acquires after "
        f"it by code {codes}, first NOREPLICAS at "
        f"{(min(refusals) - partitioned) / MS if refusals else -1:.0f} ms; first grant on "
        f"side b at {(first_new - partitioned) / MS:.0f} ms"
    )
    assert late and 0 not in codes, "side a granted a lock after the partition"
    assert checkers.fencing(h).violations == []
    # Every owner but the old holder: no overlap, no release past another's acquire.
    others = checkers.History(holds=[x for x in h.holds if x.pid != old.pid])
    assert checkers.overlaps(others) == [] and checkers.mutex_history(others) == []
    assert checkers.linearizable(others) == []
    if min_replicas:
        assert refusals and min(refusals) < first_new, "side a took writes after side b began"
    else:
        assert -19 not in codes
        assert checkers.overlaps(h), "the old holder, still holding with the new one, not flagged"


def test_C5_a_failover_is_counted_and_told_with_the_new_master(case: Case):
    """issue 22: the Sentinel fixture's master is killed under a client whose holds the watchdog
    renews. Its statistics count the failover, its event hook tells it with the promoted
    master's address, and acquires and releases go on being counted on the new master."""
    import rlock

    dep = SentinelDeployment(case)
    events: List[rlock.Event] = []
    client = rlock.Client(dep.url, watchdog_lease=LEASE_MS * 5 / 1000)
    try:
        client.on_event(events.append)
        lock = client.lock("c5-held")
        assert lock.acquire(blocking=False)
        before = client.stats()
        assert before.failovers == 0

        old = dep.master
        old.kill(signal.SIGKILL)
        assert wait_until(lambda: dep.master_port() not in (None, old.port), 15), (
            "the sentinels did not promote the replica"
        )
        promoted = dep.master_port()
        assert wait_until(lambda: client.stats().failovers == 1, 10), (
            f"failovers counted: {client.stats().failovers}"
        )
        assert wait_until(lambda: any(e.kind == rlock.EventKind.FAILOVER for e in events), 5)
        told = [e for e in events if e.kind == rlock.EventKind.FAILOVER]
        assert len(told) == 1
        assert told[0].detail == f"127.0.0.1:{promoted}"
        assert told[0].name is None and told[0].owner is None

        # Lock calls go on, counted, on the new master.
        other = client.lock("c5-after")
        assert wait_until(lambda: other.acquire(blocking=False), 10)
        other.release()
        after = client.stats()
        assert after.acquires_granted >= before.acquires_granted + 1
        assert after.releases >= before.releases + 1
        assert after.reconnects >= 1, "the command connections were opened again"
        kinds = [e.kind for e in events]
        assert kinds.index(rlock.EventKind.FAILOVER) < len(kinds) - 1, (
            "the acquire after the failover was told after it"
        )
    finally:
        client.close()
