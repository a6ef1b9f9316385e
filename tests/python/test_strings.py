"""Strings reach Redis exactly, or are refused (issue 19, item 3; docs/bad-input.md H3, H24).

A URL (and so a user name, password or option in it) with a NUL is refused before anything is
sent, rather than cut at the NUL when it crosses the C ABI. Lock names are bytes: str names are
sent as their exact UTF-8, bytes names byte for byte (NUL and 0x80-0xff included); a str that has
no UTF-8 form (a lone surrogate) is refused. Every key is checked as Redis stores it."""

from __future__ import annotations

import subprocess
import uuid

import pytest
import rlock
from helpers import rlock_cli

_EINVAL = -6


def _connections(r) -> int:
    return int(r.info("stats")["total_connections_received"])


def _keys(r, prefix: bytes):
    return sorted(r.scan_iter(match=prefix + b"*", count=1000))


@pytest.fixture
def base() -> str:
    """A name prefix no other test uses, without glob characters (it is a SCAN pattern)."""
    return f"pytest-strings:{uuid.uuid4().hex}"


@pytest.mark.parametrize(
    "template",
    [
        "redis://127.0.0.1:{port}\x00garbage",
        "redis://127.0.0.1\x00.evil:{port}",
        "redis://:pass\x00word@127.0.0.1:{port}",
        "redis://us\x00er:pw@127.0.0.1:{port}",
        "redis://127.0.0.1:{port}/0?sync_timeout_ms=50\x00",
    ],
)
def test_url_with_nul_is_refused_before_connecting(private_redis, make_redis, template):
    r = make_redis(private_redis.url)
    before = _connections(r)
    with pytest.raises(rlock.InvalidArgumentError) as info:
        rlock.Client(template.format(port=private_redis.port))
    assert info.value.code == _EINVAL
    message = str(info.value)
    assert "url" in message and "NUL" in message, message
    assert "word" not in message and "garbage" not in message, "the URL is not echoed"
    assert _connections(r) == before, "no connection was made"


def test_url_with_a_lone_surrogate_is_refused(private_redis, make_redis):
    r = make_redis(private_redis.url)
    before = _connections(r)
    with pytest.raises(rlock.InvalidArgumentError) as info:
        rlock.Client(f"redis://:pw\ud800@127.0.0.1:{private_redis.port}")
    assert info.value.code == _EINVAL
    assert "url" in str(info.value)
    assert _connections(r) == before


def test_url_password_outside_the_bmp_is_sent_as_utf8(private_redis, make_redis):
    r = make_redis(private_redis.url)
    password = "pw-\U0001f512-\u00e9"
    r.acl_setuser("emoji", enabled=True, passwords=["+" + password], keys=["*"],
                  channels=["*"], commands=["+@all"])  # fmt: skip
    with rlock.Client(f"redis://emoji:{password}@127.0.0.1:{private_redis.port}") as c:
        with c.lock("x") as lock:
            assert lock.held()


@pytest.mark.parametrize(
    "suffix",
    [
        ":\u9501\U0001f512",  # outside the BMP: 4 bytes in UTF-8
        "\x00after-nul",
        ":caf\u00e9\x00\U0001f600",
    ],
)
def test_str_names_reach_redis_as_exact_utf8(client, r, base, suffix):
    full = base + suffix
    expected = full.encode("utf-8")
    lock = client.lock(full)
    with lock:
        assert _keys(r, base.encode()) == [expected]
        (field,) = r.hkeys(expected)
        assert field.startswith(client.id.encode() + b":")
    assert lock.name == full
    assert _keys(r, base.encode()) == []


@pytest.mark.parametrize(
    "suffix",
    [bytes(range(0x80, 0x100)), b"\x00\xff\xfe", b"\xc0\x80", b"\xed\xa0\x80"],
    ids=["high-bytes", "nul-ff-fe", "modified-utf8-nul", "utf8-surrogate"],
)
def test_bytes_names_reach_redis_byte_for_byte(client, r, base, suffix):
    full = base.encode() + suffix
    lock = client.lock(full)
    assert lock.acquire(blocking=False)
    try:
        assert _keys(r, base.encode()) == [full]
        other = client.lock(full)
        assert other.locked()
    finally:
        lock.release()
    assert _keys(r, base.encode()) == []


@pytest.mark.parametrize("bad", ["\ud800", "a\udfffb", "\udc80\udc81"])
def test_str_name_without_utf8_form_is_refused(client, r, base, bad):
    with pytest.raises(rlock.InvalidArgumentError) as info:
        client.lock(base + bad)
    assert info.value.code == _EINVAL
    message = str(info.value)
    assert "name" in message and "surrogate" in message, message
    with pytest.raises(rlock.InvalidArgumentError):
        client.fenced_write(base + bad, "v", 1)
    with pytest.raises(rlock.InvalidArgumentError) as info:
        client.fenced_write(base, "value" + bad, 1)
    assert "value" in str(info.value)
    assert _keys(r, base.encode()) == []


def test_name_held_from_python_is_seen_held_by_the_c_cli(client, redis_url, base):
    cli = rlock_cli()
    full = base.encode() + ":\u9501\U0001f512".encode() + bytes(range(0x80, 0x90))
    with client.lock(full):
        out = subprocess.run(
            [cli, "status", "--url", redis_url, full], capture_output=True, timeout=30
        )
        assert out.returncode == 0, out.stderr
        assert b"locked: yes" in out.stdout, out.stdout
        assert client.id.encode() in out.stdout, out.stdout
    out = subprocess.run([cli, "status", "--url", redis_url, full], capture_output=True, timeout=30)
    assert b"locked: no" in out.stdout, out.stdout


_CAP = 1024  # rlock_last_error()'s longest message, in bytes


def test_error_messages_are_capped(client, name):
    host = "h" * 100_000
    with pytest.raises(rlock.ConnectionError) as info:
        rlock.Client(f"redis://{host}:1")
    message = str(info.value)
    assert len(message.encode()) <= _CAP, len(message)
    assert message.startswith("cannot connect to Redis at "), message[:80]

    with pytest.raises(rlock.InvalidArgumentError) as info:
        client.lock(name + "n" * 100_000)
    assert len(str(info.value).encode()) <= _CAP
