"""rlock.asyncio: tasks as owners, waiting off the event loop, cancellation."""

from __future__ import annotations

import asyncio
import socket
import time

import pytest
import rlock
import rlock.asyncio
from helpers import Holder


@pytest.fixture
def aclient(redis_url):
    c = rlock.asyncio.Client(redis_url)
    yield c
    c.sync_client.close()


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 30))


class LoopTicks:
    """Within ``async with``, a task notes the time every 10 ms: a blocked event loop shows as
    few notes and a long gap between two of them."""

    def __init__(self) -> None:
        self.times: list = []
        self._stop = asyncio.Event()

    async def _tick(self) -> None:
        while not self._stop.is_set():
            self.times.append(time.monotonic())
            await asyncio.sleep(0.01)

    async def __aenter__(self) -> "LoopTicks":
        self._stop = asyncio.Event()  # made on the loop that runs it (Python 3.8, 3.9)
        self._task = asyncio.ensure_future(self._tick())
        return self

    async def __aexit__(self, *exc) -> None:
        self._stop.set()
        await self._task

    def longest_gap(self) -> float:
        return max(b - a for a, b in zip(self.times, self.times[1:]))


def test_tasks_exclude_each_other(aclient, name, r):
    lock = aclient.lock(name)
    inside = [0]
    overlaps = []
    count = [0]

    async def work():
        for _ in range(15):
            async with lock:
                inside[0] += 1
                if inside[0] != 1:
                    overlaps.append(inside[0])
                value = count[0]
                await asyncio.sleep(0.001)  # other tasks run here
                count[0] = value + 1
                inside[0] -= 1

    async def main():
        await asyncio.gather(*(work() for _ in range(8)))

    run(main())
    assert overlaps == [] and count[0] == 8 * 15
    assert r.exists(name) == 0


def test_each_task_is_its_own_owner(aclient, name, r):
    lock = aclient.lock(name)

    async def main():
        assert await lock.acquire()
        assert lock.held()
        assert await lock.acquire()  # reentrant within the task
        assert await lock.hold_count() == 2

        async def other():
            assert not lock.held()
            got = await lock.acquire(blocking=False)
            with pytest.raises(rlock.NotHeldError):
                await lock.release()
            return got

        assert await asyncio.create_task(other()) is False
        fields = r.hkeys(name)
        assert len(fields) == 1 and fields[0].startswith(aclient.id.encode())
        await lock.release()
        await lock.release()
        assert not lock.held()

    run(main())
    assert r.exists(name) == 0


def test_waiting_does_not_block_the_loop(aclient, make_client, name):
    holder = Holder(make_client().lock(name))
    lock = aclient.lock(name)
    ticks = LoopTicks()

    async def wait_and_release():
        got = await lock.acquire(timeout=5)
        if got:
            await lock.release()  # by the task that holds it
        return got

    async def main():
        async with ticks:
            waiter = asyncio.create_task(wait_and_release())
            await asyncio.sleep(0.3)
            assert not waiter.done()
            await asyncio.get_running_loop().run_in_executor(None, holder.release)
            return await waiter

    assert run(main()) is True
    assert len(ticks.times) >= 20  # the loop kept ticking while the task waited
    assert ticks.longest_gap() < 0.2


def test_timeout_returns_false(aclient, make_client, name):
    make_client().lock(name).acquire()
    lock = aclient.lock(name)

    async def main():
        start = time.monotonic()
        assert await lock.acquire(blocking=False) is False
        assert await lock.acquire(timeout=0.3) is False
        return time.monotonic() - start

    assert 0.3 <= run(main()) < 3


def test_blocking_timeout_context_raises(redis_url, make_client, name):
    make_client().lock(name).acquire()
    client = rlock.asyncio.Client(redis_url)

    async def main():
        async with client:
            with pytest.raises(rlock.LockTimeoutError):
                async with client.lock(name, blocking_timeout=0.2):
                    pytest.fail("entered a lock held elsewhere")

    run(main())
    assert client.closed


def test_h22_cancelled_waiter_leaves_nothing_behind(aclient, make_client, name, r):
    holder = Holder(make_client().lock(name))
    lock = aclient.lock(name)

    async def main():
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(lock.acquire(), 0.3)
        assert not lock.held()

    run(main())
    fields = r.hkeys(name)
    assert all(not f.startswith(aclient.id.encode()) for f in fields)
    holder.release()
    assert r.exists(name) == 0


def test_cancel_at_the_moment_of_grant_releases(aclient, make_client, name, r):
    """Rounds where the holder lets go just as the waiting task is cancelled: whatever the
    interleaving, the cancelled task must not be left holding the lock."""
    holder_lock = make_client().lock(name)
    lock = aclient.lock(name)

    async def round_(delay):
        holder = await asyncio.get_running_loop().run_in_executor(None, Holder, holder_lock)

        async def wait():
            await lock.acquire()
            return True  # the cancel came too late: this task holds it; released below

        waiter = asyncio.create_task(wait())
        await asyncio.sleep(0.03)
        release = asyncio.get_running_loop().run_in_executor(None, holder.release)
        await asyncio.sleep(delay)
        waiter.cancel()
        await release
        try:
            got = await waiter
        except asyncio.CancelledError:
            got = False
        if got:
            await lock.force_unlock()
        return got

    async def main():
        outcomes = []
        for i in range(30):
            outcomes.append(await round_((i % 10) * 0.0003))
            assert not any(f.startswith(aclient.id.encode()) for f in r.hkeys(name)), i
            assert r.exists(name) == 0
        return outcomes

    run(main())


def test_fenced_token_per_task(aclient, name):
    lock = aclient.fenced_lock(name)

    async def main():
        tokens = []
        for _ in range(2):
            async with lock:
                tokens.append(lock.token)
            assert lock.token is None
        return tokens

    first, second = run(main())
    assert 0 < first < second


def test_holder_names_the_holding_process(aclient, name):
    """``await lock.holder()``: the holding process and its first acquire, listed once the hold
    is a second old; None when free."""
    import os

    lock = aclient.lock(name)

    async def main():
        assert await lock.holder() is None
        async with lock:
            started = time.time()
            while True:
                h = await lock.holder()
                if h.since is not None or time.time() - started > 5:
                    break
                await asyncio.sleep(0.02)
        return h, await lock.holder()

    held, after = run(main())
    assert (held.host, held.pid) == (socket.gethostname(), os.getpid())
    assert held.since is not None and held.owner.startswith(aclient.id + ":")
    assert after is None


def test_read_write_lock_tasks(aclient, name):
    rw = aclient.read_write_lock(name)

    async def main():
        async with rw.read_lock():
            other_read = asyncio.create_task(rw.read_lock().acquire(blocking=False))
            assert await other_read is True  # readers share (it stays held by that task)
            writer = asyncio.create_task(rw.write_lock().acquire(blocking=False))
            assert await writer is False
            with pytest.raises(rlock.DeadlockError):
                await rw.write_lock().acquire()

    run(main())


@pytest.mark.parametrize("kind", ["non_reentrant_lock", "non_reentrant_fair_lock"])
def test_non_reentrant_lock_refuses_its_task(aclient, name, kind):
    lock = getattr(aclient, kind)(name)
    assert repr(lock).startswith("<rlock.asyncio.NonReentrant")

    async def main():
        async with lock:
            with pytest.raises(rlock.DeadlockError):
                await lock.acquire()
            with pytest.raises(rlock.DeadlockError):
                await lock.acquire(blocking=False)
            other = asyncio.create_task(lock.acquire(timeout=0.2))
            assert await other is False  # another task is another owner: it waits
            assert await lock.hold_count() == 1
        assert await lock.acquire(blocking=False) is True
        await lock.release()

    run(main())


def test_outside_a_task_is_an_error(aclient, name):
    lock = aclient.lock(name)
    with pytest.raises(RuntimeError):
        lock.held()


def test_blocking_lock_refuses_async_with(client, name):
    async def main():
        async with client.lock(name):
            pytest.fail("entered")

    with pytest.raises(TypeError, match="rlock.asyncio"):
        run(main())


def test_async_lock_and_thread_share_the_lock(aclient, client, name):
    """The same name from the blocking API and from asyncio is one lock."""
    sync_lock = client.lock(name)
    alock = aclient.lock(name)

    async def main():
        assert await alock.acquire()
        ok = await asyncio.get_running_loop().run_in_executor(
            None, lambda: sync_lock.acquire(blocking=False)
        )
        assert ok is False
        await alock.release()

    run(main())
    assert sync_lock.acquire(blocking=False)
    sync_lock.release()


# ---- owner modes ------------------------------------------------------------------------------


def test_two_lock_objects_in_one_task_contend_by_default(aclient, name, r):
    async def main():
        first, second = aclient.lock(name), aclient.lock(name)
        assert await first.acquire(blocking=False)
        assert await second.acquire(blocking=False) is False  # another object, another owner
        assert await first.acquire(blocking=False)  # the same object re-enters
        assert r.hgetall(name) == {first.owner.encode(): b"2"}
        await first.release()
        await first.release()
        assert await second.acquire(blocking=False)
        await second.release()

    run(main())
    assert r.exists(name) == 0


def test_the_task_owner_re_enters_through_any_lock_object(aclient, name, r):
    async def main():
        first = aclient.lock(name, owner="task")
        second = aclient.lock(name, owner="task")
        assert await first.acquire(blocking=False) and await second.acquire(blocking=False)
        assert first.owner == second.owner
        other = aclient.lock(name, owner="task")
        assert await asyncio.create_task(other.acquire(blocking=False)) is False  # another task
        await second.release()
        await first.release()

    run(main())
    assert r.exists(name) == 0


def test_an_object_not_task_local_is_released_by_another_task(aclient, name, r):
    async def main():
        lock = aclient.lock(name, task_local=False)
        assert await asyncio.create_task(lock.acquire(blocking=False))
        assert r.exists(name) == 1 and lock.held()
        await asyncio.create_task(lock.release())

    run(main())
    assert r.exists(name) == 0


def test_asyncio_owner_arguments_are_checked(aclient, name):
    with pytest.raises(rlock.InvalidArgumentError, match="'object' or 'task'"):
        aclient.lock(name, owner="thread")
    with pytest.raises(rlock.InvalidArgumentError, match="per task"):
        aclient.lock(name, owner="task", task_local=False)
    with pytest.raises(TypeError, match="task_local must be a bool"):
        aclient.lock(name, task_local=1)


# ---- connecting -------------------------------------------------------------------------------


def test_connect_does_not_block_the_loop(redis_url, name, r):
    """rlock.asyncio.connect to a server that accepts but never answers: the loop ticks every
    10 ms throughout the 1 s it takes to give up, and the error is the blocking API's. Then a
    real connect works and its client locks."""
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(16)  # connections complete in the backlog; nobody ever reads them
    ticks = LoopTicks()

    async def main():
        async with ticks:
            began = time.monotonic()
            with pytest.raises(rlock.ConnectionError, match="no reply"):
                await rlock.asyncio.connect(
                    f"redis://127.0.0.1:{silent.getsockname()[1]}",
                    connect_timeout=1.0,
                    command_timeout=1.0,
                )
            took = time.monotonic() - began
        async with await rlock.asyncio.connect(redis_url) as client:
            async with client.lock(name):
                assert r.exists(name) == 1
        return took

    try:
        took = run(main())
    finally:
        silent.close()
    assert took >= 0.9
    assert len(ticks.times) >= took / 0.01 / 4  # a blocked loop would have ticked once
    assert ticks.longest_gap() < 0.2
    assert r.exists(name) == 0
