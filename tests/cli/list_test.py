#!/usr/bin/env python3
"""rlock list, rlock status --json and rlock watch against the fixture server: every lock
layout written as docs/protocol.md describes it (and one lock held by a real `rlock exec`, and
a semaphore permit held by `rlock exec --permits`; a plain semaphore shown as a counter), the
table and the JSON checked field by field, a binary name recovered from its JSON escape, keys
that are no locks left out, and watch following an owner change (lines without a terminal,
redrawn in place with one; Ctrl-C exits 0).
Usage: list_test.py path/to/rlock"""

import json
import os
import pty
import select
import signal
import socket
import subprocess
import sys
import time

RLOCK = sys.argv[1]
with open(os.path.join(os.environ["RLOCK_TEST_REDIS_DIR"], "url")) as f:
    URL = f.read().strip()
os.environ["RLOCK_URL"] = URL
PORT = URL.rsplit(":", 1)[1].split("/")[0]
PREFIX = b"rlock-cli-test:list:%d:" % os.getpid()
O1 = b"0b2c0e9c-6f0e-4d55-9d8a-2a7b3c4d5e6f:1"
O2 = b"1b2c0e9c-6f0e-4d55-9d8a-2a7b3c4d5e6f:22"
O3 = b"2b2c0e9c-6f0e-4d55-9d8a-2a7b3c4d5e6f:333"
children = []
# An owner's holder fields when no rlock client recorded it (these fixtures are written by hand).
NOBODY = {"host": None, "pid": None, "command": None, "started_ms": None, "since_ms": None}


def owner(field, holds, mode):
    return dict({"owner": field, "holds": holds, "mode": mode}, **NOBODY)


def fail(msg, output=b""):
    if isinstance(output, bytes):
        output = output.decode(errors="replace")
    sys.stderr.write("FAIL (list_test): %s\n%s\n" % (msg, output))
    sys.exit(1)


def step(text):
    print("--", text, flush=True)


def redis(*args):
    out = subprocess.run(
        ["redis-cli", "-p", PORT] + [a if isinstance(a, bytes) else str(a).encode() for a in args],
        capture_output=True,
        check=True,
    ).stdout
    return out.strip()


def tagged(prefix, name):
    return prefix + b":{" + name + b"}"


def rlock(*args, check=True):
    proc = subprocess.run([RLOCK] + list(args), capture_output=True)
    if check and proc.returncode != 0:
        fail(
            "rlock %s exited %d" % (" ".join(map(str, args)), proc.returncode),
            proc.stdout + proc.stderr,
        )
    return proc


def name(suffix):
    return PREFIX + suffix


def json_lines(output):
    locks = {}
    for line in output.decode("utf-8").splitlines():
        obj = json.loads(line)
        locks[obj["name"].encode("utf-8", "surrogateescape")] = obj
    return locks


def wait_until(condition, what, timeout=10):
    end = time.time() + timeout
    while time.time() < end:
        if condition():
            return
        time.sleep(0.05)
    fail("timed out waiting for " + what)


def cleanup():
    for child in children:
        if child.poll() is None:
            child.terminate()  # rlock exec passes SIGTERM on to its command
            child.wait()
    keys = redis("--scan", "--pattern", PREFIX + b"*").splitlines()
    keys += [
        tagged(b"redisson_lock_token", name(b"fenced")),
        tagged(b"redisson_lock_queue", name(b"fair")),
        tagged(b"redisson_lock_timeout", name(b"fair")),
        b"{" + name(b"sem") + b"}:timeout",
    ]
    for key in keys:
        redis("DEL", key)


def main():
    now = int(time.time() * 1000)
    step("locks of every layout, written as the protocol describes them")
    redis("HSET", name(b"plain"), O1, 2)
    redis("PEXPIRE", name(b"plain"), 60000)
    redis("HSET", name(b"fenced"), O1, 1)
    redis("SET", tagged(b"redisson_lock_token", name(b"fenced")), 42)
    redis("HSET", name(b"fair"), O1, 1)
    redis("RPUSH", tagged(b"redisson_lock_queue", name(b"fair")), O2, O3)
    redis(
        "ZADD", tagged(b"redisson_lock_timeout", name(b"fair")), now + 300000, O2, now + 600000, O3
    )
    redis("HSET", name(b"rw"), b"mode", b"read", O1, 1, O2, 2)
    redis("HSET", name(b"w"), b"mode", b"write", O3 + b":write", 1)
    binary = name(b'bin\xff\x01"\\q\xc3\xa9')
    redis("HSET", binary, O2, 1)
    redis("SET", name(b"text"), b"x")
    redis("HSET", name(b"hash"), b"field", b"1")
    held = name(b"held")
    children.append(
        subprocess.Popen(
            [RLOCK, "exec", held, "--", "sleep", "30"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
    )
    sem = name(b"sem")
    children.append(
        subprocess.Popen(
            [RLOCK, "exec", "--permits", "3", sem, "--", "sleep", "30"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
    )
    redis("SET", name(b"plainsem"), 4)
    wait_until(lambda: b"since: 2" in rlock("status", held).stdout, "rlock exec to hold, recorded")
    exec_pid = children[0].pid
    wait_until(lambda: b"permits held: 1" in rlock("status", sem).stdout, "exec --permits to hold")
    holder = [
        line.split(b": ", 1)[1]
        for line in rlock("status", held).stdout.splitlines()
        if line.startswith(b"owner: ")
    ][0]

    step("list --json: one object per line, exact fields")
    locks = json_lines(rlock("list", "--match", PREFIX + b"*", "--json").stdout)
    expected_names = {name(s) for s in (b"plain", b"fenced", b"fair", b"rw", b"w", b"held", b"sem")}
    expected_names.add(binary)
    if set(locks) != expected_names:
        fail("listed %r, want %r" % (sorted(locks), sorted(expected_names)))
    plain = dict(locks[name(b"plain")])
    if not 55000 < plain.pop("ttl_ms") <= 60000:
        fail("plain ttl_ms", json.dumps(locks[name(b"plain")]))
    want = {
        "name": name(b"plain").decode(),
        "kind": "reentrant",
        "locked": True,
        "mode": None,
        "owner_count": 1,
        "owners": [owner(O1.decode(), 2, None)],
        "leader": None,
        "queue_length": 0,
        "queue": [],
        "subscribers": 0,
        "waiters": 0,
        "token": 0,
        "permits_available": 0,
        "permits_held": 0,
        "earliest_deadline_ms": -1,
    }
    if plain != want:
        fail("plain: %r\nwant %r" % (plain, want))
    fenced = locks[name(b"fenced")]
    if (fenced["kind"], fenced["token"], fenced["ttl_ms"]) != ("fenced", 42, -1):
        fail("fenced", json.dumps(fenced))
    fair = locks[name(b"fair")]
    want_queue = [
        {"owner": O2.decode(), "deadline_ms": now + 300000},
        {"owner": O3.decode(), "deadline_ms": now + 600000},
    ]
    if (fair["kind"], fair["queue_length"], fair["queue"], fair["waiters"]) != (
        "fair",
        2,
        want_queue,
        2,
    ):
        fail("fair", json.dumps(fair))
    rw = locks[name(b"rw")]
    want_owners = [owner(O1.decode(), 1, "read"), owner(O2.decode(), 2, "read")]
    if (rw["kind"], rw["mode"], rw["owner_count"], rw["owners"]) != (
        "read-write",
        "read",
        2,
        want_owners,
    ):
        fail("rw", json.dumps(rw))
    w = locks[name(b"w")]
    if (w["mode"], w["owners"]) != (
        "write",
        [owner(O3.decode() + ":write", 1, "write")],
    ):
        fail("w", json.dumps(w))
    real = locks[held]
    if (real["kind"], real["owners"][0]["owner"].encode(), real["owners"][0]["holds"]) != (
        "reentrant",
        holder,
        1,
    ) or not 0 < real["ttl_ms"] <= 30000:
        fail("held", json.dumps(real))
    # Who holds it: the rlock exec process, from its client's holder record.
    who = real["owners"][0]
    if (who["host"], who["pid"]) != (socket.gethostname(), exec_pid) or not (
        who["command"].endswith("exec %s -- sleep 30" % held.decode())
        and who["started_ms"] <= who["since_ms"] <= int(time.time() * 1000)
    ):
        fail("held: holder record", json.dumps(real))
    # The semaphore: one permit of 3 held by rlock exec, its lease renewed by the watchdog.
    permits = locks[sem]
    left = permits["earliest_deadline_ms"] - int(time.time() * 1000)
    if (
        permits["kind"],
        permits["permits_held"],
        permits["permits_available"],
        permits["locked"],
        permits["owners"],
    ) != ("semaphore", 1, 2, False, []) or not 0 < left <= 30000:
        fail("sem", json.dumps(permits))
    # The binary name comes back byte for byte; the raw JSON escapes the bad byte as \udcff.
    raw = rlock("list", "--match", name(b"bin*"), "--json").stdout
    if b':bin\\udcff\\u0001\\"\\\\q\xc3\xa9"' not in raw:
        fail("binary name escape", raw)

    step("list: the table")
    out = rlock("list", "--match", PREFIX + b"*").stdout.decode("utf-8", "replace")
    lines = out.splitlines()
    header = lines[0].split()
    if header != ["NAME", "KIND", "OWNER(S)", "HOLDS", "TTL", "WAITERS", "HELD", "BY", "TOKEN"]:
        fail("table header", out)
    if len(lines) != 1 + len(expected_names):
        fail("table rows", out)
    rows = {line.split()[0]: line.split() for line in lines[1:]}
    if rows[name(b"fenced").decode()][1:] != ["fenced", O1.decode(), "1", "none", "0", "-", "42"]:
        fail("fenced row", out)
    if rows[name(b"rw").decode()][1:5] != ["read-write/read", O1.decode(), "+1", "3"]:
        fail("rw row", out)
    if rows[name(b"fair").decode()][-3:] != ["2", "-", "-"]:
        fail("fair row", out)
    if name(b'bin\\xff\\x01"\\x5cq\\xc3\\xa9').decode() not in rows:
        fail("binary name in the table", out)
    held_line = [line for line in lines[1:] if line.split()[0] == held.decode()][0]
    if "%s, pid %d, for " % (socket.gethostname(), exec_pid) not in held_line:
        fail("held row: who holds it", out)
    text = rlock("status", held).stdout.decode()
    for line in (
        "held by: %s, pid %d" % (socket.gethostname(), exec_pid),
        "command: %s exec %s -- sleep 30" % (RLOCK, held.decode()),
    ):
        if line not in text.splitlines():
            fail("status text lacks %r" % line, text)
    sem_row = rows[sem.decode()]
    if sem_row[1:8] != ["semaphore", "permits:", "1", "held,", "2", "free", "1"] or not (
        0 < float(sem_row[8]) <= 30
    ):
        fail("sem row", out)

    step("list --match with nothing found: empty output, exit 0")
    proc = rlock("list", "--match", PREFIX + b"no-such-*")
    if proc.stdout or b"no locks found" not in proc.stderr:
        fail("empty list", proc.stdout + proc.stderr)

    step("status --json: the same object as list; status text adds the fields")
    status = json.loads(rlock("status", "--json", name(b"fair")).stdout)
    if status != fair:
        fail("status --json %r != list %r" % (status, fair))
    text = rlock("status", name(b"fair")).stdout.decode()
    for line in (
        "locked: yes",
        "owner: " + O1.decode(),
        "hold count: 1",
        "kind: fair",
        "queue: 2",
        "queued: " + O2.decode(),
        "waiters: 2",
        "token: 0",
    ):
        if line not in text.splitlines() and not any(
            other.startswith(line + " (") for other in text.splitlines()
        ):
            fail("status text lacks %r" % line, text)
    free = json.loads(rlock("status", "--json", name(b"free")).stdout)
    if (free["kind"], free["locked"], free["ttl_ms"], free["owners"]) != ("none", False, -2, []):
        fail("free status", json.dumps(free))
    if (
        rlock("status", name(b"free")).stdout.decode()
        != "name: %s\nlocked: no\n" % name(b"free").decode()
    ):
        fail("free status text changed")

    step("status of semaphores: permits of an expirable one, a plain one as a counter")
    text = rlock("status", sem).stdout.decode()
    for line in ("kind: semaphore", "permits free: 2", "permits held: 1", "waiters: 0"):
        if line not in text.splitlines():
            fail("semaphore status text lacks %r" % line, text)
    if not any(line.startswith("next lease ends: in ") for line in text.splitlines()):
        fail("semaphore status text lacks the next lease", text)
    counter = json.loads(rlock("status", "--json", name(b"plainsem")).stdout)
    if (counter["kind"], counter["permits_available"]) != ("counter", 4):
        fail("plain semaphore status", json.dumps(counter))
    if "value: 4 (" not in rlock("status", name(b"plainsem")).stdout.decode():
        fail("plain semaphore status text", rlock("status", name(b"plainsem")).stdout)

    step("watch without a terminal: a line per owner change, SIGINT exits 0")
    swap = name(b"swap")
    watch = subprocess.Popen(
        [RLOCK, "watch", "--interval", "0.05", swap], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    children.append(watch)
    time.sleep(0.3)
    for _ in range(2):
        rlock("exec", swap, "--", "sleep", "0.6")
        time.sleep(0.3)
    watch.send_signal(signal.SIGINT)
    out, err = watch.communicate(timeout=10)
    if watch.returncode != 0:
        fail("watch exit %d" % watch.returncode, out + err)
    states = [line.split(b": ", 1)[1] for line in out.splitlines()]
    shape = [s.split(b",")[0].split(b" (")[0] for s in states]
    owners = [s.split(b" by ")[1] for s in shape if s.startswith(b"locked by ")]
    if [s.split(b" by ")[0] for s in shape] != [
        b"not locked",
        b"locked",
        b"not locked",
        b"locked",
        b"not locked",
    ]:
        fail("watch lines", out)
    if len(owners) != 2 or owners[0] == owners[1]:
        fail("watch did not show two different owners", out)

    step("watch on a terminal: redrawn in place, Ctrl-C exits 0")
    pid, fd = pty.fork()
    if pid == 0:
        os.execv(RLOCK, [RLOCK, "watch", "--interval", "0.1", name(b"plain").decode()])
    output = b""
    end = time.time() + 10
    typed = False
    while time.time() < end:
        ready, _, _ = select.select([fd], [], [], 0.1)
        if ready:
            try:
                chunk = os.read(fd, 4096)
            except OSError:
                break
            if not chunk:
                break
            output += chunk
        if not typed and output.count(b"\x1b[H\x1b[2J") >= 2:
            os.write(fd, b"\x03")
            typed = True
    _, status = os.waitpid(pid, 0)
    if not typed:
        fail("watch never redrew twice", output)
    if b"owner: " + O1 not in output or b"hold count: 2" not in output:
        fail("watch screen", output)
    if not os.WIFEXITED(status) or os.WEXITSTATUS(status) != 0:
        fail("watch after Ctrl-C: status %r" % status, output)
    print("PASS list_test")


try:
    main()
finally:
    cleanup()
