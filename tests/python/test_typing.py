"""The installed package type-checks under mypy --strict, and so does code that uses it."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import rlock

pytest.importorskip("mypy")

USER_CODE = textwrap.dedent("""
    import asyncio
    from typing import Optional
    import rlock
    import rlock.asyncio

    def work(client: rlock.Client) -> Optional[int]:
        lock = client.fenced_lock("name", lease=5.0)
        ok: bool = lock.acquire(blocking=True, timeout=1.5)
        if ok:
            try:
                ttl: Optional[float] = lock.remaining_ttl()
                return lock.token
            finally:
                lock.release()
        lock.on_lost(lambda lk, reason: print(lk.name, reason.name))
        with rlock.MultiLock([client.lock("a"), client.lock("b")]) as group:
            v: Optional[float] = group.validity
        return None

    async def awork(client: rlock.asyncio.Client) -> bool:
        async with client.lock("x") as lock:
            held: bool = lock.held()
        return await client.lock("y").acquire(timeout=0.5)

    def observe(client: rlock.Client) -> float:
        stats: rlock.Stats = client.stats()
        failed: int = stats.acquires_failed_by_code.get("ECONN", 0)
        cumulative: tuple[int, ...] = stats.acquire_wait.cumulative()
        client.on_event(lambda e: print(e.kind.name, e.name, e.waited, e.reason))
        client.on_event(None)
        return stats.hold.sum + failed + cumulative[-1]

    def permits(client: rlock.Client) -> Optional[str]:
        sem: rlock.Semaphore = client.semaphore("jobs")
        made: bool = sem.try_set_permits(3, ttl=None)
        count: int = sem.add_permits(1) + sem.available_permits() + sem.held_permits()
        if sem.acquire(2, timeout=1.5):
            sem.release(2)
        with sem.permits(2, timeout=5.0):
            pass
        psem = client.expirable_semaphore("slots", lease=rlock.NO_LEASE)
        p: Optional[rlock.Permit] = psem.acquire(timeout=None, lease=2.0)
        ps: Optional[list[rlock.Permit]] = psem.acquire_many(2, lease=rlock.WATCHDOG)
        if ps:
            psem.release(ps)
        with psem.permit(timeout=1.0) as held:
            renewed: bool = psem.update_lease(held.id, 3.0)
        latch = client.count_down_latch("loaded")
        left: int = latch.count_down()
        opened: bool = latch.wait(timeout=2.0)
        return None if p is None else p.id

    async def apermits(client: rlock.asyncio.Client) -> bool:
        async with client.semaphore("jobs").permits(2, timeout=1.0):
            pass
        psem = client.expirable_semaphore("slots")
        permit: Optional[rlock.asyncio.Permit] = await psem.acquire(timeout=1.0)
        async with psem.permit() as p:
            await p.update_lease(rlock.NO_LEASE)
        return await client.count_down_latch("loaded").wait(timeout=1.0)

    try:
        pass
    except rlock.LockTimeoutError as e:
        code: int = e.code
""")


@pytest.mark.timeout(180)
def test_mypy_strict(tmp_path: Path):
    package = Path(rlock.__file__).parent
    user = tmp_path / "user_code.py"
    user.write_text(USER_CODE)
    assert (package / "py.typed").exists()
    for target in (["-p", "rlock"], [str(user)]):
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "mypy",
                "--strict",
                "--cache-dir",
                str(tmp_path / "cache"),
                *target,
            ],
            capture_output=True,
            text=True,
            cwd=tmp_path,
        )
        assert result.returncode == 0, result.stdout + result.stderr
