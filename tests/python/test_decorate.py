"""Client.locked and rlock.asyncio.Client.locked: functions run under a lock named from their
arguments."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest
import rlock
import rlock.asyncio


@pytest.fixture
def aclient(redis_url):
    c = rlock.asyncio.Client(redis_url)
    yield c
    c.sync_client.close()


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 30))


def test_the_name_comes_from_the_arguments_and_the_lock_is_held_inside(client, name, r):
    seen = []

    @client.locked(name + ":{0}:{kind}:{1}")
    def job(day, part=7, *, kind="full"):
        seen.append(r.hgetall(f"{name}:{day}:{kind}:{part}"))
        return day * 2

    assert job(21, kind="delta") == 42
    # Inside, the lock of that name was held (a Redisson hash with one hold); after, it is gone.
    assert len(seen) == 1 and list(seen[0].values()) == [b"1"]
    assert r.exists(f"{name}:21:delta:7") == 0
    assert job.__name__ == "job"  # functools.wraps


def test_exclusion_between_threads_and_different_keys_in_parallel(client, make_client, name):
    other = make_client()
    inside = {"a": 0, "b": 0}
    most = {"a": 0, "b": 0}
    both_keys_at_once = []
    mu = threading.Lock()

    def body(key):
        with mu:
            inside[key] += 1
            most[key] = max(most[key], inside[key])
            if inside["a"] and inside["b"]:
                both_keys_at_once.append(True)
        time.sleep(0.02)
        with mu:
            inside[key] -= 1

    jobs = [c.locked(name + ":{0}")(body) for c in (client, other)]
    threads = [
        threading.Thread(target=lambda j=j, k=k: [j(k) for _ in range(10)])
        for j in jobs
        for k in ("a", "b")
        for _ in range(2)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert most == {"a": 1, "b": 1}  # never two runs of one key at once
    assert both_keys_at_once  # the two keys did not wait for each other


def test_skip_or_raise_when_held(client, make_client, name):
    holder = make_client().lock(name + ":x")
    assert holder.acquire(blocking=False)
    calls = []

    @client.locked(name + ":{0}", wait=0, on_held="skip", default="skipped")
    def skip(key):
        calls.append(key)
        return "ran"

    @client.locked(name + ":{0}", wait=0.2)
    def strict(key):
        calls.append(key)

    assert skip("x") == "skipped"
    start = time.monotonic()
    with pytest.raises(rlock.LockTimeoutError, match=r"x.*not acquired within 0.2 s"):
        strict("x")
    assert time.monotonic() - start >= 0.19
    assert calls == []
    assert skip("y") == "ran"  # another key is free
    holder.release()
    assert skip("x") == "ran"


def test_waits_for_the_lock_by_default(client, make_client, name):
    holder = make_client().lock(name, thread_local=False)  # released by the timer's thread
    holder.acquire()
    threading.Timer(0.3, holder.release).start()

    @client.locked(name)
    def job():
        return time.monotonic()

    start = time.monotonic()
    assert job() - start >= 0.25


def test_an_exception_releases_the_lock_and_propagates(client, name, r):
    @client.locked(name)
    def boom():
        raise KeyError("inside")

    with pytest.raises(KeyError, match="inside"):
        boom()
    assert r.exists(name) == 0


def test_nested_calls_of_one_name_reenter(client, name):
    @client.locked(name)
    def outer(depth):
        return depth if depth == 0 else outer(depth - 1) + 1

    assert outer(3) == 3


def test_lease_is_set(client, name, r):
    @client.locked(name, lease=5)
    def job():
        return r.pttl(name)

    assert 4000 < job() <= 5000


def test_a_callable_names_the_lock(client, name, r):
    @client.locked(lambda order: f"{name}:order:{order['id']}")
    def ship(order):
        return r.exists(f"{name}:order:{order['id']}")

    assert ship({"id": 9}) == 1


def test_bad_templates_and_options_are_refused(client, name):
    def job(day, *, kind="full"):
        return day

    with pytest.raises(rlock.InvalidArgumentError, match=r"'user'.*not a parameter of .*job"):
        client.locked("r:{user}")(job)
    with pytest.raises(rlock.InvalidArgumentError, match=r"argument 3.*takes 1 positional"):
        client.locked("r:{3}")(job)
    with pytest.raises(rlock.InvalidArgumentError, match=r"empty field"):
        client.locked("r:{}")(job)
    with pytest.raises(rlock.InvalidArgumentError, match=r"not valid"):
        client.locked("r:{day")(job)
    with pytest.raises(rlock.InvalidArgumentError, match=r"on_held"):
        client.locked("r", on_held="ignore")
    with pytest.raises(rlock.InvalidArgumentError, match=r"wait"):
        client.locked("r", wait=-1)

    async def coro():
        return None

    with pytest.raises(TypeError, match=r"coroutine function.*rlock.asyncio.Client"):
        client.locked("r")(coro)

    def gen():
        yield 1

    with pytest.raises(TypeError, match=r"generator function"):
        client.locked("r")(gen)

    # *args: a position past the named ones is only known at the call.
    @client.locked(name + ":{1}")
    def varargs(*parts):
        return parts

    assert varargs("a", "b") == ("a", "b")
    with pytest.raises(rlock.InvalidArgumentError, match=r"gives no argument 1"):
        varargs("a")


def test_async_functions_under_the_asyncio_client(aclient, name, r):
    inside = [0]
    most = [0]

    @aclient.locked(name + ":{key}")
    async def job(key):
        inside[0] += 1
        most[0] = max(most[0], inside[0])
        assert r.exists(f"{name}:{key}") == 1
        await asyncio.sleep(0.01)
        inside[0] -= 1
        return key

    @aclient.locked(name + ":{0}", wait=0, on_held="skip", default="skipped")
    async def skipper(key):
        return "ran"

    @aclient.locked(name + ":{0}")
    async def nested(depth):
        return depth if depth == 0 else await nested(depth - 1) + 1

    async def main():
        results = await asyncio.gather(*(job("k") for _ in range(8)))
        assert results == ["k"] * 8
        holder = aclient.lock(name + ":h")
        await holder.acquire()
        assert await skipper("h") == "skipped"
        await holder.release()
        assert await skipper("h") == "ran"
        assert await nested(2) == 2

    run(main())
    assert most[0] == 1
    assert r.exists(f"{name}:k") == 0

    def plain():
        return None

    with pytest.raises(TypeError, match=r"not a coroutine function"):
        aclient.locked("r")(plain)


def test_min_hold_keeps_a_quick_run_held_until_then(client, make_client, name, r):
    other = make_client()
    ran = []

    def job(where):
        ran.append(where)

    here = client.locked(name, wait=0, on_held="skip", lease=5, min_hold=0.5)(job)
    there = other.locked(name, wait=0, on_held="skip", lease=5, min_hold=0.5)(job)
    start = time.monotonic()
    here("here")
    ttl = r.pttl(name)
    assert 0 < ttl <= 500  # left held, its lease cut to what min_hold has left
    there("there")  # the same tick on another client: skipped
    assert ran == ["here"]
    while r.exists(name) and time.monotonic() - start < 5:
        time.sleep(0.02)
    assert time.monotonic() - start >= 0.45
    there("there")
    assert ran == ["here", "there"]

    with pytest.raises(rlock.InvalidArgumentError, match=r"min_hold=1 needs a lease"):
        client.locked(name, min_hold=1)
    with pytest.raises(rlock.InvalidArgumentError, match=r"min_hold must be"):
        client.locked(name, lease=1, min_hold=0)


def test_min_hold_on_the_asyncio_client(aclient, name, r):
    @aclient.locked(name, wait=0, on_held="skip", default="skipped", lease=5, min_hold=0.5)
    async def job():
        return "ran"

    async def main():
        assert await job() == "ran"
        assert 0 < r.pttl(name) <= 500
        assert await job() == "skipped"

    run(main())
