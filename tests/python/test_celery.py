"""rlock.celery.SingleRunTask with a real Celery worker pool: two prefork workers of three
processes each on the test's redis-server (the broker on db 1), duplicate tasks enqueued at
once. One key's runs never overlap, duplicates are skipped or retried as asked, different keys
run side by side, and no lock is left behind."""

from __future__ import annotations

import importlib
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any, Dict, Iterator, List

import pytest
import redis

HERE = Path(__file__).resolve().parent


def celery_package() -> Any:
    try:
        return importlib.import_module("celery")
    except ImportError:
        if os.environ.get("RLOCK_TEST_WHEEL"):
            pytest.fail("celery is missing although tests/python/requirements.txt lists it")
        pytest.skip("celery is not installed")


@pytest.fixture
def workers(redis_url: str, tmp_path: Path) -> Iterator[Dict[str, str]]:
    """Starts two Celery workers on a queue of the test's own; yields their environment."""
    celery_package()
    queue = f"rlock-celery-{uuid.uuid4().hex[:8]}"
    env = dict(
        os.environ,
        RLOCK_CELERY_BROKER=redis_url.rstrip("/") + "/1",
        RLOCK_CELERY_LOCKS=redis_url,
        RLOCK_CELERY_QUEUE=queue,
        PYTHONPATH=os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]),
    )
    procs: List[subprocess.Popen] = []
    logs = []
    for n in (1, 2):
        log = tmp_path / f"worker{n}.log"
        logs.append(log)
        with log.open("wb") as out:
            procs.append(
                subprocess.Popen(
                    [
                        sys.executable,
                        "-m",
                        "celery",
                        "-A",
                        "celery_app",
                        "worker",
                        "--pool=prefork",
                        "--concurrency=3",
                        f"--hostname=w{n}-{queue}@%h",
                        "--without-gossip",
                        "--without-mingle",
                        "--without-heartbeat",
                        "--loglevel=INFO",
                    ],
                    cwd=HERE,
                    env=env,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            )
    try:
        deadline = time.monotonic() + 60
        while not all("ready." in log.read_text(errors="replace") for log in logs):
            for p, log in zip(procs, logs):
                assert p.poll() is None, f"a Celery worker exited:\n{log.read_text()}"
            assert time.monotonic() < deadline, "the Celery workers were not ready in 60 s:\n" + (
                "\n".join(log.read_text(errors="replace") for log in logs)
            )
            time.sleep(0.1)
        yield env
    finally:
        for p in procs:
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        for p in procs:
            try:
                p.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()


def sender(env: Dict[str, str]) -> Any:
    app = celery_package().Celery("rlock_test_sender", broker=env["RLOCK_CELERY_BROKER"])
    app.conf.broker_connection_retry_on_startup = True
    return app


def wait_for(r: redis.Redis, keys_counts: Dict[str, int], timeout: float = 40) -> None:
    deadline = time.monotonic() + timeout
    while True:
        counts = {k: r.llen(k) for k in keys_counts}
        if all(counts[k] >= want for k, want in keys_counts.items()):
            return
        assert time.monotonic() < deadline, f"after {timeout} s: {counts}, want {keys_counts}"
        time.sleep(0.1)


def runs(r: redis.Redis, queue: str, key: str) -> List[Dict[str, float]]:
    return sorted(
        (json.loads(x) for x in r.lrange(f"{queue}:runs:{key}", 0, -1)), key=lambda x: x["start"]
    )


def assert_no_overlap(key: str, ran: List[Dict[str, float]]) -> None:
    for a, b in zip(ran, ran[1:]):
        assert b["start"] >= a["end"], f"two runs of {key} at once: {a} and {b}"


def test_duplicates_skip_while_one_runs_and_other_keys_run_beside(workers, r):
    queue = workers["RLOCK_CELERY_QUEUE"]
    app = sender(workers)
    a, b = f"{queue}-A", f"{queue}-B"
    for _ in range(6):
        app.send_task("celery_app.once", args=[a, 0.6], queue=queue)
    for _ in range(3):
        app.send_task("celery_app.once", args=[b, 0.6], queue=queue)
    # Each task either ran or was skipped: wait until all nine are accounted for.
    deadline = time.monotonic() + 40
    while True:
        done = {k: r.llen(f"{queue}:runs:{k}") + r.llen(f"{queue}:skips:{k}") for k in (a, b)}
        if done == {a: 6, b: 3}:
            break
        assert time.monotonic() < deadline, f"tasks accounted for after 40 s: {done}"
        time.sleep(0.1)
    ran_a, ran_b = runs(r, queue, a), runs(r, queue, b)
    assert_no_overlap(a, ran_a)
    assert_no_overlap(b, ran_b)
    assert ran_a and ran_b
    # Six processes took the six duplicates of A at about the same time: most found A held.
    assert r.llen(f"{queue}:skips:{a}") >= 1
    assert r.lrange(f"{queue}:skips:{a}", 0, 0) == [f"celery:{a}".encode()]
    # A and B were not serialised against each other.
    assert any(x["start"] < y["end"] and y["start"] < x["end"] for x in ran_a for y in ran_b)
    assert r.exists(f"celery:{a}", f"celery:{b}") == 0


def test_retry_runs_every_duplicate_one_after_another(workers, r):
    queue = workers["RLOCK_CELERY_QUEUE"]
    app = sender(workers)
    c = f"{queue}-C"
    for _ in range(3):
        app.send_task("celery_app.eventually", kwargs={"key": c, "pause": 0.4}, queue=queue)
    wait_for(r, {f"{queue}:runs:{c}": 3})
    ran = runs(r, queue, c)
    assert len(ran) == 3
    assert_no_overlap(c, ran)
    assert r.llen(f"{queue}:skips:{c}") == 0
    assert r.exists(f"celery:{c}") == 0


def test_bad_options_are_refused(redis_url):
    celery = celery_package()
    from rlock.celery import SingleRunTask

    app = celery.Celery("rlock_test_bad")
    app.conf.rlock_url = redis_url

    @app.task(base=SingleRunTask, lock_key="{user}")  # type: ignore[untyped-decorator]
    def unknown_field(day: str) -> None:
        pass

    @app.task(base=SingleRunTask, on_locked="ignore")  # type: ignore[untyped-decorator]
    def bad_mode(day: str) -> None:
        pass

    import rlock

    with pytest.raises(rlock.InvalidArgumentError, match=r"'user'.*not a parameter"):
        unknown_field("mon")
    with pytest.raises(rlock.InvalidArgumentError, match=r"on_locked must be"):
        bad_mode("mon")
