#!/usr/bin/env python3
"""The fault suite's worker on the Python binding: `loop` as in worker.cpp (reentrant, fenced,
semaphore and permits kinds), writing the same history lines, so the checkers cover the
binding too. The semaphore kinds hold one permit per section (mode S) of a semaphore set to
--permits if it does not exist.

usage: py_worker.py loop --url U [--names A,B] [--kind reentrant|fenced|semaphore|permits]
       [--permits N] [--threads N]
       [--cycles N] [--duration-ms D] [--hold-us N] [--wait-ms W] [--lease-ms L]
       [--watchdog-lease-ms W] [--command-timeout-ms T] [--poll-cap-ms P] [--log F]
       [--counter-dir D] [--resource-url U] [--seed N]
SIGTERM ends every loop after its cycle in hand; then the summary line as usual.
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import sys
import threading
import time
from collections import Counter
from typing import Any, Dict, List

import rlock


class History:
    def __init__(self, path: str) -> None:
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644) if path else -1

    def line(self, text: str) -> None:
        if self.fd >= 0:
            os.write(self.fd, (text + "\n").encode())


def bump_counter(path: str, hold_us: int, rng: random.Random) -> None:
    with open(path, "r+b") as f:
        raw = f.read()
        value = int(raw) if raw.strip() else 0
        time.sleep(rng.uniform(0, hold_us) / 1e6)  # deliberately not atomic
        f.seek(0)
        f.write(b"%020d\n" % (value + 1))


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=["loop"])
    p.add_argument("--url", required=True)
    p.add_argument("--names", default="fault")
    p.add_argument(
        "--kind", default="reentrant", choices=["reentrant", "fenced", "semaphore", "permits"]
    )
    p.add_argument("--permits", type=int, default=1)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--cycles", type=int, default=10**9)
    p.add_argument("--duration-ms", type=int, default=0)
    p.add_argument("--hold-us", type=int, default=2000)
    p.add_argument("--wait-ms", type=int, default=5000)
    p.add_argument("--lease-ms", type=int, default=-1)
    p.add_argument("--watchdog-lease-ms", type=int, default=30000)
    p.add_argument("--command-timeout-ms", type=int, default=3000)
    p.add_argument("--poll-cap-ms", type=int, default=1000)
    p.add_argument("--log", default="")
    p.add_argument("--counter-dir", default="")
    p.add_argument("--resource-url", default="")
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()

    history = History(a.log)
    client = rlock.Client(
        a.url,
        command_timeout=a.command_timeout_ms / 1000,
        watchdog_lease=a.watchdog_lease_ms / 1000,
        poll_cap=a.poll_cap_ms / 1000,
    )
    resource = rlock.Client(a.resource_url) if a.resource_url else None
    names = a.names.split(",")
    lease = None if a.lease_ms < 0 else a.lease_ms / 1000
    if a.kind in ("semaphore", "permits"):
        return semaphore_loop(a, client, names, history)
    make = client.fenced_lock if a.kind == "fenced" or resource else client.lock
    locks: Dict[str, rlock.Lock] = {n: make(n, lease=lease) for n in names}
    deadline = time.monotonic() + a.duration_ms / 1000 if a.duration_ms > 0 else float("inf")
    totals: Counter = Counter()
    mutex = threading.Lock()
    stop = threading.Event()  # SIGTERM: every loop ends after its cycle in hand
    signal.signal(signal.SIGTERM, lambda *_: stop.set())

    def run(index: int) -> None:
        owner = f"{os.getpid()}.{index}"
        rng = random.Random(a.seed * 7919 + os.getpid() * 131 + index)
        for _ in range(a.cycles):
            if time.monotonic() >= deadline or stop.is_set():
                break
            name = rng.choice(names)
            lock = locks[name]
            start = time.monotonic_ns()
            try:
                rc = 0 if lock.acquire(timeout=a.wait_ms / 1000 if a.wait_ms >= 0 else -1) else -2
            except rlock.LockError as exc:
                rc = exc.code
            end = time.monotonic_ns()
            token = (lock.token or 0) if rc == 0 else 0
            history.line(f"acq {owner} {name} X {start} {end} {rc} {token}")
            with mutex:
                totals["cycles"] += 1
                totals["acquired" if rc == 0 else "errors" if rc != -2 else "timeouts"] += 1
            if rc != 0:
                if rc != -2:
                    time.sleep(0.005)
                continue
            if a.counter_dir:
                bump_counter(os.path.join(a.counter_dir, name), a.hold_us, rng)
                history.line(f"wrote {owner} {name}")
            if resource is not None:
                s = time.monotonic_ns()
                try:
                    result = 1 if resource.fenced_write(name, owner, token) else 0
                except rlock.LockError as exc:
                    result = exc.code
                history.line(f"fence {owner} {name} {token} {s} {time.monotonic_ns()} {result}")
            start = time.monotonic_ns()
            history.line(f"leave {owner} {name} X {start}")
            try:
                lock.release()
                rc = 0
            except rlock.LockError as exc:
                rc = exc.code
            history.line(f"rel {owner} {name} X {start} {time.monotonic_ns()} {rc}")
            if rc != 0:
                with mutex:
                    totals["errors"] += 1

    for name in names:
        if a.counter_dir:
            open(os.path.join(a.counter_dir, name), "ab").close()
    threads: List[threading.Thread] = [
        threading.Thread(target=run, args=(i,)) for i in range(a.threads)
    ]
    for t in threads:
        t.start()
    join_all(threads)
    client.close()
    if resource is not None:
        resource.close()
    print(
        f"done cycles={totals['cycles']} acquired={totals['acquired']} errors={totals['errors']}",
        flush=True,
    )
    return 0


def join_all(threads: List[threading.Thread]) -> None:
    """Joins in short waits. The kernel may hand SIGTERM to any thread (right after a SIGCONT,
    the main thread often still counts as having a signal pending); Python then only marks it,
    and a main thread blocked in an endless join would never run the handler that stops the
    loops."""
    for t in threads:
        while t.is_alive():
            t.join(0.2)


def semaphore_loop(
    a: argparse.Namespace, client: rlock.Client, names: List[str], history: History
) -> int:
    """The semaphore kinds: each section holds one permit (mode S); no counters."""
    expirable = a.kind == "permits"
    sems: Dict[str, Any] = {}
    for n in names:
        sem = client.expirable_semaphore(n) if expirable else client.semaphore(n)
        sem.try_set_permits(a.permits)
        sems[n] = sem
    deadline = time.monotonic() + a.duration_ms / 1000 if a.duration_ms > 0 else float("inf")
    totals: Counter = Counter()
    mutex = threading.Lock()
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    timeout = a.wait_ms / 1000 if a.wait_ms >= 0 else None

    def run(index: int) -> None:
        owner = f"{os.getpid()}.{index}"
        rng = random.Random(a.seed * 7919 + os.getpid() * 131 + index)
        for _ in range(a.cycles):
            if time.monotonic() >= deadline or stop.is_set():
                break
            name = rng.choice(names)
            sem = sems[name]
            start = time.monotonic_ns()
            permit = None
            try:
                if expirable:
                    permit = sem.acquire(timeout=timeout)
                    rc = 0 if permit is not None else -2
                else:
                    rc = 0 if sem.acquire(1, timeout=timeout) else -2
            except rlock.LockError as exc:
                rc = exc.code
            history.line(f"acq {owner} {name} S {start} {time.monotonic_ns()} {rc} 0")
            with mutex:
                totals["cycles"] += 1
                totals["acquired" if rc == 0 else "errors" if rc != -2 else "timeouts"] += 1
            if rc != 0:
                if rc != -2:
                    time.sleep(0.005)
                continue
            time.sleep(rng.uniform(0, a.hold_us) / 1e6)
            start = time.monotonic_ns()
            history.line(f"leave {owner} {name} S {start}")
            try:
                if permit is not None:
                    permit.release()
                else:
                    sem.release(1)
                rc = 0
            except rlock.LockError as exc:
                rc = exc.code
            history.line(f"rel {owner} {name} S {start} {time.monotonic_ns()} {rc}")
            if rc != 0:
                with mutex:
                    totals["errors"] += 1

    threads = [threading.Thread(target=run, args=(i,)) for i in range(a.threads)]
    for t in threads:
        t.start()
    join_all(threads)
    client.close()
    print(
        f"done cycles={totals['cycles']} acquired={totals['acquired']} errors={totals['errors']}",
        flush=True,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
