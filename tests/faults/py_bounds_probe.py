#!/usr/bin/env python3
"""The bounds probe of the fault suite on the Python binding (test_h_bounds.py); the same
lines as the C probe (bounds_probe.c, which describes them).

usage: py_bounds_probe.py --url U --prefix P [--cases A,B,...]
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Callable, Dict

import rlock
from rlock._errors import _CODES

COMMAND_TIMEOUT_S = 1.0
LEASE_S = 3.0
CASES = "try_once_free,wait_free,wait_held,release,extend,query"
PREPARED_BY_ACQUIRE = {"release", "extend", "query"}
NAMES = {code: name[len("RLOCK_") :] for name, code in _CODES.items()}


def outcome(call: Callable[[], object]) -> str:
    """ "ok", "ETIMEDOUT" for an acquire that returned False, else the error's code name."""
    try:
        result = call()
    except rlock.LockError as exc:
        return NAMES.get(exc.code, f"E{exc.code}")
    return "ETIMEDOUT" if result is False else "ok"


def expect_line(word: str) -> None:
    line = sys.stdin.readline()
    if line.strip() != word:
        sys.exit(f"bounds probe: expected {word}, got {line!r}")


def run_case(client: rlock.Client, prefix: str, name: str) -> None:
    lock = client.lock(f"{prefix}:{name}", lease=LEASE_S)
    calls: Dict[str, Callable[[], object]] = {
        "try_once_free": lambda: lock.acquire(blocking=False),
        "wait_free": lambda: lock.acquire(timeout=0.5),
        "wait_held": lambda: lock.acquire(timeout=1.5),
        "release": lock.release,
        "extend": lambda: lock.extend(LEASE_S),
        "query": lock.locked,
    }
    if name not in calls:
        sys.exit(f"bounds probe: unknown case {name!r}")
    if name in PREPARED_BY_ACQUIRE and not lock.acquire(timeout=5):
        sys.exit(f"bounds probe: the preparing acquire of {name} timed out")
    print(f"READY {name}", flush=True)
    expect_line("GO")
    start = time.monotonic()
    result = outcome(calls[name])
    elapsed_ms = (time.monotonic() - start) * 1000
    print(f"RESULT {name} {elapsed_ms:.1f} {result}", flush=True)
    expect_line("CLEAN")
    cleaned = outcome(lock.release) if lock.held() else "none"
    print(f"CLEANED {name} {cleaned}", flush=True)
    lock.close()
    expect_line("NEXT")


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--url", required=True)
    p.add_argument("--prefix", required=True)
    p.add_argument("--cases", default=CASES)
    a = p.parse_args()
    client = rlock.Client(a.url, command_timeout=COMMAND_TIMEOUT_S, watchdog_lease=LEASE_S)
    for name in a.cases.split(","):
        run_case(client, a.prefix, name)
    client.close()
    print("DONE", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
