"""The Python contenders of the rlock benchmark (run through bench/peers.sh run).

rlock-py (the rlock wheel), redis-py (redis.lock.Lock) and python-redis-lock. Prints one JSON
line per run on stdout, as every contender program does; errors go to stderr with exit 1.
The many-waiters scenario (rlock-py and redis-py, on asyncio) is in waiters.py.
"""

import argparse
import asyncio
import json
import random
import sys
import threading
import time

import redis

CONTENDERS = ("rlock-py", "redis-py", "python-redis-lock")
UNCONTENDED_NAMES = 1024


class RlockPy:
    """One rlock.Client shared by all threads; a Lock object is made once per name."""

    def __init__(self, url):
        import rlock

        self.client = rlock.Client(url)

    def make(self, name):
        lock = self.client.lock(name)
        return lock.acquire, lock.release

    @staticmethod
    def key(name):
        return name

    def close(self):
        self.client.close()


class RedisPy:
    """redis-py's Lock over one shared connection pool, 30 s timeout, blocking acquire with
    its default polling."""

    def __init__(self, url):
        self.conn = redis.Redis.from_url(url)

    def make(self, name):
        lock = self.conn.lock(name, timeout=30)
        return lock.acquire, lock.release

    @staticmethod
    def key(name):
        return name

    def close(self):
        self.conn.close()


class PythonRedisLock:
    """python-redis-lock: a Lock keeps its own id, so each thread gets its own per name."""

    def __init__(self, url):
        import redis_lock

        self.lock_class = redis_lock.Lock
        self.conn = redis.Redis.from_url(url)

    def make(self, name):
        lock = self.lock_class(self.conn, name, expire=30)
        return lock.acquire, lock.release

    @staticmethod
    def key(name):
        return "lock:" + name  # the library's key prefix

    def close(self):
        self.conn.close()


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--contender", required=True, choices=CONTENDERS)
    p.add_argument("--url", required=True, help="redis://127.0.0.1:PORT")
    p.add_argument(
        "--scenario", required=True, choices=("uncontended", "throughput", "many-waiters")
    )
    p.add_argument("--seconds", type=float, default=10.0)
    p.add_argument("--threads", type=int, default=16)
    p.add_argument("--names", type=int, default=256)
    p.add_argument("--waiters", type=int, default=1000, help="many-waiters: waiting tasks")
    p.add_argument("--locks", type=int, default=1, help="many-waiters: held locks")
    args = p.parse_args(argv)
    if args.scenario == "many-waiters" and args.contender == "python-redis-lock":
        p.error("python-redis-lock has no asyncio lock: no many-waiters")
    if not 1 <= args.locks <= args.waiters:
        p.error(f"--locks must be 1 to --waiters ({args.waiters}), got {args.locks}")
    if not args.seconds > 0:
        p.error(f"--seconds must be positive, got {args.seconds}")
    if args.threads < 1:
        p.error(f"--threads must be at least 1, got {args.threads}")
    if args.names < 1:
        p.error(f"--names must be at least 1, got {args.names}")
    return args


def lock_names(scenario, contender, n):
    return [f"bench:{scenario}:{contender}:{i}" for i in range(n)]


def delete_keys(admin, pattern):
    for key in admin.scan_iter(match=pattern, count=1000):
        admin.delete(key)


def uncontended(impl, names, seconds):
    pairs = [impl.make(name) for name in names]
    count = len(pairs)
    i = 0

    def loop(duration):
        nonlocal i
        clock = time.perf_counter
        start = clock()
        deadline = start + duration
        n = 0
        while clock() < deadline:
            acquire, release = pairs[i % count]
            if not acquire():
                raise RuntimeError(f"{names[i % count]}: acquire gave up")
            release()
            i += 1
            n += 1
        return n, clock() - start

    loop(max(seconds / 10, 0.2))
    n, elapsed = loop(seconds)
    return n / elapsed, {"pairs": n, "seconds": elapsed}


def throughput(impl, names, threads, seconds):
    per_thread = [[impl.make(name) for name in names] for _ in range(threads)]
    stop = threading.Event()
    ready = threading.Barrier(threads + 1)
    done = [0] * threads
    failed = [0] * threads
    errors = []

    def work(w):
        pairs = per_thread[w]
        choose = random.Random().choice
        n = f = 0
        ready.wait()
        try:
            while not stop.is_set():
                acquire, release = choose(pairs)
                if acquire():
                    release()
                    n += 1
                else:
                    f += 1
        except Exception as e:  # reported by the main thread
            errors.append(e)
            stop.set()
        done[w], failed[w] = n, f

    workers = [threading.Thread(target=work, args=(w,)) for w in range(threads)]
    for t in workers:
        t.start()
    ready.wait()
    start = time.perf_counter()
    stop.wait(seconds)
    stop.set()
    for t in workers:
        t.join()
    elapsed = time.perf_counter() - start
    if errors:
        raise errors[0]
    total = sum(done)
    return total / elapsed, {
        "threads": threads,
        "names": len(names),
        "pairs": total,
        "seconds": elapsed,
        "failed_acquires": sum(failed),
    }


def main(argv):
    args = parse_args(argv)
    make = {"rlock-py": RlockPy, "redis-py": RedisPy, "python-redis-lock": PythonRedisLock}
    admin = redis.Redis.from_url(args.url)
    pattern = f"*bench:*:{args.contender}:*"
    delete_keys(admin, pattern)  # holds left by a run that died would stall this one
    if args.scenario == "many-waiters":
        import waiters

        try:
            lines = asyncio.run(waiters.run(args))
        finally:
            delete_keys(admin, pattern)
        for line in lines:
            print(json.dumps(line))
        return
    impl = make[args.contender](args.url)
    if args.scenario == "uncontended":
        names = lock_names("u", args.contender, UNCONTENDED_NAMES)
        value, extra = uncontended(impl, names, args.seconds)
    else:
        names = lock_names("t", args.contender, args.names)
        value, extra = throughput(impl, names, args.threads, args.seconds)
    # Before close(), which would release what rlock still holds and hide a leak.
    left = admin.exists(*(impl.key(name) for name in names))
    impl.close()
    delete_keys(admin, pattern)
    if left:
        raise RuntimeError(f"{left} lock(s) still locked after the run")
    print(
        json.dumps(
            {
                "scenario": args.scenario,
                "contender": args.contender,
                "metric": "pairs_per_s",
                "value": value,
                "unit": "pairs/s",
                "extra": extra,
            }
        )
    )


if __name__ == "__main__":
    try:
        main(sys.argv[1:])
    except Exception as e:
        print(f"bench.py: {type(e).__name__}: {e}", file=sys.stderr)
        sys.exit(1)
