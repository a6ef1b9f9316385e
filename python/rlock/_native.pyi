# Type stubs of the native layer (python/src/_native.cpp). Private: use the rlock package.
import asyncio
from typing import Any, Callable, Optional, Tuple

# done(status, value, message) of an asynchronous call: run once on the event loop it was
# started with. value is an int, or the permit ids (list[str]) of an expirable acquire.
_Done = Callable[[int, Any, str], object]

WAIT_FOREVER: int
LEASE_WATCHDOG: int
MAX_DURATION_MS: int
HARD_MAX_NAME_LEN: int
DEFAULT_MAX_NAME_LEN: int
KIND_REENTRANT: int
KIND_FENCED: int
KIND_SPIN: int
KIND_FAIR: int
KIND_READ: int
KIND_WRITE: int
KIND_NON_REENTRANT: int
KIND_NON_REENTRANT_FAIR: int
MODE_NONE: int
MODE_READ: int
MODE_WRITE: int
TLS_VERIFY_FULL: int
TLS_VERIFY_CA: int
TLS_VERIFY_NONE: int
TLS_1_2: int
TLS_1_3: int
SENTINEL_TLS_AUTO: int
SENTINEL_TLS_ON: int
SENTINEL_TLS_OFF: int
SEMAPHORE_PLAIN: int
SEMAPHORE_EXPIRABLE: int
LEASE_NONE: int
MAX_PERMITS_PER_CALL: int
STATS_ON: int
STATS_OFF: int
HISTOGRAM_BOUNDS_US: tuple[int, ...]

# fn(kind, unix_time_us, name, owner, thread_id, duration_us, token, reason, detail) of an event,
# run on the client's event thread.
_EventFn = Callable[[int, int, bytes, bytes, int, int, int, int, str], object]

def version() -> str: ...
def current_thread_id() -> int: ...
def fenced_write(client: Client, key: bytes, value: bytes, token: int) -> bool: ...
def lock_holder(
    client: Client, name: bytes
) -> Optional[
    Tuple[bytes, bool, Optional[str], Optional[int], Optional[str], Optional[int], Optional[int]]
]: ...
def _set_error_classes(classes: dict[int, type], fallback: type) -> None: ...
def _shutdown() -> None: ...
def client_option_defaults() -> dict[str, int]: ...
def lock_option_defaults() -> dict[str, int]: ...

class LockState:
    locked: bool
    held_by_me: bool
    hold_count: int
    ttl_ms: int
    owner_count: int
    owner: Optional[bytes]
    owner_hold_count: int
    mode: int

class _Delivery:
    # What an event loop runs to hand over one completion; made only by the native layer.
    def __call__(self) -> None: ...

class Client:
    def __init__(
        self,
        url: str,
        connect_timeout_ms: int,
        command_timeout_ms: int,
        pool_size: int,
        watchdog_lease_ms: int,
        poll_cap_ms: int,
        max_name_len: int,
        *,
        tls: int = 0,
        tls_ca_file: Optional[bytes] = None,
        tls_ca_dir: Optional[bytes] = None,
        tls_cert_file: Optional[bytes] = None,
        tls_key_file: Optional[bytes] = None,
        tls_server_name: Optional[bytes] = None,
        tls_verify: int = ...,
        tls_min_version: int = ...,
        sentinel_tls: int = ...,
        stats: int = ...,
        key_prefix: Optional[str] = ...,
    ) -> None: ...
    @property
    def id(self) -> str: ...
    # rlock_client_stats' fields by name; histograms as (count, sum_us, buckets) and
    # acquires_failed_by_code as {code: count}.
    def stats(self) -> dict[str, Any]: ...
    def watch_key_events(self, kinds: int) -> None: ...
    def set_event_callback(self, fn: Optional[_EventFn]) -> None: ...
    @property
    def closed(self) -> bool: ...
    def close(self) -> None: ...

class CancelToken:
    def __init__(self) -> None: ...
    def cancel(self) -> None: ...

class Lock:
    def __init__(
        self,
        client: Client,
        name: bytes,
        kind: int,
        lease_ms: int,
        spin_initial_ms: int,
        spin_max_ms: int,
        fair_wait_ms: int,
        owner_id: Optional[bytes] = None,
    ) -> None: ...
    def acquire(
        self,
        wait_ms: int,
        lease_ms: int,
        thread_id: int,
        cancel: Optional[CancelToken],
        want_token: bool,
        interruptible: bool = False,
        receipt: Optional[list[Any]] = None,
    ) -> bool: ...
    def acquire_async(
        self,
        wait_ms: int,
        lease_ms: int,
        thread_id: int,
        cancel: Optional[CancelToken],
        want_token: bool,
        loop: asyncio.AbstractEventLoop,
        done: _Done,
    ) -> None: ...
    def release(self, thread_id: int) -> None: ...
    def release_async(
        self, thread_id: int, loop: asyncio.AbstractEventLoop, done: _Done
    ) -> None: ...
    def extend_by(self, add_ms: int, thread_id: int) -> None: ...
    def extend(self, lease_ms: int, thread_id: int) -> None: ...
    def extend_async(
        self, lease_ms: int, thread_id: int, loop: asyncio.AbstractEventLoop, done: _Done
    ) -> None: ...
    def force_unlock(self) -> bool: ...
    def cancel(self) -> None: ...
    def is_held(self, thread_id: int) -> bool: ...
    def is_lost(self, thread_id: int) -> bool: ...
    def token(self, thread_id: int) -> Optional[int]: ...
    def query(self, thread_id: int) -> LockState: ...
    def set_lost_callback(self, fn: Optional[Callable[[bytes, int, int], object]]) -> None: ...
    def close(self) -> None: ...

class Multi:
    def __init__(self, members: list[Lock], redlock: bool) -> None: ...
    def acquire(
        self,
        wait_ms: int,
        lease_ms: int,
        thread_id: int,
        cancel: Optional[CancelToken],
        interruptible: bool = False,
        receipt: Optional[list[Any]] = None,
    ) -> Optional[int]: ...
    def acquire_async(
        self,
        wait_ms: int,
        lease_ms: int,
        thread_id: int,
        cancel: Optional[CancelToken],
        loop: asyncio.AbstractEventLoop,
        done: _Done,
    ) -> None: ...
    def release(self, thread_id: int) -> None: ...
    def release_async(
        self, thread_id: int, loop: asyncio.AbstractEventLoop, done: _Done
    ) -> None: ...
    def is_held(self, thread_id: int) -> bool: ...
    def cancel(self) -> None: ...
    def close(self) -> None: ...

class Semaphore:
    def __init__(self, client: Client, name: bytes, kind: int, lease_ms: int) -> None: ...
    def try_set_permits(self, permits: int, ttl_ms: int) -> bool: ...
    def add_permits(self, delta: int) -> int: ...
    # None when the wait ran out; else the ids taken (expirable) or [] (plain).
    def acquire(
        self,
        permits: int,
        wait_ms: int,
        lease_ms: int,
        cancel: Optional[CancelToken],
        interruptible: bool = False,
        receipt: Optional[list[Any]] = None,
    ) -> Optional[list[str]]: ...
    # done's value: the number of permits (plain) or the list of ids (expirable).
    def acquire_async(
        self,
        permits: int,
        wait_ms: int,
        lease_ms: int,
        cancel: Optional[CancelToken],
        loop: asyncio.AbstractEventLoop,
        done: _Done,
    ) -> None: ...
    def release(self, permits: int) -> None: ...
    def release_ids(self, ids: list[str]) -> None: ...
    def update_lease(self, id: str, lease_ms: int) -> bool: ...
    def release_if_exists(self, permits: int) -> bool: ...
    def set_permits(self, permits: int) -> int: ...
    # ms left; LEASE_NONE for a permit without lease; None when not held.
    def lease_time(self, id: str) -> Optional[int]: ...
    # (available, held by anyone (expirable), exists)
    def available(self) -> tuple[int, int, bool]: ...
    def drain(self) -> int: ...
    def delete(self) -> bool: ...
    def held(self) -> int: ...
    def cancel(self) -> None: ...
    def close(self) -> None: ...

class Election:
    def __init__(self, client: Client, name: bytes, requeue: bool) -> None: ...
    def campaign(self, fn: Callable[[bool, int, int, int, str], object]) -> None: ...
    def resign(self) -> None: ...
    def is_leader(self) -> bool: ...
    def term(self) -> Optional[int]: ...
    def close(self) -> None: ...

class Latch:
    def __init__(self, client: Client, name: bytes) -> None: ...
    def try_set_count(self, count: int) -> bool: ...
    def count_down(self) -> int: ...
    def count(self) -> int: ...
    def wait(
        self, wait_ms: int, cancel: Optional[CancelToken], interruptible: bool = False
    ) -> bool: ...
    def wait_async(
        self,
        wait_ms: int,
        cancel: Optional[CancelToken],
        loop: asyncio.AbstractEventLoop,
        done: _Done,
    ) -> None: ...
    def delete(self) -> bool: ...
    def cancel(self) -> None: ...
    def close(self) -> None: ...
