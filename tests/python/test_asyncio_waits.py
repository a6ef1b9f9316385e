"""rlock.asyncio on the C library's asynchronous calls: a waiting task costs no thread, many
waiters drain, cancellation leaves nothing held or queued, grants for a closed loop are given
back, and every lock kind and group works from tasks. Counts and outcomes, never times."""

from __future__ import annotations

import asyncio
import gc
import os
import sys

import pytest
import rlock
import rlock.asyncio
from helpers import Holder, wait_until

# Library threads a client may add whatever the number of waiters (the budget).
THREAD_BUDGET = 16


@pytest.fixture
def aclient(redis_url):
    c = rlock.asyncio.Client(redis_url)
    yield c
    c.sync_client.close()


def run(coro, timeout=120):
    return asyncio.run(asyncio.wait_for(coro, timeout))


def os_threads() -> int:
    return len(os.listdir("/proc/self/task"))


def queue_key(name: str) -> str:
    return f"redisson_lock_queue:{{{name}}}"


def deadlines_key(name: str) -> str:
    return f"redisson_lock_timeout:{{{name}}}"


def mine(client: rlock.asyncio.Client, entries) -> list:
    """The entries (hash fields, queue members) that name an owner of `client`."""
    prefix = client.id.encode() + b":"
    return [e for e in entries if e.startswith(prefix)]


def make_lock(client, kind: str, name: str):
    if kind == "reentrant":
        return client.lock(name)
    if kind == "fenced":
        return client.fenced_lock(name)
    if kind == "spin":
        return client.spin_lock(name)
    if kind == "fair":
        return client.fair_lock(name)
    if kind == "write":
        return client.read_write_lock(name).write_lock()
    raise AssertionError(kind)


async def until_waiting(tasks, settle: float = 0.3) -> None:
    """Lets every task start its acquire (the start happens before its first suspension), then
    gives the waits a moment to settle before they are observed."""
    for _ in range(3):
        await asyncio.sleep(0)
    await asyncio.sleep(settle)
    assert not any(t.done() for t in tasks)


@pytest.mark.parametrize("kind", ["reentrant", "fair", "spin", "write"])
def test_300_waiting_tasks_add_at_most_16_threads(aclient, make_client, name, r, kind):
    """Needs the waiting engine: on the thread-per-call stub every waiter adds a thread."""
    waiters = 300
    holder = Holder(make_lock(make_client(), "reentrant" if kind != "write" else kind, name))
    lock = make_lock(aclient, kind, name)
    grants = []
    inside = [0]
    overlaps = []

    async def waiter():
        await lock.acquire()
        inside[0] += 1
        if inside[0] != 1:
            overlaps.append(inside[0])
        grants.append(lock.owner)
        await asyncio.sleep(0)
        inside[0] -= 1
        await lock.release()

    async def main():
        before = os_threads()
        tasks = [asyncio.create_task(waiter()) for _ in range(waiters)]
        await until_waiting(tasks)
        waiting = max([os_threads() for _ in range(5)])
        queued = r.lrange(queue_key(name), 0, -1) if kind == "fair" else []
        await asyncio.get_running_loop().run_in_executor(None, holder.release)
        await asyncio.gather(*tasks)
        return before, waiting, queued

    before, waiting, queued = run(main())
    assert len(grants) == waiters and len(set(grants)) == waiters and overlaps == []
    if kind == "fair":  # first come, first served: grants follow the queue
        assert [e.decode() for e in mine(aclient, queued)] == grants
    assert r.exists(name) == 0 and r.exists(queue_key(name)) == 0
    assert waiting - before <= THREAD_BUDGET, (before, waiting)


@pytest.mark.parametrize("kind", ["reentrant", "fair"])
def test_cancelled_waiters_leave_nothing_held_or_queued(aclient, make_client, name, r, kind):
    holder = Holder(make_client().lock(name))
    lock = make_lock(aclient, kind, name)

    async def main():
        async def plain():
            await lock.acquire()

        async def by_wait_for():
            await asyncio.wait_for(lock.acquire(), 0.5)

        async def by_timeout():
            if sys.version_info >= (3, 11):
                async with asyncio.timeout(0.5):
                    await lock.acquire()
            else:  # pragma: no cover - asyncio.timeout is 3.11+
                await asyncio.wait_for(lock.acquire(), 0.5)

        tasks = [asyncio.create_task(f()) for f in (plain, by_wait_for, by_timeout) * 60]
        await until_waiting(tasks, settle=0.1)
        for t in tasks[::3]:
            t.cancel()
        outcomes = await asyncio.gather(*tasks, return_exceptions=True)
        assert all(
            isinstance(o, (asyncio.CancelledError, asyncio.TimeoutError)) for o in outcomes
        ), outcomes
        assert not lock.held()

    run(main())
    assert mine(aclient, r.hkeys(name)) == []
    assert mine(aclient, r.lrange(queue_key(name), 0, -1)) == []
    assert mine(aclient, r.zrange(deadlines_key(name), 0, -1)) == []
    holder.release()
    assert r.exists(name) == 0

    async def after():  # no stale waiter is ahead of a newcomer
        assert await lock.acquire(blocking=False)
        await lock.release()

    run(after())


@pytest.mark.parametrize("kind", ["reentrant", "fair"])
def test_cancel_racing_a_grant_gives_it_back(aclient, make_client, name, r, kind):
    """The holder lets go while many waiting tasks are being cancelled: a task either returns
    holding the lock, or is cancelled and holds nothing."""
    holder_lock = make_client().lock(name)
    lock = make_lock(aclient, kind, name)

    async def round_(i):
        loop = asyncio.get_running_loop()
        holder = await loop.run_in_executor(None, Holder, holder_lock)

        async def wait():
            await lock.acquire()
            return int(lock.owner.rsplit(":", 1)[1])

        tasks = [asyncio.create_task(wait()) for _ in range(20)]
        await until_waiting(tasks, settle=0.05)
        release = loop.run_in_executor(None, holder.release)
        await asyncio.sleep((i % 5) * 0.0005)
        for t in tasks:
            t.cancel()
        await release
        outcomes = await asyncio.gather(*tasks, return_exceptions=True)
        winners = [o for o in outcomes if not isinstance(o, BaseException)]
        assert all(isinstance(o, (int, asyncio.CancelledError)) for o in outcomes)
        fields = mine(aclient, r.hkeys(name))
        assert len(winners) <= 1 and len(fields) == len(winners), (winners, fields)
        assert [int(f.rsplit(b":", 1)[1]) for f in fields] == winners
        assert mine(aclient, r.lrange(queue_key(name), 0, -1)) == []
        if winners:
            await lock.force_unlock()
        assert r.exists(name) == 0

    async def main():
        for i in range(10):
            await round_(i)

    run(main())


def test_grant_for_a_closed_loop_is_released(aclient, make_client, name, r):
    """The loop is closed while its task waits: the grant that arrives later has nowhere to
    go, and is released."""
    holder = Holder(make_client().lock(name))
    lock = aclient.lock(name)
    loop = asyncio.new_event_loop()
    task = loop.create_task(lock.acquire())
    loop.run_until_complete(asyncio.sleep(0.2))
    assert not task.done()
    loop.close()
    holder.release()
    assert wait_until(lambda: r.exists(name) == 0, timeout=10)
    assert mine(aclient, r.hkeys(name)) == []
    del task
    gc.collect()


def test_grant_queued_on_a_loop_closed_before_running_it_is_released(aclient, make_client, name, r):
    """The grant reached the loop, which stopped and was closed without running it: dropping
    the undelivered grant releases it."""
    holder = Holder(make_client().lock(name))
    lock = aclient.lock(name)
    loop = asyncio.new_event_loop()
    task = loop.create_task(lock.acquire())
    loop.run_until_complete(asyncio.sleep(0.2))
    holder.release()  # the loop does not run now: the grant waits in its queue
    assert wait_until(lambda: len(mine(aclient, r.hkeys(name))) == 1, timeout=10)
    loop.close()
    assert wait_until(lambda: r.exists(name) == 0, timeout=10)
    assert not task.done()
    del task
    gc.collect()


@pytest.mark.parametrize("kind", ["reentrant", "fenced", "spin", "fair", "write"])
def test_every_kind_excludes_tasks(aclient, name, r, kind):
    lock = make_lock(aclient, kind, name)
    inside = [0]
    overlaps = []
    tokens = []

    async def work():
        for _ in range(5):
            async with lock:
                inside[0] += 1
                if inside[0] != 1:
                    overlaps.append(inside[0])
                if kind == "fenced":
                    tokens.append(lock.token)
                await asyncio.sleep(0.001)
                inside[0] -= 1

    async def main():
        await asyncio.gather(*(work() for _ in range(6)))

    run(main())
    assert overlaps == []
    if kind == "fenced":
        assert len(tokens) == 30 and tokens == sorted(set(tokens))
    assert r.exists(name) == 0


def test_readers_share_writers_wait(aclient, name, r):
    rw = aclient.read_write_lock(name)

    async def main():
        readers_in = asyncio.Event()
        count = [0]

        async def reader():
            async with rw.read_lock():
                count[0] += 1
                if count[0] == 5:
                    readers_in.set()
                await readers_in.wait()  # all five hold it at once

        async def writer():
            await readers_in.wait()
            async with rw.write_lock():
                return count[0]

        results = await asyncio.gather(*(reader() for _ in range(5)), writer())
        assert results[-1] == 5

    run(main())
    assert r.exists(name) == 0


def test_extend_and_errors_carry_the_library_message(aclient, client, name, r):
    lock = aclient.lock(name)
    sync_lock = client.lock(name)

    async def main():
        with pytest.raises(rlock.NotHeldError) as failure:
            await lock.release()
        assert failure.value.code == rlock.NotHeldError.code
        assert await lock.acquire(lease=30)
        await lock.extend(100)  # adds
        assert 100 < await lock.remaining_ttl() <= 130
        await lock.extend(50, replace_ttl=True)
        assert 40 < await lock.remaining_ttl() <= 50
        await lock.release()
        with pytest.raises(rlock.NotHeldError):
            await lock.extend(5)
        return str(failure.value)

    message = run(main())
    with pytest.raises(rlock.NotHeldError) as blocking:
        sync_lock.release()
    assert message == str(blocking.value) == f"lock {name!r} is not locked"


def test_lock_cancel_wakes_waiting_tasks(aclient, make_client, name, r):
    holder = Holder(make_client().lock(name))
    lock = aclient.lock(name)

    async def main():
        tasks = [asyncio.create_task(lock.acquire()) for _ in range(10)]
        await until_waiting(tasks, settle=0.1)
        lock.cancel()
        return await asyncio.gather(*tasks, return_exceptions=True)

    outcomes = run(main())
    assert all(isinstance(o, rlock.AcquireCancelledError) for o in outcomes), outcomes
    assert all(str(o) for o in outcomes)
    assert mine(aclient, r.hkeys(name)) == []
    holder.release()
    assert r.exists(name) == 0


def test_multi_lock_from_tasks(aclient, make_client, name, r):
    a, b = aclient.lock(f"{name}:a"), aclient.lock(f"{name}:b")
    group = rlock.asyncio.MultiLock([a, b])
    holder = Holder(make_client().lock(f"{name}:b"))

    async def wait_then_release():
        got = await group.acquire()
        seen = (got, group.validity, group.held(), a.held(), b.held())
        other = await asyncio.create_task(group.acquire(blocking=False))  # another owner
        await group.release()
        return seen, other

    async def main():
        assert await group.acquire(timeout=0.2) is False
        assert r.exists(f"{name}:a") == 0  # what it got was given back
        waiter = asyncio.create_task(wait_then_release())
        await until_waiting([waiter])
        await asyncio.get_running_loop().run_in_executor(None, holder.release)
        (got, validity, *held), other = await waiter
        assert got is True and validity is not None and validity > 0
        # The group is the owner of what it acquires, not the members' own objects.
        assert held == [True, False, False] and other is False
        async with group:
            assert group.held()
        assert not group.held()

    run(main())
    assert r.exists(f"{name}:a", f"{name}:b") == 0


def test_cancelled_group_wait_leaves_nothing(aclient, make_client, name, r):
    a, b = aclient.lock(f"{name}:a"), aclient.lock(f"{name}:b")
    group = rlock.asyncio.MultiLock([a, b])
    holder = Holder(make_client().lock(f"{name}:b"))

    async def main():
        tasks = [asyncio.create_task(group.acquire()) for _ in range(20)]
        await until_waiting(tasks, settle=0.1)
        for t in tasks:
            t.cancel()
        outcomes = await asyncio.gather(*tasks, return_exceptions=True)
        assert all(isinstance(o, asyncio.CancelledError) for o in outcomes)

    run(main())
    assert r.exists(f"{name}:a") == 0
    assert mine(aclient, r.hkeys(f"{name}:b")) == []
    holder.release()


def test_redlock_from_tasks(start_redis, redis_url, make_redis, name):
    servers = [start_redis() for _ in range(3)]
    views = [make_redis(s.url) for s in servers]
    clients = [rlock.asyncio.Client(s.url) for s in servers]
    group = rlock.asyncio.RedLock([c.lock(name) for c in clients])

    async def main():
        assert await group.acquire(timeout=2, lease=5.0)
        assert group.held() and 0 < group.validity <= 5.0
        assert [v.exists(name) for v in views] == [1, 1, 1]
        await group.release()
        assert not group.held()
        for c in clients:
            await c.close()

    run(main())
    assert [v.exists(name) for v in views] == [0, 0, 0]


def test_close_wakes_waiting_tasks(redis_url, make_client, name, r):
    holder = Holder(make_client().lock(name))
    client = rlock.asyncio.Client(redis_url)
    lock = client.lock(name)

    async def main():
        tasks = [asyncio.create_task(lock.acquire()) for _ in range(20)]
        await until_waiting(tasks, settle=0.1)
        await client.close()
        return await asyncio.gather(*tasks, return_exceptions=True)

    outcomes = run(main())
    assert all(isinstance(o, rlock.LockError) for o in outcomes), outcomes
    assert client.closed
    holder.release()
    assert r.exists(name) == 0
