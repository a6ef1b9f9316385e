"""Fixtures for the Python tests. They run against the installed rlock wheel and a real
redis-server that the session starts on a free loopback port (or $RLOCK_TEST_REDIS_URL)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any, Callable, Iterator, Optional

import pytest
import redis
import rlock
from ports import free_port

# Processes the tests start get Ctrl-C (SIGINT) as they would from a terminal. A run started in
# the background by a non-interactive shell (nohup, `cmd &`, some CI runners) ignores SIGINT,
# and children inherit that: a child Python would not even install its KeyboardInterrupt
# handler, and a test that interrupts it would wait for ever. A handler here is reset to the
# default in each child at exec.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


class TlsFiles:
    """What a TLS redis-server is started with: the certificate pair it presents (a name made
    by tests/fixtures/tls-certs.sh: server, wrong-name, expired) from `certs`, whether it asks
    for client certificates, and extra redis-server arguments."""

    def __init__(
        self, certs: Path, cert: str = "server", auth_clients: bool = False, extra: tuple = ()
    ) -> None:
        self.certs = certs
        self.cert = cert
        self.auth_clients = auth_clients
        self.extra = extra

    def server_args(self, port: int) -> list:
        return [
            "--port",
            "0",
            "--tls-port",
            str(port),
            "--tls-cert-file",
            str(self.certs / f"{self.cert}.crt"),
            "--tls-key-file",
            str(self.certs / f"{self.cert}.key"),
            "--tls-ca-cert-file",
            str(self.certs / "ca.crt"),
            "--tls-auth-clients",
            "yes" if self.auth_clients else "no",
            *self.extra,
        ]

    def redis_py_options(self) -> dict:
        """redis-py's view of the server: no verification (the server's certificate may be
        expired or name another host), a client certificate always (mutual TLS may be on)."""
        return {
            "ssl": True,
            "ssl_cert_reqs": "none",
            "ssl_check_hostname": False,
            "ssl_certfile": str(self.certs / "client.crt"),
            "ssl_keyfile": str(self.certs / "client.key"),
        }


class RedisServer:
    """A throwaway redis-server: loopback port plus unix socket, no persistence; with `tls`,
    the port speaks only TLS (the unix socket stays plaintext)."""

    def __init__(self, tls: Optional[TlsFiles] = None) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="rlock-pytest-"))
        self.port = free_port()
        self.socket = self.dir / "redis.sock"
        self.tls = tls
        self.proc: Optional[subprocess.Popen] = None

    @property
    def url(self) -> str:
        return f"{'rediss' if self.tls else 'redis'}://127.0.0.1:{self.port}"

    def redis_py(self, **options) -> redis.Redis:
        """A redis-py connection to this server (over TLS for a TLS server)."""
        if self.tls is not None:
            options = {**self.tls.redis_py_options(), **options}
        return redis.Redis(port=self.port, **options)

    @property
    def unix_url(self) -> str:
        return f"unix://{self.socket}"

    def start(self) -> None:
        port_args = ["--port", str(self.port)]
        if self.tls is not None:
            port_args = self.tls.server_args(self.port)
        self.proc = subprocess.Popen(
            [
                "redis-server",
                *port_args,
                "--bind",
                "127.0.0.1",
                "--unixsocket",
                str(self.socket),
                "--unixsocketperm",
                "700",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                str(self.dir),
                "--maxclients",
                "4000",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            conn = self.redis_py(socket_timeout=0.5)
            try:
                if conn.ping():
                    return
            except redis.ConnectionError:
                time.sleep(0.02)
            finally:
                conn.close()
            if self.proc.poll() is not None:
                break
        raise RuntimeError(f"redis-server did not start on port {self.port}")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def cleanup(self) -> None:
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    url = os.environ.get("RLOCK_TEST_REDIS_URL")
    if url:
        yield url
        return
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed and RLOCK_TEST_REDIS_URL is not set")
    server = RedisServer()
    server.start()
    try:
        yield server.url
    finally:
        server.cleanup()


def _servers_of_the_test(make: Callable[..., RedisServer]) -> Iterator:
    """Yields start(...): a redis-server made by make(...), started; all are removed after the
    test."""
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed")
    servers = []

    def start(*args: Any, **kwargs: Any) -> RedisServer:
        server = make(*args, **kwargs)
        servers.append(server)
        server.start()
        return server

    yield start
    for server in servers:
        server.cleanup()


@pytest.fixture
def start_redis() -> Iterator:
    """Starts redis-servers of the test's own (which it may stop); all are removed after it."""
    yield from _servers_of_the_test(RedisServer)


@pytest.fixture(scope="session")
def tls_certs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The test certificates of tests/fixtures/tls-certs.sh (a CA, server, client, wrong-name,
    expired and other-ca pairs), made once per session."""
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed")
    certs = tmp_path_factory.mktemp("tls-certs")
    script = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "tls-certs.sh"
    subprocess.run(["bash", str(script), str(certs)], check=True, capture_output=True)
    return certs


@pytest.fixture(scope="session")
def tls_redis(tls_certs: Path) -> Iterator[RedisServer]:
    """A redis-server of the session that speaks only TLS, with the test CA's server
    certificate, no client certificates asked."""
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed")
    server = RedisServer(TlsFiles(tls_certs))
    server.start()
    try:
        yield server
    finally:
        server.cleanup()


@pytest.fixture
def start_tls_redis(tls_certs: Path) -> Iterator:
    """start_tls_redis(cert="server", auth_clients=False, extra=()): a TLS redis-server of the
    test's own; all are removed after it."""

    def make(cert: str = "server", auth_clients: bool = False, extra: tuple = ()) -> RedisServer:
        return RedisServer(TlsFiles(tls_certs, cert, auth_clients, extra))

    yield from _servers_of_the_test(make)


@pytest.fixture
def private_redis(start_redis) -> RedisServer:
    """A redis-server of the test's own, which the test may stop or restart."""
    return start_redis()


@pytest.fixture
def r(redis_url: str) -> Iterator[redis.Redis]:
    """A plain redis-py connection: the test's independent view of Redis."""
    conn = redis.Redis.from_url(redis_url)
    yield conn
    conn.close()


@pytest.fixture
def make_redis() -> Iterator:
    """make_redis(url, **options): a redis-py connection to another server, closed after the
    test."""
    conns = []

    def make(url: str, **options) -> redis.Redis:
        conn = redis.Redis.from_url(url, **options)
        conns.append(conn)
        return conn

    yield make
    for conn in conns:
        conn.close()


@pytest.fixture
def make_client(redis_url: str) -> Iterator:
    """make_client(url=None, **options): an rlock.Client (on the session server by default),
    closed after the test."""
    clients = []

    def make(url: Optional[str] = None, **options) -> rlock.Client:
        c = rlock.Client(url or redis_url, **options)
        clients.append(c)
        return c

    yield make
    for c in clients:
        c.close()


@pytest.fixture
def client(make_client) -> rlock.Client:
    return make_client()


@pytest.fixture
def name(request: pytest.FixtureRequest) -> str:
    """A lock name no other test uses."""
    return f"pytest:{request.node.name}:{uuid.uuid4().hex[:8]}"
