"""The Python binding on a 3-master Redis Cluster (tests/fixtures/cluster.sh, with the
redis-server first on PATH, so the server matrix runs it on each server): locks, fenced tokens,
wake-ups, semaphores and inspection on keys spread over the three masters."""

from __future__ import annotations

import shutil
import subprocess
import threading
import time
import uuid
from pathlib import Path
from typing import Dict, Iterator, List

import pytest
import redis
import rlock
from redis.cluster import RedisCluster

FIXTURE = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "cluster.sh"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory) -> Iterator[str]:
    """The cluster's redis-cluster:// URL; the cluster is stopped after the module."""
    if shutil.which("redis-server") is None or shutil.which("redis-cli") is None:
        pytest.skip("redis-server and redis-cli are needed for a cluster")
    where = tmp_path_factory.mktemp("cluster")
    subprocess.run(
        ["bash", str(FIXTURE), "start", str(where)], check=True, stdout=subprocess.DEVNULL
    )
    try:
        yield (where / "url").read_text().strip()
    finally:
        subprocess.run(["bash", str(FIXTURE), "stop", str(where)], check=False)


@pytest.fixture
def admin(cluster: str) -> Iterator[RedisCluster]:
    host, port = cluster.split("://", 1)[1].split(",")[0].split("?")[0].split(":")
    conn = RedisCluster(host=host, port=int(port))
    yield conn
    conn.close()


@pytest.fixture
def clients(cluster: str) -> Iterator[List[rlock.Client]]:
    # No periodic retry within a test's time: a waiter gets a lock by its wake-up message.
    made = [rlock.Client(cluster, poll_cap=60) for _ in range(2)]
    yield made
    for c in made:
        c.close()


def spread_names(admin: RedisCluster, per_master: int = 4) -> List[str]:
    """Lock names whose keys land on every master, `per_master` on each."""
    by_master: Dict[str, List[str]] = {}
    run = uuid.uuid4().hex
    i = 0
    while len(by_master) < 3 or min(len(v) for v in by_master.values()) < per_master:
        name = f"rlock-test:cluster:{run}:{i}"
        i += 1
        names = by_master.setdefault(admin.get_node_from_key(name).name, [])
        if len(names) < per_master:
            names.append(name)
    assert len(by_master) == 3, by_master.keys()
    return [n for names in by_master.values() for n in names]


def test_locks_on_every_master_exclude_other_clients(clients, admin):
    a, b = clients
    for name in spread_names(admin):
        held = a.lock(name)
        assert held.acquire(blocking=False)
        assert admin.exists(name) == 1
        assert b.lock(name).acquire(blocking=False) is False
        held.release()
        assert admin.exists(name) == 0
        other = b.lock(name)
        assert other.acquire(blocking=False)
        other.release()


def test_a_waiter_on_another_client_is_woken_by_the_release(clients, admin):
    a, b = clients
    for name in spread_names(admin, 2):
        held = a.lock(name)
        held.acquire()
        got = threading.Event()

        lock = b.lock(name)

        def wait_for_it() -> None:
            if lock.acquire(timeout=25):
                got.set()
                lock.release()

        waiter = threading.Thread(target=wait_for_it)
        waiter.start()
        time.sleep(0.2)
        assert not got.is_set(), "the waiter got a held lock"
        held.release()
        # Only the wake-up (sharded pub/sub on Redis 7+) ends the wait this early: the poll cap
        # and the holder's lease are 60 s and 30 s.
        assert got.wait(10), f"{name}: the waiter was not woken"
        waiter.join()


def test_fenced_tokens_grow_on_every_master(clients, admin):
    a, b = clients
    for name in spread_names(admin, 2):
        tokens = []
        for client in (a, b, a):
            lock = client.fenced_lock(name)
            assert lock.acquire(blocking=False)
            tokens.append(lock.token)
            lock.release()
        assert tokens == sorted(tokens) and len(set(tokens)) == 3, tokens


def test_semaphore_permits_are_shared_across_clients(clients, admin):
    a, b = clients
    for name in spread_names(admin, 2):
        sa, sb = a.semaphore(name), b.semaphore(name)
        assert sa.try_set_permits(2)
        assert sa.acquire(1, timeout=0) and sb.acquire(1, timeout=0)
        assert not sb.acquire(1, timeout=0), "a third permit out of two"
        sa.release(1)
        assert sb.acquire(1, timeout=5)
        sb.release(2)
        assert sa.available_permits() == 2
        admin.delete(name)


def test_holder_is_read_from_the_lock_keys_master(clients, admin):
    a, b = clients
    for name in spread_names(admin, 1):
        lock = a.lock(name)
        lock.acquire()
        try:
            holder = b.lock(name).holder()
            assert holder is not None and holder.owner == lock.owner
        finally:
            lock.release()


def _commandstats(node: redis.Redis) -> Dict[str, int]:
    """EVAL and SCRIPT LOAD calls on one node (Redis 7 counts SCRIPT's subcommands apart)."""
    stats = node.info("commandstats")
    load = "cmdstat_script|load" if "cmdstat_script|load" in stats else "cmdstat_script"
    return {
        "eval": stats.get("cmdstat_eval", {}).get("calls", 0),
        "load": stats.get(load, {}).get("calls", 0),
    }


def test_flushed_scripts_are_loaded_on_the_node_of_the_key(cluster, admin):
    """After SCRIPT FLUSH on every master each script is loaded by SCRIPT LOAD on the master of
    the call's key, in the batch with its EVALSHA: loaded anywhere else, the EVALSHA would meet
    NOSCRIPT again and the call fall back to EVAL."""
    masters = [redis.Redis(host=n.host, port=n.port) for n in admin.get_primaries()]
    names = spread_names(admin, 2)
    with rlock.Client(cluster, poll_cap=60) as c:
        for node in masters:
            node.script_flush()
        before = [_commandstats(node) for node in masters]
        for name in names:
            with c.lock(name) as lock:
                assert lock.held()
    for node, was in zip(masters, before):
        now = _commandstats(node)
        assert now["load"] > was["load"], f"{node}: no script was loaded there"
        assert now["eval"] == was["eval"], f"{node}: a script went by EVAL"
        node.close()
