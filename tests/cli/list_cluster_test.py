#!/usr/bin/env python3
"""rlock list and status --json on the cluster fixture (3 masters): locks whose names spread
over every master are all listed exactly once, a lock held by `rlock exec` shows its owner,
and a waiting `rlock exec` counts as a subscriber of the wake-up channel whichever master its
subscription went to. Permit-expirable semaphores with permits held, spread over every
master, are found by the walk's second pass on each master, and a waiting `rlock exec --permits`
counts as a subscriber of the semaphore's channel.
Usage: list_cluster_test.py path/to/rlock"""

import json
import os
import socket
import subprocess
import sys
import time

RLOCK = sys.argv[1]
CLUSTER_DIR = os.environ["RLOCK_TEST_CLUSTER_DIR"]
with open(os.path.join(CLUSTER_DIR, "url")) as f:
    URL = f.read().strip()
with open(os.path.join(CLUSTER_DIR, "seeds")) as f:
    PORTS = [seed.rsplit(":", 1)[1] for seed in f.read().strip().split(",")]
PREFIX = "rlock-cli-test:list-cluster:%d:" % os.getpid()
OWNER = "0b2c0e9c-6f0e-4d55-9d8a-2a7b3c4d5e6f:1"
children = []


def fail(msg, output=b""):
    if isinstance(output, bytes):
        output = output.decode(errors="replace")
    sys.stderr.write("FAIL (list_cluster_test): %s\n%s\n" % (msg, output))
    sys.exit(1)


def step(text):
    print("--", text, flush=True)


def redis(port, *args, cluster=True):
    argv = ["redis-cli", "-p", port] + (["-c"] if cluster else []) + [str(a) for a in args]
    return subprocess.run(argv, capture_output=True, check=True, text=True).stdout.strip()


def rlock(*args):
    proc = subprocess.run([RLOCK] + list(args), capture_output=True)
    if proc.returncode != 0:
        fail("rlock %s exited %d" % (" ".join(args), proc.returncode), proc.stdout + proc.stderr)
    return proc.stdout


def listed():
    out = rlock("list", "--url", URL, "--match", PREFIX + "*", "--json").decode()
    return [json.loads(line) for line in out.splitlines()]


def main():
    step("60 locks written through the cluster, spread over every master")
    names = [PREFIX + str(i) for i in range(60)]
    for name in names:
        redis(PORTS[0], "HSET", name, OWNER, 1)
        redis(PORTS[0], "PEXPIRE", name, 120000)
    redis(PORTS[0], "SET", PREFIX + "text", "x", "PX", 120000)
    per_master = [
        len(redis(p, "--scan", "--pattern", PREFIX + "*", cluster=False).split()) for p in PORTS
    ]
    if sorted(per_master)[0] == 0:
        fail("the names did not reach every master: %r" % per_master)

    step("list walks every master: each lock once, the string key left out")
    locks = listed()
    found = [lock["name"] for lock in locks]
    if sorted(found) != sorted(names):
        fail(
            "listed %d names (%d distinct), want the 60 written" % (len(found), len(set(found))),
            "\n".join(sorted(found)),
        )
    for lock in locks:
        if (lock["kind"], lock["owners"], lock["locked"]) != (
            "reentrant",
            [
                {
                    "owner": OWNER,
                    "holds": 1,
                    "mode": None,
                    "host": None,
                    "pid": None,
                    "command": None,
                    "started_ms": None,
                    "since_ms": None,
                }
            ],
            True,
        ):
            fail("lock fields", json.dumps(lock))

    step("a lock held by rlock exec, and a waiter subscribed to its channel")
    held = PREFIX + "held"
    children.append(
        subprocess.Popen(
            [RLOCK, "exec", "--url", URL, held, "--", "sleep", "30"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
    )
    end = time.time() + 10
    while not json.loads(rlock("status", "--url", URL, "--json", held))["locked"]:
        if time.time() > end:
            fail("rlock exec did not take the lock")
        time.sleep(0.05)
    children.append(
        subprocess.Popen(
            [RLOCK, "exec", "--url", URL, "--wait", "30", held, "--", "true"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
    )
    end = time.time() + 10
    while True:
        status = json.loads(rlock("status", "--url", URL, "--json", held))
        if status["subscribers"] == 1:
            break
        if time.time() > end:
            fail("the waiter never showed as a subscriber", json.dumps(status))
        time.sleep(0.05)
    if status["waiters"] != 1 or status["owner_count"] != 1 or status["kind"] != "reentrant":
        fail("held lock status", json.dumps(status))
    # Who holds it, from the holder record on the master of its client's slot.
    end = time.time() + 10
    while status["owners"][0]["since_ms"] is None and time.time() < end:
        time.sleep(0.05)
        status = json.loads(rlock("status", "--url", URL, "--json", held))
    who = status["owners"][0]
    if (who["host"], who["pid"]) != (socket.gethostname(), children[0].pid) or who[
        "since_ms"
    ] is None:
        fail("held lock: who holds it", json.dumps(status))
    in_list = [lock for lock in listed() if lock["name"] == held]
    if len(in_list) != 1 or in_list[0]["owners"] != status["owners"]:
        fail("the held lock in list", json.dumps(in_list))

    step("semaphores with permits held on every master: each listed once, as a semaphore")
    sems = [PREFIX + "sem" + str(i) for i in range(30)]
    deadline = int(time.time() * 1000) + 120000
    for i, name in enumerate(sems):
        redis(PORTS[0], "SET", name, 1)
        redis(PORTS[0], "ZADD", "{%s}:timeout" % name, deadline + i, "%032x" % (i + 1))
    per_master = [
        len(redis(p, "--scan", "--pattern", "{" + PREFIX + "sem*", cluster=False).split())
        for p in PORTS
    ]
    if sorted(per_master)[0] == 0:
        fail("the semaphores did not reach every master: %r" % per_master)
    found = {lock["name"]: lock for lock in listed() if lock["kind"] == "semaphore"}
    if sorted(found) != sorted(sems):
        fail("listed semaphores %r, want the 30 written" % sorted(found))
    for i, name in enumerate(sems):
        got = found[name]
        if (got["permits_available"], got["permits_held"], got["earliest_deadline_ms"]) != (
            1,
            1,
            deadline + i,
        ):
            fail("semaphore fields", json.dumps(got))

    step("a permit held by rlock exec --permits 1, and a waiter for it")
    sem = PREFIX + "sem-held"
    children.append(
        subprocess.Popen(
            [RLOCK, "exec", "--url", URL, "--permits", "1", sem, "--", "sleep", "30"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
    )
    end = time.time() + 10
    while json.loads(rlock("status", "--url", URL, "--json", sem))["permits_held"] != 1:
        if time.time() > end:
            fail("rlock exec --permits did not take the permit")
        time.sleep(0.05)
    children.append(
        subprocess.Popen(
            [RLOCK, "exec", "--url", URL, "--permits", "1", "--wait", "30", sem, "--", "true"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
    )
    end = time.time() + 10
    while True:
        status = json.loads(rlock("status", "--url", URL, "--json", sem))
        if status["subscribers"] == 1:
            break
        if time.time() > end:
            fail("the permit's waiter never showed as a subscriber", json.dumps(status))
        time.sleep(0.05)
    in_list = [lock for lock in listed() if lock["name"] == sem]
    if len(in_list) != 1 or (in_list[0]["kind"], in_list[0]["waiters"]) != ("semaphore", 1):
        fail("the held semaphore in list", json.dumps(in_list))
    print("PASS list_cluster_test")


def cleanup():
    for child in children:
        if child.poll() is None:
            child.terminate()
            child.wait()
    for port in PORTS:
        for pattern in (PREFIX + "*", "{" + PREFIX + "*"):
            for key in redis(port, "--scan", "--pattern", pattern, cluster=False).split():
                redis(port, "DEL", key, cluster=False)


try:
    main()
finally:
    cleanup()
