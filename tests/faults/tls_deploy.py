"""TLS variants of the harness's servers and deployments: redis-servers with a TLS port only
(`--port 0`), a Redis Cluster whose nodes talk TLS to clients and to each other, and Sentinel
with its sentinels on TLS or on plaintext. The certificates come from
tests/fixtures/tls-certs.sh, made in the case's own directory."""

from __future__ import annotations

import functools
import subprocess
from pathlib import Path
from typing import Dict, List, Tuple
from urllib.parse import quote

import redis
from harness import (
    REPO,
    Case,
    ClusterDeployment,
    RedisServer,
    SentinelDeployment,
    SentinelServer,
    free_port,
)

CERTS_SCRIPT = REPO / "tests" / "fixtures" / "tls-certs.sh"


class Certs:
    """The test CA and certificates in `root`/tls; the servers present `server`.crt (server:
    names localhost, 127.0.0.1 and ::1; wrong-name: only wrong-name.invalid)."""

    def __init__(self, root: Path, server: str = "server") -> None:
        self.dir = root / "tls"
        out = subprocess.run(
            ["bash", str(CERTS_SCRIPT), str(self.dir)], capture_output=True, text=True, timeout=60
        )
        assert out.returncode == 0, out.stderr[-2000:]
        self.server = server
        self.ca = self.dir / "ca.crt"
        self._conns: Dict[Tuple[str, int, float, str], redis.Redis] = {}

    def _settings(self) -> List[List[str]]:
        return [
            ["tls-cert-file", str(self.dir / f"{self.server}.crt")],
            ["tls-key-file", str(self.dir / f"{self.server}.key")],
            ["tls-ca-cert-file", str(self.ca)],
            ["tls-auth-clients", "no"],
            # A server's own connections (cluster bus, replication, sentinel links): the cluster
            # bus asks for a client certificate whatever tls-auth-clients says.
            ["tls-client-cert-file", str(self.dir / "client.crt")],
            ["tls-client-key-file", str(self.dir / "client.key")],
        ]

    def server_args(self) -> List[str]:
        """The certificate options of a redis-server command line."""
        return [arg for key, value in self._settings() for arg in ("--" + key, value)]

    def conf_lines(self) -> str:
        """The same options as lines of a config file."""
        return "".join(f"{key} {value}\n" for key, value in self._settings())

    def query(self) -> str:
        """The URL query that makes rlock trust the test CA."""
        return "tls_ca_file=" + quote(str(self.ca), safe="/")

    def conn(self, host: str, port: int, timeout: float, password: str = "") -> redis.Redis:
        """A redis-py client over TLS trusting the test CA (the chain is checked, not the name:
        the harness talks to servers presenting the wrong-name certificate too). One per
        server and timeout, kept: redis-py makes an SSL context per connection, which costs
        more than a slot migration's worth of commands."""
        key = (host, port, timeout, password)
        if key not in self._conns:
            self._conns[key] = self._connect(host, port, timeout, password)
        return self._conns[key]

    def _connect(self, host: str, port: int, timeout: float, password: str) -> redis.Redis:
        return redis.Redis(
            host=host,
            port=port,
            socket_timeout=timeout,
            socket_connect_timeout=timeout,
            password=password or None,
            ssl=True,
            ssl_ca_certs=str(self.ca),
            ssl_cert_reqs="required",
            ssl_check_hostname=False,
        )


class TlsRedisServer(RedisServer):
    """A redis-server whose only port is its TLS port (`--port 0`): a plaintext connection to
    it cannot even be opened."""

    def __init__(self, root: Path, *config: str, certs: Certs, port: int = 0) -> None:
        super().__init__(root, *config, port=port)
        self.certs = certs
        self.config += ["--port", "0", "--tls-port", str(self.port), *certs.server_args()]

    @property
    def url(self) -> str:
        return f"rediss://{self.host}:{self.port}?{self.certs.query()}"

    def conn(self, timeout: float = 5.0) -> redis.Redis:
        return self.certs.conn(self.host, self.port, timeout, self.password)


def start_tls_redis(case: Case, certs: Certs, *config: str) -> TlsRedisServer:
    """A TLS redis-server of the case (stopped with it)."""
    server = TlsRedisServer(case.root, *config, certs=certs)
    case.servers.append(server)
    server.start()
    return server


class TlsSentinelServer(SentinelServer):
    """A sentinel that reaches the master, the replicas and the other sentinels over TLS
    (tls-replication). Clients reach it over TLS on its only port, or with `plaintext` on a
    plaintext port (it keeps a TLS port for the other sentinels, which it announces to them)."""

    def __init__(
        self,
        root: Path,
        master_port: int,
        name: str,
        quorum: int,
        down_after_ms: int,
        failover_timeout_ms: int,
        master_password: str = "",
        password: str = "",
        *,
        certs: Certs,
        plaintext: bool = False,
    ) -> None:
        self.certs = certs
        self.plaintext = plaintext
        port = free_port()
        if plaintext:
            lines = f"tls-port {free_port()}\n"
        else:
            lines = f"port 0\ntls-port {port}\n"
        lines += "tls-replication yes\n" + certs.conf_lines()
        super().__init__(
            root,
            master_port,
            name,
            quorum,
            down_after_ms,
            failover_timeout_ms,
            master_password,
            password,
            port=port,
            extra_conf=lines,
        )

    def conn(self) -> redis.Redis:
        if self.plaintext:
            return super().conn()
        return self.certs.conn(self.host, self.port, 2, self.password)


class TlsSentinelDeployment(SentinelDeployment):
    """SentinelDeployment over TLS: the master and replicas TLS-only (replication over TLS),
    the sentinels reached over TLS (`sentinel_tls`) or on plaintext ports."""

    def __init__(self, case: Case, certs: Certs, sentinel_tls: bool = True, **kwargs) -> None:
        self.certs = certs
        self.sentinel_tls = sentinel_tls
        super().__init__(
            case,
            make_redis=functools.partial(start_tls_redis, case, certs, "--tls-replication", "yes"),
            make_sentinel=functools.partial(
                TlsSentinelServer, certs=certs, plaintext=not sentinel_tls
            ),
            **kwargs,
        )

    @property
    def url(self) -> str:
        hosts = ",".join(f"127.0.0.1:{s.port}" for s in self.sentinels)
        query = self.certs.query() + ("" if self.sentinel_tls else "&sentinel_tls=no")
        return f"rediss-sentinel://{hosts}/{self.NAME}?{query}"


class TlsClusterDeployment(ClusterDeployment):
    """ClusterDeployment over TLS: every node TLS-only, the cluster bus and replication over
    TLS too (`--tls-cluster yes`), formed with `redis-cli --tls`. Without replicas by default:
    the TLS cases move slots, they do not fail over."""

    def __init__(self, case: Case, certs: Certs, masters: int = 3, replicas: int = 0) -> None:
        self.certs = certs
        super().__init__(
            case,
            masters,
            replicas=replicas,
            make_server=functools.partial(_tls_cluster_node, certs=certs),
            cli_args=["--tls", "--cacert", str(certs.ca)],
        )

    @property
    def url(self) -> str:
        seeds = ",".join(f"127.0.0.1:{s.port}" for s in self.servers[:2])
        return f"rediss-cluster://{seeds}?{self.certs.query()}"


def _tls_cluster_node(root: Path, *config: str, certs: Certs, port: int) -> TlsRedisServer:
    return TlsRedisServer(
        root, *config, "--tls-cluster", "yes", "--tls-replication", "yes", certs=certs, port=port
    )
