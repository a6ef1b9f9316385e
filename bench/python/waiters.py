"""The many-waiters scenario for the Python contenders (see bench/README.md): --waiters asyncio
tasks wait on --locks locks that the main task holds; rlock-py through rlock.asyncio, redis-py
through redis.asyncio's Lock."""

import asyncio
import time

import redis.asyncio

# Owner ids of the tasks are the rlock.asyncio binding's; redis-py's Lock keeps its token per
# Lock object, so every task gets its own.
REDIS_PY_POOL = 20  # connections of redis-py's pool, about go-redis's default on two cores
SCRIPTS = {"eval", "evalsha", "eval_ro", "evalsha_ro", "fcall", "fcall_ro"}
CLIENT_LEVEL = {
    "subscribe", "unsubscribe", "psubscribe", "punsubscribe", "ssubscribe", "sunsubscribe",
    "ping", "hello", "auth", "select", "echo", "multi", "exec", "discard", "quit", "readonly",
    "reset", "script", "client", "command",
}  # fmt: skip


def proc_status(field):
    """A numeric field of /proc/self/status (Threads, VmRSS in KiB)."""
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"no {field} in /proc/self/status")


async def command_calls(admin):
    info = await admin.info("commandstats")
    return {k.removeprefix("cmdstat_"): int(v["calls"]) for k, v in info.items()}


def traffic(before, after):
    """(requests, scripts, by command) clients sent between two commandstats, without the
    harness's INFO; data commands count only when no script ran (a lock that waits with SET NX
    sends them itself, a script's run inside it)."""
    requests, scripts, by_command, data = 0, 0, {}, {}
    for name, calls in after.items():
        delta = calls - before.get(name, 0)
        base = name.split("|")[0]
        if delta == 0 or base in ("info", "config"):
            continue
        if base in SCRIPTS or base in CLIENT_LEVEL:
            scripts += delta if base in SCRIPTS else 0
            requests += delta
            by_command[name] = by_command.get(name, 0) + delta
        else:
            data[name] = data.get(name, 0) + delta
    if scripts == 0:
        for name, delta in data.items():
            requests += delta
            by_command[name] = by_command.get(name, 0) + delta
    return requests, scripts, by_command


def attempts(before, after):
    requests, _, by_command = traffic(before, after)
    return requests - sum(n for k, n in by_command.items() if "subscribe" in k or k == "ping")


async def settle(admin, before, waiters, locks):
    """Until Redis has seen an attempt per waiter, or the attempts stay at an idle rate for two
    seconds in a row (fewer than 2 per lock plus 1% of the waiters each second), at most a
    minute; then 200 ms."""
    idle = 2 * locks + waiters // 100
    give_up = time.monotonic() + 60
    seen = second_ago = quiet_seconds = 0
    mark = time.monotonic()
    while time.monotonic() < give_up:
        seen = attempts(before, await command_calls(admin))
        if seen >= waiters:
            break
        if time.monotonic() - mark >= 1:
            quiet_seconds = quiet_seconds + 1 if seen - second_ago < idle else 0
            if quiet_seconds == 2:
                break
            second_ago, mark = seen, time.monotonic()
        await asyncio.sleep(0.02)
    await asyncio.sleep(0.2)
    return seen


class RlockAsync:
    """rlock.asyncio: one client; a Lock per name, each task its own owner."""

    def __init__(self, url):
        import rlock.asyncio

        self.client = rlock.asyncio.Client(url)
        self.locks = {}

    def lock(self, name, holder):
        if name not in self.locks:
            self.locks[name] = self.client.lock(name)
        return self.locks[name]

    async def close(self):
        await self.client.close()


class RedisPyAsync:
    """redis.asyncio's Lock over one pool; blocking acquire with its default polling (0.1 s)."""

    def __init__(self, url):
        pool = redis.asyncio.BlockingConnectionPool.from_url(url, max_connections=REDIS_PY_POOL)
        self.conn = redis.asyncio.Redis(connection_pool=pool)

    def lock(self, name, holder):
        # The holder's lock outlasts the run; a waiter's is released at once.
        return self.conn.lock(name, timeout=600 if holder else 30)

    async def close(self):
        await self.conn.aclose()


async def measure_held(admin, seconds):
    """Threads, RSS and requests over a window while the locks stay held."""
    before = await command_calls(admin)
    t0 = time.monotonic()
    threads = proc_status("Threads")
    await asyncio.sleep(seconds)
    threads = max(threads, proc_status("Threads"))
    rss = proc_status("VmRSS")
    after = await command_calls(admin)
    window = time.monotonic() - t0
    return threads, rss, window, traffic(before, after)


async def wait_on_held(args, impl, admin, names):
    holders = [impl.lock(name, True) for name in names]
    for h in holders:
        if not await h.acquire():
            raise RuntimeError("the holder did not get its lock")
    acquired = 0

    async def waiter(lock):
        nonlocal acquired
        async with lock:
            acquired += 1

    f = {"threads_before": proc_status("Threads"), "rss_before_kib": proc_status("VmRSS")}
    start = await command_calls(admin)
    t0 = time.monotonic()
    tasks = [
        asyncio.create_task(waiter(impl.lock(names[i % len(names)], False)))
        for i in range(args.waiters)
    ]
    f["first_attempts"] = await settle(admin, start, args.waiters, len(names))
    f["settle_s"] = time.monotonic() - t0
    threads, rss, window, held = await measure_held(admin, args.seconds)
    if acquired or any(t.done() for t in tasks):
        raise RuntimeError("a waiter ended while the locks were held")
    released = time.monotonic()
    for h in holders:
        await h.release()
    await asyncio.wait_for(asyncio.gather(*tasks), 120)
    drain = time.monotonic() - released
    if acquired != args.waiters:
        raise RuntimeError(f"{acquired} of {args.waiters} waiters acquired")
    f.update(threads_waiting=threads, rss_waiting_kib=rss, window_s=window, drain_s=drain)
    return f, held


async def run(args):
    """The scenario's result lines (dicts)."""
    names = [f"bench:mw:{args.contender}:{i}" for i in range(args.locks)]
    admin = redis.asyncio.Redis.from_url(args.url, decode_responses=True)
    impl = RlockAsync(args.url) if args.contender == "rlock-py" else RedisPyAsync(args.url)
    try:
        f, (requests, scripts, by_command) = await wait_on_held(args, impl, admin, names)
        left = await admin.exists(*names)  # before close, which would release rlock's holds
    finally:
        await impl.close()
    await admin.aclose()
    if left:
        raise RuntimeError(f"{left} lock(s) still locked after the run")
    window = f["window_s"]
    extra = dict(f, waiters=args.waiters, locks=args.locks, tasks=True, requests=requests)
    extra["scripts_per_s"] = scripts / window
    extra["requests_per_s_by_command"] = {k: n / window for k, n in by_command.items()}

    def line(metric, value, unit):
        return {
            "scenario": "many-waiters",
            "contender": args.contender,
            "metric": metric,
            "value": value,
            "unit": unit,
            "extra": extra,
        }

    return [
        line("threads_added", f["threads_waiting"] - f["threads_before"], "threads"),
        line("kib_per_waiter", (f["rss_waiting_kib"] - f["rss_before_kib"]) / args.waiters, "KiB"),
        line("requests_per_s", requests / window, "requests/s"),
        line("drain_ms", f["drain_s"] * 1e3, "ms"),
    ]
