"""The fault-injection harness (FAULTS.md "Harness design"): redis-servers and fault proxies
the test owns, worker processes that log their history, and the chaos helpers. The checkers
that read the histories are in checkers.py."""

from __future__ import annotations

import atexit
import ctypes
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import (
    Any,
    Callable,
    Dict,
    Iterator,
    List,
    Optional,
    Sequence,
    Tuple,
    TypedDict,
    Union,
    cast,
)

import checkers
import redis
from ports import free_port

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
PROXY = HERE / "faultproxy.py"
PY_WORKER = HERE / "py_worker.py"


# Set by scripts/test.sh for the sanitizer passes: workers run several times slower there, so
# the cases that count cycles ask for fewer.
SANITIZED = os.environ.get("RLOCK_FAULT_SANITIZED") == "1"


def percentile(values: List[float], q: float) -> float:
    """The value below which the fraction `q` of `values` lies (nearest rank; sorts a copy)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))]


def min_cycles(normal: int) -> int:
    return normal // 5 if SANITIZED else normal


# A case that needs a number of cycles for statistical power runs its loops until they made
# them, up to this cap, instead of for a fixed time: a slow or loaded machine takes longer, it
# does not fail. The cap only ends a run that crawls (then the case fails, saying so).
CYCLE_CAP_S = 120


def cycle_share(needed: int, threads: int) -> int:
    """Each of `threads` loop threads' share of `needed` cycles, plus a tenth: the loop's
    --cycles (per thread), so the threads together make at least `needed`."""
    return -(-needed * 11 // (10 * threads))


class Pace:
    """How loaded this machine is, measured by the harness itself: the wake-up lateness of short
    sleeps (the scheduler's delay), the round trip of a PING to a redis-server of its own, and
    (when asked) a TLS handshake with it. Liveness bounds (a loss reported within its renewal
    period, a call within its timeout, a waiter woken soon after a release) add slack_ms() to
    their fixed slack, so a loaded machine widens them by what it was measured to cost, and an
    idle one by almost nothing. Safety checks never use it. Measured when first needed and
    again once a minute (a build may start or end meanwhile); docs/faults.md says more."""

    SAMPLES = 200
    REFRESH_S = 60.0
    # A path from a fault to what a test sees crosses a few threads, processes and round trips
    # (library thread, Redis, worker, its stdout, the harness's reader): this many of each.
    HOPS = 20

    def __init__(self) -> None:
        self.at = 0.0
        self.sched_ms = 0.0
        self.rtt_ms = 0.0
        self.handshake_ms: Optional[float] = None
        self._server: Optional["RedisServer"] = None
        self._root: Optional[Path] = None
        self._tls: Optional[Path] = None
        self._closes_at_exit = False

    def _measure(self) -> None:
        late = []
        for _ in range(self.SAMPLES):
            t = time.monotonic()
            time.sleep(0.001)
            late.append((time.monotonic() - t) * 1000 - 1)
        self.sched_ms = max(0.0, percentile(late, 0.99))
        conn = self._redis().conn(timeout=5)
        rtts = []
        for _ in range(self.SAMPLES):
            t = time.monotonic()
            conn.ping()
            rtts.append((time.monotonic() - t) * 1000)
        conn.close()
        self.rtt_ms = percentile(rtts, 0.99)
        if self._tls is not None:
            self.handshake_ms = self._handshake()
        self.at = time.monotonic()

    def _redis(self) -> "RedisServer":
        if (
            self._server is None
            or self._server.proc is None
            or self._server.proc.poll() is not None
        ):
            if not self._closes_at_exit:
                atexit.register(self.close)  # once: close() stops whichever server is current
                self._closes_at_exit = True
            self.close()  # a server that died leaves its directory
            self._root = Path(tempfile.mkdtemp(prefix="rlock-pace-"))
            self._server = RedisServer(self._root, tls=self._tls).start()
        return self._server

    def _handshake(self) -> float:
        import ssl

        server = self._redis()
        assert self._tls is not None and server.tls_port
        context = ssl.create_default_context(cafile=str(self._tls / "ca.crt"))
        took = []
        for _ in range(10):
            t = time.monotonic()
            with socket.create_connection(("127.0.0.1", server.tls_port), timeout=5) as raw:
                with context.wrap_socket(raw, server_hostname="localhost"):
                    pass
            took.append((time.monotonic() - t) * 1000)
        took.sort()
        return took[len(took) // 2]

    def with_tls(self, certs: Path) -> "Pace":
        """Also measures a TLS handshake (with a server on certificates of `certs`)."""
        if self._tls is None:
            self.close()
            self._tls = certs
            self.at = 0.0
        return self.fresh()

    def fresh(self) -> "Pace":
        if time.monotonic() - self.at > self.REFRESH_S:
            self._measure()
        return self

    def slack_ms(self, handshakes: int = 0) -> float:
        """What this machine's load adds to a liveness bound: HOPS scheduler delays and round
        trips, and the cost of `handshakes` TLS handshakes on the way."""
        self.fresh()
        return self._extra(handshakes)

    def _extra(self, handshakes: int = 0) -> float:
        extra = self.HOPS * (self.sched_ms + self.rtt_ms)
        if handshakes and self.handshake_ms is not None:
            extra += handshakes * self.handshake_ms
        return extra

    def __str__(self) -> str:
        tls = f", TLS handshake {self.handshake_ms:.1f} ms" if self.handshake_ms is not None else ""
        return (
            f"machine pace: sleep lateness p99 {self.sched_ms:.2f} ms, PING p99 "
            f"{self.rtt_ms:.2f} ms{tls}; liveness bounds get {self._extra():.0f} ms more"
        )

    def close(self) -> None:
        if self._server is not None:
            self._server.stop()
            self._server = None
        if self._root is not None:
            shutil.rmtree(self._root, ignore_errors=True)
            self._root = None


PACE = Pace()


def slack(fixed_ms: float, handshakes: int = 0) -> float:
    """A liveness bound's slack: `fixed_ms` (what an idle machine needs) plus what this machine
    was measured to add (Pace)."""
    return fixed_ms + PACE.slack_ms(handshakes)


def worker_binary() -> str:
    return os.environ.get("RLOCK_FAULT_WORKER") or str(
        REPO / "build" / "tests" / "faults" / "rlock-fault-worker"
    )


def go_worker_binary() -> str:
    """The Go binding's worker (bindings/go/cmd/rlock-fault-worker), built with the tests."""
    return os.environ.get("RLOCK_FAULT_GO_WORKER") or str(
        REPO / "build" / "bindings" / "go" / "rlock-fault-worker-go"
    )


def java_worker_command() -> List[str]:
    """The Java binding's worker (tests/faults/java/FaultWorker.java, the semaphore kinds), run
    as a single source file on the jar the build makes."""
    maven = REPO / "build" / "bindings" / "java" / "maven"
    jars = sorted(maven.glob("rlock-*.jar"))
    jar = os.environ.get("RLOCK_FAULT_JAVA_JAR") or (str(jars[0]) if jars else "")
    if not jar:
        raise FileNotFoundError(
            f"the Java fault worker needs the rlock jar in {maven}, which the java_junit CTest "
            "test builds (or set RLOCK_FAULT_JAVA_JAR)"
        )
    return ["java", "-cp", jar, str(REPO / "tests" / "faults" / "java" / "FaultWorker.java")]


def bounds_probe(lang: str) -> Tuple[List[str], str]:
    """The command that starts `lang`'s bounds probe (test_b_bounds.py; the lines are described
    in bounds_probe.c), or an empty command and what is missing. The C, Go and Java probes come
    from the build tree the CTest build made (the Java one from `mvn package` in java_junit)."""
    build = REPO / "build"
    if lang == "python":
        return [sys.executable, str(HERE / "py_bounds_probe.py")], ""
    if lang in ("c", "go"):
        path = os.environ.get(f"RLOCK_BOUNDS_PROBE_{lang.upper()}") or str(
            build / "tests" / "faults" / "rlock-bounds-probe"
            if lang == "c"
            else build / "bindings" / "go" / "rlock-bounds-probe-go"
        )
        if os.access(path, os.X_OK):
            return [path], ""
        return [], f"the {lang} bounds probe {path} is not built"
    maven = build / "bindings" / "java" / "maven"
    jars = sorted(maven.glob("rlock-*.jar"))
    classpath = os.environ.get("RLOCK_BOUNDS_PROBE_JAVA_CLASSPATH", "")
    if not classpath and jars and (maven / "test-classes/io/rlock/BoundsProbe.class").exists():
        classpath = f"{jars[-1]}:{maven / 'test-classes'}"
    java = shutil.which("java")
    if java is None or not classpath:
        return [], (
            f"the Java bounds probe is not built (java: {java}; {maven}: the jar and "
            "test-classes/io/rlock/BoundsProbe.class come from the java_junit test), nor "
            "RLOCK_BOUNDS_PROBE_JAVA_CLASSPATH set"
        )
    return [java, "-cp", classpath, "io.rlock.BoundsProbe"], ""


def tls_url(host: str, port: int, certs: Path) -> str:
    """The rediss:// URL of a TLS port whose certificate the test CA in `certs` signed."""
    return f"rediss://{host}:{port}?tls_ca_file={certs / 'ca.crt'}"


def make_tls_certs(directory: Path) -> Path:
    """The test CA and certificates (tests/fixtures/tls-certs.sh) in `directory`."""
    out = subprocess.run(
        ["bash", str(REPO / "tests" / "fixtures" / "tls-certs.sh"), str(directory)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    if out.returncode != 0:
        raise RuntimeError(f"tls-certs.sh failed: {out.stderr.strip()[-2000:]}")
    return directory


def now_ns() -> int:
    return time.monotonic_ns()  # CLOCK_MONOTONIC, the workers' clock too


_LIBC = ctypes.CDLL(None, use_errno=True)
_CLONE_NEWNET = 0x40000000


@contextmanager
def in_netns(name: str) -> Iterator[None]:
    """Runs the block on this thread inside network namespace `name` (setns affects only the
    calling thread): sockets made there stay there."""
    own = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
    target = os.open(f"/run/netns/{name}", os.O_RDONLY)
    try:
        if _LIBC.setns(target, _CLONE_NEWNET) != 0:
            raise OSError(ctypes.get_errno(), f"setns into {name}")
        yield
    finally:
        _LIBC.setns(own, _CLONE_NEWNET)
        os.close(own)
        os.close(target)


def redis_conn(
    host: str, port: int, timeout: float, password: str = "", netns: Optional[str] = None
) -> redis.Redis:
    """A redis-py client of host:port, connecting from inside `netns` if given."""
    if netns is None:
        return redis.Redis(
            host=host,
            port=port,
            socket_timeout=timeout,
            socket_connect_timeout=timeout,
            password=password or None,
        )
    space = netns

    class InNetns(redis.Connection):
        def _connect(self):  # type: ignore[no-untyped-def]
            with in_netns(space):
                return super()._connect()

    pool = redis.ConnectionPool(
        connection_class=InNetns,
        host=host,
        port=port,
        socket_timeout=timeout,
        socket_connect_timeout=timeout,
        password=password or None,
    )
    return redis.Redis(connection_pool=pool)


class NetnsPair:
    """Two network namespaces joined by a veth pair, side "a" (10.213.0.1) and side "b"
    (10.213.0.2), each with its loopback up. partition() cuts a off from b with nft rules in a,
    except for the ports given; close() deletes both namespaces (and so the veth and rules)."""

    ADDRESS = {"a": "10.213.0.1", "b": "10.213.0.2"}

    def __init__(self, tag: str) -> None:
        self.names = {"a": f"rlock-{tag}-a", "b": f"rlock-{tag}-b"}
        self.made: List[str] = []

    def _ip(self, *args: str) -> None:
        out = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=10)
        if out.returncode != 0:
            raise RuntimeError(f"ip {' '.join(args)}: {out.stderr.strip()}")

    def up(self) -> "NetnsPair":
        for name in self.names.values():
            self._ip("netns", "add", name)
            self.made.append(name)
            self._ip("-n", name, "link", "set", "lo", "up")
        a, b = self.names["a"], self.names["b"]
        self._ip(
            "link", "add", "rl-a", "netns", a, "type", "veth", "peer", "name", "rl-b", "netns", b
        )
        for side, name in self.names.items():
            self._ip("-n", name, "addr", "add", self.ADDRESS[side] + "/24", "dev", "rl-" + side)
            self._ip("-n", name, "link", "set", "rl-" + side, "up")
        return self

    def prefix(self, side: str) -> List[str]:
        """The argv prefix that runs a program in `side`'s namespace."""
        return ["ip", "netns", "exec", self.names[side]]

    def partition(self, open_ports: List[int]) -> None:
        """Drops every packet between a and b (both ways, filtered in a) except TCP to and
        from `open_ports` on b."""
        b = self.ADDRESS["b"]
        ports = ", ".join(str(p) for p in open_ports)
        rules = (
            "table inet rlock_partition {\n"
            "  chain out { type filter hook output priority 0;\n"
            f"    ip daddr {b} tcp dport {{ {ports} }} accept; ip daddr {b} drop; }}\n"
            "  chain in { type filter hook input priority 0;\n"
            f"    ip saddr {b} tcp sport {{ {ports} }} accept; ip saddr {b} drop; }}\n"
            "}\n"
        )
        out = subprocess.run(
            self.prefix("a") + ["nft", "-f", "-"], input=rules, capture_output=True, text=True
        )
        if out.returncode != 0:
            raise RuntimeError(f"nft: {out.stderr.strip()}")

    def heal(self) -> None:
        subprocess.run(
            self.prefix("a") + ["nft", "delete", "table", "inet", "rlock_partition"],
            capture_output=True,
            timeout=10,
        )

    def close(self) -> None:
        for name in reversed(self.made):
            subprocess.run(["ip", "netns", "del", name], capture_output=True, timeout=10)
        self.made = []


class RedisServer:
    """A redis-server on a loopback port with a directory of its own; it can be killed,
    paused and restarted on the same port."""

    def __init__(
        self,
        root: Path,
        *config: str,
        netns: Optional[NetnsPair] = None,
        side: str = "",
        port: int = 0,
        tls: Optional[Path] = None,
    ) -> None:
        """In `netns`'s namespace `side` on `port` when given (its address there), else on a
        free port of 127.0.0.1. With `tls` (a directory of tests/fixtures/tls-certs.sh) it also
        listens for TLS on `tls_port`, and `url` is that port's rediss:// URL; `port` stays
        plaintext for the harness's own connections (chaos, watches, checkers)."""
        self.netns, self.side = netns, side
        self.host = netns.ADDRESS[side] if netns is not None else "127.0.0.1"
        self.port = port or free_port()
        self.tls = tls
        self.tls_port = free_port() if tls is not None else 0
        self.dir = root / f"redis-{side}{self.port}"
        self.dir.mkdir(parents=True)
        self.config = list(config)
        self.proc: Optional[subprocess.Popen] = None
        # Its requirepass, if any: the harness's own connections authenticate with it.
        self.password = next(
            (config[i + 1] for i, c in enumerate(config[:-1]) if c == "--requirepass"), ""
        )

    @property
    def url(self) -> str:
        if self.tls is not None:
            return tls_url(self.host, self.tls_port, self.tls)
        return f"redis://{self.host}:{self.port}"

    def tls_config(self) -> List[str]:
        if self.tls is None:
            return []
        return [
            "--tls-port",
            str(self.tls_port),
            "--tls-cert-file",
            str(self.tls / "server.crt"),
            "--tls-key-file",
            str(self.tls / "server.key"),
            "--tls-ca-cert-file",
            str(self.tls / "ca.crt"),
            "--tls-auth-clients",
            "no",
        ]

    def start(self) -> "RedisServer":
        args = (
            (self.netns.prefix(self.side) if self.netns is not None else [])
            + [
                "redis-server",
                "--port",
                str(self.port),
                "--bind",
                self.host,
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                str(self.dir),
                "--maxclients",
                "4000",
                "--enable-debug-command",
                "local",
            ]
            # Clients come from the namespace's own address, not loopback.
            + (["--protected-mode", "no"] if self.netns is not None else [])
            + self.tls_config()
            + self.config
        )
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                if self.conn(timeout=0.5).ping():
                    return self
            except redis.RedisError:
                time.sleep(0.02)
            if self.proc.poll() is not None:
                break
        raise RuntimeError(f"redis-server did not start on port {self.port}")

    def conn(self, timeout: float = 5.0) -> redis.Redis:
        netns = self.netns.names[self.side] if self.netns is not None else None
        return redis_conn(self.host, self.port, timeout, self.password, netns)

    def kill(self, sig: int = signal.SIGKILL) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(sig)
            if sig in (signal.SIGKILL, signal.SIGTERM):
                self.proc.wait(10)

    def restart(self, how: str = "kill") -> float:
        """Stops the server (SIGKILL, or SHUTDOWN which saves the AOF) and starts it again on
        the same port and directory. Returns the monotonic ns at which it answers again."""
        if how == "shutdown":
            # A raw socket: redis-py would retry the command once the server hung up.
            with socket.create_connection(("127.0.0.1", self.port), timeout=5) as s:
                s.sendall(b"*1\r\n$8\r\nSHUTDOWN\r\n")
                s.recv(100)
            assert self.proc is not None
            self.proc.wait(10)
        else:
            self.kill()
        self.start()
        return now_ns()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)
            self.proc.kill()
            self.proc.wait(10)
        self.proc = None


class FaultProxy:
    """tests/faults/faultproxy.py in front of one server."""

    def __init__(self, root: Path, upstream_port: int, tls: Optional[Path] = None) -> None:
        """`tls`: the upstream is a TLS port signed by the CA in that directory. The proxy only
        forwards bytes, so TLS runs end to end through it; it cannot tell pub/sub connections
        from command ones then (it never sees a SUBSCRIBE), so every connection is "command"."""
        self.control_path = Path(tempfile.mkdtemp(prefix="rlock-proxy-")) / "control"
        self.proc = subprocess.Popen(
            [
                sys.executable,
                str(PROXY),
                "--upstream",
                f"127.0.0.1:{upstream_port}",
                "--control",
                str(self.control_path),
            ],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line.startswith("port "):
            raise RuntimeError(f"the fault proxy did not start: {line!r}")
        self.port = int(line.split()[1])
        self.url = (
            tls_url("127.0.0.1", self.port, tls)
            if tls is not None
            else f"redis://127.0.0.1:{self.port}"
        )

    def control(self, **request) -> dict:
        with socket.socket(socket.AF_UNIX) as s:
            s.settimeout(5)
            s.connect(str(self.control_path))
            s.sendall((json.dumps(request) + "\n").encode())
            answer = json.loads(s.makefile().readline())
        if not answer.get("ok"):
            raise RuntimeError(f"proxy refused {request}: {answer}")
        return answer

    def set(self, kind: str, mode: dict, direction: str = "both") -> None:
        self.control(op="set", kind=kind, dir=direction, mode=mode)

    def pass_all(self) -> None:
        self.set("all", {"name": "pass"})

    def stop(self) -> None:
        self.proc.kill()
        self.proc.wait()
        assert self.proc.stdout is not None
        self.proc.stdout.close()
        shutil.rmtree(self.control_path.parent, ignore_errors=True)


def descriptor_growth(lines: List[str], pool_size: int = 8) -> Optional[str]:
    """Why a C loop worker's descriptors look leaked between its warm-up and its end (its
    'fds warm LIST' and 'fds end LIST' lines), or None. Sockets are bounded, not compared: the
    client opens command connections as load needs them (up to pool_size) and reopens killed
    ones on the next call, so their number moves with the load at each moment; a socket leaked
    per kill passes the bound within a few kills. Every other kind (pipes, eventfds, files) must
    be as many at the end."""
    kinds: Dict[str, Dict[str, int]] = {}
    for line in lines:
        if line.startswith(("fds warm ", "fds end ")):
            words = line.split(" ", 2)
            counts: Dict[str, int] = {}
            for entry in words[2].split(",") if len(words) > 2 else []:
                target = entry.split("=", 1)[-1]
                kind = target.split(":", 1)[0] if ":" in target else "file"
                counts[kind] = counts.get(kind, 0) + 1
            kinds[words[1]] = counts
    if set(kinds) != {"warm", "end"}:
        return "no 'fds warm' and 'fds end' lines"
    warm, end = kinds["warm"], kinds["end"]
    # The command connections and the subscriber's, plus one being reopened.
    if end.get("socket", 0) > pool_size + 2:
        return f"{end['socket']} sockets at the end, over {pool_size + 2}: {end}"
    if {k: v for k, v in end.items() if k != "socket"} != {
        k: v for k, v in warm.items() if k != "socket"
    }:
        return f"descriptors other than sockets changed: warm {warm}, end {end}"
    return None


class Worker:
    """One worker process (the C worker, or py_worker.py on the rlock wheel). stdout lines are
    collected on a thread; `expect` waits for one that starts with a word."""

    def __init__(self, argv: List[str]) -> None:
        self.argv = argv
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            bufsize=1,
        )
        self.pid = self.proc.pid
        self.started = time.monotonic()
        self.ended_ns: Optional[int] = None
        self.lines: List[str] = []
        self.err: List[str] = []
        self._cv = threading.Condition()
        self._taken: set = set()
        self._eof = 0
        threading.Thread(
            target=self._read, args=(self.proc.stdout, self.lines), daemon=True
        ).start()
        threading.Thread(target=self._read, args=(self.proc.stderr, self.err), daemon=True).start()

    def _read(self, stream, into: List[str]) -> None:
        for line in stream:
            with self._cv:
                into.append(line.rstrip("\n"))
                self._cv.notify_all()
        with self._cv:
            self._eof += 1
            self._cv.notify_all()

    def expect(self, word: str, timeout: float = 15.0) -> List[str]:
        """The fields of the first stdout line starting with `word` not returned before; lines
        of other words stay for their own expect."""
        deadline = time.monotonic() + timeout
        with self._cv:
            while True:
                for i, line in enumerate(self.lines):
                    fields = line.split()
                    if i not in self._taken and fields and fields[0] == word:
                        self._taken.add(i)
                        return fields
                left = deadline - time.monotonic()
                if left <= 0 or self._eof == 2:
                    raise AssertionError(
                        f"worker {self.pid} printed no '{word}' line within {timeout} s; "
                        f"stdout {self.lines[-5:]}, stderr {self.err[-5:]}"
                    )
                self._cv.wait(min(left, 0.1))

    def send(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def ask(self, command: str, timeout: float = 15.0) -> List[str]:
        self.send(command)
        word = command.split()[0]
        return self.expect("acquired" if word == "acquire" else word, timeout)

    def signal(self, sig: int) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)

    def kill(self) -> int:
        """SIGKILL; returns the monotonic ns just before it was sent (from when a takeover is
        timed). What the worker held ends at `ended_ns`, taken once the process is gone: an
        acquire can return between the two, so only the later time bounds every section
        (an earlier one made a section end before it began)."""
        at = now_ns()
        running = self.proc.poll() is None
        if running:
            self.proc.send_signal(signal.SIGCONT)
            self.proc.kill()
        self.proc.wait(10)
        if running:
            self.ended_ns = now_ns()
        return at

    def wait(self, timeout: float) -> int:
        try:
            rc = self.proc.wait(timeout)
            with self._cv:  # and for its last lines
                self._cv.wait_for(lambda: self._eof == 2, 5)
            return rc
        except subprocess.TimeoutExpired as e:
            diagnosis = self.diagnosis() + self.stacks()  # before the kill: it is still running
            self.kill()
            raise AssertionError(
                f"worker did not finish within {timeout} s (a hang): {diagnosis}"
            ) from e

    def finish(self, timeout: float) -> None:
        """Waits for the worker to end and fails, saying why, unless it exited 0."""
        rc = self.wait(timeout)
        assert rc == 0, self.diagnosis()

    def exit_reason(self) -> str:
        rc = self.proc.poll()
        if rc is None:
            return "still running"
        if rc < 0:
            try:
                name = signal.Signals(-rc).name
            except ValueError:
                name = f"signal {-rc}"
            return f"killed by {name}" + (" (by the test)" if self.ended_ns is not None else "")
        return f"exit status {rc}"

    def stacks(self) -> str:
        """Every thread's native stack (gdb, when installed): where a hung worker waits."""
        if shutil.which("gdb") is None or self.proc.poll() is not None:
            return ""
        try:
            out = subprocess.run(
                ["gdb", "-batch", "-p", str(self.pid), "-ex", "thread apply all bt 30"],
                capture_output=True,
                text=True,
                timeout=60,
            ).stdout
        except subprocess.TimeoutExpired:
            return "  stacks: gdb did not answer within 60 s\n"
        frames = [x for x in out.splitlines() if x.startswith(("Thread ", "#"))]
        return "  stacks:\n" + "".join(f"    {x[:200]}\n" for x in frames[:400])

    def diagnosis(self, lines: int = 20) -> str:
        """Who the worker was, how it ended, and the tail of its stderr and stdout."""
        with self._cv:
            err, out = self.err[-lines:], self.lines[-5:]
        return (
            f"worker {self.pid} ({' '.join(self.argv[:2])}): {self.exit_reason()} after "
            f"{time.monotonic() - self.started:.1f} s\n"
            + (
                f"  stderr, last {len(err)} lines:\n" + "".join(f"    {x}\n" for x in err)
                if err
                else "  stderr: empty\n"
            )
            + (
                f"  stdout, last {len(out)} lines:\n" + "".join(f"    {x}\n" for x in out)
                if out
                else ""
            )
        )

    def failed(self) -> bool:
        """Ended on its own with a non-zero status (a kill by the test is not a failure)."""
        rc = self.proc.poll()
        return rc is not None and rc != 0 and self.ended_ns is None

    def descriptor_growth(self, pool_size: int = 8) -> Optional[str]:
        """descriptor_growth() of this C loop worker's lines."""
        return descriptor_growth(self.lines, pool_size)

    def summary(self) -> Dict[str, int]:
        """The 'done ...' line of a loop worker as a dict."""
        for line in reversed(self.lines):
            if line.startswith("done "):
                return {k: int(v) for k, v in (f.split("=") for f in line.split()[1:])}
        raise AssertionError(f"worker {self.pid} printed no summary; stderr {self.err[-5:]}")


class Case:
    """The workspace of one test: servers, proxies and workers it started (all stopped at the
    end), one shared history log and the lost-update counters."""

    def __init__(self, root: Path, seed: int) -> None:
        self.root = root
        self.seed = seed
        self.log = root / "history.log"
        self.counters = root / "counters"
        self.counters.mkdir()
        self.servers: List[Union[RedisServer, SentinelServer]] = []
        self.proxies: List[FaultProxy] = []
        self.workers: List[Worker] = []
        # The permits of the semaphores in the history, for the closing linearizability check
        # (conftest.case): without it their names are skipped there.
        self.permits: Optional[int] = None
        # The case makes Redis lose data on purpose (a restart without persistence, keys
        # deleted): two owners at once are expected there, and it checks its history itself
        # around the loss, so the closing linearizability check is not for it.
        self.loses_data = False
        self.closed = False

    def redis(
        self,
        *config: str,
        netns: Optional[NetnsPair] = None,
        side: str = "",
        port: int = 0,
        tls: Optional[Path] = None,
    ) -> RedisServer:
        server = RedisServer(self.root, *config, netns=netns, side=side, port=port, tls=tls)
        self.servers.append(server)
        return server.start()

    def proxy(self, server: RedisServer) -> FaultProxy:
        """A fault proxy in front of `server`: of its TLS port if it has one."""
        if server.tls is not None:
            p = FaultProxy(self.root, server.tls_port, server.tls)
        else:
            p = FaultProxy(self.root, server.port)
        self.proxies.append(p)
        return p

    def worker(
        self,
        mode: str,
        url: Optional[str] = None,
        *,
        lang: str = "c",
        counters: bool = True,
        netns: Optional[NetnsPair] = None,
        side: str = "",
        **options,
    ) -> Worker:
        """A worker of `mode` ("loop" or "hold") on the C library, or ("loop" only) on the
        Python, Go or (semaphore kinds only) Java binding (`lang`), in `netns`'s namespace
        `side` if given; options become --key value (underscores to dashes; lists are joined
        with commas)."""
        argv = (netns.prefix(side) if netns is not None else []) + {
            "c": lambda: [worker_binary()],
            "python": lambda: [sys.executable, str(PY_WORKER)],
            "go": lambda: [go_worker_binary()],
            "java": java_worker_command,
        }[lang]()
        argv += [mode, "--log", str(self.log), "--seed", str(self.seed)]
        if url is not None:
            argv += ["--url", url]
        if counters:
            argv += ["--counter-dir", str(self.counters)]
        for key, value in options.items():
            if isinstance(value, (list, tuple)):
                value = ",".join(str(v) for v in value)
            argv += ["--" + key.replace("_", "-"), str(value)]
        w = Worker(argv)
        self.workers.append(w)
        return w

    def ended(self) -> Dict[int, int]:
        """pid -> monotonic ns at which a killed worker stopped holding anything."""
        return {w.pid: w.ended_ns for w in self.workers if w.ended_ns is not None}

    def check_linearizable(self) -> None:
        """Every history of the catalog goes through the linearizability checker once its case
        passed and its workers stopped (conftest.case): as locks whose leases may lapse (some
        cases stop holders on purpose; those where none may lapse check strictly themselves),
        and semaphores of the case's permits."""
        if self.loses_data or not self.log.exists() or self.log.stat().st_size == 0:
            return
        h = checkers.read_history(self.log, self.ended())
        found = checkers.linearizable(h, self.permits, lapses=True)
        assert not found, "the history is not linearizable:\n" + "\n".join(found[:10])

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        for w in self.workers:
            if w.proc.poll() is None:
                w.kill()
            for stream in (w.proc.stdin, w.proc.stdout, w.proc.stderr):
                try:
                    if stream is not None:
                        stream.close()
                except OSError:
                    pass
        for p in self.proxies:
            p.stop()
        for s in self.servers:
            s.stop()


class MultiOption(TypedDict, total=False):
    multi: int  # the worker's --multi: each name is a multi-lock of its "+"-joined names


def run_every_kind(case: Case, url: str, prefix: str, names: int, cycles: int) -> None:
    """Loops every lock kind (reentrant, fenced, fair, spin, read-write, and multi-locks of two
    names) through `url`: two threads of one worker per kind, each for `cycles` cycles, all
    of which must acquire."""
    for kind in ("reentrant", "fenced", "fair", "spin", "rw", "multi"):
        kind_names = [f"{prefix}-{kind}-{i}" for i in range(names)]
        extra: MultiOption = {}
        if kind == "multi":
            kind_names = [f"{a}+{b}" for a, b in zip(kind_names, kind_names[1:] + kind_names[:1])]
            extra = {"multi": 1}
        w = case.worker(
            "loop",
            url,
            names=kind_names,
            threads=2,
            kind="reentrant" if kind == "multi" else kind,
            wait_ms=10000,
            hold_us=200,
            lease_ms=-1,
            watchdog_lease_ms=3000,
            cycles=cycles,
            **extra,
        )
        w.finish(60)
        summary = w.summary()
        assert summary["acquired"] == summary["cycles"] == 2 * cycles, (kind, summary)


def pids_alive(workers: List[Worker]) -> bool:
    return any(w.proc.poll() is None for w in workers)


def wait_until(predicate, timeout: float, interval: float = 0.005) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return bool(predicate())


class Chaos:
    """Runs `action(conn, rng)` on a connection of its own every U(lo, hi) s, on a thread,
    until stopped; counts the runs. A failing action (the server is down) closes the
    connection, and the next run reconnects."""

    def __init__(self, port: int, action, lo: float, hi: float, seed: int) -> None:
        self.runs = 0
        self._stop = threading.Event()
        self._rng = random.Random(seed)
        self._thread = threading.Thread(target=self._run, args=(port, action, lo, hi))
        self._thread.start()

    def _run(self, port, action, lo, hi) -> None:
        conn = redis.Redis(port=port, socket_timeout=5)
        while not self._stop.wait(self._rng.uniform(lo, hi)):
            try:
                action(conn, self._rng)
                self.runs += 1
            except redis.RedisError:
                conn.close()
        conn.close()

    def stop(self) -> int:
        self._stop.set()
        self._thread.join(10)
        return self.runs


def script_calls(conn: redis.Redis) -> int:
    """EVALSHA and EVAL calls the server has run (INFO commandstats)."""
    stats = conn.info("commandstats")
    return sum(stats.get(k, {}).get("calls", 0) for k in ("cmdstat_evalsha", "cmdstat_eval"))


class SentinelServer:
    """A redis-server in sentinel mode watching one master (its config file in its own
    directory, which sentinel rewrites)."""

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
        netns: Optional[NetnsPair] = None,
        side: str = "",
        port: int = 0,
        master_host: str = "127.0.0.1",
        extra_conf: str = "",
    ) -> None:
        """In `netns`'s namespace `side` on `port` when given, else on 127.0.0.1; `extra_conf`
        (lines, each ending in a newline) ends the config file."""
        self.password = password
        self.netns, self.side = netns, side
        self.host = netns.ADDRESS[side] if netns is not None else "127.0.0.1"
        self.port = port or free_port()
        self.dir = root / f"sentinel-{side}{self.port}"
        self.dir.mkdir(parents=True)
        conf = self.dir / "sentinel.conf"
        conf.write_text(
            f"port {self.port}\nbind {self.host}\ndir {self.dir}\n"
            + ("protected-mode no\n" if netns is not None else "")
            + f"sentinel monitor {name} {master_host} {master_port} {quorum}\n"
            f"sentinel down-after-milliseconds {name} {down_after_ms}\n"
            f"sentinel failover-timeout {name} {failover_timeout_ms}\n"
            f"sentinel parallel-syncs {name} 1\n"
            + (f"sentinel auth-pass {name} {master_password}\n" if master_password else "")
            + (f"requirepass {password}\nsentinel sentinel-pass {password}\n" if password else "")
            + extra_conf
        )
        self.proc = subprocess.Popen(
            (netns.prefix(side) if netns is not None else [])
            + ["redis-server", str(conf), "--sentinel"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.STDOUT,
        )
        if not wait_until(self._answers, 10, 0.02):
            raise RuntimeError(f"sentinel did not start on port {self.port}")

    def _answers(self) -> bool:
        try:
            return bool(self.conn().ping())
        except redis.RedisError:
            return False

    def conn(self) -> redis.Redis:
        netns = self.netns.names[self.side] if self.netns is not None else None
        return redis_conn(self.host, self.port, 2, self.password, netns)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)


class SentinelDeployment:
    """A master, its replicas and sentinels watching it (FAULTS.md C2: quorum 2,
    down-after 1000 ms, failover-timeout 5000 ms), all on loopback and stopped with the case."""

    NAME = "rlock-master"

    def __init__(
        self,
        case: Case,
        replicas: int = 1,
        sentinels: int = 3,
        down_after_ms: int = 1000,
        failover_timeout_ms: int = 5000,
        password: str = "",
        sentinel_password: str = "",
        make_redis: Optional[Callable[..., RedisServer]] = None,
        make_sentinel: Callable[..., SentinelServer] = SentinelServer,
    ) -> None:
        """`password`: the master's and replicas' requirepass; `sentinel_password`: the
        sentinels' own. `make_redis(*config)` starts a data server (default `case.redis`) and
        `make_sentinel` takes SentinelServer's arguments: a variant (TLS) passes its own."""
        start = make_redis or case.redis
        sync = ["--repl-diskless-sync-delay", "0"]
        if password:
            sync += ["--requirepass", password, "--masterauth", password]
        self.master = start(*sync)
        self.replicas = [
            start(*sync, "--replicaof", "127.0.0.1", str(self.master.port)) for _ in range(replicas)
        ]
        self.servers = [self.master] + self.replicas
        assert wait_until(
            lambda: self.master.conn().info("replication")["connected_slaves"] == replicas, 10, 0.05
        ), "the replicas did not connect"
        self.sentinels = [
            make_sentinel(
                case.root,
                self.master.port,
                self.NAME,
                2,
                down_after_ms,
                failover_timeout_ms,
                password,
                sentinel_password,
            )
            for _ in range(sentinels)
        ]
        case.servers.extend(self.sentinels)

        # A failover needs the sentinels to know each other and the replicas (hello messages
        # every 2 s): wait for that, or the first kill would find no quorum.
        def ready() -> bool:
            for s in self.sentinels:
                info = cast(Dict[str, Any], s.conn().sentinel_master(self.NAME))
                if info["num-other-sentinels"] != sentinels - 1 or info["num-slaves"] != replicas:
                    return False
            return True

        assert wait_until(ready, 20, 0.1), "the sentinels did not find each other"

    @property
    def url(self) -> str:
        hosts = ",".join(f"127.0.0.1:{s.port}" for s in self.sentinels)
        return f"redis-sentinel://{hosts}/{self.NAME}"

    def master_port(self) -> Optional[int]:
        """The master's port as the sentinels report it (the first that answers)."""
        for s in self.sentinels:
            try:
                # None while no master is known: unpacking it raises the TypeError below.
                reply = s.conn().sentinel_get_master_addr_by_name(self.NAME)
                host, port = cast(Tuple[str, int], reply)
                return int(port)
            except (redis.RedisError, TypeError):
                continue
        return None

    def server(self, port: int) -> RedisServer:
        return next(s for s in self.servers if s.port == port)


class ClusterDeployment:
    """A Redis Cluster of `masters` masters with `replicas` replicas each, built with
    `redis-cli --cluster create` on loopback (node timeout 1000 ms, so a killed master's replica
    takes over in about 2 s), stopped with the case. `make_server(root, *config, port=P)` makes
    a node and `cli_args` go to redis-cli: a variant (TLS) passes its own."""

    def __init__(
        self,
        case: Case,
        masters: int = 3,
        node_timeout_ms: int = 1000,
        replicas: int = 1,
        make_server: Callable[..., RedisServer] = RedisServer,
        cli_args: Sequence[str] = (),
    ) -> None:
        self.servers: List[RedisServer] = []
        for _ in range(masters * (1 + replicas)):
            s = make_server(
                case.root,
                "--cluster-enabled",
                "yes",
                "--cluster-node-timeout",
                str(node_timeout_ms),
                "--repl-diskless-sync-delay",
                "0",
                port=self._port_with_bus(),
            )
            s.config += ["--cluster-config-file", str(s.dir / "nodes.conf")]
            case.servers.append(s)
            self.servers.append(s.start())
        out = subprocess.run(
            [
                "redis-cli",
                *cli_args,
                "--cluster",
                "create",
                *[f"127.0.0.1:{s.port}" for s in self.servers],
                "--cluster-replicas",
                str(replicas),
                "--cluster-yes",
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]

        def ready() -> bool:
            for s in self.servers:
                try:
                    info = s.conn().execute_command("CLUSTER", "INFO").decode()
                except redis.RedisError:
                    return False
                if "cluster_state:ok" not in info:
                    return False
            return len(self.masters()) == masters and all(
                s.conn().info("replication")["connected_slaves"] == replicas for s in self.masters()
            )

        assert wait_until(ready, 30, 0.1), "the cluster did not come up"

    @staticmethod
    def _port_with_bus() -> int:
        """A free port whose cluster bus port (port + 10000) exists and is free too."""
        for _ in range(100):
            port = free_port()
            if port + 10000 > 65535:
                continue
            with socket.socket() as s:
                try:
                    s.bind(("127.0.0.1", port + 10000))
                except OSError:
                    continue
            return port
        raise RuntimeError("no free port pair for a cluster node")

    @property
    def url(self) -> str:
        return "redis-cluster://" + ",".join(f"127.0.0.1:{s.port}" for s in self.servers[:2])

    def alive(self) -> List[RedisServer]:
        return [s for s in self.servers if s.proc is not None and s.proc.poll() is None]

    def masters(self) -> List[RedisServer]:
        out = []
        for s in self.alive():
            try:
                if s.conn().execute_command("ROLE")[0] == b"master":
                    out.append(s)
            except redis.RedisError:
                pass
        return out

    def node_id(self, server: RedisServer) -> str:
        return server.conn().execute_command("CLUSTER", "MYID").decode()

    def owner(self, slot: int) -> RedisServer:
        """The master serving `slot`, as a live node sees it."""
        for s in self.alive():
            try:
                for first, last, master, *_ in s.conn().execute_command("CLUSTER", "SLOTS"):
                    if first <= slot <= last:
                        return next(x for x in self.servers if x.port == int(master[1]))
            except redis.RedisError:
                continue
        raise AssertionError(f"no node serves slot {slot}")

    def key_slot(self, key: str) -> int:
        return int(self.alive()[0].conn().execute_command("CLUSTER", "KEYSLOT", key))

    def migrate_slot(self, slot: int, src: RedisServer, dst: RedisServer) -> int:
        """Moves `slot` from src to dst the way redis-cli does (IMPORTING, MIGRATING, MIGRATE
        the keys a few at a time, then SETSLOT NODE everywhere). Returns the keys moved."""
        s, d = src.conn(), dst.conn()
        src_id, dst_id = self.node_id(src), self.node_id(dst)
        d.execute_command("CLUSTER", "SETSLOT", slot, "IMPORTING", src_id)
        s.execute_command("CLUSTER", "SETSLOT", slot, "MIGRATING", dst_id)
        moved = 0
        while True:
            keys = s.execute_command("CLUSTER", "GETKEYSINSLOT", slot, 2)
            if not keys:
                break
            s.execute_command(
                "MIGRATE", "127.0.0.1", dst.port, "", 0, 5000, "REPLACE", "KEYS", *keys
            )
            moved += len(keys)
            time.sleep(0.01)  # let commands land while the slot is half moved
        for node in [dst, src] + [m for m in self.masters() if m not in (src, dst)]:
            node.conn().execute_command("CLUSTER", "SETSLOT", slot, "NODE", dst_id)
        return moved
