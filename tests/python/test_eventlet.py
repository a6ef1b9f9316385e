"""Green threads under eventlet: after eventlet.monkey_patch(), green threads on one OS thread
are owners of their own (by default and sharing one lock object), a waiting one lets the others
run, and one whose wait an eventlet.Timeout ends leaves nothing held (each scenario in a process
of its own: eventlet_worker.py)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import require_green

WORKER = Path(__file__).with_name("eventlet_worker.py")
GREENLETS, ROUNDS = 8, 5  # as in eventlet_worker.py

# Not imported here: importing eventlet makes every later fork() in this process warn, which the
# fork tests treat as an error.
require_green("eventlet")


def run_eventlet(redis_url: str, name: str, scenario: str) -> dict:
    out = subprocess.run(
        [sys.executable, "-W", "ignore", str(WORKER), redis_url, name, scenario],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, f"{scenario}: exit {out.returncode}\n{out.stderr}"
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("scenario", ["defaults", "shared-object"])
def test_green_threads_never_overlap(redis_url, name, scenario):
    seen = run_eventlet(redis_url, name, scenario)
    assert seen["failed"] == []
    assert seen["most_inside"] == 1, seen
    assert seen["foreign"] == 0, seen
    assert seen["entries"] == GREENLETS * ROUNDS, seen
    assert seen["left"] == 0


def test_a_waiting_green_thread_lets_the_others_run(redis_url, name):
    seen = run_eventlet(redis_url, name, "waiting")
    assert seen["ticks"] == 50, seen  # the ticker ran while the waiter waited
    assert 0.4 < seen["waited"] < 5, seen
    assert seen["left"] == 0


def test_a_timed_out_wait_leaves_nothing_held(redis_url, name):
    seen = run_eventlet(redis_url, name, "timeout")
    assert seen["timed_out"], seen
    assert seen["free_after_release"], seen
    assert seen["left"] == 0
