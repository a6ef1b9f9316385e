"""TLS for Redis Cluster and Sentinel (issue 20): every server has a TLS port only
(`--port 0`), so a plaintext connection anywhere would fail the case. The cluster nodes talk
TLS among themselves too (`--tls-cluster yes`) and announce bare IPs, which the default
verification (`full`) checks against the certificate's IP names; the sentinels reach the master
over TLS (`tls-replication yes`), and clients reach the sentinels over TLS or, with
`sentinel_tls=no`, on plaintext ports."""

from __future__ import annotations

import binascii
import signal
from collections import defaultdict
from typing import Dict, List, Tuple, TypedDict
from urllib.parse import quote

import checkers
from harness import Case, RedisServer, Worker, now_ns, wait_until
from tls_deploy import Certs, TlsClusterDeployment, TlsSentinelDeployment


class HoldOptions(TypedDict):
    """The options of the hold workers that hand a lock to each other."""

    names: str
    counters: bool
    lease_ms: int
    watchdog_lease_ms: int
    poll_cap_ms: int
    wait_ms: int


def _hold_options(name: str) -> HoldOptions:
    # The lock lives 60 s and a waiter polls no sooner than that: a waiter that gets the lock
    # within the 15 s an expect() allows was woken by the holder's message.
    return {
        "names": name,
        "counters": False,
        "lease_ms": -1,
        "watchdog_lease_ms": 60000,
        "poll_cap_ms": 60000,
        "wait_ms": 60000,
    }


def _handoff(holder: Worker, waiter: Worker) -> None:
    """The holder releases; the waiter, already waiting, gets the lock."""
    holder.send("release")
    assert holder.expect("release")[1] == "0"
    assert waiter.expect("acquired")[1] == "0"


def _slot(name: str) -> int:
    return binascii.crc_hqx(name.encode(), 0) % 16384  # CRC16-XMODEM, the cluster's key slot


def _two_names_in_one_slot(prefix: str, avoid: List[int]) -> Tuple[str, str]:
    seen: Dict[int, str] = {}
    for i in range(100000):
        name = f"{prefix}-{i}"
        slot = _slot(name)
        if slot in avoid:
            continue
        if slot in seen:
            return seen[slot], name
        seen[slot] = name
    raise AssertionError("no two names share a slot")


def _errors(server: RedisServer, kind: str) -> int:
    """How many error replies of a kind (MOVED, ASK, TRYAGAIN) the node has sent."""
    return int(server.conn().info("errorstats").get(f"errorstat_{kind}", {}).get("count", 0))


def _shardnumsub(server: RedisServer, channel: str) -> int:
    return int(server.conn().execute_command("PUBSUB", "SHARDNUMSUB", channel)[1])


def _keys_in_slot(server: RedisServer, slot: int) -> List[bytes]:
    return list(server.conn().execute_command("CLUSTER", "GETKEYSINSLOT", slot, 100))


def _tls_only(servers: List[RedisServer]) -> None:
    """Each server listens on its TLS port only: whatever connected to it spoke TLS."""
    for s in servers:
        config = s.conn().config_get("*port")
        assert config["port"] == "0" and config["tls-port"] == str(s.port), config


def _channel(name: str) -> str:
    return "redisson_lock__channel:{" + name + "}"


def test_tls_cluster_locks_wakeups_and_a_slot_migration_with_moved_and_ask(case: Case):
    """rediss-cluster:// with the default verification (chain and IP): locks on names over
    every master, a waiter woken by sharded pub/sub, then a slot moved by hand while loops run:
    an acquire on a lock absent from the migrating node follows ASK, a release after the
    hand-over follows MOVED, and the waiter listening for a lock in the moved slot listens on
    the new owner and is woken there."""
    certs = Certs(case.root)
    dep = TlsClusterDeployment(case, certs)
    _tls_only(dep.servers)
    masters = dep.masters()
    loop_names = [f"tls-cl-{i}" for i in range(12)]
    owners = defaultdict(list)
    for n in loop_names:
        owners[dep.owner(dep.key_slot(n)).port].append(n)
    assert len(owners) == 3, f"the names do not cover every master: {dict(owners)}"
    # Two lock names sharing the slot that is moved, in no loop name's slot.
    held, fresh = _two_names_in_one_slot("tls-mv", [_slot(n) for n in loop_names])
    slot = _slot(held)
    assert dep.key_slot(held) == dep.key_slot(fresh) == slot

    loops = [
        case.worker(
            "loop",
            dep.url,
            names=loop_names,
            threads=2,
            wait_ms=20000,
            hold_us=300,
            lease_ms=-1,
            watchdog_lease_ms=5000,
            # A script on a lock whose keys are half moved meets TRYAGAIN until the slot is
            # handed over: the calls wait that long (slow on a loaded machine) before failing.
            command_timeout_ms=10000,
            duration_ms=60000,
        )
        for _ in range(2)
    ]
    assert wait_until(
        lambda: case.log.exists() and case.log.read_text().count("\nrel ") >= 200, 30
    ), "the loop workers did not get going"

    # A waiter is woken by the holder's SPUBLISH on the node serving the slot.
    opts = _hold_options(held)
    first = case.worker("hold", dep.url, **opts)
    assert first.expect("acquired")[1] == "0"
    second = case.worker("hold", dep.url, defer_acquire=1, **opts)
    second.send("acquire")
    src = dep.owner(slot)
    assert wait_until(lambda: _shardnumsub(src, _channel(held)) == 1, 10), "no SSUBSCRIBE"
    _handoff(first, second)
    first.send("acquire")  # waits while the slot moves
    # (The first waiter's subscription may linger a while: at least one.)
    assert wait_until(lambda: _shardnumsub(src, _channel(held)) >= 1, 10)

    # Move the slot by hand: IMPORTING, MIGRATING, an acquire in between, MIGRATE, NODE.
    dst = next(m for m in masters if m.port != src.port)
    src_id, dst_id = dep.node_id(src), dep.node_id(dst)
    asks = _errors(src, "ASK")
    dst.conn().execute_command("CLUSTER", "SETSLOT", slot, "IMPORTING", src_id)
    src.conn().execute_command("CLUSTER", "SETSLOT", slot, "MIGRATING", dst_id)
    # `fresh` has no key on src: src answers ASK and the lock is taken on dst. (Its release
    # would meet TRYAGAIN until the hand-over: the script's channel key is never there.)
    third = case.worker("hold", dep.url, defer_acquire=1, **_hold_options(fresh))
    assert third.ask("acquire")[1] == "0"
    assert fresh.encode() in _keys_in_slot(dst, slot), "not locked on the importing node"
    assert fresh.encode() not in _keys_in_slot(src, slot)
    assert _errors(src, "ASK") > asks, "the acquire did not follow ASK"
    keys = _keys_in_slot(src, slot)
    assert keys, "the held lock's keys are not on the migrating node"
    src.conn().execute_command(
        "MIGRATE", "127.0.0.1", dst.port, "", 0, 5000, "REPLACE", "KEYS", *keys
    )
    for node in [dst, src] + [m for m in masters if m.port not in (src.port, dst.port)]:
        node.conn().execute_command("CLUSTER", "SETSLOT", slot, "NODE", dst_id)
    assert dep.owner(slot).port == dst.port
    assert wait_until(lambda: _shardnumsub(dst, _channel(held)) >= 1, 10), (
        "the waiter did not listen on the slot's new owner"
    )
    # The releases go to src first (the clients' slot maps are older): MOVED.
    moved = _errors(src, "MOVED")
    assert third.ask("release")[1] == "0"
    assert _errors(src, "MOVED") > moved, "the release did not follow MOVED"
    moved = _errors(src, "MOVED")
    _handoff(second, first)
    assert _errors(src, "MOVED") > moved, "the release did not follow MOVED"
    assert first.ask("release")[1] == "0"

    # The loops' names on one master move too while the loops run (redis-cli's way).
    loop_src = next(m for m in masters if m.port != dst.port)
    migrated = now_ns()
    for n in owners[loop_src.port]:
        dep.migrate_slot(dep.key_slot(n), loop_src, dst)

    def relocked() -> bool:
        h = checkers.read_history(case.log)
        return {x.name for x in h.holds if x.acq_call > migrated} >= set(owners[loop_src.port])

    assert wait_until(relocked, 15), "the moved names were not locked again"
    for w in loops:
        w.signal(signal.SIGTERM)
    for w in loops:
        w.finish(60)
        assert w.summary()["errors"] == 0, w.lines[-2:]
    checkers.assert_clean_run(checkers.read_history(case.log, case.ended()), case.counters)
    _tls_only(dep.servers)


def test_tls_cluster_certificate_naming_another_host_needs_ca_mode_or_its_name(case: Case):
    """The nodes present a certificate that names wrong-name.invalid, not the IPs they announce:
    the default verification refuses them (RLOCK_ETLS, OpenSSL's reason); tls_verify=ca (chain
    only) and tls_server_name=wrong-name.invalid (the name checked on every node) both lock
    names on every master."""
    certs = Certs(case.root, server="wrong-name")
    dep = TlsClusterDeployment(case, certs)
    names = [f"tls-ca-{i}" for i in range(12)]
    assert len({dep.owner(dep.key_slot(n)).port for n in names}) == 3

    refused = case.worker("hold", dep.url, names=names[0], counters=False)
    assert refused.wait(30) != 0
    said = " ".join(refused.err).split(dep.url, 1)[-1]
    assert "-25 " in said and "mismatch" in said, refused.err[-3:]

    for option in ("tls_verify=ca", "tls_server_name=wrong-name.invalid"):
        w = case.worker(
            "loop",
            f"{dep.url}&{option}",
            names=names,
            threads=2,
            wait_ms=5000,
            hold_us=200,
            cycles=60,
            counters=False,
        )
        w.finish(60)
        assert w.summary()["acquired"] == 120, (option, w.summary())
    names_seen = {x.name for x in checkers.read_history(case.log).holds}
    assert names_seen == set(names)


def _master_port(dep: TlsSentinelDeployment) -> int:
    port = dep.master_port()
    assert port is not None, "no sentinel names a master"
    return port


def test_tls_sentinel_locks_wakeups_and_a_failover(case: Case):
    """rediss-sentinel://: the sentinels (TLS only) name the TLS master; locks and a woken waiter
    there; after SENTINEL FAILOVER the client follows them to the promoted replica, over TLS."""
    certs = Certs(case.root)
    dep = TlsSentinelDeployment(case, certs)
    _tls_only(dep.servers)
    old = _master_port(dep)
    assert old == dep.master.port

    # Sentinels whose certificates the client cannot trust: RLOCK_ETLS, with OpenSSL's reason.
    other_ca = quote(str(certs.dir / "other-ca.crt"), safe="/")
    url = dep.url.replace(certs.query(), f"tls_ca_file={other_ca}")
    refused = case.worker("hold", url, names="tls-s-wake", counters=False)
    assert refused.wait(30) != 0
    said = " ".join(refused.err).split(url, 1)[-1]
    assert "-25 " in said and "certificate verify failed" in said, refused.err[-3:]

    opts = _hold_options("tls-s-wake")
    first = case.worker("hold", dep.url, **opts)
    assert first.expect("acquired")[1] == "0"
    assert dep.master.conn().exists("tls-s-wake") == 1
    second = case.worker("hold", dep.url, defer_acquire=1, **opts)
    second.send("acquire")
    assert wait_until(
        lambda: dep.master.conn().pubsub_numsub(_channel("tls-s-wake"))[0][1] == 1, 10
    ), "the waiter did not subscribe on the master"
    _handoff(first, second)
    assert second.ask("release")[1] == "0"

    # A failover the sentinels run (over TLS to both servers): the client follows.
    dep.sentinels[0].conn().execute_command("SENTINEL", "FAILOVER", dep.NAME)
    assert wait_until(lambda: dep.master_port() not in (None, old), 30), "no failover"
    promoted = dep.server(_master_port(dep))
    assert wait_until(lambda: promoted.conn().execute_command("ROLE")[0] == b"master", 10)

    def held_on_promoted() -> bool:
        # Until its client has switched, the old master takes the acquire, or answers
        # READONLY once the sentinels demoted it.
        rc = second.ask("acquire", timeout=30)[1]
        assert rc in ("0", "-19"), rc
        if rc == "0" and promoted.conn().exists("tls-s-wake") == 1:
            return True
        if rc == "0":
            second.ask("release")
        return False

    assert wait_until(held_on_promoted, 20, 0.2), "no acquire on the promoted master"
    assert second.ask("release")[1] == "0"
    assert promoted.conn().exists("tls-s-wake") == 0

    w = case.worker("loop", dep.url, names=["tls-s-a", "tls-s-b"], threads=2, cycles=50)
    w.finish(60)
    assert w.summary()["acquired"] == 100
    checkers.assert_clean_run(checkers.read_history(case.log, case.ended()), case.counters)
    _tls_only(dep.servers)


def test_tls_master_behind_plaintext_sentinels_with_sentinel_tls_no(case: Case):
    """Sentinels with a plaintext port for clients (and TLS to the servers and each other):
    sentinel_tls=no reaches them in plaintext and the master over TLS; without it the client
    speaks TLS to their plaintext ports and is refused."""
    certs = Certs(case.root)
    dep = TlsSentinelDeployment(case, certs, sentinel_tls=False, replicas=0)
    _tls_only(dep.servers)
    assert "sentinel_tls=no" in dep.url
    w = case.worker("loop", dep.url, names=["tls-p-a", "tls-p-b"], threads=2, cycles=50)
    w.finish(60)
    assert w.summary()["acquired"] == 100
    checkers.assert_clean_run(checkers.read_history(case.log, case.ended()), case.counters)

    # The sentinels stay silent to a ClientHello: each attempt ends at the connect timeout.
    url = dep.url.replace("&sentinel_tls=no", "")
    refused = case.worker("hold", url, names="tls-p-a", counters=False, connect_timeout_ms=300)
    assert refused.wait(60) != 0
    said = " ".join(refused.err).split(url, 1)[-1]
    assert "-5 " in said and "plaintext port" in said, refused.err[-3:]
