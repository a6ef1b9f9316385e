"""Bad input and failures raise the documented exceptions, with the C library's messages, and
leave nothing locked."""

from __future__ import annotations

import math
import threading
import time

import pytest
import rlock
from helpers import wait_until


def test_exception_hierarchy():
    assert issubclass(rlock.ConnectionError, rlock.LockError)
    assert issubclass(rlock.ConnectionError, ConnectionError)
    assert rlock.RedisConnectionError is rlock.ConnectionError
    assert issubclass(rlock.AuthenticationError, rlock.ConnectionError)
    assert issubclass(rlock.LockTimeoutError, TimeoutError)
    assert issubclass(rlock.NotHeldError, RuntimeError)
    assert issubclass(rlock.InvalidArgumentError, ValueError)
    for cls in (
        rlock.NotHeldError,
        rlock.LockLostError,
        rlock.AcquireCancelledError,
        rlock.DeadlockError,
        rlock.NoPermissionError,
        rlock.RedisError,
        rlock.ClientClosedError,
        rlock.LockTimeoutError,
        rlock.NotSyncedError,
        rlock.ForkedError,
    ):
        assert issubclass(cls, rlock.LockError)
    assert not issubclass(rlock.LockLostError, rlock.NotHeldError)


def test_connection_refused(redis_url):
    with pytest.raises(rlock.ConnectionError) as info:
        rlock.Client("redis://127.0.0.1:1", connect_timeout=0.5)
    assert isinstance(info.value, ConnectionError)
    assert info.value.code == -5
    assert "127.0.0.1:1" in str(info.value)


def test_url_defaults_to_environment(monkeypatch, redis_url):
    monkeypatch.setenv("RLOCK_URL", redis_url)
    with rlock.Client() as c:
        assert not c.closed
    monkeypatch.setenv("RLOCK_URL", "redis://127.0.0.1:1")
    with pytest.raises(rlock.ConnectionError, match="127.0.0.1:1"):
        rlock.Client(connect_timeout=0.5)


@pytest.mark.parametrize(
    "url, words",
    [
        ("http://localhost", "scheme"),
        ("redis://127.0.0.1:99999", "port"),
        ("", "url"),
    ],
)
def test_h11_bad_urls(url, words):
    with pytest.raises(rlock.InvalidArgumentError) as info:
        rlock.Client(url)
    assert words in str(info.value).lower()
    assert isinstance(info.value, ValueError)


def test_h12_wrong_password_is_auth_error_and_not_echoed(private_redis, make_redis):
    r = make_redis(private_redis.url)
    r.config_set("requirepass", "s3cret-pw")
    url = f"redis://:wrong-pw@127.0.0.1:{private_redis.port}"
    with pytest.raises(rlock.AuthenticationError) as info:
        rlock.Client(url)
    assert "wrong-pw" not in str(info.value)
    with rlock.Client(f"redis://:s3cret-pw@127.0.0.1:{private_redis.port}") as c:
        with c.lock("x") as lock:
            assert lock.held()


def test_h12_acl_user_without_scripting(private_redis, make_redis):
    r = make_redis(private_redis.url)
    r.acl_setuser(
        "noscript",
        enabled=True,
        passwords=["+pw"],
        keys=["*"],
        channels=["*"],
        commands=["+@all", "-eval", "-evalsha"],
    )
    with pytest.raises(rlock.NoPermissionError) as info:
        rlock.Client(f"redis://noscript:pw@127.0.0.1:{private_redis.port}")
    assert isinstance(info.value, PermissionError)


@pytest.mark.parametrize(
    "kwargs, exc",
    [
        ({"connect_timeout": 0}, rlock.InvalidArgumentError),
        ({"command_timeout": -1}, rlock.InvalidArgumentError),
        ({"watchdog_lease": math.nan}, rlock.InvalidArgumentError),
        ({"watchdog_lease": "30"}, TypeError),
        ({"pool_size": 0}, rlock.InvalidArgumentError),
        ({"pool_size": 2.5}, TypeError),
        ({"max_name_len": 0}, rlock.InvalidArgumentError),
    ],
)
def test_h11_bad_client_options(redis_url, kwargs, exc):
    with pytest.raises(exc):
        rlock.Client(redis_url, **kwargs)


def test_h5_lease_zero_or_negative(client, name, r):
    with pytest.raises(rlock.InvalidArgumentError, match="lease") as info:
        client.lock(name, lease=0)
    assert info.value.code == -6
    with pytest.raises(rlock.InvalidArgumentError, match="lease"):
        client.lock(name, lease=-1)
    lock = client.lock(name)
    with pytest.raises(rlock.InvalidArgumentError, match="lease"):
        lock.acquire(lease=0)
    with pytest.raises(rlock.InvalidArgumentError, match="lease"):
        lock.acquire(blocking=False, lease=-0.5)
    lock.acquire(blocking=False, lease=5)
    with pytest.raises(rlock.InvalidArgumentError, match="additional_time"):
        lock.extend(-1)
    with pytest.raises(rlock.InvalidArgumentError, match="additional_time"):
        lock.extend(0)
    assert 4000 < r.pttl(name) <= 5000  # the bad extends did not touch the lease
    lock.release()
    assert r.exists(name) == 0


def test_h6_durations_too_large(client, name, r):
    with pytest.raises(rlock.InvalidArgumentError):
        client.lock(name, lease=math.inf)
    lock = client.lock(name)
    for huge in (math.inf, 1e300, 2.0**63, 9.3e15):
        with pytest.raises(rlock.InvalidArgumentError, match="lease"):
            lock.acquire(lease=huge)
        with pytest.raises(rlock.InvalidArgumentError, match="lease"):
            client.lock(name, lease=huge)
    for huge in (1e300, 2.0**63, 9.3e15):
        with pytest.raises(OverflowError):  # as threading.Lock.acquire does
            lock.acquire(timeout=huge)
    assert r.exists(name) == 0  # nothing reached Redis


def test_h7_negative_wait(client, name, r):
    with pytest.raises(ValueError):
        client.lock(name, blocking_timeout=-5)
    lock = client.lock(name)
    for bad in (-2, -0.5, -1e9):
        with pytest.raises(ValueError):
            lock.acquire(timeout=bad)
    assert r.exists(name) == 0
    # -1 is "forever", as in threading.Lock
    assert lock.acquire(timeout=-1)
    lock.release()


def test_h8_garbage_types_never_reach_redis(client, name, r):
    with pytest.raises(TypeError, match="str or bytes"):
        client.lock(42)
    lock = client.lock(name)
    with pytest.raises(TypeError):
        lock.acquire(lease="5")
    with pytest.raises(TypeError):
        lock.acquire(timeout="1")
    with pytest.raises(TypeError):
        lock.extend("5")
    with pytest.raises(TypeError):
        rlock.Lock()
    with pytest.raises(rlock.InvalidArgumentError, match="waiter_timeout"):
        client.fair_lock(name, waiter_timeout=0)
    with pytest.raises(rlock.InvalidArgumentError, match="backoff"):
        client.spin_lock(name, initial_backoff=-1)
    assert r.exists(name) == 0  # nothing reached Redis


def test_h9_none_instead_of_objects(client, name, r):
    with pytest.raises(TypeError):
        client.lock(None)
    with pytest.raises(TypeError):
        rlock.MultiLock([client.lock(name), None])
    with pytest.raises(TypeError):
        client.fenced_write(None, "v", 1)
    assert r.exists(name) == 0


def test_h10_closed_client_lock_and_group(redis_url, name, r):
    c = rlock.Client(redis_url)
    lock = c.lock(name)
    lock.close()
    lock.close()  # idempotent
    with pytest.raises(rlock.ClientClosedError):
        lock.acquire(blocking=False)
    other = c.lock(name)
    c.close()
    c.close()
    with pytest.raises(rlock.ClientClosedError) as info:
        other.acquire()
    assert info.value.code == -20
    with pytest.raises(rlock.ClientClosedError):
        c.lock(name)
    assert r.exists(name) == 0
    # A freed C handle (RLOCK_EBADHANDLE, which the binding never passes) is a closed one too.
    from rlock import _errors

    assert _errors._BY_CODE[-22] is rlock.ClientClosedError


def test_h1_empty_name(client, r):
    with pytest.raises(rlock.InvalidArgumentError) as info:
        client.lock("")
    assert "name" in str(info.value)
    assert info.value.code == -6
    with pytest.raises(rlock.InvalidArgumentError):
        client.lock(b"")


def test_h2_too_long_names(client, make_client):
    small = make_client(max_name_len=16)
    small.lock("x" * 16)
    with pytest.raises(rlock.InvalidArgumentError, match="name"):
        small.lock("x" * 17)
    with pytest.raises(rlock.InvalidArgumentError, match="max_name_len"):
        client.lock("y" * (1 << 20))  # 1 MiB, over the 64 KiB default
    client.lock("z" * 65536)


def test_h4_names_with_braces(client, make_client, r):
    for name in ("a}b{c-" + str(id(r)), "{tag}-" + str(id(client)), "}{"):
        lock = client.lock(name)
        assert lock.acquire(blocking=False)
        assert list(r.hgetall(name).values()) == [b"1"]  # the key is the name, byte for byte
        other = make_client()
        waiter_lock = other.lock(name)
        got = []

        def wait():
            got.append(waiter_lock.acquire(timeout=10))
            waiter_lock.release()

        t = threading.Thread(target=wait)
        t.start()
        # Redisson's channel rule: the name is wrapped in a hash tag unless it has a brace.
        channel = (
            f"redisson_lock__channel:{name}"
            if "{" in name
            else f"redisson_lock__channel:{{{name}}}"
        )
        assert wait_until(lambda: r.pubsub_numsub(channel)[0][1] == 1, timeout=5)
        lock.release()
        t.join(10)
        assert got == [True]
        assert r.exists(name) == 0


def test_h14_double_release_and_release_without_acquire(client, name, r):
    lock = client.lock(name)
    with pytest.raises(rlock.NotHeldError) as info:
        lock.release()
    assert info.value.code == -3
    assert name[:40] in str(info.value)  # long names are shortened in messages
    lock.acquire()
    lock.release()
    with pytest.raises(rlock.NotHeldError):
        lock.release()
    assert r.exists(name) == 0


def test_h13_release_of_another_owners_lock_leaves_it(client, make_client, name, r):
    make_client().lock(name).acquire()
    before = r.hgetall(name)
    lock = client.lock(name)
    with pytest.raises(rlock.NotHeldError, match="another owner"):
        lock.release()
    with pytest.raises(rlock.NotHeldError):
        lock.extend(5)
    assert r.hgetall(name) == before


def test_wrong_type_key(client, name, r):
    r.set(name, "not a hash")
    lock = client.lock(name)
    with pytest.raises(rlock.RedisError) as info:
        lock.acquire(blocking=False)
    assert "WRONGTYPE" in str(info.value) or "wrong" in str(info.value).lower()
    assert r.get(name) == b"not a hash"


def test_h16_redis_down_while_using_a_lock(private_redis, name):
    c = rlock.Client(private_redis.url, connect_timeout=0.5, command_timeout=0.5)
    try:
        lock = c.lock(name)
        private_redis.stop()
        with pytest.raises(rlock.ConnectionError):
            lock.acquire(blocking=False)
        with pytest.raises(rlock.ConnectionError):
            lock.locked()
    finally:
        c.close()


def test_h16_release_while_redis_is_down(private_redis, name):
    c = rlock.Client(private_redis.url, connect_timeout=0.5, command_timeout=0.5)
    try:
        lock = c.lock(name)
        assert lock.acquire(blocking=False)
        private_redis.stop()
        start = time.monotonic()
        with pytest.raises(rlock.ConnectionError) as info:
            lock.release()
        assert info.value.code == -5
        assert time.monotonic() - start < 1.5
        assert not lock.held()  # renewal stopped: the key expires by its lease
    finally:
        c.close()


def test_closed_client(redis_url, name):
    c = rlock.Client(redis_url)
    lock = c.lock(name)
    c.close()
    c.close()  # idempotent
    with pytest.raises(rlock.ClientClosedError):
        lock.acquire()
    with pytest.raises(rlock.ClientClosedError):
        c.lock(name)


def test_h19_close_wakes_waiter_with_client_closed(redis_url, make_client, name):
    make_client().lock(name).acquire()
    c = rlock.Client(redis_url)
    lock = c.lock(name)
    outcome = {}

    def wait():
        try:
            lock.acquire()
        except rlock.LockError as exc:
            outcome["error"] = exc

    t = threading.Thread(target=wait)
    t.start()
    import time

    time.sleep(0.2)
    c.close()
    t.join(timeout=5)
    assert not t.is_alive()
    assert isinstance(outcome.get("error"), rlock.ClientClosedError)


def test_multi_lock_bad_members(client, name):
    with pytest.raises(rlock.InvalidArgumentError):
        rlock.MultiLock([])
    with pytest.raises(TypeError):
        rlock.MultiLock([client.lock(name), "not a lock"])


def test_fenced_write_bad_arguments(client, name):
    with pytest.raises(rlock.InvalidArgumentError):
        client.fenced_write(name, "v", 0)
    with pytest.raises(TypeError):
        client.fenced_write(name, "v", "1")
    with pytest.raises(TypeError):
        client.fenced_write(name, 3.5, 1)


def test_h17_extend_after_expiry_raises_lost(client, make_client, name, r):
    lock = client.lock(name)
    assert lock.acquire(lease=0.15)
    assert wait_until(lambda: r.exists(name) == 0, timeout=3)
    with pytest.raises(rlock.LockLostError) as info:
        lock.extend(30)
    assert info.value.code == -11
    assert r.exists(name) == 0  # not re-created
    assert lock.acquire(lease=0.15)
    assert wait_until(lambda: r.exists(name) == 0, timeout=3)
    other = make_client().lock(name)
    assert other.acquire(blocking=False, lease=60)
    before = r.hgetall(name)
    with pytest.raises(rlock.LockLostError):
        lock.extend(90)
    assert r.hgetall(name) == before
    assert r.pttl(name) <= 60000
    other.release()


def test_h23_oom_and_readonly_are_typed_and_never_acquired(
    private_redis, start_redis, make_redis, name
):
    admin = make_redis(private_redis.url)
    with rlock.Client(private_redis.url) as c:
        lock = c.lock(name)
        admin.config_set("maxmemory", "1")
        with pytest.raises(rlock.RedisError) as info:
            lock.acquire(blocking=False)
        assert info.value.code == -17
        assert not lock.held()
        admin.config_set("maxmemory", "0")
        master = start_redis()
        admin.replicaof("127.0.0.1", master.port)
        with pytest.raises(rlock.RedisError) as info:
            lock.acquire(blocking=False)
        assert info.value.code == -19
        assert not lock.held()
        admin.replicaof("NO", "ONE")
        assert admin.exists(name) == 0
        assert lock.acquire(blocking=False)
        lock.release()


def test_replica_sync_without_a_replica_raises_not_synced_and_holds_nothing(redis_url, r, name):
    # The URL option reaches the library unchanged; the server has no replica, so WAIT confirms
    # nothing and the grant is taken back.
    with rlock.Client(redis_url + "?sync_replicas=1&sync_timeout_ms=50") as client:
        lock = client.lock(name)
        with pytest.raises(rlock.NotSyncedError) as info:
            lock.acquire(blocking=False)
        assert info.value.code == -23
        assert "replicas confirmed" in str(info.value)
        assert not lock.held()
        assert r.exists(name) == 0
    with rlock.Client(redis_url + "?sync_replicas=never") as client:
        lock = client.lock(name)
        assert lock.acquire(blocking=False)
        lock.release()
