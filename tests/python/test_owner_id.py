"""Caller-given owners (``owner_id=``): every lock object naming the id, in any process, is one
owner whose field is ``"<uuid5 of the id>:1"``, so one process releases or extends what another
acquired; its holds outlive the client that took them (they last their lease)."""

import asyncio
import subprocess
import sys
import threading
import uuid

import pytest
import rlock
import rlock.asyncio

NAMESPACE = uuid.UUID("582a18c8-c685-423e-bc63-c2b861deff6c")  # rlock.h RLOCK_OWNER_ID_NAMESPACE

TAKE_AND_EXIT = """
import sys, rlock
url, name, owner_id = sys.argv[1:4]
client = rlock.Client(url)
assert client.lock(name, lease=30, owner_id=owner_id).acquire(blocking=False)
client.close()  # a caller-given owner's hold is left to its lease, not released
"""


def field(owner_id: str) -> bytes:
    return f"{uuid.uuid5(NAMESPACE, owner_id)}:1".encode()


def test_another_process_takes_and_this_one_releases(client, redis_url, name, r):
    owner_id = f"job-{uuid.uuid4()}"
    subprocess.run(
        [sys.executable, "-c", TAKE_AND_EXIT, redis_url, name, owner_id], check=True, timeout=60
    )
    assert r.hgetall(name) == {field(owner_id): b"1"}
    assert 20_000 < r.pttl(name) <= 30_000

    stranger = client.lock(name, owner_id=owner_id + "-other")
    assert stranger.acquire(blocking=False) is False
    with pytest.raises(rlock.NotHeldError):
        stranger.release()
    plain = client.lock(name)
    assert plain.acquire(blocking=False) is False

    mine = client.lock(name, owner_id=owner_id)
    assert mine.owner == field(owner_id).decode()
    mine.extend(60)
    assert r.pttl(name) > 30_000
    mine.release()
    assert r.exists(name) == 0
    assert plain.acquire(blocking=False)
    plain.release()


def test_an_int_is_its_decimal_digits_and_the_id_never_re_enters(client, name, r):
    """As python-redis-lock's AlreadyAcquired: the id's holds are shared by threads and
    processes, so a second acquire while it holds the lock is refused (it would wait for
    itself), from any thread and object, and changes nothing."""
    first = client.lock(name, owner_id=42, lease=20)
    second = client.lock(name, owner_id="42")
    assert first.acquire(blocking=False)
    assert r.hgetall(name) == {field("42"): b"1"}
    errors = []

    def again() -> None:
        try:
            second.acquire(timeout=5)
        except rlock.DeadlockError as e:
            errors.append(e)

    t = threading.Thread(target=again)
    t.start()
    t.join(10)
    assert len(errors) == 1
    with pytest.raises(rlock.DeadlockError):
        first.acquire()
    assert r.hgetall(name) == {field("42"): b"1"}
    second.release()  # any object naming the id
    assert r.exists(name) == 0
    with pytest.raises(rlock.NotHeldError):
        first.release()


def test_asyncio_and_blocking_locks_naming_an_id_are_one_owner(redis_url, client, name, r):
    async def take() -> None:
        async with await rlock.asyncio.connect(redis_url) as aclient:
            lock = aclient.lock(name, owner_id="shared", lease=20)
            assert await lock.acquire(timeout=1)
            assert lock.owner == field("shared").decode()

    asyncio.run(take())
    assert r.hgetall(name) == {field("shared"): b"1"}
    client.lock(name, owner_id="shared").release()
    assert r.exists(name) == 0


def test_a_group_of_one_id_is_that_owner_everywhere(make_client, name, r):
    a, b = make_client(), make_client()
    names = [name, name + ":b", name + ":c"]
    taker = rlock.RedLock([a.lock(n, owner_id="batch-7", lease=20) for n in names])
    assert taker.acquire(blocking=False)
    for n in names:
        assert r.hgetall(n) == {field("batch-7"): b"1"}
    other = rlock.RedLock([b.lock(n, owner_id="batch-7") for n in names])
    other.release()
    assert all(r.exists(n) == 0 for n in names)
    with pytest.raises(rlock.InvalidArgumentError, match="same owner_id"):
        rlock.MultiLock([b.lock(name, owner_id="x"), b.lock(name + ":b")])


@pytest.mark.parametrize(
    "kwargs,error,words",
    [
        ({"owner_id": ""}, rlock.InvalidArgumentError, "must not be empty"),
        ({"owner_id": "x" * 1025}, rlock.InvalidArgumentError, "1025 bytes"),
        ({"owner_id": True}, TypeError, "str, bytes or int"),
        ({"owner_id": 1.5}, TypeError, "str, bytes or int"),
        ({"owner_id": "\udc80"}, rlock.InvalidArgumentError, "no UTF-8 form"),
        ({"owner_id": "a", "owner": "thread"}, rlock.InvalidArgumentError, "owner_id names"),
        ({"owner_id": "a", "thread_local": False}, rlock.InvalidArgumentError, "owner_id names"),
    ],
)
def test_owner_id_arguments_are_checked(client, name, kwargs, error, words):
    with pytest.raises(error, match=words):
        client.lock(name, **kwargs)
    with pytest.raises(TypeError):
        client.read_write_lock(name, owner_id="a")  # not for read-write locks
