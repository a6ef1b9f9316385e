"""Fixtures for the Python tests. They run against the installed rlock wheel and a real
redis-server that the session starts on a free loopback port (or $RLOCK_TEST_REDIS_URL)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from pathlib import Path
from typing import Iterator, Optional

import pytest
import redis
import rlock


class RedisServer:
    """A throwaway redis-server: loopback port plus unix socket, no persistence."""

    def __init__(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="rlock-pytest-"))
        self.port = _free_port()
        self.socket = self.dir / "redis.sock"
        self.proc: Optional[subprocess.Popen] = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}"

    @property
    def unix_url(self) -> str:
        return f"unix://{self.socket}"

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [
                "redis-server",
                "--port",
                str(self.port),
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
            conn = redis.Redis(port=self.port, socket_timeout=0.5)
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


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


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


@pytest.fixture
def start_redis() -> Iterator:
    """Starts redis-servers of the test's own (which it may stop); all are removed after it."""
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed")
    servers = []

    def start() -> RedisServer:
        server = RedisServer()
        servers.append(server)
        server.start()
        return server

    yield start
    for server in servers:
        server.cleanup()


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
