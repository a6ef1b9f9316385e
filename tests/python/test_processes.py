"""Process-level tests: mutual exclusion across processes (fork and spawn) and across languages
(the rlock CLI), clients after fork(), no lease renewal once the owner is gone (FAULTS.md A5),
and Ctrl-C while acquiring."""

from __future__ import annotations

import gc
import multiprocessing
import queue
import random
import re
import signal
import subprocess
import sys
import textwrap
import threading
import time
import weakref
from typing import Any, Callable, Dict, List, Optional, Tuple, Union, cast

import pytest
import redis
import rlock
from helpers import rlock_cli, wait_until

_OWNER_RE = re.compile(rb"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}:[0-9]+$")

# On Python 3.12+ fork() in a process with threads (the rlock clients of other tests) warns.
# The warning is about the child using locks held by those threads; the children below make
# their own clients, which is what the warning asks for.
_fork_ok = pytest.mark.filterwarnings(
    "ignore:.*use of fork\\(\\) may lead to deadlocks:DeprecationWarning"
)


# ---- a read-modify-write under the lock, shared by threads and multiprocessing children ------
#
# Source text rather than a function: a 'spawn' child must import its target, and this test
# module is not importable by name there (pytest imports it in importlib mode). The children run
# it with the builtin exec as their target; the parent execs it once for its own threads.

_WORKER_SRC = textwrap.dedent('''
    import os, threading, time, traceback

    def rmw_loop(r, lock, name, iters, tag, pause):
        """iters read-modify-writes of name:counter, each inside `with lock:`.

        Overlap detector: INCR name:inside on entry must return 1. Layout check: while held, the
        lock hash has exactly one field, this thread's owner (lock.owner). Returns (done,
        overlaps, foreign)."""
        done = overlaps = foreign = 0
        owner = lock.owner.encode()
        for _ in range(iters):
            with lock:
                if r.incr(name + ":inside") != 1:
                    overlaps += 1
                if r.hkeys(name) != [owner]:
                    foreign += 1
                value = int(r.get(name + ":counter") or 0)
                time.sleep(0.001)
                r.set(name + ":counter", value + 1)
                if tag is not None:
                    r.rpush(name + ":order", tag)
                done += 1
                r.decr(name + ":inside")
            if pause:
                time.sleep(pause)
        return done, overlaps, foreign

    def process_main(url, name, iters, tag, pause, q):
        """A multiprocessing child: its own rlock.Client and redis connection; reports
        (pid, client id, done, overlaps, foreign, traceback or None) on q."""
        import redis, rlock
        result = [os.getpid(), None, 0, 0, 0, None]
        try:
            r = redis.Redis.from_url(url)
            try:
                with rlock.Client(url) as client:
                    result[1] = client.id
                    result[2:5] = rmw_loop(r, client.lock(name), name, iters, tag, pause)
            finally:
                r.close()
        except BaseException:
            result[5] = traceback.format_exc()
        q.put(tuple(result))
        if result[5] is not None:
            raise SystemExit(3)
''')

_worker_ns: Dict[str, object] = {"__name__": "rlock_test_worker"}
exec(compile(_WORKER_SRC, "<rlock test worker>", "exec"), _worker_ns)
rmw_loop = cast(Callable[..., Any], _worker_ns["rmw_loop"])


def _start_workers(
    method: str,
    url: str,
    name: str,
    nproc: int,
    iters: int,
    tag: Optional[str] = None,
    pause: float = 0.0,
):
    ctx: Any = multiprocessing.get_context(method)  # typed BaseContext, which has no Process
    q = ctx.Queue()
    procs = []
    for _ in range(nproc):
        code = _WORKER_SRC + "\nprocess_main(*args)\n"
        p = ctx.Process(
            target=exec, args=(code, {"args": (url, name, iters, tag, pause, q)}), daemon=True
        )
        p.start()
        procs.append(p)
    return procs, q


def _collect_workers(procs, q, timeout: float) -> List[tuple]:
    """Every child's report (read before join: a child flushes its queue before it exits)."""
    deadline = time.monotonic() + timeout
    results = []
    try:
        for _ in procs:
            try:
                results.append(q.get(timeout=max(0.1, deadline - time.monotonic())))
            except queue.Empty:
                pytest.fail(f"only {len(results)} of {len(procs)} workers reported: {results}")
        for p in procs:
            p.join(max(0.1, deadline - time.monotonic()))
        codes = [p.exitcode for p in procs]
        assert codes == [0] * len(procs), f"worker exit codes {codes}, reports {results}"
    finally:
        for p in procs:
            if p.is_alive():
                p.kill()
                p.join(5)
            p.close()
        q.close()
        q.join_thread()
    return results


# ---- subprocesses (python -c) with a line protocol on stdout --------------------------------


class Child:
    """A `python -c CODE ARGS...` subprocess whose stdout lines are read by a thread, so that a
    test can wait for a line with a timeout."""

    def __init__(self, code: str, *args: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", code, *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: "queue.Queue[Optional[str]]" = queue.Queue()
        self.seen: List[str] = []
        self.err: List[str] = []
        self._threads = [
            threading.Thread(target=self._read_out, daemon=True),
            threading.Thread(target=self._read_err, daemon=True),
        ]
        for t in self._threads:
            t.start()

    def _read_out(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)

    def _read_err(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.err.append(line)

    def expect(self, word: Union[str, Tuple[str, ...]], timeout: float = 15.0) -> List[str]:
        """The words of the next line whose first word is `word` (or one of the words given);
        other lines are skipped."""
        wanted = (word,) if isinstance(word, str) else word
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                pytest.fail(
                    f"no {word!r} line from the child within {timeout} s; "
                    f"stdout {self.seen}, stderr {''.join(self.err)[-2000:]}"
                )
            if line is None:
                self.lines.put(None)
                pytest.fail(
                    f"the child ended without a {word!r} line (exit {self.proc.poll()}); "
                    f"stdout {self.seen}, stderr {''.join(self.err)[-2000:]}"
                )
            self.seen.append(line)
            words = line.split()
            if words and words[0] in wanted:
                return words

    def send(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def wait(self, timeout: float) -> int:
        return self.proc.wait(timeout)

    def stderr(self) -> str:
        for t in self._threads:
            t.join(5)
        return "".join(self.err)

    def cleanup(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(10)
        for t in self._threads:
            t.join(5)
        for f in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            try:
                if f is not None:
                    f.close()
            except OSError:  # stdin of a killed child: nothing left to flush
                pass


@pytest.fixture
def children():
    """children(code, *args) starts a Child; all are killed and reaped after the test."""
    started: List[Child] = []

    def start(code: str, *args: str) -> Child:
        child = Child(code, *args)
        started.append(child)
        return child

    yield start
    for child in started:
        child.cleanup()


def _fields_of(r: redis.Redis, key: str, client_id: str) -> List[bytes]:
    """The fields of the lock hash `key` that belong to the client `client_id`."""
    return [f for f in cast(List[bytes], r.hkeys(key)) if f.startswith(client_id.encode() + b":")]


def _wait_for_renewal(r: redis.Redis, key: str, timeout: float = 2.0) -> int:
    """Samples PTTL until it goes up (a watchdog renewal just happened); returns the new PTTL.
    Right after a renewal the next one is a third of the lease away, so nothing is in flight."""
    deadline = time.monotonic() + timeout
    last = r.pttl(key)
    assert last > 0, f"{key} is not a key with a lease (PTTL {last})"
    while time.monotonic() < deadline:
        time.sleep(0.005)
        now = r.pttl(key)
        assert now > 0, f"{key} expired while its owner was alive (PTTL {now})"
        if now > last:
            return now
        last = now
    pytest.fail(f"no watchdog renewal of {key} seen within {timeout} s")


def _pttl_trace_until_gone(
    r: redis.Redis, key: str, limit: float, interval: float = 0.02
) -> Tuple[List[int], Optional[float]]:
    """PTTL samples from now until the key is gone (or `limit` seconds passed); returns them and
    how long after the start the key was first seen gone (None if it was not)."""
    start = time.monotonic()
    samples: List[int] = []
    while True:
        pttl = r.pttl(key)
        elapsed = time.monotonic() - start
        if pttl == -2:
            return samples, elapsed
        samples.append(pttl)
        if elapsed > limit:
            return samples, None
        time.sleep(interval)


def _increases(samples: List[int]) -> List[Tuple[int, int]]:
    return [(a, b) for a, b in zip(samples, samples[1:]) if b > a]


# ---- 1. mutual exclusion across processes -------------------------------------------------------


@_fork_ok
@pytest.mark.timeout(60)
@pytest.mark.parametrize("method,nproc,iters", [("fork", 6, 40), ("spawn", 3, 12)])
def test_processes_exclude_each_other(method, nproc, iters, redis_url, name, r):
    """nproc processes, each with its own Client, do iters read-modify-writes of one counter
    under one lock: no lost update, no overlap, and only the holder's field in the hash."""
    procs, q = _start_workers(method, redis_url, name, nproc, iters)
    results = _collect_workers(procs, q, timeout=45)
    assert [res[5] for res in results] == [None] * nproc, "a worker failed"
    assert len({res[0] for res in results}) == nproc  # one report per process
    assert len({res[1] for res in results}) == nproc  # each with a client of its own
    assert [res[2] for res in results] == [iters] * nproc
    assert sum(res[3] for res in results) == 0, "two holders were inside at once"
    assert sum(res[4] for res in results) == 0, "the lock hash held another owner's field"
    assert int(r.get(f"{name}:counter")) == nproc * iters  # no lost update
    assert int(r.get(f"{name}:inside")) == 0
    assert r.exists(name) == 0  # all released


# ---- 2. clients and fork() ------------------------------------------------------------------

_FORKED_USE = textwrap.dedent("""
    import rlock
    results = []

    def attempt(what, fn):
        try:
            fn()
        except Exception as exc:
            results.append((what, type(exc).__name__, isinstance(exc, rlock.LockError), str(exc)))
        else:
            results.append((what, None, False, ""))

    parent_id = client._native.id  # before anything reconnects
    attempt("lock.acquire", lambda: lock.acquire(blocking=False))
    attempt("lock.acquire(timeout)", lambda: lock.acquire(timeout=0.1))
    attempt("lock.release", lambda: lock.release())
    attempt("lock.held", lambda: lock.held())
    attempt("group.acquire", lambda: group.acquire(blocking=False))
    attempt("semaphore.try_acquire", lambda: semaphore.try_acquire())
    mine = client.fair_lock(name)  # the client reconnects here, with a new id
    got = mine.acquire(blocking=False)
    fields = redis.Redis.from_url(url).hkeys(name)
    mine.release()
    child_id = client.id
    client.close()  # the child's connections; the parent's are untouched
    q.put((results, parent_id, child_id, got, fields))
""")


@_fork_ok
@pytest.mark.timeout(30)
def test_a_forked_child_reconnects_and_refuses_the_parents_objects(client, redis_url, name, r):
    """In a child forked from a process with a client: what was made before the fork (a lock,
    a multi-lock, a semaphore) raises ForkedError; the client itself reconnects at its first
    use, with a new id, and locks made from it then work. The parent's client goes on."""
    lock = client.lock(name)  # made in the parent, before the fork
    group = rlock.MultiLock([client.lock(name + ":a")])
    semaphore = client.semaphore(name + ":s")
    ctx = multiprocessing.get_context("fork")
    q = ctx.Queue()
    p = ctx.Process(
        target=exec,
        args=(
            "import redis\n" + _FORKED_USE,
            {
                "client": client,
                "lock": lock,
                "group": group,
                "semaphore": semaphore,
                "name": name,
                "url": redis_url,
                "q": q,
            },
        ),
        daemon=True,
    )
    p.start()
    try:
        results, parent_id, child_id, got, fields = q.get(timeout=15)
        p.join(10)
        assert p.exitcode == 0
    finally:
        if p.is_alive():
            p.kill()
            p.join(5)
        p.close()
        q.close()
        q.join_thread()
    assert len(results) == 6
    for what, exc_type, is_lock_error, message in results:
        assert exc_type == "ForkedError", f"{what} in the child: {exc_type} {message}"
        assert is_lock_error and "fork()" in message, f"{what}: {message!r}"
    assert parent_id == client.id and child_id != parent_id
    assert got is True and len(fields) == 1 and fields[0].startswith(f"{child_id}:".encode())
    assert r.exists(name, name + ":a", name + ":s") == 0  # nothing left by the child
    # The parent's client still works after the child is gone.
    assert lock.acquire(blocking=False)
    assert r.hkeys(name) == [lock.owner.encode()]
    lock.release()
    assert r.exists(name) == 0


_FORKED_OWNER = textwrap.dedent("""
    import threading, redis, rlock
    with rlock.Client(url) as c:
        lock = c.lock(name, owner="thread")
        lock.acquire()
        q.put((c.id, threading.get_native_id(), redis.Redis.from_url(url).hkeys(name)))
        lock.release()
""")


@_fork_ok
@pytest.mark.timeout(30)
def test_owner_thread_id_after_fork(client, redis_url, name):
    """Under owner="thread", a forked child's main thread owns its locks as "<its client
    id>:<its own thread id>", even when the parent's forking thread had used rlock before the
    fork."""
    lock = client.lock(name + ":parent", owner="thread")  # learns the parent thread's id
    assert lock.acquire(blocking=False)
    lock.release()
    ctx = multiprocessing.get_context("fork")
    q = ctx.Queue()
    p = ctx.Process(
        target=exec, args=(_FORKED_OWNER, {"url": redis_url, "name": name, "q": q}), daemon=True
    )
    p.start()
    try:
        child_id, child_tid, fields = q.get(timeout=15)
        p.join(10)
        if p.exitcode != 0:  # not an AssertionError: only the owner check below is the known bug
            pytest.fail(f"the child exited with {p.exitcode}")
    finally:
        if p.is_alive():
            p.kill()
            p.join(5)
        p.close()
        q.close()
        q.join_thread()
    assert child_tid != threading.get_native_id()
    assert fields == [f"{child_id}:{child_tid}".encode()]


_FORK_THEN_EXIT = textwrap.dedent("""
    import os, sys, threading, warnings
    import rlock
    warnings.simplefilter("ignore", DeprecationWarning)  # 3.12+: fork() with threads running
    url, name = sys.argv[1], sys.argv[2]
    client = rlock.Client(url, watchdog_lease=1.0)
    lock = client.lock(name)
    lock.acquire()
    print("id", client.id, lock.owner.rsplit(":", 1)[1], flush=True)
    pid = os.fork()
    if pid == 0:
        try:
            lock.release()
            print("child released", flush=True)
        except rlock.LockError as exc:
            print("child refused", "fork" in str(exc), flush=True)
        sys.exit(0)  # a normal exit: the atexit handler and finalizers run in the child
    _, status = os.waitpid(pid, 0)
    print("child-exit", os.waitstatus_to_exitcode(status), flush=True)
    sys.stdin.readline()
    print("parent held", lock.held(), flush=True)
    lock.release()
    print("parent released", flush=True)
""")


@pytest.mark.timeout(30)
def test_forked_child_exit_leaves_the_parents_lock_alone(redis_url, name, r, children):
    """A child forked while the parent holds a watchdog lock: its use of the parent's lock is
    refused, and its normal exit (atexit, finalizers) neither hangs, nor releases the parent's
    hold, nor breaks the parent's connections: the parent's watchdog keeps the lock past its
    lease, and the parent's release works."""
    child = children(_FORK_THEN_EXIT, redis_url, name)
    _, cid, tid = child.expect("id")
    assert child.expect("child") == ["child", "refused", "True"]
    assert child.expect("child-exit", timeout=10) == ["child-exit", "0"]
    field = f"{cid}:{tid}".encode()
    assert r.hkeys(name) == [field]
    _wait_for_renewal(r, name)  # the parent's watchdog still renews after the child exited
    time.sleep(1.1)  # more than the 1 s lease: alive only if renewed
    assert r.hkeys(name) == [field]
    child.send("go")
    assert child.expect("parent") == ["parent", "held", "True"]
    assert child.expect("parent") == ["parent", "released"]
    assert child.wait(10) == 0
    assert r.exists(name) == 0
    assert child.stderr() == ""


_FORK_WHILE_BUSY = textwrap.dedent("""
    import os, sys, threading, warnings
    import rlock
    warnings.simplefilter("ignore", DeprecationWarning)  # 3.12+: fork() with threads running
    url, name, forks = sys.argv[1], sys.argv[2], int(sys.argv[3])
    client = rlock.Client(url, watchdog_lease=1.0)
    lock = client.lock(name)
    lock.acquire()
    busy = client.lock(name + ":busy")
    stop, errors, rounds = threading.Event(), [], [0]

    def work():  # the same client, on another thread, while the children fork off
        while not stop.is_set():
            try:
                with busy:
                    count = busy.hold_count()  # a round trip on the shared client
                    if count != 1:
                        errors.append(f"hold count {count}")
                        return
                rounds[0] += 1
            except Exception as exc:
                errors.append(repr(exc))
                return

    def child():
        failures = []
        calls = [  # through the Python objects, then straight to the native handles
            ("lock.release", lock.release),
            ("lock.acquire", lambda: lock.acquire(blocking=False)),
            ("lock.extend", lambda: lock.extend(5)),
            ("lock.held", lock.held),
            ("busy.acquire", lambda: busy.acquire(timeout=1)),
            ("native release", lambda: lock._handle.release(0)),
            ("native acquire", lambda: lock._handle.acquire(0, 0, 0, None, False)),
            ("native extend", lambda: lock._handle.extend(5000, 0)),
            ("native query", lambda: lock._handle.query(0)),
            ("native force_unlock", lock._handle.force_unlock),
            ("native busy release", lambda: busy._handle.release(0)),
        ]
        for what, fn in calls:
            try:
                fn()
                failures.append(what + ":worked")
            except rlock.ForkedError as exc:
                if exc.code != -24 or "fork()" not in str(exc):
                    failures.append(f"{what}:{exc.code}:{exc}")
            except Exception as exc:
                failures.append(f"{what}:{type(exc).__name__}:{exc}")
        own_lock = client.lock(name + ":child")  # the client reconnects, with a new id
        if client.id == parent_id:
            failures.append("the child's client kept the parent's id")
        if not own_lock.acquire(timeout=5) or not own_lock.held():
            failures.append("own lock not acquired")
        own_lock.release()
        client.close()  # the child's own connections only
        print("child", "|".join(f.replace(" ", "_") for f in failures) or "ok", flush=True)

    t = threading.Thread(target=work)
    t.start()
    parent_id = client.id
    print("id", client.id, lock.owner.rsplit(":", 1)[1], flush=True)
    for _ in range(forks):
        pid = os.fork()
        if pid == 0:
            try:
                child()
            finally:
                os._exit(0)
        _, status = os.waitpid(pid, 0)
        print("child-exit", os.waitstatus_to_exitcode(status), flush=True)
    sys.stdin.readline()
    stop.set()
    t.join()
    print("busy", rounds[0], len(errors), repr(errors[:1]).replace(" ", "_"), flush=True)
    print("parent held", lock.held(), flush=True)
    lock.release()
    print("parent released", flush=True)
""")


@pytest.mark.timeout(60)
def test_forked_children_never_touch_the_parents_lock(redis_url, name, r, children):
    """Children forked while the parent holds a watchdog lock and another parent thread takes
    and gives back a second lock of the same client: in each child every call on the parent's
    objects raises ForkedError (code RLOCK_EFORKED), also calls that go straight to the native
    handles past the Python check (the C library refuses them itself); the client reconnects
    in the child with a new id, its new locks work, and its close() closes only the child's
    connections. The parent's hold, key and renewals, and its busy thread, are untouched."""
    forks = 5
    child = children(_FORK_WHILE_BUSY, redis_url, name, str(forks))
    _, cid, tid = child.expect("id")
    field = f"{cid}:{tid}".encode()
    for _ in range(forks):
        assert child.expect("child") == ["child", "ok"]
        assert child.expect("child-exit", timeout=10) == ["child-exit", "0"]
        assert r.hkeys(name) == [field]
        assert r.hget(name, field) == b"1"
    _wait_for_renewal(r, name)  # the parent's watchdog still renews
    time.sleep(1.1)  # more than the 1 s lease: alive only if renewed
    assert r.hkeys(name) == [field]
    assert r.pttl(name) > 0
    assert r.exists(name + ":child") == 0
    child.send("go")
    _, rounds, errors, first = child.expect("busy")
    assert (errors, first) == ("0", "[]"), "the busy parent thread failed"
    assert int(rounds) > 0
    assert child.expect("parent") == ["parent", "held", "True"]
    assert child.expect("parent") == ["parent", "released"]
    assert child.wait(10) == 0
    assert r.exists(name) == 0
    assert child.stderr() == ""


# ---- 3. Python and the rlock CLI on one lock ----------------------------------------------------


# $1 cli, $2 url, $3 name, $4 iterations, $5 the critical section (run by sh with url, name).
_CLI_LOOP = r"""
cli=$1 url=$2 name=$3 iters=$4 body=$5
for i in $(seq "$iters"); do
  "$cli" exec --url "$url" "$name" -- sh -c "$body" sh "$url" "$name" || exit $?
done
"""

# The same read-modify-write as rmw_loop, with redis-cli, while `rlock exec` holds the lock.
_CLI_BODY = r"""
set -e
url=$1 name=$2
rc() { redis-cli -u "$url" "$@"; }
if [ "$(rc INCR "$name:inside")" != 1 ]; then rc INCR "$name:overlaps" >/dev/null; fi
rc RPUSH "$name:cli-owners" "$(rc HKEYS "$name")" >/dev/null
v=$(rc GET "$name:counter")
rc SET "$name:counter" $((v + 1)) >/dev/null
rc RPUSH "$name:order" cli >/dev/null
rc DECR "$name:inside" >/dev/null
"""


@_fork_ok
@pytest.mark.timeout(60)
def test_python_and_cli_exclude_each_other(client, redis_url, name, r):
    """3 `rlock exec` loops (redis-cli read-modify-writes), 2 Python threads and a Python
    process contend on one lock: no lost update, no overlap, both sides got the lock, and their
    turns interleaved."""
    cli = rlock_cli()
    cli_loops, cli_iters = 3, 8
    py_threads, py_iters = 2, 15
    r.set(f"{name}:counter", 0)
    clis = [
        subprocess.Popen(
            ["bash", "-c", _CLI_LOOP, "cli-loop", cli, redis_url, name, str(cli_iters), _CLI_BODY],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(cli_loops)
    ]
    try:
        procs, q = _start_workers("fork", redis_url, name, 1, py_iters, tag="py", pause=0.005)
        thread_results: List[object] = []

        def py_thread() -> None:
            try:
                thread_results.append(rmw_loop(r, client.lock(name), name, py_iters, "py", 0.005))
            except BaseException as exc:  # reported below
                thread_results.append(exc)

        threads = [threading.Thread(target=py_thread) for _ in range(py_threads)]
        for t in threads:
            t.start()
        proc_results = _collect_workers(procs, q, timeout=45)
        for t in threads:
            t.join(45)
        outs = [p.communicate(timeout=45) for p in clis]
    finally:
        for p in clis:
            if p.poll() is None:
                p.kill()
                p.communicate()
    assert [p.returncode for p in clis] == [0] * cli_loops, outs
    assert [err for _, err in outs] == [""] * cli_loops
    assert proc_results[0][5] is None, proc_results[0][5]
    assert thread_results == [(py_iters, 0, 0)] * py_threads  # done, overlaps, foreign
    assert proc_results[0][2:5] == (py_iters, 0, 0)
    assert r.get(f"{name}:overlaps") is None, "a CLI holder found someone else inside"
    total = cli_loops * cli_iters + (py_threads + 1) * py_iters
    assert int(r.get(f"{name}:counter")) == total  # no lost update
    assert int(r.get(f"{name}:inside")) == 0
    order = [x.decode() for x in r.lrange(f"{name}:order", 0, -1)]
    assert order.count("cli") == cli_loops * cli_iters
    assert order.count("py") == (py_threads + 1) * py_iters
    pairs = set(zip(order, order[1:]))
    assert ("py", "cli") in pairs and ("cli", "py") in pairs, f"no contention: {order}"
    # While the CLI held the lock, the hash had one field: a CLI owner, not a Python one.
    py_ids = {client.id.encode(), proc_results[0][1].encode()}
    cli_owners = r.lrange(f"{name}:cli-owners", 0, -1)
    assert len(cli_owners) == cli_loops * cli_iters
    for owner in cli_owners:
        assert _OWNER_RE.match(owner), owner
        assert owner.split(b":")[0] not in py_ids
    assert r.exists(name) == 0


# ---- 4. FAULTS.md A5: no renewal after the owner is gone -------------------------------------

_A5_HOLDER = textwrap.dedent("""
    import os, sys, threading
    import rlock
    url, name, how = sys.argv[1], sys.argv[2], sys.argv[3]
    client = rlock.Client(url, watchdog_lease=1.0)
    lock = client.lock(name)
    lock.acquire()
    print("id", client.id, lock.owner.rsplit(":", 1)[1], flush=True)
    sys.stdin.readline()
    if how == "_exit":
        os._exit(0)  # no atexit handler, no finalizer: the process just ends
    # else: falls off the end holding the lock; rlock's atexit handler closes the client
""")


@pytest.mark.timeout(30)
def test_a5_holder_exits_normally_without_release(redis_url, name, r, children):
    child = children(_A5_HOLDER, redis_url, name, "exit")
    _, cid, tid = child.expect("id")
    assert r.hkeys(name) == [f"{cid}:{tid}".encode()]
    _wait_for_renewal(r, name)  # PTTL is now ~1 s: gone sooner only if released
    child.send("exit")
    assert child.wait(10) == 0
    samples, gone_after = _pttl_trace_until_gone(r, name, limit=0.5, interval=0.01)
    assert gone_after is not None and gone_after <= 0.5, (
        f"the lock outlived its owner's exit by > 0.5 s (PTTL samples {samples})"
    )
    assert child.stderr() == ""


@pytest.mark.timeout(30)
def test_a5_holder_ends_with_os_exit(redis_url, name, r, children):
    lease = 1.0
    child = children(_A5_HOLDER, redis_url, name, "_exit")
    _, cid, tid = child.expect("id")
    assert r.hkeys(name) == [f"{cid}:{tid}".encode()]
    _wait_for_renewal(r, name)  # renewals happen, and the next one is ~lease/3 away
    child.send("exit")
    assert child.wait(10) == 0
    samples, gone_after = _pttl_trace_until_gone(r, name, limit=lease + 0.5)
    assert samples and samples[0] > 0, "expected the lock to outlive an os._exit'ed owner"
    assert _increases(samples) == [], f"renewed after its owner died: {samples}"
    assert gone_after is not None and gone_after <= lease + 0.3, (
        f"not expired within lease + 0.3 s of the exit (gone after {gone_after}, {samples})"
    )


@pytest.mark.timeout(30)
@pytest.mark.parametrize(
    "how",
    [
        "drop-lock",
        "close-lock",
        "close-client",
    ],
)
def test_a5_h21_owner_dropped_in_process(how, make_client, name, r):
    """(iii) the Lock object is garbage-collected (or Lock.close()d) while held: renewal stops
    at once (PTTL never goes up again) and the key expires within the lease; (ii) the client is
    closed while a lock is held: close() releases it (and nothing renews it after)."""
    lease = 1.0
    client = make_client(watchdog_lease=lease)
    lock = client.lock(name)
    lock.acquire()
    assert r.hkeys(name) == [lock.owner.encode()]
    _wait_for_renewal(r, name)
    if how in ("drop-lock", "close-lock"):
        if how == "drop-lock":
            ref = weakref.ref(lock)
            del lock
            gc.collect()
            if ref() is not None:  # not an AssertionError: that is not the known bug
                pytest.fail("the Lock was not collected")
        else:
            lock.close()
        samples, gone_after = _pttl_trace_until_gone(r, name, limit=lease + 0.5)
        assert _increases(samples) == [], f"renewed after the Lock was freed: {samples}"
        assert gone_after is not None and gone_after <= lease + 0.3, (gone_after, samples)
        assert samples and samples[0] > 0  # it expired by its lease (nothing released it)
    else:
        client.close()
        assert r.exists(name) == 0  # released by close()
    time.sleep(0.4)  # more than a renewal period: nothing brings the key back
    assert r.exists(name) == 0


@pytest.mark.timeout(60)
def test_a5_many_acquire_release_cycles_leave_no_key(make_client, name, r):
    """FAULTS.md A5 pass criterion: 1000 acquire -> release cycles (two threads, a name per
    cycle) with a 1 s watchdog lease; right after, and lease + 0.3 s after the last release,
    none of the keys exists (no late renewal re-extended or kept one)."""
    lease = 1.0
    client = make_client(watchdog_lease=lease)
    per_thread = 500
    names = [[f"{name}:{t}:{i}" for i in range(per_thread)] for t in range(2)]
    errors: List[BaseException] = []
    barrier = threading.Barrier(2)

    def cycles(mine: List[str]) -> None:
        try:
            barrier.wait(10)
            for i, n in enumerate(mine):
                lock = client.lock(n)
                lock.acquire()
                if i % 50 == 0:  # now and then a hold that spans a renewal
                    time.sleep(lease / 3 * random.random())
                lock.release()
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=cycles, args=(mine,)) for mine in names]
    for t in threads:
        t.start()
    for t in threads:
        t.join(50)
    released = time.monotonic()
    assert errors == []
    every = [n for mine in names for n in mine]
    assert r.exists(*every) == 0
    time.sleep(max(0.0, released + lease + 0.3 - time.monotonic()))
    assert r.exists(*every) == 0
    # Whatever is left under these names (unlock latches) expires by itself.
    leftovers = list(r.scan_iter(match=f"*{name}*", count=1000))
    assert [k for k in leftovers if r.pttl(k) == -1] == []


# ---- 5. Ctrl-C --------------------------------------------------------------------------------

# argv: url, name, kind (reentrant | fair), mode (default | attribute).
# Prints "id <client id> <thread id>", "waiting", then one outcome line:
#   "interrupted held=<bool>"           KeyboardInterrupt came out of acquire()
#   "acquired"                          acquire() returned True before the signal was handled;
#                                       the child released the lock itself (a normal user's job)
# and ends with os._exit(0): no atexit release, so anything left held is rlock's leak.
# mode "attribute": SIGINT raises KeyboardInterrupt only while rlock's acquire code is running
# (checked by walking the frames); a signal handled after acquire() returned is only noted, so
# that a KeyboardInterrupt is never blamed on rlock when the caller already had the lock.
_WAITER = textwrap.dedent("""
    import os, signal, sys, threading
    import rlock
    import rlock._client as impl
    url, name, kind, mode = sys.argv[1:5]
    client = rlock.Client(url)
    lock = client.fair_lock(name) if kind == "fair" else client.lock(name)

    acquiring = False
    if mode == "attribute":
        def on_sigint(signum, frame):
            f = frame
            while acquiring and f is not None:
                if f.f_code.co_filename == impl.__file__:
                    raise KeyboardInterrupt
                f = f.f_back
        signal.signal(signal.SIGINT, on_sigint)

    print("id", client.id, lock.owner.rsplit(":", 1)[1], flush=True)
    try:
        print("waiting", flush=True)
        acquiring = True
        got = lock.acquire()
        acquiring = False
    except KeyboardInterrupt:
        print("interrupted", "held=%s" % lock.held(), flush=True)
    else:
        lock.release()
        print("acquired", got, flush=True)
    os._exit(0)
""")


def _queue_key(name: str) -> str:
    return f"redisson_lock_queue:{{{name}}}"


def _deadlines_key(name: str) -> str:
    return f"redisson_lock_timeout:{{{name}}}"


def _make_lock(client: rlock.Client, kind: str, name: str) -> rlock.Lock:
    return client.fair_lock(name) if kind == "fair" else client.lock(name)


def _is_waiting(r: redis.Redis, kind: str, name: str, owner: bytes) -> bool:
    if kind == "fair":
        return owner in r.lrange(_queue_key(name), 0, -1)
    return r.pubsub_numsub(f"redisson_lock__channel:{{{name}}}")[0][1] >= 1


def _assert_no_trace_of(r: redis.Redis, kind: str, name: str, cid: str, owner: bytes) -> None:
    assert _fields_of(r, name, cid) == [], f"the child's hold was left on {name}"
    if kind == "fair":
        assert owner not in r.lrange(_queue_key(name), 0, -1), "left in the fair queue"
        assert r.zscore(_deadlines_key(name), owner) is None, "left in the fair deadlines"


@pytest.mark.timeout(30)
@pytest.mark.parametrize("kind", ["reentrant", "fair"])
def test_h22_ctrl_c_interrupts_a_blocked_acquire(
    kind, client, make_client, redis_url, name, r, children
):
    holder = _make_lock(client, kind, name)
    assert holder.acquire(blocking=False)
    mine = holder.owner.encode()
    child = children(_WAITER, redis_url, name, kind, "default")
    _, cid, tid = child.expect("id")
    owner = f"{cid}:{tid}".encode()
    child.expect("waiting")
    assert wait_until(lambda: _is_waiting(r, kind, name, owner), timeout=10)
    time.sleep(0.05)  # well inside the wait
    signalled = time.monotonic()
    child.proc.send_signal(signal.SIGINT)
    assert child.wait(5) == 0
    assert time.monotonic() - signalled < 1.0, "Ctrl-C did not end the wait promptly"
    assert child.expect("interrupted") == ["interrupted", "held=False"]
    assert child.stderr() == ""
    _assert_no_trace_of(r, kind, name, cid, owner)
    assert r.hkeys(name) == [mine]  # the holder's hold is untouched
    holder.release()
    # Nothing the child left behind stands in the next owner's way.
    other = _make_lock(make_client(), kind, name)
    started = time.monotonic()
    assert other.acquire(timeout=3)
    assert time.monotonic() - started < 1.0
    other.release()


@pytest.mark.timeout(60)
@pytest.mark.parametrize("kind,rounds", [("reentrant", 15), ("fair", 8)])
def test_ctrl_c_racing_the_release(kind, rounds, client, redis_url, name, r, children):
    """The holder releases at about the moment the blocked child gets SIGINT (release then
    signal, or signal then release, 0-5 ms apart). Whichever wins, once the child has exited
    (os._exit: no atexit clean-up) nothing of it is left: no hold, no queue entry. When the
    interrupt wins after the lock was granted, rlock's interrupt path must have released it."""
    names = [f"{name}:{i}" for i in range(rounds)]
    holders = [_make_lock(client, kind, n) for n in names]
    for h in holders:
        assert h.acquire(blocking=False)
    kids = [children(_WAITER, redis_url, n, kind, "attribute") for n in names]
    owners = []
    for kid in kids:
        _, cid, tid = kid.expect("id", timeout=30)
        kid.expect("waiting", timeout=30)
        owners.append((cid, f"{cid}:{tid}".encode()))
    for (_, owner), n in zip(owners, names):
        assert wait_until(lambda: _is_waiting(r, kind, n, owner), timeout=10)
    time.sleep(0.05)
    seed = random.randrange(1 << 30)
    rng = random.Random(seed)
    outcomes = []
    for i, (kid, n, h, (cid, owner)) in enumerate(zip(kids, names, holders, owners)):
        if i % 2 == 0:  # release, then the signal about when the child is being granted the lock
            delay = rng.uniform(0, 0.002)
            h.release()
            time.sleep(delay)
            signalled = time.monotonic()
            kid.proc.send_signal(signal.SIGINT)
        else:  # the signal, then the release 0-5 ms later
            delay = rng.uniform(0, 0.005)
            signalled = time.monotonic()
            kid.proc.send_signal(signal.SIGINT)
            time.sleep(delay)
            h.release()
        assert kid.wait(5) == 0, kid.stderr()
        took = time.monotonic() - signalled
        assert took < 1.0, f"round {i}: the child took {took:.2f} s to exit after SIGINT"
        words = kid.expect(("interrupted", "acquired"))
        outcomes.append(" ".join(words))
        if words[0] == "interrupted":
            assert words[1] == "held=False", f"round {i}: {words}"
        assert kid.stderr() == "", f"round {i}"
        _assert_no_trace_of(r, kind, n, cid, owner)
        assert r.exists(n) == 0, f"round {i} ({words}): {r.hgetall(n)}"
    print(f"{kind} race, seed {seed}: {outcomes}")
    assert any(o.startswith("interrupted") for o in outcomes), outcomes


# Main-thread acquire of a free lock, interrupted: where the KeyboardInterrupt comes out of.
# Prints "again" when ready for a SIGINT (inside the try, so a signal is always caught), and
# "interrupted held=<bool> <frames>" once a KeyboardInterrupt came out of Lock.acquire.
_FAST_LOOP = textwrap.dedent("""
    import os, sys, threading, traceback
    import rlock
    url, name = sys.argv[1:3]
    client = rlock.Client(url)
    lock = client.lock(name)
    print("id", client.id, lock.owner.rsplit(":", 1)[1], flush=True)
    ready = True
    while True:
        try:
            if ready:
                ready = False
                print("again", flush=True)
            lock.acquire()
            lock.release()
        except KeyboardInterrupt as exc:
            frames = [f.name for f in traceback.extract_tb(exc.__traceback__)]
            if frames[1:2] == ["acquire"]:  # it came out of Lock.acquire
                print("interrupted", "held=%s" % lock.held(), "/".join(frames), flush=True)
                os._exit(0)  # no atexit release: what is held stays held (until the lease)
            # It came out of release() or the loop itself: not this test's case; start over.
            if lock.held():
                lock.release()
            ready = True
""")


@pytest.mark.timeout(60)
def test_ctrl_c_during_an_uncontended_acquire_leaves_nothing_locked(redis_url, name, r, children):
    """Children loop acquire()/release() on free locks in their main thread and get SIGINT at
    random moments. Whenever KeyboardInterrupt comes out of acquire(), the lock must not be
    held (acquire's docstring: "Ctrl-C interrupts the wait and leaves nothing locked")."""
    n = 10
    kids = [children(_FAST_LOOP, redis_url, f"{name}:{i}") for i in range(n)]
    ids = [kid.expect("id", timeout=30)[1] for kid in kids]
    leaks = []
    for i, (kid, cid) in enumerate(zip(kids, ids)):
        kid.expect("again", timeout=30)
        for _ in range(100):
            time.sleep(random.uniform(0.002, 0.02))
            kid.proc.send_signal(signal.SIGINT)
            words = kid.expect(("again", "interrupted"), timeout=10)
            if words[0] == "interrupted":
                break
        else:
            pytest.fail(f"child {i}: no KeyboardInterrupt came out of acquire() in 100 tries")
        if kid.wait(5) != 0:
            pytest.fail(f"child {i} failed: {kid.stderr()}")
        fields = _fields_of(r, f"{name}:{i}", cid)
        if words[1] != "held=False" or fields:
            leaks.append((i, words, fields))
    assert leaks == [], f"{len(leaks)} of {n} interrupted acquires left the lock held: {leaks}"
