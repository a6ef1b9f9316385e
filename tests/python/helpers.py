"""Helpers shared by the Python tests."""

from __future__ import annotations

import importlib.util
import os
import shutil
import sysconfig
import time
from pathlib import Path

import pytest
import rlock

_REPO = Path(__file__).resolve().parents[2]


FREE_THREADED = bool(sysconfig.get_config_var("Py_GIL_DISABLED"))


def require_green(module: str) -> None:
    """In a green-thread test (or at its module's top): `module` (gevent, eventlet) must be
    installed, as tests/python/requirements-green.txt lists it; only on a free-threaded build,
    which may have no wheel of it, does its absence skip. Not imported (see test_eventlet.py)."""
    if importlib.util.find_spec(module) is not None:
        return
    if FREE_THREADED:
        pytest.skip(
            f"{module} is not installed: no wheel of it for free-threaded CPython",
            allow_module_level=True,
        )
    pytest.fail(
        f"{module} is missing although tests/python/requirements-green.txt lists it",
        pytrace=False,
    )


def owner_field(client: rlock.Client, thread_id: int) -> bytes:
    return f"{client.id}:{thread_id}".encode()


def wait_until(predicate, timeout: float = 5.0, interval: float = 0.01) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return predicate()


class Holder:
    """Holds a lock on a thread of its own until release() (which then returns once the lock
    was released), so any thread or task can end the hold."""

    def __init__(self, lock: "rlock.Lock") -> None:
        import threading

        self._lock = lock
        self._acquired = threading.Event()
        self._release = threading.Event()
        self._released = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        if not self._acquired.wait(10):
            raise RuntimeError("the holder did not get the lock")

    def _run(self) -> None:
        self._lock.acquire()
        self._acquired.set()
        self._release.wait()
        self._lock.release()
        self._released.set()

    def release(self) -> None:
        self._release.set()
        if not self._released.wait(10):
            raise RuntimeError("the holder did not release the lock")


def rlock_cli() -> str:
    """The rlock command ($RLOCK_CLI, else the build tree's); skips the test when it or
    redis-cli is missing, or fails it when RLOCK_REQUIRE_CLI=1."""
    path = os.environ.get("RLOCK_CLI") or str(_REPO / "build" / "capi" / "cli" / "rlock")
    problem = None
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        problem = f"the rlock CLI was not found at {path} (set RLOCK_CLI)"
    elif shutil.which("redis-cli") is None:
        problem = "redis-cli is not installed"
    if problem is not None:
        if os.environ.get("RLOCK_REQUIRE_CLI") == "1":
            pytest.fail(problem + " and RLOCK_REQUIRE_CLI=1")
        pytest.skip(problem)
    return path
