"""C (the C library itself, and the rlock CLI), Python, Go and Java processes contend for the
same two lock names at once. Each critical section is a read-modify-write of a counter file
with an exclusive "inside" marker, so a lost update or an overlap shows. It runs on a
plaintext server and again over TLS (a rediss:// URL carrying tls_ca_file). The workers share
one contract (see crosslang_worker.py); the C, Go and Java workers come from the builds:

    RLOCK_C_WORKER     path of the built tests/integration rlock_it_worker (its crosslang mode)
    RLOCK_GO_WORKER    path of the built bindings/go/cmd/rlock-contend
    RLOCK_JAVA_WORKER  the command that starts the Java worker (shell words)
    RLOCK_REQUIRE_CROSSLANG=1  fail, rather than skip, when one is missing"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
import threading
import time
import urllib.parse
from pathlib import Path
from typing import Dict, List

import pytest
import redis
import rlock
from helpers import rlock_cli

_HERE = Path(__file__).resolve().parent


def _worker_commands() -> Dict[str, List[str]]:
    commands = {
        "cli": ["bash", str(_HERE / "crosslang_worker.sh"), rlock_cli()],
        "python": [sys.executable, str(_HERE / "crosslang_worker.py")],
    }
    missing = []
    c = os.environ.get("RLOCK_C_WORKER", "")
    if c and os.access(c, os.X_OK):
        commands["c"] = [c, "crosslang"]
    else:
        missing.append(f"the C worker (RLOCK_C_WORKER={c!r})")
    go = os.environ.get("RLOCK_GO_WORKER", "")
    if go and os.access(go, os.X_OK):
        commands["go"] = [go]
    else:
        missing.append(f"the Go worker (RLOCK_GO_WORKER={go!r})")
    java = os.environ.get("RLOCK_JAVA_WORKER", "")
    if java:
        commands["java"] = shlex.split(java)
    else:
        missing.append("the Java worker (RLOCK_JAVA_WORKER is unset)")
    if missing:
        problem = "not found: " + ", ".join(missing)
        if os.environ.get("RLOCK_REQUIRE_CROSSLANG") == "1":
            pytest.fail(problem + " and RLOCK_REQUIRE_CROSSLANG=1")
        pytest.skip(problem)
    return commands


# Critical sections per worker process, two processes per language: 2 x 1310 = 2620 in all.
# The CLI starts a process per section, so it does fewer.
_ITERATIONS = {"cli": 60, "c": 200, "python": 250, "go": 400, "java": 400}
# With RLOCK_WORKER_KIND=leader an iteration is one leadership (campaign, section, resign).
_LEADERSHIPS = {"cli": 15, "c": 40, "python": 40, "go": 40, "java": 40}
_PER_LANGUAGE = 2


@pytest.fixture(params=["plaintext", "tls"])
def shared_server(request, redis_url):
    """(URL every worker is given, an rlock client and a redis-py connection) on the session's
    server, or on the TLS one with the CA in the URL (tls_ca_file), which every worker passes
    to the C library's URL parsing as it is."""
    if request.param == "plaintext":
        client = rlock.Client(redis_url)
        conn = redis.Redis.from_url(redis_url)
    else:
        server = request.getfixturevalue("tls_redis")
        certs = request.getfixturevalue("tls_certs")
        url = f"{server.url}?tls_ca_file={urllib.parse.quote(str(certs / 'ca.crt'), safe='/')}"
        client = rlock.Client(url)
        conn = server.redis_py()
        redis_url = url
    yield redis_url, client, conn
    client.close()
    conn.close()


@pytest.mark.timeout(300)
@pytest.mark.parametrize("kind", ["lock", "leader"])
def test_four_languages_share_locks_without_losing_an_update(
    shared_server, name, tmp_path, kind, request
):
    """kind "leader": the same, each iteration one leadership of an election (the C library's
    rlock_election, the CLI's `rlock elect`, Python's client.leader, Go's Client.Lead, Java's
    LeaderLatch), whose section
    appends its term to NAME.terms: a store that refuses a stale term would accept every line,
    in order."""
    redis_url, client, r = shared_server
    if kind == "leader" and "tls" in request.node.callspec.id:
        pytest.skip("elections cross languages on the plaintext server; TLS is the lock run's")
    iterations = _ITERATIONS if kind == "lock" else _LEADERSHIPS
    env = dict(os.environ, RLOCK_WORKER_KIND=kind) if kind == "leader" else None
    commands = _worker_commands()
    names = [f"{name}:a", f"{name}:b"]
    holds = [client.lock(n) for n in names]
    for lock in holds:  # held until every worker is waiting, so all of them contend
        assert lock.acquire(blocking=False)

    # Samples who holds names[0], to show the turns really alternated between processes.
    owners: List[bytes] = []
    stop = threading.Event()

    def sample() -> None:
        while not stop.wait(0.002):
            for field in r.hkeys(names[0]):
                if not owners or owners[-1] != field:
                    owners.append(field)

    sampler = threading.Thread(target=sample)
    procs = []
    try:
        for language, command in commands.items():
            for _ in range(_PER_LANGUAGE):
                argv = command + [redis_url, str(tmp_path), str(iterations[language])] + names
                procs.append(
                    (
                        language,
                        subprocess.Popen(  # a group each, for the cleanup
                            argv,
                            stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE,
                            text=True,
                            start_new_session=True,
                            env=env,
                        ),
                    )
                )

        # Every worker starts with names[0]; a waiter subscribes to the lock's channel.
        channel = f"redisson_lock__channel:{{{names[0]}}}"
        deadline = time.monotonic() + 90
        while r.pubsub_numsub(channel)[0][1] < len(procs):
            exited = [(lang, p.returncode) for lang, p in procs if p.poll() is not None]
            assert not exited, f"workers exited before the start: {exited}"
            assert time.monotonic() < deadline, "not every worker reached the first lock"
            time.sleep(0.05)
        started = time.monotonic()
        for lock in holds:
            lock.release()
        sampler.start()

        results = []
        for language, p in procs:
            out, err = p.communicate(timeout=240)
            results.append((language, p.returncode, out.strip(), err.strip()))
        elapsed = time.monotonic() - started
    finally:
        stop.set()
        if sampler.is_alive():
            sampler.join()
        for _, p in procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)  # the CLI worker's children too
                p.communicate()
        for lock in holds:
            if lock.held():
                lock.release()

    for language, code, out, err in results:
        assert (code, out) == (0, f"ok {iterations[language]}"), (language, code, out, err)
        assert "overlap" not in err, (language, err)

    expected = {n: 0 for n in names}
    for language, _, _, _ in results:
        for i in range(iterations[language]):
            expected[names[i % len(names)]] += 1
    counted = {n: int((tmp_path / f"{n}.count").read_text()) for n in names}
    assert counted == expected  # no update lost
    total = sum(expected.values())
    assert total >= (2000 if kind == "lock" else 250)
    if kind == "leader":
        for n in names:
            lines = [line.split() for line in (tmp_path / f"{n}.terms").read_text().splitlines()]
            terms = [int(t) for t, _ in lines]
            assert len(terms) == expected[n]
            assert terms == sorted(set(terms)), f"{n}: a term repeated or went back: {terms}"
            assert {lang for _, lang in lines} == set(commands), lines
    assert not list(tmp_path.glob("*.inside"))
    assert r.exists(*names) == 0  # every worker released
    clients = {field.rsplit(b":", 1)[0] for field in owners}
    assert len(clients) >= 5 and len(owners) >= 20, owners  # turns alternated
    print(
        f"{total} critical sections by {len(procs)} processes in {elapsed:.1f} s; "
        f"{len(clients)} clients seen holding, {len(owners)} hand-overs sampled"
    )
