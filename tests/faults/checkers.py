"""The checkers of the fault-injection suite (FAULTS.md "Harness design"). Each reads the
history log the workers wrote (format in worker.cpp) and returns its violations as readable
strings; an empty list means the run passed that check. They are independent of each other."""

from __future__ import annotations

import bisect
import fcntl
import json
import os
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import redis

INF = float("inf")


@dataclass
class Hold:
    owner: str
    name: str
    mode: str  # X exclusive, R read, W write
    acq_call: int
    start: int  # the acquire returned: the section begins
    token: int
    end: float = INF  # the release was called, or the owner died; INF while still held
    rel_rc: Optional[int] = None
    rel_ret: float = INF
    left: float = INF  # the owner logged that it was about to release (its section ended)

    @property
    def pid(self) -> int:
        return int(self.owner.split(".")[0])

    def conflicts(self, other: "Hold") -> bool:
        # Permits (S) are judged by over_permits: a semaphore lets several owners in.
        if self.mode == "S" or other.mode == "S":
            return False
        return self.owner != other.owner and not (self.mode == "R" and other.mode == "R")


@dataclass
class History:
    holds: List[Hold] = field(default_factory=list)
    failed_acquires: List[Tuple[str, str, int, int, int]] = field(default_factory=list)
    stray_releases: List[Tuple[str, str, int, int]] = field(default_factory=list)
    wrote: Dict[str, int] = field(default_factory=dict)
    fences: List[Tuple[str, str, int, int, int, int]] = field(default_factory=list)
    lost: List[Tuple[str, str, int, int]] = field(default_factory=list)
    calls: List[Tuple[str, str, int, int, int]] = field(
        default_factory=list
    )  # op, owner, call, ret, rc
    valid: List[Tuple[str, str, int, int]] = field(default_factory=list)  # owner, name, ret, ms
    # Failed acquires and stray releases with their modes: op, owner, name, mode, call, ret, rc
    unpaired: List[Tuple[str, str, str, str, int, int, int]] = field(default_factory=list)


def read_history(path: Path, ended: Optional[Dict[int, int]] = None) -> History:
    """Pairs each acquire with the release that follows it for the same owner, name and mode.
    A hold with no release line ends where its owner logged that it was leaving (it may have been
    killed with the release in flight), else at its owner's kill (`ended`: pid -> ns), else
    never."""
    h = History()
    open_holds: Dict[Tuple[str, str, str], List[Hold]] = {}
    text = path.read_text() if path.exists() else ""
    # Workers append while a running test reads: a last line without its newline is still
    # being written, and is left for the next read.
    if not text.endswith("\n"):
        text = text[: text.rfind("\n") + 1]
    for line in text.splitlines():
        f = line.split()
        if not f:
            continue
        if f[0] == "acq":
            owner, name, mode, call, ret, rc, token = (
                f[1],
                f[2],
                f[3],
                int(f[4]),
                int(f[5]),
                int(f[6]),
                int(f[7]),
            )
            h.calls.append(("acq", owner, call, ret, rc))
            if rc == 0:
                hold = Hold(owner, name, mode, call, ret, token)
                h.holds.append(hold)
                open_holds.setdefault((owner, name, mode), []).append(hold)
            else:
                h.failed_acquires.append((owner, name, call, ret, rc))
                h.unpaired.append(("acq", owner, name, mode, call, ret, rc))
        elif f[0] == "rel":
            owner, name, mode, call, ret, rc = f[1], f[2], f[3], int(f[4]), int(f[5]), int(f[6])
            h.calls.append(("rel", owner, call, ret, rc))
            stack = open_holds.get((owner, name, mode))
            if stack:
                hold = stack.pop()
                hold.end, hold.rel_ret, hold.rel_rc = call, ret, rc
            else:
                h.stray_releases.append((owner, name, call, rc))
                h.unpaired.append(("rel", owner, name, mode, call, ret, rc))
        elif f[0] == "leave":
            stack = open_holds.get((f[1], f[2], f[3]))
            if stack:
                stack[-1].left = int(f[4])
        elif f[0] == "wrote":
            h.wrote[f[2]] = h.wrote.get(f[2], 0) + 1
        elif f[0] == "fence":
            h.fences.append((f[1], f[2], int(f[3]), int(f[4]), int(f[5]), int(f[6])))
        elif f[0] == "valid":
            h.valid.append((f[1], f[2], int(f[3]), int(f[4])))
        elif f[0] == "lost":
            h.lost.append((f[1], f[2], int(f[3]), int(f[4])))
    for hold in h.holds:
        if hold.end == INF and hold.left != INF:
            hold.end = hold.left
        elif hold.end == INF and ended and hold.pid in ended:
            hold.end = ended[hold.pid]
    return h


def _ms(ns: float) -> str:
    return "never" if ns == INF else f"{ns / 1e6:.3f} ms"


def overlaps(history: History, limit: int = 20) -> List[str]:
    """Checker 1: two owners inside conflicting sections of one name at the same instant."""
    found: List[str] = []
    by_name: Dict[str, List[Hold]] = {}
    for hold in history.holds:
        by_name.setdefault(hold.name, []).append(hold)
    for name, holds in by_name.items():
        holds.sort(key=lambda x: x.start)
        active: List[Hold] = []
        for hold in holds:
            active = [a for a in active if a.end > hold.start]
            for a in active:
                if a.conflicts(hold):
                    found.append(
                        f"{name}: {hold.owner} ({hold.mode}) entered at {_ms(hold.start)} "
                        f"while {a.owner} ({a.mode}) was inside "
                        f"[{_ms(a.start)}, {_ms(a.end)}]"
                    )
                    if len(found) >= limit:
                        return found
            active.append(hold)
    return found


def over_permits(history: History, permits: int, limit: int = 20) -> List[str]:
    """Checker 1 for semaphores: more owners inside sections holding a permit (mode S) of one
    name at the same instant than the semaphore has permits. A section spans from its acquire's
    return to its release call (or its owner's death), so the count is never too low."""
    found: List[str] = []
    events: Dict[str, List[Tuple[float, int, Hold]]] = {}
    for hold in history.holds:
        if hold.mode == "S":
            events.setdefault(hold.name, []).extend([(hold.start, 1, hold), (hold.end, -1, hold)])
    for name, evs in events.items():
        # At one instant a leaving section goes first: it released before the other returned.
        evs.sort(key=lambda e: (e[0], e[1]))
        inside: List[Hold] = []
        for at, step, hold in evs:
            if step < 0:
                inside.remove(hold)
                continue
            inside.append(hold)
            if len(inside) > permits:
                owners = ", ".join(f"{h.owner} from {_ms(h.start)}" for h in inside)
                found.append(f"{name}: {len(inside)} inside at {_ms(at)} ({owners})")
                if len(found) >= limit:
                    return found
    return found


def most_inside(history: History, name: str) -> int:
    """The most sections of `name` (mode S) that were inside at one instant."""
    evs = sorted(
        [(h.start, 1) for h in history.holds if h.name == name and h.mode == "S"]
        + [(h.end, -1) for h in history.holds if h.name == name and h.mode == "S"]
    )
    inside = most = 0
    for _, step in evs:
        inside += step
        most = max(most, inside)
    return most


def lost_updates(history: History, counter_dir: Path) -> List[str]:
    """Checker 2: each counter file must equal the sections that wrote it. A killed holder may
    have written without logging it, so each hold cut short by a kill allows one more."""
    found = []
    cut_short: Dict[str, int] = {}
    for hold in history.holds:
        if hold.rel_rc is None and hold.mode != "R":
            cut_short[hold.name] = cut_short.get(hold.name, 0) + 1
    for name, wrote in history.wrote.items():
        path = counter_dir / name
        value = int(path.read_text() or "0") if path.exists() else 0
        if not wrote <= value <= wrote + cut_short.get(name, 0):
            found.append(
                f"{name}: counter {value} after {wrote} sections wrote it "
                f"({cut_short.get(name, 0)} cut short): {wrote - value} updates lost"
            )
    return found


def mutex_history(history: History, limit: int = 20) -> List[str]:
    """Checker 4: a release reported ok must belong to a hold of that owner, and no other owner
    may have acquired a conflicting hold while it lasted (the library would then have hidden a
    double grant from the first owner)."""
    found = [
        f"{name}: release by {owner} at {_ms(call)} returned {rc} without a hold"
        for owner, name, call, rc in history.stray_releases
        if rc == 0
    ]
    by_name: Dict[str, List[Hold]] = {}
    for hold in history.holds:
        by_name.setdefault(hold.name, []).append(hold)
    for name, holds in by_name.items():
        starts = sorted(holds, key=lambda x: x.start)
        keys = [x.start for x in starts]
        for hold in holds:
            if hold.rel_rc != 0:
                continue
            for j in range(bisect.bisect_right(keys, hold.start), len(starts)):
                other = starts[j]
                if other.start >= hold.end:
                    break
                if hold.conflicts(other):
                    found.append(
                        f"{name}: {hold.owner}'s release returned ok, but {other.owner} "
                        f"acquired at {_ms(other.start)} inside its hold "
                        f"[{_ms(hold.start)}, {_ms(hold.end)}]"
                    )
                    break
            if len(found) >= limit:
                return found
    return found


# Acquire results that say the lock was not taken; any other error may hide a grant (a reply
# lost after the script ran), so its outcome is unknown (rlock.h).
REFUSED = {-2, -4, -6, -8, -20, -21, -22, -24}  # ETIMEDOUT ECANCELED EINVAL EVERSION ECLOSED
# EDEADLK EBADHANDLE EFORKED

LIN_MODULE = Path(__file__).resolve().parent / "linearizability"
_lin_build = threading.Lock()


@dataclass
class LinStats:
    """What the linearizability checker did this session (printed in the pytest summary)."""

    objects: int = 0
    ops: int = 0
    unknown: List[str] = field(default_factory=list)
    seconds: float = 0.0


LIN_STATS = LinStats()


def linearizability_binary() -> str:
    """The checker of tests/faults/linearizability, built once (go build) when missing or older
    than its sources; $RLOCK_LIN_CHECKER names another place for it."""
    binary = Path(
        os.environ.get("RLOCK_LIN_CHECKER")
        or LIN_MODULE.parents[2] / "build" / "faults" / "linearizability"
    )
    sources = [p for p in LIN_MODULE.iterdir() if p.suffix in (".go", ".mod", ".sum")]
    with _lin_build:
        binary.parent.mkdir(parents=True, exist_ok=True)
        # A file lock too: two pytest processes may share one build tree.
        with open(f"{binary}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            newest = max(p.stat().st_mtime for p in sources)
            if not binary.exists() or binary.stat().st_mtime < newest:
                subprocess.run(
                    ["go", "build", "-o", str(binary), "."],
                    cwd=LIN_MODULE,
                    check=True,
                    timeout=600,
                )
    return str(binary)


def lin_objects(history: History, permits: Optional[int] = None, lapses: bool = False) -> list:
    """The history as the checker's input: one object per name, its operations timed as
    read_history bounds them. A hold's acquire spans its call and return; the hold stops with
    its release when that returned ok, else somewhere in [its end, the release's return] (the
    end read_history gave it: the release call, the owner leaving or killed). With `lapses`
    (a lease may run out under the case's faults, as mutex_history allows) a hold without an
    ok release may stop at any time after its acquire returned. An acquire that failed with an
    unknown outcome may have taken the lock at any later time, and that grant lapse at any time
    after; a stray release that returned ok must be explained by such a grant. Names of permits
    (S) are semaphores of `permits`, and skipped without it."""
    by_name: Dict[str, List[dict]] = {}
    semaphores = set()

    def add(name: str, owner: str, op: str, mode: str, call: float, ret: float) -> None:
        if mode == "S":
            semaphores.add(name)
        by_name.setdefault(name, []).append(
            {"owner": owner, "op": op, "mode": mode, "call": int(call), "ret": int(ret)}
        )

    for h in history.holds:
        add(h.name, h.owner, "acquire", h.mode, h.acq_call, h.start)
        stop = h.rel_ret if h.rel_ret != INF else h.end
        if h.rel_rc == 0:
            add(h.name, h.owner, "release", h.mode, h.end, h.rel_ret)
        elif lapses:
            add(h.name, h.owner, "end", h.mode, h.start, -1 if stop == INF else stop)
        elif h.end != INF:
            add(h.name, h.owner, "end", h.mode, h.end, stop)
    # A grant nobody was told of matters only to a release of that owner that returned ok
    # without a hold; the rest would only slow the search.
    stray = {(n, o, m) for op, o, n, m, _, _, rc in history.unpaired if op == "rel" and rc == 0}
    for op, owner, name, mode, call, ret, rc in history.unpaired:
        if op == "acq" and rc not in REFUSED and (name, owner, mode) in stray:
            add(name, owner, "acquire?", mode, call, -1)
            # Called just after: the search first tries the grant gone at once.
            add(name, owner, "lapse", mode, call + 1, -1)
        elif op == "rel" and rc == 0 and mode != "S":
            # A plain semaphore's release is no owner's: only lock releases need a hold.
            add(name, owner, "release", mode, call, ret)
    objects = []
    for name, ops in by_name.items():
        if name in semaphores and permits is None:
            continue
        objects.append({"name": name, "permits": permits if name in semaphores else 0, "ops": ops})
    return objects


def linearizable(
    history: History,
    permits: Optional[int] = None,
    lapses: bool = False,
    timeout_s: float = 5.0,
) -> List[str]:
    """Checker 6: each name's history is linearizable as a lock (exclusive, read/write) or a
    semaphore of `permits`, judged by porcupine (tests/faults/linearizability). A name whose
    check runs out of `timeout_s` is neither passed nor failed: it is counted in LIN_STATS."""
    objects = lin_objects(history, permits, lapses)
    if not objects:
        return []
    data = json.dumps({"objects": objects})
    keep = os.environ.get("RLOCK_LIN_INPUT")
    if keep:  # a directory: each check's input is kept there, to be rerun by hand
        Path(keep).mkdir(parents=True, exist_ok=True)
        Path(keep, f"lin-{os.getpid()}-{LIN_STATS.objects}.json").write_text(data)
    start = time.monotonic()
    run = subprocess.run(
        [linearizability_binary(), f"-timeout={timeout_s}s"],
        input=data,
        capture_output=True,
        text=True,
        timeout=timeout_s * len(objects) + 60,
    )
    LIN_STATS.seconds += time.monotonic() - start
    if run.returncode not in (0, 1):
        raise RuntimeError(f"the linearizability checker failed: {run.stderr.strip()}")
    found = []
    for line in run.stdout.splitlines():
        verdict, name, ops, _ = line.split(" ", 3)
        LIN_STATS.objects += 1
        LIN_STATS.ops += int(ops)
        if verdict == "unknown":
            LIN_STATS.unknown.append(name)
            print(f"linearizability of {name} ({ops} operations) unknown: out of time")
        elif verdict == "illegal":
            found.append(f"{name}: not linearizable: {line.split(': ', 1)[1]}")
    return found


@dataclass
class FenceReport:
    violations: List[str]
    accepted: int
    refused: int


def fencing(history: History) -> FenceReport:
    """Checker 3: the fenced resource never accepted a write whose token is below one it had
    already accepted, and tokens of one name grew with every acquire that followed another."""
    violations = []
    accepted = [f for f in history.fences if f[5] == 1]
    by_name: Dict[str, List[tuple]] = {}
    for f in accepted:
        by_name.setdefault(f[1], []).append(f)
    for name, writes in by_name.items():
        by_return = sorted(writes, key=lambda f: f[4])
        highest, highest_ret, i = 0, 0, 0
        for w in sorted(writes, key=lambda f: f[3]):
            while i < len(by_return) and by_return[i][4] < w[3]:
                if by_return[i][2] > highest:
                    highest, highest_ret = by_return[i][2], by_return[i][4]
                i += 1
            if w[2] < highest:
                violations.append(
                    f"{name}: stale write by {w[0]} with token {w[2]} accepted after "
                    f"token {highest} was (at {_ms(highest_ret)})"
                )
    tokens: Dict[str, List[Hold]] = {}
    for hold in history.holds:
        if hold.token > 0:
            tokens.setdefault(hold.name, []).append(hold)
    for name, holds in tokens.items():
        by_start = sorted(holds, key=lambda x: x.start)
        best: Optional[Hold] = None
        i = 0
        for hold in sorted(holds, key=lambda x: x.acq_call):
            # `best` is the highest token among acquires that returned before this one began.
            while i < len(by_start) and by_start[i].start < hold.acq_call:
                if best is None or by_start[i].token > best.token:
                    best = by_start[i]
                i += 1
            if best is not None and hold.token <= best.token:
                violations.append(
                    f"{name}: token {hold.token} of {hold.owner} is not above token "
                    f"{best.token} of {best.owner}, whose acquire returned earlier"
                )
    refused = sum(1 for f in history.fences if f[5] == 0)
    return FenceReport(violations[:20], len(accepted), refused)


def slow_calls(history: History, bound_ms: float) -> List[str]:
    """Criterion 15: no call takes longer than its bound (its timeout + 50 ms)."""
    return [
        f"{op} by {owner} took {(ret - call) / 1e6:.1f} ms (rc {rc}), bound {bound_ms} ms"
        for op, owner, call, ret, rc in history.calls
        if ret - call > bound_ms * 1e6
    ][:20]


def library_keys(conn: redis.Redis) -> List[bytes]:
    """Keys the library may leave: none but the fencing token counters, which never expire."""
    return [k for k in conn.scan_iter(count=1000) if not k.startswith(b"redisson_lock_token:")]


def cleanliness(conn: redis.Redis, baseline_clients: int) -> List[str]:
    """Checker 5, on a server after the workers ended: no lock keys, no channels, no
    connections beyond the baseline."""
    found = []
    keys = library_keys(conn)
    if keys:
        found.append(f"keys left: {keys[:10]}")
    channels = conn.pubsub_channels()
    if channels:
        found.append(f"channels left: {channels[:10]}")
    clients = len(conn.client_list())
    if clients > baseline_clients:
        found.append(f"{clients} connections, {baseline_clients} before the run")
    return found


class TtlWatch:
    """Samples the server every `interval` s for keys without an expiry (criterion 12: a lock
    key with PTTL -1 is one that would never be freed). Token counters are exempt."""

    def __init__(self, port: int, interval: float = 0.05) -> None:
        self.port = port
        self.interval = interval
        self.found: List[bytes] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        conn = redis.Redis(port=self.port, socket_timeout=2)
        while not self._stop.wait(self.interval):
            try:
                for key in conn.scan_iter(count=1000):
                    if key.startswith(b"redisson_lock_token:") or key.startswith(b"rlock_fence:"):
                        continue
                    if conn.pttl(key) == -1:
                        self.found.append(key)
            except redis.RedisError:
                pass  # the server is down for a while in some cases
        conn.close()

    def stop(self) -> List[bytes]:
        self._stop.set()
        self._thread.join(5)
        return self.found


def assert_clean_run(history: History, counter_dir: Path) -> None:
    """The exclusion checkers agree that nothing overlapped."""
    problems = overlaps(history) + lost_updates(history, counter_dir) + mutex_history(history)
    problems += fencing(history).violations + linearizable(history)
    assert not problems, "\n".join(problems)
