"""An rlock process driven line by line from the Redisson interop tests (tests/redisson).

    rlock_peer.py URL [WATCHDOG_LEASE_S [POLL_CAP_S]]

Reads commands on stdin and answers each with one line on stdout (times are epoch ms):
    lock KIND NAME [WAIT_S]  -> "locked TIME [TOKEN]" or "timeout"
    try KIND NAME            -> "true" / "false" (tries once; releases at once if it got it)
    unlock KIND NAME         -> "unlocked TIME"
    state KIND NAME          -> "LOCKED HOLD_COUNT TTL_MS" (server view, this owner's count)
    force KIND NAME          -> "true" / "false" (deleted a lock)
    quit
A failure answers "error ExceptionClass: message". KIND: reentrant, fenced, fair, read, write.
Every command runs on the main thread, so the peer is one owner."""

import sys
import time
from typing import Dict, Tuple

import rlock


def now_ms() -> int:
    return int(time.time() * 1000)


def main(argv: list) -> int:
    options = {}
    if len(argv) > 2:
        options["watchdog_lease"] = float(argv[2])
    if len(argv) > 3:
        options["poll_cap"] = float(argv[3])
    client = rlock.Client(argv[1], **options)
    locks: Dict[Tuple[str, str], rlock.Lock] = {}

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
                }[kind](name)
            locks[kind, name] = made
        return locks[kind, name]

    def run(words: list) -> str:
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
