"""TLS: the ssl_* keywords of rlock.Client and rediss:// URLs against redis-servers that speak
only TLS (certificates from tests/fixtures/tls-certs.sh), and TLSError."""

from __future__ import annotations

import asyncio
import ssl
import subprocess
import threading
import time
import urllib.parse

import pytest
import redis
import rlock
import rlock.asyncio
from helpers import Holder, wait_until
from ports import free_port

PASSWORD = "pw-never-shown-4711"


@pytest.fixture
def tls_client(tls_redis, tls_certs, make_client):
    """A client of the session's TLS server, fully verified against the test CA."""
    return make_client(tls_redis.url, ssl_ca_certs=tls_certs / "ca.crt")


@pytest.fixture
def tls_r(tls_redis):
    conn = tls_redis.redis_py()
    yield conn
    conn.close()


def ca_url(server, certs, ca: str = "ca.crt", **options: str) -> str:
    query = {"tls_ca_file": str(certs / ca), **options}
    return f"{server.url}?{urllib.parse.urlencode(query)}"


# ---- locks over TLS ----------------------------------------------------------------------


def test_acquire_and_release_over_tls(tls_client, tls_r, name):
    lock = tls_client.lock(name)
    assert lock.acquire(timeout=5)
    assert tls_r.hkeys(name) == [lock.owner.encode()]
    assert lock.locked() and lock.hold_count() == 1
    lock.release()
    assert tls_r.exists(name) == 0


def test_the_ca_file_in_the_url_works_the_same(tls_redis, tls_certs, make_client, tls_r, name):
    client = make_client(ca_url(tls_redis, tls_certs))
    with client.lock(name):
        assert tls_r.exists(name) == 1
    assert tls_r.exists(name) == 0


def test_a_reconnect_resumes_the_tls_session(start_tls_redis, tls_certs, make_client, name):
    server = start_tls_redis()
    client = make_client(server.url, ssl_ca_certs=tls_certs / "ca.crt")
    with client.lock(name):
        pass
    first = client.stats()
    assert first.tls_handshakes >= 1 and first.tls_sessions_resumed == 0
    admin = server.redis_py()
    try:
        assert admin.client_kill_filter(_type="normal", skipme=True) >= 1
    finally:
        admin.close()
    with client.lock(name):  # on a new connection, with an abbreviated handshake
        pass
    after = client.stats()
    assert after.tls_handshakes == first.tls_handshakes + 1
    assert after.tls_sessions_resumed == 1


def test_a_waiter_is_woken_by_pubsub_over_tls(tls_redis, tls_certs, make_client, tls_r, name):
    # A poll cap far beyond the wait: the waiter gets the lock only through the wake-up message
    # on its TLS subscriber connection.
    holder_client = make_client(tls_redis.url, ssl_ca_certs=tls_certs / "ca.crt")
    waiter_client = make_client(tls_redis.url, ssl_ca_certs=tls_certs / "ca.crt", poll_cap=600)
    holder = Holder(holder_client.lock(name))
    result = []
    waiter = threading.Thread(
        target=lambda: result.append(waiter_client.lock(name).acquire(timeout=60))
    )
    waiter.start()
    channel = f"redisson_lock__channel:{{{name}}}"
    assert wait_until(lambda: tls_r.pubsub_numsub(channel)[0][1] >= 1, timeout=10)
    holder.release()
    waiter.join(70)
    assert result == [True]


def test_the_watchdog_renews_over_tls(tls_redis, tls_certs, make_client, tls_r, name):
    client = make_client(tls_redis.url, ssl_ca_certs=tls_certs / "ca.crt", watchdog_lease=1.5)
    lock = client.lock(name)
    assert lock.acquire()
    assert 0 < tls_r.pttl(name) <= 1500
    # A renewal sets the TTL back up (every 0.5 s). Compared with a TTL read once some of it
    # has run: one read in the acquire's own millisecond is 1500, which no renewal exceeds.
    assert wait_until(lambda: tls_r.pttl(name) < 1400, timeout=5, interval=0.01)
    low = tls_r.pttl(name)
    assert wait_until(lambda: tls_r.pttl(name) > low, timeout=5, interval=0.05)
    # The hold outlives three leases.
    time.sleep(4.5)
    assert tls_r.pttl(name) > 0 and lock.held() and not lock.lost()
    lock.release()
    assert tls_r.exists(name) == 0


def test_asyncio_acquire_over_tls(tls_redis, tls_certs, tls_r, name):
    async def main() -> None:
        async with rlock.asyncio.Client(tls_redis.url, ssl_ca_certs=tls_certs / "ca.crt") as c:
            lock = c.lock(name)
            async with lock:
                assert tls_r.exists(name) == 1
            assert await lock.acquire(timeout=5)
            await lock.release()

    asyncio.run(asyncio.wait_for(main(), 30))
    assert tls_r.exists(name) == 0


# ---- mutual TLS --------------------------------------------------------------------------


def test_mutual_tls_with_a_client_certificate(start_tls_redis, tls_certs, make_client, name):
    server = start_tls_redis(auth_clients=True)
    client = make_client(
        server.url,
        ssl_ca_certs=tls_certs / "ca.crt",
        ssl_certfile=tls_certs / "client.crt",
        ssl_keyfile=tls_certs / "client.key",
    )
    with client.lock(name) as lock:
        assert lock.held()
    # The certificate in the URL, its key as a keyword: the two combine.
    url = ca_url(server, tls_certs, tls_cert_file=str(tls_certs / "client.crt"))
    client = make_client(url, ssl_keyfile=tls_certs / "client.key")
    with client.lock(name):
        pass


def test_mutual_tls_without_a_client_certificate_is_a_tls_error(start_tls_redis, tls_certs):
    server = start_tls_redis(auth_clients=True)
    # TLS 1.3 checks the client certificate after the client's handshake: the server's alert
    # and close may meet the client's first command, and the alert is still what is reported.
    with pytest.raises(rlock.TLSError) as e:
        rlock.Client(server.url, ssl_ca_certs=tls_certs / "ca.crt", connect_timeout=5)
    assert e.value.code == -25 and "certificate required" in str(e.value)


# ---- verification ------------------------------------------------------------------------


def test_verification_is_on_by_default(tls_redis):
    # No CA given: the system trust store, which does not know the test CA.
    with pytest.raises(rlock.TLSError, match="certificate verify failed"):
        rlock.Client(tls_redis.url)


def test_host_name_mismatch(tls_redis, tls_certs):
    with pytest.raises(rlock.TLSError, match="mismatch") as e:
        rlock.Client(
            tls_redis.url, ssl_ca_certs=tls_certs / "ca.crt", ssl_server_name="other.invalid"
        )
    assert "other.invalid" in str(e.value)


def test_a_certificate_for_another_name_is_refused(start_tls_redis, tls_certs):
    server = start_tls_redis(cert="wrong-name")
    with pytest.raises(rlock.TLSError, match="mismatch"):
        rlock.Client(server.url, ssl_ca_certs=tls_certs / "ca.crt")


@pytest.mark.parametrize("cert_reqs", [None, "required", ssl.CERT_REQUIRED])
def test_check_hostname_false_verifies_the_chain_only(
    start_tls_redis, tls_certs, make_client, name, cert_reqs
):
    server = start_tls_redis(cert="wrong-name")
    client = make_client(
        server.url,
        ssl_ca_certs=tls_certs / "ca.crt",
        ssl_cert_reqs=cert_reqs,
        ssl_check_hostname=False,
        ssl_server_name="other.invalid",
    )
    with client.lock(name):
        pass
    # The chain is still checked.
    with pytest.raises(rlock.TLSError, match="certificate verify failed"):
        rlock.Client(server.url, ssl_ca_certs=tls_certs / "other-ca.crt", ssl_check_hostname=False)


@pytest.mark.parametrize("cert_reqs", ["none", "NONE", ssl.CERT_NONE])
def test_cert_reqs_none_needs_no_ca(start_tls_redis, make_client, name, cert_reqs):
    server = start_tls_redis(cert="expired")  # not even a valid certificate
    client = make_client(server.url, ssl_cert_reqs=cert_reqs)
    with client.lock(name):
        pass


def test_the_server_name_is_verified(tls_redis, tls_certs, make_client, name):
    client = make_client(
        tls_redis.url, ssl_ca_certs=tls_certs / "ca.crt", ssl_server_name="localhost"
    )
    with client.lock(name):
        pass


def test_a_ca_directory(tls_redis, tls_certs, make_client, tmp_path, name):
    # A directory of CA certificates named by their subject hash, as `openssl rehash` makes.
    subject_hash = subprocess.run(
        ["openssl", "x509", "-hash", "-noout", "-in", str(tls_certs / "ca.crt")],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    (tmp_path / f"{subject_hash}.0").write_bytes((tls_certs / "ca.crt").read_bytes())
    client = make_client(tls_redis.url, ssl_ca_path=tmp_path)
    with client.lock(name):
        pass


def test_a_wrong_ca_is_a_tls_error(tls_redis, tls_certs):
    with pytest.raises(rlock.TLSError, match="certificate verify failed"):
        rlock.Client(tls_redis.url, ssl_ca_certs=tls_certs / "other-ca.crt")


def test_an_expired_certificate_is_a_tls_error(start_tls_redis, tls_certs):
    server = start_tls_redis(cert="expired")
    with pytest.raises(rlock.TLSError, match="expired"):
        rlock.Client(server.url, ssl_ca_certs=tls_certs / "ca.crt")


def test_min_version_1_3_against_a_server_of_1_2_only(
    start_tls_redis, tls_certs, make_client, name
):
    server = start_tls_redis(extra=("--tls-protocols", "TLSv1.2"))
    client = make_client(
        server.url, ssl_ca_certs=tls_certs / "ca.crt", ssl_min_version=ssl.TLSVersion.TLSv1_2
    )
    with client.lock(name):
        pass
    with pytest.raises(rlock.TLSError):
        rlock.Client(
            server.url, ssl_ca_certs=tls_certs / "ca.crt", ssl_min_version=ssl.TLSVersion.TLSv1_3
        )


def test_min_version_1_3(tls_redis, tls_certs, make_client, name):
    client = make_client(
        tls_redis.url, ssl_ca_certs=tls_certs / "ca.crt", ssl_min_version=ssl.TLSVersion.TLSv1_3
    )
    with client.lock(name):
        pass


# ---- TLS and plaintext mixed up ------------------------------------------------------------


def test_a_plaintext_server_on_a_rediss_url(private_redis, tls_certs):
    url = f"rediss://127.0.0.1:{private_redis.port}"
    with pytest.raises(rlock.ConnectionError, match="plaintext") as e:
        rlock.Client(url, ssl_ca_certs=tls_certs / "ca.crt", connect_timeout=3)
    assert e.value.code in (-25, -5)  # TLSError, or ConnectionError for a silent server


def test_a_tls_server_on_a_redis_url(tls_redis):
    url = f"redis://127.0.0.1:{tls_redis.port}"
    with pytest.raises(rlock.ConnectionError, match="TLS port") as e:
        rlock.Client(url, connect_timeout=3)
    assert type(e.value) is rlock.ConnectionError


# ---- keywords and URL options --------------------------------------------------------------


def test_ssl_true_turns_tls_on_for_the_default_url(monkeypatch):
    monkeypatch.delenv("RLOCK_URL", raising=False)
    # Nothing listens there, or a plaintext server: either way the client tried TLS on
    # 127.0.0.1:6379 rather than refusing the keyword.
    with pytest.raises(rlock.ConnectionError) as e:
        rlock.Client(ssl=True, ssl_cert_reqs="none", connect_timeout=1)
    assert "6379" in str(e.value)


def test_ssl_true_with_a_rediss_url_works(tls_redis, tls_certs, make_client, name):
    client = make_client(tls_redis.url, ssl=True, ssl_ca_certs=tls_certs / "ca.crt")
    with client.lock(name):
        pass


@pytest.mark.parametrize(
    "url,options,message",
    [
        ("redis://127.0.0.1:1", {"ssl": True}, "ssl=True, but the URL is plaintext"),
        ("unix:///nowhere.sock", {"ssl": True}, "ssl=True, but the URL is plaintext"),
        ("rediss://127.0.0.1:1", {"ssl": False}, "ssl=False"),
        (
            "redis://127.0.0.1:1",
            {"ssl_ca_certs": "/x/ca.crt"},
            "ssl_ca_certs given, but TLS is off",
        ),
        ("redis://127.0.0.1:1", {"ssl_cert_reqs": "none"}, "ssl_cert_reqs given, but TLS is off"),
        ("rediss://127.0.0.1:1", {"sentinel_ssl": True}, "sentinel_ssl applies to Sentinel"),
        ("rediss://127.0.0.1:1", {"ssl_cert_reqs": "optional"}, "ssl_cert_reqs"),
        ("rediss://127.0.0.1:1", {"ssl_cert_reqs": ssl.CERT_OPTIONAL}, "ssl_cert_reqs"),
        ("rediss://127.0.0.1:1", {"ssl_cert_reqs": "sometimes"}, "ssl_cert_reqs"),
        (
            "rediss://127.0.0.1:1",
            {"ssl_cert_reqs": "none", "ssl_check_hostname": True},
            "ssl_check_hostname=True contradicts",
        ),
        ("rediss://127.0.0.1:1", {"ssl_min_version": ssl.TLSVersion.TLSv1_1}, "ssl_min_version"),
        ("rediss://127.0.0.1:1", {"ssl_ca_certs": ""}, "ssl_ca_certs must not be empty"),
        ("rediss://127.0.0.1:1", {"ssl_ca_path": "a\0b"}, "ssl_ca_path contains a NUL"),
        ("rediss://127.0.0.1:1", {"ssl_server_name": ""}, "ssl_server_name must not be empty"),
        ("rediss://127.0.0.1:1", {"ssl_ca_certs": "/no/such/ca.crt"}, "/no/such/ca.crt"),
        ("rediss://127.0.0.1:1", {"ssl_keyfile": "/x/client.key"}, "ssl_keyfile given without"),
    ],
)
def test_bad_tls_keywords(url, options, message):
    with pytest.raises(rlock.InvalidArgumentError, match=message):
        rlock.Client(url, **options)


@pytest.mark.parametrize(
    "options",
    [
        {"ssl": "yes"},
        {"ssl_ca_certs": 42},
        {"ssl_certfile": object()},
        {"ssl_cert_reqs": 2},
        {"ssl_cert_reqs": True},
        {"ssl_check_hostname": "no"},
        {"ssl_server_name": b"localhost"},
        {"ssl_min_version": "1.3"},
        {"sentinel_ssl": 1},
    ],
)
def test_tls_keywords_of_the_wrong_type(options):
    with pytest.raises(TypeError, match=next(iter(options))):
        rlock.Client("rediss://127.0.0.1:1", **options)


@pytest.mark.parametrize(
    "query,options,message",
    [
        ({"tls_verify": "none"}, {"ssl_cert_reqs": "required"}, "tls_verify"),
        ({"tls_verify": "ca"}, {"ssl_check_hostname": True}, "tls_verify"),
        ({"tls_verify": "full"}, {"ssl_cert_reqs": ssl.CERT_NONE}, "tls_verify"),
        (
            {"tls_min_version": "1.3"},
            {"ssl_min_version": ssl.TLSVersion.TLSv1_2},
            "tls_min_version",
        ),
        ({"tls_ca_file": "/a/ca.crt"}, {"ssl_ca_certs": "/b/ca.crt"}, "ssl_ca_certs"),
        ({"tls_server_name": "a.example"}, {"ssl_server_name": "b.example"}, "ssl_server_name"),
    ],
)
def test_a_url_option_and_a_keyword_must_agree(query, options, message):
    url = "rediss://127.0.0.1:1?" + urllib.parse.urlencode(query)
    with pytest.raises(rlock.InvalidArgumentError, match=message) as e:
        rlock.Client(url, **options)
    assert "disagree" in str(e.value)


def test_a_url_option_and_the_same_keyword_value_agree(tls_redis, tls_certs, make_client, name):
    url = ca_url(tls_redis, tls_certs, tls_verify="full", tls_min_version="1.2")
    client = make_client(
        url,
        ssl_ca_certs=str(tls_certs / "ca.crt"),
        ssl_cert_reqs="required",
        ssl_check_hostname=True,
        ssl_min_version=ssl.TLSVersion.TLSv1_2,
    )
    with client.lock(name):
        pass


def test_path_like_and_bytes_paths(tls_redis, tls_certs, make_client, name):
    client = make_client(tls_redis.url, ssl_ca_certs=bytes(tls_certs / "ca.crt"))
    with client.lock(name):
        pass


# ---- no password in any message -----------------------------------------------------------


def _credentialed(url: str) -> str:
    scheme, rest = url.split("://", 1)
    return f"{scheme}://user:{PASSWORD}@{rest}"


def test_messages_never_show_the_password(tls_redis, private_redis, start_tls_redis, tls_certs):
    expired = start_tls_redis(cert="expired")
    cases = [
        (tls_redis.url, {"ssl_ca_certs": tls_certs / "other-ca.crt"}),
        (tls_redis.url, {"ssl_ca_certs": tls_certs / "ca.crt", "ssl_server_name": "x.invalid"}),
        (expired.url, {"ssl_ca_certs": tls_certs / "ca.crt"}),
        (f"rediss://127.0.0.1:{private_redis.port}", {"ssl_cert_reqs": "none"}),
        (f"redis://127.0.0.1:{tls_redis.port}", {}),
        (tls_redis.url, {"ssl_ca_certs": "/no/such/ca.crt"}),
        (ca_url(tls_redis, tls_certs, tls_verify="none"), {"ssl_cert_reqs": "required"}),
        (ca_url(tls_redis, tls_certs), {"ssl_ca_certs": tls_certs / "other-ca.crt"}),
        (f"redis://127.0.0.1:{tls_redis.port}", {"ssl": True}),
    ]
    for url, options in cases:
        with pytest.raises(rlock.LockError) as e:
            rlock.Client(_credentialed(url), connect_timeout=3, **options)
        assert PASSWORD not in str(e.value), (url, options, str(e.value))
        assert not isinstance(e.value, rlock.AuthenticationError), str(e.value)


# ---- Sentinel --------------------------------------------------------------------------------


@pytest.fixture
def tls_sentinel(start_tls_redis, tls_certs, tmp_path):
    """(a TLS master, a sentinel watching it over TLS with a plaintext port and a TLS port)."""
    master = start_tls_redis()
    plain, tls = free_port(), free_port()
    conf = tmp_path / "sentinel.conf"
    conf.write_text(
        f"port {plain}\ntls-port {tls}\nbind 127.0.0.1\ndir {tmp_path}\n"
        f"tls-cert-file {tls_certs / 'server.crt'}\ntls-key-file {tls_certs / 'server.key'}\n"
        f"tls-ca-cert-file {tls_certs / 'ca.crt'}\ntls-auth-clients no\ntls-replication yes\n"
        f"sentinel monitor rlock-tls 127.0.0.1 {master.port} 1\n"
    )
    proc = subprocess.Popen(
        ["redis-server", str(conf), "--sentinel"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.STDOUT,
    )
    try:
        sentinel = redis.Redis(port=plain, socket_timeout=1)
        assert wait_until(
            lambda: _sentinel_knows_master(sentinel, master.port), timeout=15, interval=0.1
        ), "the sentinel did not come up watching the TLS master"
        sentinel.close()
        yield master, plain, tls
    finally:
        proc.kill()
        proc.wait(10)


def _sentinel_knows_master(sentinel, port: int) -> bool:
    # Not sentinel_master(): redis-py 7.0, the newest for Python 3.9, fails in it on its own
    # keyword arguments. The reply is a flat list (field, value, ...) or, in newer versions, a dict.
    try:
        raw = sentinel.execute_command("SENTINEL", "MASTER", "rlock-tls")
    except redis.RedisError:
        return False
    pairs = raw.items() if isinstance(raw, dict) else zip(raw[::2], raw[1::2])
    state = {_text(k): _text(v) for k, v in pairs}
    return state["port"] == str(port) and "s_down" not in state["flags"]


def _text(value) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def test_sentinel_over_tls(tls_sentinel, tls_certs, make_client, name):
    master, plain, tls = tls_sentinel
    ca = tls_certs / "ca.crt"
    # Sentinels and master over TLS (the default with rediss-sentinel://).
    client = make_client(f"rediss-sentinel://127.0.0.1:{tls}/rlock-tls", ssl_ca_certs=ca)
    with client.lock(name):
        with master.redis_py() as conn:
            assert conn.exists(name) == 1
    # Plaintext sentinels, TLS master.
    client = make_client(
        f"rediss-sentinel://127.0.0.1:{plain}/rlock-tls", ssl_ca_certs=ca, sentinel_ssl=False
    )
    with client.lock(name):
        pass
    # A plaintext sentinel port is not spoken to in TLS, nor the TLS port in plaintext.
    with pytest.raises(rlock.ConnectionError):
        rlock.Client(
            f"rediss-sentinel://127.0.0.1:{plain}/rlock-tls", ssl_ca_certs=ca, connect_timeout=2
        )
    with pytest.raises(rlock.ConnectionError):
        rlock.Client(
            f"rediss-sentinel://127.0.0.1:{tls}/rlock-tls",
            ssl_ca_certs=ca,
            sentinel_ssl=False,
            connect_timeout=2,
        )
