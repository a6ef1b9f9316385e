"""An rlock process driven line by line from the Redisson interop tests (tests/redisson).

    rlock_peer.py URL [WATCHDOG_LEASE_S [POLL_CAP_S]]

Reads commands on stdin and answers each with one line on stdout (times are epoch ms):
    lock KIND NAME [WAIT_S]  -> "locked TIME [TOKEN]" or "timeout"
    try KIND NAME            -> "true" / "false" (tries once; releases at once if it got it)
    unlock KIND NAME         -> "unlocked TIME"
    state KIND NAME          -> "LOCKED HOLD_COUNT TTL_MS" (server view, this owner's count)
    force KIND NAME          -> "true" / "false" (deleted a lock)
    sem_set NAME N           -> "true" / "false" (set the permits of a new semaphore)
    sem_add NAME DELTA       -> "NEW_COUNT"
    sem_acquire NAME PERMITS WAIT_MS -> "ok WAITED_MS TIME" or "timeout WAITED_MS"
    sem_release NAME PERMITS -> "released TIME"
    sem_available NAME       -> "COUNT" (available permits; expired expirable ones given back)
    sem_release_if_exists NAME PERMITS -> "true" / "false" (given back / no semaphore)
    psem_set_permits NAME N  -> "AVAILABLE" (sets the total, held permits included)
    psem_lease_time NAME ID  -> "MS" left, "none" (no lease) or "not-held"
    psem_acquire NAME WAIT_MS LEASE_MS -> "ID WAITED_MS TIME" or "timeout WAITED_MS"
    psem_release NAME ID     -> "released TIME"
    latch_set NAME N         -> "true" / "false" (set the count of a new latch)
    latch_count_down NAME    -> "counted LEFT TIME"
    latch_await NAME WAIT_MS -> "ok WAITED_MS TIME" or "timeout WAITED_MS"
    latch_count NAME         -> "COUNT" (0: open)
    latch_delete NAME        -> "true" / "false" (deleted a latch)
    quit
A failure answers "error ExceptionClass: message". KIND: reentrant, fenced, fair, read, write,
non-reentrant, non-reentrant-fair.
WAIT_MS: -1 waits for ever, 0 tries once. LEASE_MS: > 0, -1 no lease (never expires, as
Redisson's -1), 0 the watchdog (renewed while the peer lives). WAITED_MS is the time the call
took; ID is the permit id (32 hex digits). Every command runs on the main thread, so the peer
is one owner (and one client: a semaphore's permits are the client's)."""

import sys
import time
from typing import Dict, Optional, Tuple

import rlock


def now_ms() -> int:
    return int(time.time() * 1000)


def wait_of(ms: str) -> Optional[float]:
    """WAIT_MS in seconds: -1 waits for ever (None), 0 tries once."""
    value = int(ms)
    return None if value < 0 else value / 1000.0


def lease_of(ms: str) -> "rlock.PermitLease | float":
    """LEASE_MS: 0 the watchdog, -1 no lease (Redisson's -1), else milliseconds."""
    value = int(ms)
    if value == 0:
        return rlock.WATCHDOG
    return rlock.NO_LEASE if value < 0 else value / 1000.0


def timed(outcome: object, started: float) -> str:
    """ok/ID WAITED_MS TIME, or timeout WAITED_MS."""
    waited = int((time.monotonic() - started) * 1000)
    if outcome is None or outcome is False:
        return f"timeout {waited}"
    word = outcome.id if isinstance(outcome, rlock.Permit) else "ok"
    return f"{word} {waited} {now_ms()}"


class Primitives:
    """The semaphore and latch commands, with one object per name and kind."""

    def __init__(self, client: rlock.Client) -> None:
        self.client = client
        self.semaphores: Dict[str, rlock.Semaphore] = {}
        self.expirables: Dict[str, rlock.ExpirableSemaphore] = {}
        self.latches: Dict[str, rlock.CountDownLatch] = {}

    def semaphore(self, name: str) -> rlock.Semaphore:
        if name not in self.semaphores:
            self.semaphores[name] = self.client.semaphore(name)
        return self.semaphores[name]

    def expirable(self, name: str) -> rlock.ExpirableSemaphore:
        if name not in self.expirables:
            self.expirables[name] = self.client.expirable_semaphore(name)
        return self.expirables[name]

    def latch(self, name: str) -> rlock.CountDownLatch:
        if name not in self.latches:
            self.latches[name] = self.client.count_down_latch(name)
        return self.latches[name]

    def run(self, words: list) -> Optional[str]:
        """The answer to a semaphore or latch command; None for another command."""
        command, name = words[0], words[1]
        started = time.monotonic()
        if command == "sem_set":
            return str(self.semaphore(name).try_set_permits(int(words[2]))).lower()
        if command == "sem_add":
            return str(self.semaphore(name).add_permits(int(words[2])))
        if command == "sem_acquire":
            got = self.semaphore(name).acquire(int(words[2]), timeout=wait_of(words[3]))
            return timed(got, started)
        if command == "sem_release":
            self.semaphore(name).release(int(words[2]))
            return f"released {now_ms()}"
        if command == "sem_available":
            return str(self.expirable(name).available_permits())
        if command == "sem_release_if_exists":
            return str(self.semaphore(name).release_if_exists(int(words[2]))).lower()
        if command == "psem_set_permits":
            return str(self.expirable(name).set_permits(int(words[2])))
        if command == "psem_lease_time":
            left = self.expirable(name).lease_time(words[2])
            if left is None:
                return "not-held"
            return "none" if left == float("inf") else str(round(left * 1000))
        if command == "psem_acquire":
            lease = lease_of(words[3])
            return timed(self.expirable(name).acquire(wait_of(words[2]), lease), started)
        if command == "psem_release":
            self.expirable(name).release(words[2])
            return f"released {now_ms()}"
        if command == "latch_set":
            return str(self.latch(name).try_set_count(int(words[2]))).lower()
        if command == "latch_count_down":
            return f"counted {self.latch(name).count_down()} {now_ms()}"
        if command == "latch_await":
            return timed(self.latch(name).wait(timeout=wait_of(words[2])), started)
        if command == "latch_count":
            return str(self.latch(name).count())
        if command == "latch_delete":
            return str(self.latch(name).delete()).lower()
        return None


def main(argv: list) -> int:
    options = {}
    if len(argv) > 2:
        options["watchdog_lease"] = float(argv[2])
    if len(argv) > 3:
        options["poll_cap"] = float(argv[3])
    client = rlock.Client(argv[1], **options)
    locks: Dict[Tuple[str, str], rlock.Lock] = {}
    primitives = Primitives(client)

    def lock_of(kind: str, name: str) -> "rlock.Lock":
        if (kind, name) not in locks:
            if kind in ("read", "write"):
                rw = client.read_write_lock(name)
                made = rw.read_lock() if kind == "read" else rw.write_lock()
            else:
                made = {
                    "reentrant": client.lock,
                    "fenced": client.fenced_lock,
                    "fair": client.fair_lock,
                    "non-reentrant": client.non_reentrant_lock,
                    "non-reentrant-fair": client.non_reentrant_fair_lock,
                }[kind](name)
            locks[kind, name] = made
        return locks[kind, name]

    def run(words: list) -> str:
        answer = primitives.run(words)
        if answer is not None:
            return answer
        command, kind, name = words[0], words[1], words[2]
        lock = lock_of(kind, name)
        if command == "lock":
            timeout = float(words[3]) if len(words) > 3 else -1
            if not lock.acquire(timeout=timeout):
                return "timeout"
            token = lock.token if kind == "fenced" else None
            return f"locked {now_ms()}" + (f" {token}" if token is not None else "")
        if command == "try":
            got = lock.acquire(blocking=False)
            if got:
                lock.release()
            return str(got).lower()
        if command == "unlock":
            lock.release()
            return f"unlocked {now_ms()}"
        if command == "state":
            ttl = lock.remaining_ttl()
            ttl_ms = -2 if ttl is None else -1 if ttl == float("inf") else int(ttl * 1000)
            return f"{str(lock.locked()).lower()} {lock.hold_count()} {ttl_ms}"
        if command == "force":
            return str(lock.force_unlock()).lower()
        raise ValueError(f"unknown command {command!r}")

    for line in sys.stdin:
        words = line.split()
        if not words:
            continue
        if words[0] == "quit":
            break
        try:
            answer = run(words)
        except Exception as exc:  # answered, so the test sees what failed
            answer = f"error {type(exc).__name__}: {exc}"
        print(answer, flush=True)
    client.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
