"""Fixtures of the fault-injection suite: each test gets a Case (its own servers, proxies,
workers and history log, all stopped afterwards) and a seed, printed so a failing schedule
can be replayed with RLOCK_FAULT_SEED."""

from __future__ import annotations

import os
import random
import shutil
import tempfile
from pathlib import Path
from typing import Iterator

import pytest
from harness import Case, worker_binary


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "sanitized: also run with the ASan/UBSan-built worker")
    config.addinivalue_line("markers", "threads: also run with the TSan-built worker")


@pytest.fixture
def seed() -> int:
    value = int(os.environ.get("RLOCK_FAULT_SEED") or random.randrange(1, 2**31))
    print(f"seed {value} (replay with RLOCK_FAULT_SEED={value})")
    return value


@pytest.fixture
def case(seed: int) -> Iterator[Case]:
    if shutil.which("redis-server") is None:
        pytest.fail("redis-server is not installed")
    binary = worker_binary()
    if not os.access(binary, os.X_OK):
        pytest.fail(
            f"the fault worker {binary} is missing: build the tests (or set RLOCK_FAULT_WORKER)"
        )
    root = Path(
        tempfile.mkdtemp(
            prefix="rlock-fault-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None
        )
    )
    c = Case(root, seed)
    try:
        yield c
    finally:
        c.close()
        if os.environ.get("RLOCK_FAULT_KEEP") == "1":
            print(f"kept {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)
