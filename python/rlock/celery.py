"""Celery tasks that never run twice at once for the same key (``pip install
"rlock-redis[celery]"``).

    from celery import Celery
    from rlock.celery import SingleRunTask

    app = Celery("jobs", broker="redis://127.0.0.1:6379/0")
    app.conf.rlock_url = "redis://127.0.0.1:6379"

    @app.task(base=SingleRunTask, lock_key="report:{0}", on_locked="skip")
    def build_report(day): ...

Every run of the task body holds the rlock lock ``"celery:" + lock_key`` formatted with the
task's arguments (default: the task's name and its arguments). A run that finds the lock held
by another worker skips (``on_locked="skip"``, the default: logged, returns None), is retried
later (``"retry"``: ``Task.retry`` after ``lock_retry_countdown`` s) or fails (``"raise"``:
``LockTimeoutError``). The lock is released when the body returns or raises; a worker process
that dies holding it frees it within the watchdog lease (30 s by default) or ``lock_lease``.
See docs/celery.md.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
from typing import Any, Callable, Dict, Optional, Tuple

from celery import Task  # type: ignore[import-untyped]

from ._client import Client
from ._decorate import _namer
from ._errors import InvalidArgumentError, LockTimeoutError

__all__ = ["SingleRunTask"]

log = logging.getLogger("rlock.celery")

_ON_LOCKED = ("skip", "retry", "raise")

# One rlock.Client per process and URL: prefork workers are forked children, and each makes its
# own (a client made before the fork is not used in the child).
_clients: Dict[Tuple[int, str], Client] = {}
_clients_mu = threading.Lock()


def _client_for(url: str) -> Client:
    key = (os.getpid(), url)
    with _clients_mu:
        client = _clients.get(key)
        if client is None:
            client = _clients[key] = Client(url)
        return client


class SingleRunTask(Task):  # type: ignore[misc]
    """A Celery ``Task`` base class whose body runs under an rlock lock named from its arguments.

    Options, as class attributes or ``app.task(base=SingleRunTask, ...)`` keywords:

    - ``lock_key``: a ``str.format`` template over the task's arguments (``"report:{0}"``,
      ``"user:{user_id}"``) or a callable taking them; None (default): the task's name and a
      digest of all its arguments.
    - ``lock_prefix``: put before the key, ``"celery:"``.
    - ``on_locked``: ``"skip"`` (default), ``"retry"`` or ``"raise"``.
    - ``lock_wait``: seconds to wait for the lock before that, 0 (default: try once).
    - ``lock_lease``: seconds, or None (default) for the watchdog.
    - ``lock_retry_countdown``: seconds before the retry of ``on_locked="retry"``, 5.
    - ``rlock_url``: the Redis of the locks; else the app's ``conf.rlock_url``, else
      ``$RLOCK_URL``.
    - ``rlock_client``: an ``rlock.Client`` (or a callable returning one) to use instead of a
      URL; with a prefork pool make it in each worker process (a callable does that).
    """

    lock_key: Any = None
    lock_prefix: str = "celery:"
    on_locked: str = "skip"
    lock_wait: float = 0
    lock_lease: Optional[float] = None
    lock_retry_countdown: float = 5
    rlock_url: Optional[str] = None
    rlock_client: Any = None

    _rlock_namer: Optional[Callable[[Tuple[Any, ...], Any], str]] = None

    def lock_client(self) -> Client:
        """The rlock.Client of this process for the task's locks."""
        given = self.rlock_client
        if given is not None:
            made = given() if callable(given) and not isinstance(given, Client) else given
            if not isinstance(made, Client):
                raise InvalidArgumentError(
                    f"task {self.name}: rlock_client must be an rlock.Client or a callable "
                    f"returning one, not {type(made).__name__}"
                )
            return made
        url = (
            self.rlock_url
            or getattr(self.app.conf, "rlock_url", None)
            or os.environ.get("RLOCK_URL")
        )
        if not url:
            raise InvalidArgumentError(
                f"task {self.name}: no Redis for its lock: set rlock_url on the task, "
                "rlock_url in the app's conf, or $RLOCK_URL"
            )
        return _client_for(url)

    def lock_name(self, args: Tuple[Any, ...], kwargs: Dict[str, Any]) -> str:
        """The lock a run with these arguments holds."""
        if self.lock_key is None:
            digest = hashlib.sha256(repr((args, sorted(kwargs.items()))).encode()).hexdigest()
            return f"{self.lock_prefix}{self.name}:{digest[:32]}"
        if self._rlock_namer is None:
            self._rlock_namer = _namer(self.lock_key, self.run)
        return self.lock_prefix + self._rlock_namer(args, kwargs)

    def lock_held(self, name: str, args: Tuple[Any, ...], kwargs: Dict[str, Any]) -> None:
        """Called when a run finds its lock held and skips; logs. Override to count or report."""
        log.info("task %s[%s] skipped: lock %r is held", self.name, self.request.id, name)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self.on_locked not in _ON_LOCKED:
            raise InvalidArgumentError(
                f"task {self.name}: on_locked must be 'skip', 'retry' or 'raise', "
                f"not {self.on_locked!r}"
            )
        name = self.lock_name(args, kwargs)
        lock = self.lock_client().lock(name, lease=self.lock_lease)
        wait = self.lock_wait
        acquired = lock.acquire(blocking=bool(wait), timeout=wait if wait else -1)
        if not acquired:
            if self.on_locked == "retry":
                raise self.retry(countdown=self.lock_retry_countdown)
            if self.on_locked == "raise":
                raise LockTimeoutError(f"task {self.name}: lock {name!r} is held elsewhere")
            self.lock_held(name, args, kwargs)
            return None
        try:
            return super().__call__(*args, **kwargs)
        finally:
            lock.release()
