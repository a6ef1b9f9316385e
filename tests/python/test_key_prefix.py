"""The client option key_prefix (Redisson's NameMapper as a prefix): locks, semaphores and the
asyncio client keep their keys behind it, a client without it meets the same lock under
prefix + name, names in events come back without it, and bad values are refused."""

from __future__ import annotations

import asyncio
import queue
import threading
import time

import pytest
import redis
import rlock
import rlock.asyncio


def test_a_lock_and_a_semaphore_live_under_the_prefix(
    make_client, r: redis.Redis, name: str
) -> None:
    prefixed = make_client(key_prefix="svc:")
    plain = make_client()
    lock = prefixed.lock(name)
    with lock:
        assert r.exists(f"svc:{name}") == 1
        assert r.exists(name) == 0
        assert lock.name == name  # the name as given
        assert not plain.lock(f"svc:{name}").acquire(blocking=False), "one lock, two spellings"
    assert r.exists(f"svc:{name}") == 0
    sem = prefixed.semaphore(name + ":sem")
    assert sem.try_set_permits(2)
    assert r.get(f"svc:{name}:sem") == b"2"
    sem.delete()


def test_clients_with_other_prefixes_do_not_meet(make_client, name: str) -> None:
    first = make_client(key_prefix="tenant-1:").lock(name)
    second = make_client(key_prefix="tenant-2:").lock(name)
    with first:
        assert second.acquire(blocking=False)
        second.release()


def test_events_name_the_lock_without_the_prefix(make_client, name: str) -> None:
    client = make_client(key_prefix="svc:")
    seen = []
    got = threading.Event()

    def handler(event: rlock.Event) -> None:
        seen.append(event.name)
        got.set()

    client.on_event(handler)
    with client.lock(name):
        pass
    assert got.wait(5)
    client.on_event(None)
    assert name in seen and f"svc:{name}" not in seen


def test_the_url_option_sets_it(make_client, redis_url: str, r: redis.Redis, name: str) -> None:
    client = make_client(redis_url + "?key_prefix=from%3Aurl%3A")
    with client.lock(name):
        assert r.exists(f"from:url:{name}") == 1


def test_bad_prefixes_are_refused(make_client, redis_url: str) -> None:
    with pytest.raises(TypeError, match="key_prefix must be a str"):
        make_client(key_prefix=b"x:")
    with pytest.raises(rlock.InvalidArgumentError, match="key_prefix must not be empty"):
        make_client(key_prefix="")
    with pytest.raises(rlock.InvalidArgumentError, match="key_prefix is 1025 bytes"):
        make_client(key_prefix="p" * 1025)
    with pytest.raises(rlock.InvalidArgumentError, match="different values"):
        make_client(redis_url + "?key_prefix=a%3A", key_prefix="b:")
    with pytest.raises(rlock.InvalidArgumentError, match="key_prefix"):
        make_client(key_prefix="a\0b")


def test_asyncio_connect_takes_it(redis_url: str, r: redis.Redis, name: str) -> None:
    async def main() -> None:
        client = await rlock.asyncio.connect(redis_url, key_prefix="svc-async:")
        try:
            async with client.lock(name):
                assert r.exists(f"svc-async:{name}") == 1
        finally:
            await client.close()

    asyncio.run(asyncio.wait_for(main(), 30))


@pytest.fixture
def notifications(r: redis.Redis):
    """Sets the server's notify-keyspace-events for a test, and restores it."""
    before = str(r.config_get("notify-keyspace-events")["notify-keyspace-events"] or "")
    yield lambda flags: r.config_set("notify-keyspace-events", flags)
    r.config_set("notify-keyspace-events", before)


def test_watched_key_events_name_the_lock(
    make_client, notifications, r: redis.Redis, name: str
) -> None:
    notifications("Egx")
    client = make_client(key_prefix="svc-ke:")
    seen: "queue.Queue[rlock.Event]" = queue.Queue()
    client.on_event(seen.put)
    client.watch_key_events()
    with client.lock(name + ":deleted"):
        pass
    assert client.lock(name + ":expires").acquire(lease=0.1)
    wanted = {
        (rlock.EventKind.KEY_DELETED, name + ":deleted"),
        (rlock.EventKind.KEY_EXPIRED, name + ":expires"),
    }
    got: set = set()
    deadline = time.monotonic() + 5
    while not wanted <= got and time.monotonic() < deadline:
        # Redis expires a key when it is read or when its expiry scan reaches it; on the server
        # the tests share, the scan alone may take longer than this wait. The read makes the
        # expiry, and its event, happen now.
        r.exists(f"svc-ke:{name}:expires")
        try:
            e = seen.get(timeout=0.1)
        except queue.Empty:
            continue
        got.add((e.kind, e.name))
    assert wanted <= got, got
    client.watch_key_events(expired=False, deleted=False)
    client.on_event(None)


def test_a_server_without_notifications_is_named(make_client, notifications) -> None:
    notifications("")
    client = make_client()
    with pytest.raises(rlock.RedisError, match="notify-keyspace-events"):
        client.watch_key_events()
    with pytest.raises(TypeError):
        client.watch_key_events(expired=1)  # type: ignore[arg-type]
