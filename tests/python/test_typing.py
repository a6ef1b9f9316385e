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
