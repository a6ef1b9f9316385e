"""Fixtures of the fault-injection suite: each test gets a Case (its own servers, proxies,
workers and history log, all stopped afterwards) and a seed, printed so a failing schedule
can be replayed with RLOCK_FAULT_SEED."""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path
from typing import Iterator, Optional

import checkers
import pytest
from harness import PACE, Case, NetnsPair, make_tls_certs, worker_binary

# Processes the tests start get Ctrl-C (SIGINT) as they would from a terminal. A run started in
# the background by a non-interactive shell (nohup, `cmd &`, some CI runners) ignores SIGINT,
# and children inherit that: a child Python would not even install its KeyboardInterrupt
# handler, and a test that interrupts it would wait for ever. A handler here is reset to the
# default in each child at exec.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


def pytest_report_header(config: pytest.Config) -> str:
    return str(PACE.fresh())


def pytest_terminal_summary(terminalreporter) -> None:  # type: ignore[no-untyped-def]
    """The last pace measured (what the liveness bounds were widened by), and what the
    linearizability checker did, also under -q."""
    if PACE.at:
        terminalreporter.write_line(str(PACE))
    lin = checkers.LIN_STATS
    if lin.objects:
        unknown = f" ({', '.join(lin.unknown[:10])})" if lin.unknown else ""
        terminalreporter.write_line(
            f"linearizability: {lin.objects} objects of {lin.ops} operations checked in "
            f"{lin.seconds:.1f} s, {len(lin.unknown)} unknown (out of time){unknown}"
        )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "sanitized: also run with the ASan/UBSan-built worker")
    config.addinivalue_line("markers", "threads: also run with the TSan-built worker")


@pytest.fixture(scope="session", autouse=True)
def pace() -> Iterator[None]:
    """Measures the machine before the first case (Pace), and stops its redis-server after."""
    PACE.fresh()
    yield
    PACE.close()


@pytest.fixture
def seed() -> int:
    value = int(os.environ.get("RLOCK_FAULT_SEED") or random.randrange(1, 2**31))
    print(f"seed {value} (replay with RLOCK_FAULT_SEED={value})")
    return value


@pytest.fixture(scope="session")
def tls_certs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The test CA and certificates of tests/fixtures/tls-certs.sh, made once per session."""
    certs = make_tls_certs(tmp_path_factory.mktemp("tls-certs"))
    PACE.with_tls(certs)  # the handshake's cost, for the slack of bounds over TLS
    return certs


@pytest.fixture(params=["plain", "tls"])
def tls(request: pytest.FixtureRequest) -> Optional[Path]:
    """Runs a test twice: over plaintext (None) and over TLS (the certificates' directory, for
    Case.redis(tls=...)). Test ids end in [plain] and [tls]."""
    if request.param == "plain":
        return None
    certs: Path = request.getfixturevalue("tls_certs")
    return certs


@pytest.fixture
def case(seed: int, request: pytest.FixtureRequest) -> Iterator[Case]:
    if shutil.which("redis-server") is None:
        pytest.fail("redis-server is not installed")
    binary = worker_binary()
    if not os.access(binary, os.X_OK):
        pytest.fail(
            f"the fault worker {binary} is missing: build the tests (or set RLOCK_FAULT_WORKER)"
        )
    root = Path(
        tempfile.mkdtemp(
            prefix="rlock-fault-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None
        )
    )
    c = Case(root, seed)
    try:
        yield c
        c.close()
        report = getattr(request.node, "rep_call", None)
        if report is not None and report.passed:
            c.check_linearizable()
    finally:
        c.close()
        if os.environ.get("RLOCK_FAULT_KEEP") == "1":
            print(f"kept {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def netns() -> Iterator[NetnsPair]:
    """Two fresh network namespaces joined by a veth pair, deleted afterwards (with the veth and
    any nft rules in them) however the test ended. Request it before `case`, so the case's
    processes stop first. Skipped only where a namespace cannot be made at all (not root)."""
    pair = NetnsPair(f"f{os.getpid()}")
    probe = subprocess.run(
        ["ip", "netns", "add", pair.names["a"]], capture_output=True, text=True, timeout=10
    )
    if probe.returncode != 0:
        pytest.skip(f"`ip netns add` is impossible here: {probe.stderr.strip()}")
    subprocess.run(["ip", "netns", "del", pair.names["a"]], capture_output=True, timeout=10)
    if shutil.which("nft") is None:
        pytest.fail("nft is not installed (scripts/test-faults.sh installs nftables)")
    try:
        yield pair.up()
    finally:
        pair.close()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):  # type: ignore[no-untyped-def]
    """A failed case reports every worker that ended with a non-zero status on its own: how it
    ended and the tail of its stderr, so a failure says why without a rerun."""
    outcome = yield
    report = outcome.get_result()
    if report.when == "call":
        item.rep_call = report  # type: ignore[attr-defined]  # for the case fixture's last check
    if report.when != "call" or not report.failed:
        return
    c = getattr(item, "funcargs", {}).get("case")
    if not isinstance(c, Case):
        return
    failed = [w.diagnosis() for w in c.workers if w.failed()]
    if failed:
        report.sections.append(("workers that failed", "\n".join(failed)))
    report.sections.append(("machine", str(PACE)))
