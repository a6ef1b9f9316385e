"""Every key and pub/sub channel a library script touches is one of the KEYS it was called
with (issue 36), checked at run time: servers that route or authorize by declared keys (Redis
Cluster slots, ACL key patterns, proxies) see only those.

scripts/check_script_keys.py checks the script texts; this checks what the server ran. A
private redis-server's MONITOR stream is read while the Python binding runs every script of
core/scripts (each lock kind's acquire, release, extend, renewal, undo of an acquire whose reply
was lost, force unlock, the fair queue's leave and wake-up, semaphores, the permit-expirable
semaphore, the latch, fenced writes, status). A script runs atomically, so the commands it
calls (MONITOR's "[0 lua]" lines) come as one run next to its EVAL/EVALSHA line: after it on
Redis 6.0, 7.0, 8.0 and Valkey 8.1, 9.1 (each shows a command before running it); the order is
found at run time from a script of ours, in case a server shows it after. Each command's
keys come from the server (COMMAND GETKEYS), PUBLISH/SPUBLISH's from its channel argument. A key
passes when it is a declared KEYS entry, or (the exception scripts/check_script_keys.py's
ALLOWED table lists) when it starts with a declared entry and is in the same cluster slot.

Scripts are known by the SHA1 of their text as the build embeds it (includes expanded, as
cmake/EmbedScripts.cmake does); every script must run at least once. The "_sharded" twins (PUBLISH
changed to SPUBLISH) run only on a cluster with sharded pub/sub, not on this standalone server,
so they are not covered here. Scripts the library writes inline (the client's warm-up probe,
core/src/transport.cpp) are checked too; the probe's PUBLISH on Redis 6 is the one exception
(INLINE below). A self-test sends scripts that touch undeclared keys on the same stream and
requires the checker to report exactly those.
"""

from __future__ import annotations

import hashlib
import importlib.util
import re
import threading
import time
import uuid
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import pytest
import redis
import rlock

ROOT = Path(__file__).resolve().parents[2]


def load_expand() -> Callable[[Path], str]:
    """scripts/check_script_keys.py's expand: a script as the build embeds it (includes
    pasted in, as cmake/EmbedScripts.cmake does)."""
    spec = importlib.util.spec_from_file_location(
        "check_script_keys", ROOT / "scripts" / "check_script_keys.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    expand: Callable[[Path], str] = module.expand
    return expand


expand = load_expand()

Args = Tuple[bytes, ...]


def crc16(data: bytes) -> int:
    """CRC16-CCITT (XMODEM), what Redis Cluster hashes keys with."""
    crc = 0
    for byte in data:
        crc ^= byte << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) if crc & 0x8000 else crc << 1
            crc &= 0xFFFF
    return crc


def key_slot(key: bytes) -> int:
    start = key.find(b"{")
    if start >= 0:
        end = key.find(b"}", start + 1)
        if end > start + 1:
            key = key[start + 1 : end]
    return crc16(key) % 16384


def repr_arg(data: bytes, escape_quotes: bool) -> bytes:
    """An argument as MONITOR prints it (sdscatrepr, without the quotes). Valkey 8.1 leaves
    '\\' and '"' unescaped, so both forms are tried."""
    out = bytearray()
    for byte in data:
        c = bytes([byte])
        if c in b'\\"':
            out += b"\\" + c if escape_quotes else c
        elif c in b"\n\r\t\a\b":
            out += {b"\n": b"\\n", b"\r": b"\\r", b"\t": b"\\t", b"\a": b"\\a", b"\b": b"\\b"}[c]
        elif 32 <= byte < 127:
            out += c
        else:
            out += b"\\x%02x" % byte
    return bytes(out)


UNESCAPE = {b"n": b"\n", b"r": b"\r", b"t": b"\t", b"a": b"\a", b"b": b"\b"}


def parse_args(text: bytes) -> List[bytes]:
    """The quoted arguments of a MONITOR line after its "[db client]" part. An argument ends at
    a quote followed by a space or the end (Valkey 8.1 does not escape quotes inside)."""
    args, i = [], 0
    while i < len(text):
        assert text[i : i + 1] == b'"', text
        i += 1
        arg = bytearray()
        while True:
            c = text[i : i + 1]
            if c == b"\\" and i + 1 < len(text):
                nxt = text[i + 1 : i + 2]
                if nxt == b"x":
                    arg.append(int(text[i + 2 : i + 4], 16))
                    i += 4
                else:
                    arg += UNESCAPE.get(nxt, nxt)
                    i += 2
                continue
            if c == b'"' and text[i + 1 : i + 2] in (b" ", b""):
                i += 2
                break
            arg += c
            i += 1
        args.append(bytes(arg))
    return args


class Line:
    def __init__(self, raw: bytes) -> None:
        head, _, rest = raw.partition(b"] ")
        self.raw = raw
        self.lua = head.endswith(b" lua")
        self.rest = rest


class Call:
    """One EVAL or EVALSHA and the commands its script ran."""

    def __init__(self, script: str, keys: Sequence[bytes], line: bytes) -> None:
        self.script = script
        self.keys = list(keys)
        self.line = line
        self.commands: List[Args] = []


class Scripts:
    """The library's scripts by SHA1 and by the text MONITOR shows of their source."""

    def __init__(self, extra: Dict[str, bytes]) -> None:
        self.sources: Dict[str, bytes] = {
            path.stem: expand(path).encode()
            for path in sorted((ROOT / "core/scripts").glob("*.lua"))
        }
        self.sources.update(extra)
        self.by_sha = {hashlib.sha1(s).hexdigest(): name for name, s in self.sources.items()}
        self.by_text = {
            repr_arg(s, quotes): name
            for name, s in self.sources.items()
            for quotes in (True, False)
        }

    def call(self, line: Line) -> Optional[Call]:
        """The call a client's EVAL/EVALSHA line makes, or None for another command."""
        if line.rest.startswith(b'"EVALSHA" "') or line.rest.startswith(b'"evalsha" "'):
            args = parse_args(line.rest)
            # An unknown SHA1 (the warm-up's all-zero probe) answers NOSCRIPT: checked below
            # to have run nothing.
            name = self.by_sha.get(args[1].decode(), "unknown: " + args[1].decode())
            return Call(name, args[3 : 3 + int(args[2])], line.raw)
        if line.rest.startswith(b'"EVAL" "') or line.rest.startswith(b'"eval" "'):
            body = line.rest[len(b'"EVAL" "') :]
            for text, name in self.by_text.items():
                if body.startswith(text + b'" "'):
                    args = parse_args(body[len(text) + 2 :])
                    return Call(name, args[1 : 1 + int(args[0])], line.raw)
            # A script the library writes inline (core/src), checked alike. Its text must
            # parse: ours hold no '"' to trip Valkey 8.1's unescaped output.
            args = parse_args(line.rest)
            name = "inline: " + args[1][:60].decode(errors="replace")
            return Call(name, args[3 : 3 + int(args[2])], line.raw)
        return None


def group(lines: List[Line], scripts: Scripts, lua_first: bool) -> List[Call]:
    """The calls of a MONITOR stream, each with the run of lua lines next to it: after the
    EVAL line when the server shows a command before running it, else before. A lua line with
    no call next to it fails."""
    calls: List[Call] = []
    pending: List[Args] = []
    current: Optional[Call] = None  # the call whose lua lines follow
    for line in lines:
        if line.lua:
            command = tuple(parse_args(line.rest))
            if lua_first:
                pending.append(command)
            else:
                assert current is not None, f"a lua line with no script: {line.raw!r}"
                current.commands.append(command)
            continue
        current = scripts.call(line)
        if lua_first:
            assert current is not None or not pending, f"lua lines with no script: {pending}"
            if current is not None:
                current.commands, pending = pending, []
        if current is not None:
            calls.append(current)
    assert not pending, f"lua lines with no script after them: {pending}"
    ran_unknown = [c.line for c in calls if c.script.startswith("unknown: ") and c.commands]
    assert ran_unknown == [], f"EVALSHA of scripts not in core/scripts ran: {ran_unknown}"
    return calls


class Checker:
    """Tells which keys a command touches, asking the server (raw replies, no redis-py
    parsing)."""

    def __init__(self, port: int) -> None:
        self.conn = redis.Connection(host="127.0.0.1", port=port)
        self.keys_of: Dict[Args, List[bytes]] = {}

    def ask(self, *args: bytes) -> Any:
        self.conn.send_command(*args)
        return self.conn.read_response()

    def touched(self, command: Args) -> List[bytes]:
        if command[0].lower() in (b"publish", b"spublish"):
            return [command[1]]
        if command not in self.keys_of:
            try:
                self.keys_of[command] = list(self.ask(b"COMMAND", b"GETKEYS", *command))
            except redis.ResponseError as e:
                # Refused for a command without keys (TIME): make sure it has none.
                (info,) = self.ask(b"COMMAND", b"INFO", command[0])
                first_key, flags = info[3], info[2]
                assert first_key == 0 and b"movablekeys" not in flags, (command, e)
                self.keys_of[command] = []
        return self.keys_of[command]

    def violations(self, call: Call) -> List[str]:
        out = []
        for command in call.commands:
            for key in self.touched(command):
                if key in call.keys:
                    continue
                if any(key.startswith(k) and key_slot(key) == key_slot(k) for k in call.keys):
                    continue
                if call.script.startswith("inline: ") and (command[0].lower(), key) in INLINE:
                    continue
                out.append(f"{call.script}: {command!r} touches {key!r}, KEYS are {call.keys!r}")
        return out


class Monitor:
    """A MONITOR connection read until a marker command of ours shows up."""

    def __init__(self, conn: redis.Redis, port: int) -> None:
        self.conn = conn
        self.raw = redis.Connection(host="127.0.0.1", port=port)
        self.raw.send_command("MONITOR")
        assert self.raw.read_response() in (b"OK", "OK")

    def read_until_marker(self) -> List[Line]:
        marker = f"rlock-monitor-end-{uuid.uuid4().hex}"
        self.conn.get(marker)
        lines: List[Line] = []
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            raw = self.raw.read_response(timeout=max(0.0, deadline - time.monotonic()))
            if marker.encode() in raw:
                return lines
            lines.append(Line(raw))
        raise AssertionError("MONITOR never showed the end marker")

    def close(self) -> None:
        self.raw.disconnect()


# The inline scripts a standalone client sends, by how their text starts: the start-up probe
# whether the user may publish wake-ups (kPublishProbe in core/src/transport.cpp). Any other
# EVAL fails the test, so a script of core/scripts whose MONITOR text was not matched cannot
# pass unchecked as "inline".
INLINE_SCRIPTS = ("inline: if type(redis.acl_check_cmd) ~= 'function' then",)

# Accesses of inline scripts (not in core/scripts) outside their KEYS -> why they stay.
INLINE = {
    (b"publish", b"redisson_lock__channel:{rlock-probe}"): (
        "the client's warm-up asks whether it may publish wake-ups (kPublishProbe in "
        "core/src/transport.cpp) with no KEYS; on servers without redis.acl_check_cmd "
        "(Redis 6) it publishes '0' on this sample channel. No key is touched, and Redis 6 has "
        "no ACL channel rules."
    ),
}

# Scripts of the self-test: each touches one key or channel its KEYS do not cover.
PROBES = {
    "probe_undeclared": b"redis.call('set', 'undeclared', 1)",
    "probe_prefix_other_slot": b"redis.call('set', KEYS[1] .. ':x', 1)",
    "probe_channel": b"redis.call('publish', 'undeclared-channel', 1)",
    "probe_allowed": b"redis.call('set', KEYS[1] .. ':x', 1) redis.call('publish', KEYS[1], 1)",
}
PROBE_CALLS = [
    ("probe_undeclared", ["declared"]),
    ("probe_prefix_other_slot", ["plain"]),  # plain:x is in another slot than plain
    ("probe_channel", ["declared"]),
    ("probe_allowed", ["{tag}declared"]),
]
PROBE_FINDINGS = [
    ("probe_undeclared", b"undeclared"),
    ("probe_prefix_other_slot", b"plain:x"),
    ("probe_channel", b"undeclared-channel"),
]


def wait_for(check: Callable[[], bool], seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.01)
    return check()


def in_thread(run: Callable[[], object]) -> threading.Thread:
    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t


def drive_locks(url: str, conn: redis.Redis, make_client: Callable[..., rlock.Client]) -> None:
    """Every lock script, through the binding."""
    c = make_client(url, watchdog_lease=0.3)
    other = make_client(url)

    kinds = (
        c.lock("k:plain", lease=5),
        c.fenced_lock("k:fenced", lease=5),
        c.fair_lock("k:fair", lease=5),
    )
    for lock in kinds:
        assert lock.acquire(blocking=False)  # acquire / fair_acquire
        assert lock.acquire(blocking=False)  # re-entry
        lock.extend(5, replace_ttl=True)  # extend
        lock.extend(1)  # extend_by
        assert lock.locked() and lock.hold_count() == 2  # status
        lock.release()
        lock.release()  # release / fair_release
        assert lock.acquire(blocking=False)
        assert lock.force_unlock()  # force_unlock / fair_force_unlock

    # The watchdog renews (renew, rw_read_renew): a lease of 0.3 s renewed every 0.1 s.
    watched, reading = c.lock("k:watched"), c.read_write_lock("k:rw-watched").read_lock()
    assert watched.acquire(blocking=False) and reading.acquire(blocking=False)
    time.sleep(0.5)
    assert watched.held() and reading.held()
    watched.release()
    reading.release()

    # The fair queue: a waiter queues, one leaves when its wait runs out (fair_leave), the
    # release wakes the head (fair_release), force unlock (fair_force_unlock).
    fair = c.fair_lock("k:fair-queue")
    assert fair.acquire(blocking=False)
    left = other.fair_lock("k:fair-queue")
    assert not left.acquire(timeout=0.2)
    got = []
    waiter = other.fair_lock("k:fair-queue", lease=5)
    t = in_thread(lambda: got.append(waiter.acquire(timeout=5)))
    assert wait_for(lambda: conn.llen("redisson_lock_queue:{k:fair-queue}") == 1, 3)
    fair.release()
    t.join(5)
    assert got == [True]
    assert c.fair_lock("k:fair-queue").force_unlock()

    # Read-write: read and write acquire, extend_by of a read hold, release, force unlock.
    rw = c.read_write_lock("k:rw", lease=5)
    r, w = rw.read_lock(), rw.write_lock()
    assert r.acquire(blocking=False) and r.acquire(blocking=False)
    r.extend(1)
    r.extend(5, replace_ttl=True)
    r.release()
    r.release()
    assert w.acquire(blocking=False)
    w.extend(1)
    w.release()
    assert r.acquire(blocking=False)
    assert other.read_write_lock("k:rw").read_lock().force_unlock()
    assert w.acquire(blocking=False)
    assert other.read_write_lock("k:rw").write_lock().force_unlock()

    # A fenced write with the token of a fenced hold.
    fenced = c.fenced_lock("k:fenced-write", lease=5)
    assert fenced.acquire(blocking=False)
    assert fenced.token is not None
    assert c.fenced_write("k:resource", "v", fenced.token)
    fenced.release()


def drive_undo(url: str, conn: redis.Redis, make_client: Callable[..., rlock.Client]) -> None:
    """The undo of an acquire whose reply did not come in time (undo_acquire and its fair and
    read-write versions): the server is paused longer than the command timeout, and the next
    acquire of the same owner runs the undo first."""
    c = make_client(url, command_timeout=0.15)
    rw = c.read_write_lock("k:undo-rw", lease=5)
    locks = [
        c.lock("k:undo", lease=5),
        c.fair_lock("k:undo-fair", lease=5),
        rw.read_lock(),
        c.read_write_lock("k:undo-rw2", lease=5).write_lock(),
    ]
    for lock in locks:
        assert lock.acquire(blocking=False)  # the scripts are loaded: the undo is what follows
        lock.release()
    paused = time.monotonic()
    conn.execute_command("CLIENT", "PAUSE", 1500)
    for lock in locks:
        with pytest.raises(rlock.ConnectionError):
            lock.acquire(blocking=False)
    assert time.monotonic() - paused < 1.5, "the pause ended before every acquire timed out"
    time.sleep(max(0.0, paused + 1.6 - time.monotonic()))
    for lock in locks:  # each runs its undo first
        assert lock.acquire(timeout=5)
        lock.release()


def drive_semaphore_undo(
    url: str, conn: redis.Redis, make_client: Callable[..., rlock.Client]
) -> None:
    """The clean-ups of semaphore acquires whose replies were lost (sem_undo_acquire,
    psem_undo_acquire): the server is paused longer than the command timeout, and the client
    runs them in the background once it answers again; each leaves a tombstone latch."""
    c = make_client(url, command_timeout=0.15)
    s = c.semaphore("k:sem-undo")
    assert s.try_set_permits(2)
    assert s.try_acquire(1)  # the script is loaded: the clean-up is what follows
    s.release(1)
    e = c.expirable_semaphore("k:psem-undo", lease=5)
    assert e.try_set_permits(2)
    permit = e.try_acquire()
    assert permit is not None
    permit.release()
    paused = time.monotonic()
    conn.execute_command("CLIENT", "PAUSE", 1500)
    for sem in (s, e):
        with pytest.raises(rlock.ConnectionError):
            sem.try_acquire()
    assert time.monotonic() - paused < 1.5, "the pause ended before every acquire timed out"
    deadline = time.monotonic() + 10
    patterns = ("redisson_unlock_latch:{k:sem-undo}:*", "redisson_unlock_latch:{k:psem-undo}:*")
    while not all(conn.keys(p) for p in patterns):
        assert time.monotonic() < deadline, "the clean-ups did not run"
        time.sleep(0.1)


def drive_semaphores(url: str, make_client: Callable[..., rlock.Client]) -> None:
    c = make_client(url)
    s = c.semaphore("k:sem")
    assert s.try_set_permits(3)  # sem_try_set
    assert s.add_permits(1) == 4  # sem_add
    assert s.try_acquire(2)  # sem_try_acquire
    s.release(2)  # sem_release
    assert s.drain_permits() == 4  # sem_drain

    e = c.expirable_semaphore("k:psem", lease=5)
    assert e.try_set_permits(2)
    assert e.set_permits(3) == 3  # psem_set_permits
    permit = e.try_acquire()  # psem_acquire
    assert permit is not None
    assert permit.update_lease(10)  # psem_update_lease
    assert permit.lease_time() is not None  # psem_lease_time
    assert e.available_permits() >= 0  # psem_available
    permit.release()  # psem_release

    latch = c.count_down_latch("k:latch")
    assert latch.try_set_count(2)  # latch_try_set
    latch.count_down()  # latch_count_down
    assert latch.delete()  # latch_delete


@pytest.fixture
def server(private_redis, make_redis):
    return private_redis, make_redis(private_redis.url)


def run_probes(conn: redis.Redis) -> None:
    for name, keys in PROBE_CALLS:
        conn.eval(PROBES[name].decode(), len(keys), *keys)


def lua_comes_first(conn: redis.Redis, monitor: Monitor) -> bool:
    """Whether this server shows a script's commands before its EVAL line (none of ours do:
    Redis 6.0 to 8.0 and Valkey 8.1, 9.1 show the EVAL first), from one script of ours."""
    conn.eval("redis.call('get', KEYS[1])", 1, "rlock-order-probe")
    lines = monitor.read_until_marker()
    kinds = [("lua" if line.lua else "eval") for line in lines if line.lua or b"EVAL" in line.rest]
    assert kinds in (["eval", "lua"], ["lua", "eval"]), [line.raw for line in lines]
    return kinds[0] == "lua"


def test_every_script_touches_only_its_keys(server, make_client):
    redis_server, conn = server
    url = redis_server.url
    monitor = Monitor(conn, redis_server.port)
    try:
        lua_first = lua_comes_first(conn, monitor)
        run_probes(conn)
        drive_locks(url, conn, make_client)
        drive_undo(url, conn, make_client)
        drive_semaphores(url, make_client)
        drive_semaphore_undo(url, conn, make_client)
        lines = monitor.read_until_marker()
    finally:
        monitor.close()

    assert crc16(b"123456789") == 0x31C3  # the CRC16/XMODEM check value
    assert key_slot(b"plain:x") != key_slot(b"plain")  # what probe_prefix_other_slot needs
    assert key_slot(b"{tag}declared:x") == key_slot(b"{tag}declared")
    scripts = Scripts(PROBES)
    calls = group(lines, scripts, lua_first)
    strange = {
        c.script
        for c in calls
        if c.script.startswith("inline: ") and not c.script.startswith(INLINE_SCRIPTS)
    }
    assert strange == set(), f"EVAL of scripts neither in core/scripts nor known: {strange}"
    checker = Checker(redis_server.port)
    found = [v for call in calls for v in checker.violations(call)]

    # The self-test: the probes' undeclared accesses, and nothing of the allowed one.
    probe_found = [v for v in found if v.startswith("probe_")]
    for name, key in PROBE_FINDINGS:
        assert any(v.startswith(name + ":") and repr(key) in v for v in probe_found), (
            f"the checker missed {name}'s access to {key!r}: {probe_found}"
        )
    assert len(probe_found) == len(PROBE_FINDINGS), probe_found

    library_found = [v for v in found if not v.startswith("probe_")]
    assert library_found == [], "scripts touched keys not in KEYS:\n" + "\n".join(library_found)

    ran = {call.script for call in calls}
    never = sorted(set(scripts.sources) - set(PROBES) - ran)
    assert never == [], f"scripts that never ran (extend the test to run them): {never}"


def test_script_hashes_match_the_build():
    """The SHA1s the check above knows scripts by are the ones the library sends: those of the
    build's generated table (cmake/EmbedScripts.cmake), when a build is at hand."""
    generated = ROOT / "build" / "core" / "scripts_data.cpp"
    if not generated.exists():
        pytest.skip("no build/core/scripts_data.cpp")
    embedded = dict(
        re.findall(
            r'const Script (\w+)\{"\w+", R"rlock_lua\(.*?\)rlock_lua", "(\w+)"',
            generated.read_text(),
            re.S,
        )
    )
    embedded = {name: sha for name, sha in embedded.items() if not name.endswith("_sharded")}
    scripts = Scripts({})
    assert embedded == {name: sha for sha, name in scripts.by_sha.items()}


def test_grouping_in_either_order():
    """group() pairs a script's commands with its EVAL line whether the server shows them after
    it (every server above) or before it; and parse_args reads MONITOR's escapes back."""
    scripts = Scripts(PROBES)
    text = repr_arg(PROBES["probe_undeclared"], True)
    eval_line = Line(b'1.0 [0 127.0.0.1:1] "EVAL" "' + text + b'" "1" "declared" "arg"')
    lua_line = Line(b'1.0 [0 lua] "set" "undeclared" "1"')
    other = Line(b'1.0 [0 127.0.0.1:1] "GET" "x"')
    for lines, lua_first in (([eval_line, lua_line, other], False), ([lua_line, eval_line], True)):
        (call,) = group(lines, scripts, lua_first)
        assert (call.script, call.keys) == ("probe_undeclared", [b"declared"])
        assert call.commands == [(b"set", b"undeclared", b"1")]
    with pytest.raises(AssertionError):
        group([other, lua_line], scripts, False)
    odd = b'a"b\\c\nd\x01 "e'
    assert parse_args(b'"' + repr_arg(odd, True) + b'" "k"') == [odd, b"k"]
