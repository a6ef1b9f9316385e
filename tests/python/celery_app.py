"""The Celery app of test_celery.py, imported by the worker processes it starts: tasks on
rlock.celery.SingleRunTask that log each run's start and end (and each skip) to Redis."""

from __future__ import annotations

import json
import os
import time
from typing import Any, Dict, Tuple

import redis
from celery import Celery  # type: ignore[import-untyped]
from rlock.celery import SingleRunTask

app = Celery("rlock_test", broker=os.environ["RLOCK_CELERY_BROKER"])
app.conf.rlock_url = os.environ["RLOCK_CELERY_LOCKS"]
app.conf.broker_connection_retry_on_startup = True
app.conf.task_default_queue = os.environ["RLOCK_CELERY_QUEUE"]
app.conf.worker_prefetch_multiplier = 1

_log = redis.Redis.from_url(os.environ["RLOCK_CELERY_LOCKS"])


class Recorded(SingleRunTask):
    def lock_held(self, name: str, args: Tuple[Any, ...], kwargs: Dict[str, Any]) -> None:
        _log.rpush(f"{os.environ['RLOCK_CELERY_QUEUE']}:skips:{args[0]}", name)


def _record(key: str, pause: float) -> None:
    start = time.time()
    time.sleep(pause)
    run = {"start": start, "end": time.time(), "pid": os.getpid()}
    _log.rpush(f"{os.environ['RLOCK_CELERY_QUEUE']}:runs:{key}", json.dumps(run))


@app.task(base=Recorded, lock_key="{0}", on_locked="skip")  # type: ignore[untyped-decorator]
def once(key: str, pause: float) -> None:
    _record(key, pause)


@app.task(  # type: ignore[untyped-decorator]
    base=Recorded, lock_key="{key}", on_locked="retry", lock_retry_countdown=0.2, max_retries=None
)
def eventually(key: str, pause: float) -> None:
    _record(key, pause)
