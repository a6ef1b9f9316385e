"""FAULTS.md group B, B7 (issue 19 item 1): every call returns within its bound while Redis does
not answer, in every binding, and no lock key outlives its lease afterwards.

Redis goes silent two ways: DEBUG SLEEP (the server process stops; the requests queue on open
connections and run when it wakes) and the fault proxy's blackhole, both directions (the bytes
are lost; TCP stays open). One probe process per binding and way (bounds_probe.c describes its
lines) runs the cases in turn, each call started just after the silence began. The bounds are
docs/errors.md's: a try-once acquire within command_timeout_ms, a waiting acquire within its
wait + command_timeout_ms, release, extend and query within command_timeout_ms."""

from __future__ import annotations

import os
import socket
import time
from typing import List, Optional, Tuple

import pytest
import redis
from harness import Case, FaultProxy, RedisServer, Worker, bounds_probe, now_ns, slack, wait_until

COMMAND_TIMEOUT_MS = 1000  # the probes' command_timeout_ms
LEASE_MS = 3000  # the lease of every acquire of the probes
# The allowance over each bound on an idle machine (scheduling, a GC pause), to which the
# harness adds what it measured this machine's load to cost (slack): the bounds themselves are
# the documented ones.
SLACK_MS = 300
WAITS_MS = {"wait_free": 500, "wait_held": 1500}
CASES = ["try_once_free", "wait_free", "wait_held", "release", "extend", "query"]
# The Java binding has no extend.
BINDING_CASES = {
    "c": CASES,
    "python": CASES,
    "go": CASES,
    "java": [c for c in CASES if c != "extend"],
}
HELD_FIELD = b"b7-test:1"  # the owner field of the lock the test holds for wait_held
HELD_LEASE_MS = 20000
MS = 1_000_000


def bound_ms(name: str) -> int:
    return COMMAND_TIMEOUT_MS + WAITS_MS.get(name, 0)


class Silence:
    """Redis stops answering the probe now; `lift` ends that and returns the monotonic ns at
    which it answers again."""

    def __init__(self, server: RedisServer, proxy: Optional[FaultProxy], ms: int) -> None:
        self.proxy = proxy
        self.sleeper: Optional[socket.socket] = None
        if proxy is not None:
            proxy.set("all", {"name": "blackhole"})
            return
        self.sleeper = socket.create_connection(("127.0.0.1", server.port), timeout=60)
        seconds = f"{ms / 1000:.3f}".encode()
        self.sleeper.sendall(
            b"*3\r\n$5\r\nDEBUG\r\n$5\r\nSLEEP\r\n$%d\r\n%s\r\n" % (len(seconds), seconds)
        )
        time.sleep(0.02)
        # The sleep has begun when a PING on another connection gets no answer within 100 ms.
        with socket.create_connection(("127.0.0.1", server.port), timeout=1) as ping:
            ping.settimeout(0.1)
            ping.sendall(b"*1\r\n$4\r\nPING\r\n")
            try:
                answer = ping.recv(64)
            except socket.timeout:
                answer = b""
        assert answer == b"", f"the server answered a PING ({answer!r}): DEBUG SLEEP did not start"

    def lift(self) -> int:
        if self.proxy is not None:
            self.proxy.pass_all()
            return now_ns()
        assert self.sleeper is not None
        reply = self.sleeper.recv(64)  # sent when the server wakes
        at = now_ns()
        self.sleeper.close()
        assert reply.startswith(b"+OK"), f"DEBUG SLEEP answered {reply!r}"
        return at


def _keys_left(admin: redis.Redis) -> dict:
    return {k.decode() if isinstance(k, bytes) else k: admin.pttl(k) for k in admin.keys("*")}


def _run_case(
    probe: Worker, admin: redis.Redis, server: RedisServer, proxy: Optional[FaultProxy], key: str
) -> Tuple[str, List[str]]:
    """One case: its call timed under silence, then the keys after Redis answers again. Returns
    the row of figures and the problems found."""
    name = key.rsplit(":", 1)[1]
    assert probe.expect("READY", 60)[1] == name
    if name == "wait_held":
        admin.hset(key, HELD_FIELD, 1)
        admin.pexpire(key, HELD_LEASE_MS)
    bound = bound_ms(name)
    silence = Silence(server, proxy, bound + SLACK_MS + 500)
    probe.send("GO")
    fields = probe.expect("RESULT", 60)
    answered = silence.lift()
    elapsed, outcome = float(fields[2]), fields[3]
    problems = []
    allowance = slack(SLACK_MS)
    if elapsed > bound + allowance:
        problems.append(
            f"{name}: took {elapsed:.0f} ms, over its bound {bound} + {allowance:.0f} ms"
        )
    elif outcome == "ok":
        problems.append(f"{name}: reported ok, but Redis did not answer during the call")
    # When Redis answers again, no key may have more than a lease left (one written by a
    # request that ran late starts a fresh lease then), and none may be without expiry.
    ttls = _keys_left(admin)
    held = ttls.pop(key, None) if name == "wait_held" else None
    too_long = {k: t for k, t in ttls.items() if t == -1 or t > LEASE_MS}
    if too_long:
        problems.append(f"{name}: keys with more than the {LEASE_MS} ms lease left: {too_long}")
    if name == "wait_held" and (held is None or admin.hkeys(key) != [HELD_FIELD]):
        problems.append(f"{name}: the held lock changed: {admin.hgetall(key)}")
    probe.send("CLEAN")
    cleaned = probe.expect("CLEANED", 30)[2]
    if name == "wait_held":
        admin.delete(key)
    # What the probe still held it released on CLEAN; the rest must expire within the lease.
    left = (answered + (LEASE_MS + slack(500)) * MS - now_ns()) / 1e9
    gone = wait_until(lambda: admin.dbsize() == 0, left)
    gone_ms = (now_ns() - answered) / MS
    if not gone:
        problems.append(
            f"{name}: keys left {gone_ms:.0f} ms after Redis answered: {_keys_left(admin)}"
        )
        admin.flushall()
    if proxy is not None:
        # Requests sent into the blackhole (the probe's background clean-ups among them) wait on
        # their connections until their timeout: the next case's preparation must not queue
        # behind them, which is not what this case measures.
        time.sleep(max(0.0, (answered + (COMMAND_TIMEOUT_MS + 200) * MS - now_ns()) / 1e9))
    probe.send("NEXT")
    row = (
        f"{name:14} {elapsed:7.1f} ms (bound {bound} + {allowance:.0f}) {outcome:10} "
        f"max PTTL {max(ttls.values(), default='-')} ms, keys gone {gone_ms:.0f} ms after Redis "
        f"answered, cleaned {cleaned}"
    )
    return row, problems


@pytest.mark.timeout(240)
@pytest.mark.parametrize("silence", ["sleep", "blackhole"])
@pytest.mark.parametrize("binding", ["c", "python", "go", "java"])
def test_B7_every_call_returns_within_its_bound_while_redis_is_silent(
    case: Case, binding: str, silence: str
):
    argv, missing = bounds_probe(binding)
    if not argv:
        if os.environ.get("RLOCK_REQUIRE_CROSSLANG") == "1":
            pytest.fail(f"{missing}, and RLOCK_REQUIRE_CROSSLANG=1")
        pytest.skip(missing)
    server = case.redis()
    proxy = case.proxy(server) if silence == "blackhole" else None
    admin = server.conn(timeout=30)
    prefix = f"b7-{binding}-{silence}"
    cases = BINDING_CASES[binding]
    url = proxy.url if proxy is not None else server.url
    probe = Worker(argv + ["--url", url, "--prefix", prefix, "--cases", ",".join(cases)])
    case.workers.append(probe)
    rows, problems = [], []
    for name in cases:
        row, found = _run_case(probe, admin, server, proxy, f"{prefix}:{name}")
        rows.append(row)
        problems += found
    probe.expect("DONE", 30)
    probe.finish(30)
    admin.close()
    print(f"B7 {binding}, {silence}:\n  " + "\n  ".join(rows))
    assert not problems, "\n".join(problems + [f"B7 {binding}, {silence}:"] + rows)
