#!/usr/bin/env python3
"""Turns the raw JSON lines of a benchmark run into OUTDIR/RESULTS.md and charts.

usage: report.py RAW.jsonl OUTDIR

Writes OUTDIR/RESULTS.md, OUTDIR/results/<scenario>.png (one horizontal bar chart per
scenario, rlock-c highlighted) and OUTDIR/results/raw.jsonl (a copy of RAW.jsonl).
Input lines are the contenders' results (see bench/README.md) and the harness's
{"scenario", "contender", "failed": true, "error"} lines for runs that failed.
"""

import datetime
import json
import os
import platform
import re
import shutil
import subprocess
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after choosing the backend)
import matplotlib.ticker  # noqa: E402

REFERENCE = "rlock-c"
# Table order: the reference, the bare-hiredis floor, then each language's rlock binding
# before its peers, then the baselines.
ORDER = ["rlock-c", "hiredis-floor", "rlock-py", "redis-py", "python-redis-lock", "rlock-go",
         "redsync", "rlock-java", "redisson", "evalsha-ceiling", "ping"]

SCENARIOS = {
    "uncontended": ("Scenario 1: uncontended",
                    "One thread; each iteration acquires and releases a lock named "
                    "`bench:u:<contender>:<i % 1024>` (the library's idiomatic acquire, default "
                    "lease or watchdog). 10% of the duration (at least 0.2 s) warms up first. "
                    "Acquire+release pairs per second; higher is better."),
    "throughput": ("Scenario 2: throughput",
                   "{threads} threads; each iteration picks one of {names} names "
                   "`bench:t:<contender>:<k>` at random, acquires it blocking (the library's "
                   "default waiting) and releases it. Total pairs per second; higher is better. "
                   "`evalsha-ceiling` is `redis-benchmark` sending EVALSHA of the acquire script "
                   "alone, pipelined: Redis's own limit for that script, in scripts per second "
                   "(a pair is two scripts, so its pair equivalent is half of it)."),
    "handoff": ("Scenario 3: hand-off latency",
                "Two processes ping-pong one lock: each takes it, holds it 1 ms (so the other "
                "is already waiting) and releases it, then waits for the other to have it "
                "before asking again. The time from the release returning in one process to "
                "the acquire returning in the other, on the machine's monotonic clock; the "
                "first tenth warms up. Microseconds; lower is better."),
    "herd": ("Scenario 4: herd",
             "8 processes x 16 threads loop acquire (blocking) and release on one reentrant "
             "lock. `requests_per_handoff`: requests clients sent to Redis (scripts, "
             "(un)subscribes, pings, from `INFO commandstats`; the commands the scripts run "
             "inside are in `extra`) per hand-off; `handoff_p50`/`p99`: from one owner's "
             "release returning to the next owner's acquire returning (negative when the "
             "next owner got it before the release's reply arrived). The run fails if two "
             "owners overlapped on the shared clock. Lower is better but for handoffs/s."),
    "herd-fair": ("Scenario 4: herd, fair lock",
                  "The same herd on the fair lock (first come, first served)."),
    "watchdog": ("Scenario 5: watchdog cost",
                 "One client holds 10,000 locks with the watchdog, lease 3 s (renewed every "
                 "1 s, 10x the default rate, so several periods fit in the run). Renewal "
                 "scripts per period, and the client process's CPU while it only renews, in % "
                 "of one core. Lower is better."),
    "memory": ("Scenario 6: memory",
               "Resident memory (VmRSS) added by 10,000 lock handles of one client "
               "(`handles_rss`), and by 1,000 threads (64 KiB stacks) blocked in acquire on "
               "one held lock (`waiters_rss`, thread stacks included). `extra` has the bytes "
               "per handle and per waiter. KiB; lower is better."),
    "ping": ("Baseline: PING round trip",
             "One connection sending PING and waiting for each reply: the network and Redis "
             "floor under any lock call. Microseconds; lower is better."),
}


def load(path):
    records = {}
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                r = json.loads(line)
                key = (r["scenario"], r["contender"], r.get("metric", "failed"))
            except (ValueError, KeyError, TypeError) as e:
                sys.exit(f"report.py: {path}:{number}: not a result line ({e})")
            records[key] = r  # a repeated measurement replaces the earlier one
    return list(records.values())


def rank(contender):
    return (ORDER.index(contender), "") if contender in ORDER else (len(ORDER), contender)


def scenario_order(records):
    seen = {r["scenario"] for r in records}
    known = [s for s in SCENARIOS if s in seen]
    return known + sorted(seen - set(known))


def value_of(records, scenario, contender, metric=None):
    """The value of a successful measurement, or None."""
    for r in records:
        if (r["scenario"] == scenario and r["contender"] == contender and not r.get("failed")
                and (metric is None or r["metric"] == metric)):
            return float(r["value"])
    return None


def fmt(value, unit):
    if value is None:
        return "—"
    if unit == "us" or abs(value) < 100:
        return f"{value:,.1f}"
    return f"{value:,.0f}"


def machine():
    cpu = "unknown"
    ram = "unknown"
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            m = re.search(r"^model name\s*:\s*(.+)$", f.read(), re.M)
            if m:
                cpu = m.group(1).strip()
        with open("/proc/meminfo", encoding="utf-8") as f:
            m = re.search(r"^MemTotal:\s*(\d+) kB", f.read(), re.M)
            if m:
                ram = f"{int(m.group(1)) / 1024 / 1024:.1f} GiB"
    except OSError:
        pass
    try:
        out = subprocess.run(["redis-server", "--version"], capture_output=True, text=True,
                             check=True).stdout
        m = re.search(r"v=(\S+)", out)
        redis = m.group(1) if m else out.strip()
    except (OSError, subprocess.CalledProcessError):
        redis = "unknown"
    return [f"CPU: {cpu}, {os.cpu_count()} logical cores",
            f"RAM: {ram}",
            f"Kernel: {platform.system()} {platform.release()}",
            f"redis-server: {redis} (local, TCP loopback, no persistence)"]


def table(records, scenario):
    rows = sorted((r for r in records if r["scenario"] == scenario),
                  key=lambda r: (rank(r["contender"]), r.get("metric", "")))
    several = {}
    for r in rows:
        several[r["contender"]] = several.get(r["contender"], 0) + 1
    lines = ["| Contender | Value | Unit | Ratio to rlock-c |", "|---|---:|---|---:|"]
    notes = []
    for r in rows:
        name = r["contender"]
        label = f"**{name}**" if name == REFERENCE else name
        if several[name] > 1 and not r.get("failed"):
            label += f" ({r['metric']})"
        if r.get("failed"):
            lines.append(f"| {label} | failed | | — |")
            notes.append(f"- {name} failed: {last_line(r.get('error', ''))}")
            continue
        ref = value_of(records, scenario, REFERENCE, r["metric"])
        ratio = f"{r['value'] / ref:.2f}" if ref else "—"
        lines.append(f"| {label} | {fmt(r['value'], r['unit'])} | {r['unit']} | {ratio} |")
        extra = r.get("extra") or {}
        if extra.get("failed_acquires"):
            notes.append(f"- {name}: {extra['failed_acquires']} failed acquires "
                         "(acquires the library gave up on, then retried)")
    ceiling = value_of(records, scenario, "evalsha-ceiling")
    if ceiling is not None:
        ref = value_of(records, scenario, REFERENCE)
        ratio = f"; rlock-c reaches {ref / (ceiling / 2):.2f} of it" if ref else ""
        notes.append(f"- evalsha-ceiling as pairs (÷ 2): {fmt(ceiling / 2, '')} pairs/s{ratio}")
    return lines + ([""] + notes if notes else [])


def last_line(text):
    text = text.strip()
    return text.splitlines()[-1] if text else "no message"


def chart(records, scenario, path):
    rows = sorted((r for r in records if r["scenario"] == scenario),
                  key=lambda r: (rank(r["contender"]), r.get("metric", "")))
    ok = [r for r in rows if not r.get("failed")]
    if not rows:
        return False
    unit = next((r["unit"] for r in ok if r["contender"] == REFERENCE), ok[0]["unit"] if ok else "")
    labels, values, colors, hatches = [], [], [], []
    for r in rows:
        name = r["contender"]
        if r.get("failed"):
            labels.append(f"{name} (failed)")
            values.append(0)
        elif name == "evalsha-ceiling" and r["unit"] != unit:
            labels.append(f"{name} ÷ 2")
            values.append(r["value"] / 2)
        elif r["unit"] == unit:
            several = sum(1 for o in ok if o["contender"] == name) > 1
            labels.append(f"{name} ({r['metric']})" if several else name)
            values.append(r["value"])
        else:
            continue
        colors.append("#d9480f" if name == REFERENCE else "#868e96")
        hatches.append("//" if name in ("evalsha-ceiling", "hiredis-floor", "ping") else "")
    fig, ax = plt.subplots(figsize=(8, 0.45 * len(labels) + 1.4))
    y = list(range(len(labels)))[::-1]  # the first row on top
    bars = ax.barh(y, values, color=colors, edgecolor="white")
    for bar, hatch in zip(bars, hatches):
        bar.set_hatch(hatch)
    top = max(values) if values and max(values) > 0 else 1
    for yi, v, label in zip(y, values, labels):
        text = "failed" if label.endswith("(failed)") else fmt(v, unit)
        ax.text(v + top * 0.01, yi, text, va="center", fontsize=9)
    ax.set_yticks(y)
    ax.set_yticklabels(labels)
    ax.set_xlim(0, top * 1.18)
    ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:,.0f}"))
    ax.set_xlabel(unit)
    ax.set_title(SCENARIOS.get(scenario, (scenario,))[0])
    ax.spines[["top", "right"]].set_visible(False)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def targets(records):
    u, t = "uncontended", "throughput"

    def at_least(scenario, left, factor, right, divisor=1, strict=False):
        a = value_of(records, scenario, left)
        b = value_of(records, scenario, right)
        missing = [n for n, v in ((left, a), (right, b)) if v is None]
        if missing:
            return "—", f"not measured ({', '.join(missing)} missing or failed)"
        bound = factor * b / divisor
        if factor == 1 and divisor == 1:
            figures = f"{fmt(a, '')} vs {fmt(b, '')}"
        else:
            shape = f"{factor} × {fmt(b, '')}" + (f" ÷ {divisor}" if divisor != 1 else "")
            figures = f"{fmt(a, '')} vs {shape} = {fmt(bound, '')}"
        return figures, "met" if (a > bound if strict else a >= bound) else "**not met**"

    rows = [
        ("S1: rlock-c ≥ 0.9 × hiredis-floor", at_least(u, "rlock-c", 0.9, "hiredis-floor")),
        ("S1: rlock-c ≥ 1.2 × redisson", at_least(u, "rlock-c", 1.2, "redisson")),
        ("S2: rlock-c ≥ 1.3 × redisson", at_least(t, "rlock-c", 1.3, "redisson")),
        ("S2: rlock-c ≥ 0.5 × (evalsha-ceiling ÷ 2)",
         at_least(t, "rlock-c", 0.5, "evalsha-ceiling", divisor=2)),
    ]
    rows += s3_to_s5(records)
    rows += [
        ("S1: rlock-py ≥ 0.7 × rlock-c", at_least(u, "rlock-py", 0.7, "rlock-c")),
        ("S1: rlock-py ≥ 2 × redis-py", at_least(u, "rlock-py", 2, "redis-py")),
        ("S1: rlock-go ≥ 0.9 × rlock-c", at_least(u, "rlock-go", 0.9, "rlock-c")),
        ("S1: rlock-go > redsync", at_least(u, "rlock-go", 1, "redsync", strict=True)),
        ("S1: rlock-java > redisson", at_least(u, "rlock-java", 1, "redisson", strict=True)),
    ]
    lines = ["| Target | Figures | Status |", "|---|---|---|"]
    lines += [f"| {name} | {figures} | {status} |" for name, (figures, status) in rows]
    return lines


def check(figures, ok):
    return figures, "met" if ok else "**not met**"


def missing(*named):
    absent = [n for n, v in named if v is None]
    return "—", f"not measured ({', '.join(absent)} missing or failed)"


def s3_to_s5(records):
    """Targets of scenarios 3 to 5, each on a named metric."""
    rows = []
    ping = value_of(records, "ping", "ping", "rtt_p50")
    p50 = value_of(records, "handoff", "rlock-c", "handoff_p50")
    p99 = value_of(records, "handoff", "rlock-c", "handoff_p99")
    redisson = value_of(records, "handoff", "redisson", "handoff_p50")
    rows.append(("S3: rlock-c hand-off p50 ≤ 2 × PING p50",
                 check(f"{fmt(p50, 'us')} vs 2 × {fmt(ping, 'us')} = {fmt(2 * ping, 'us')} us",
                       p50 <= 2 * ping)
                 if None not in (p50, ping) else missing(("rlock-c handoff", p50), ("ping", ping))))
    rows.append(("S3: rlock-c hand-off p99 ≤ 2 ms",
                 check(f"{fmt(p99, 'us')} us", p99 <= 2000)
                 if p99 is not None else missing(("rlock-c handoff", p99))))
    rows.append(("S3: rlock-c hand-off p50 < redisson's",
                 check(f"{fmt(p50, 'us')} vs {fmt(redisson, 'us')} us", p50 < redisson)
                 if None not in (p50, redisson)
                 else missing(("rlock-c handoff", p50), ("redisson handoff", redisson))))
    herd = next((r for r in records if r["scenario"] == "herd" and r["contender"] == "rlock-c"
                 and r.get("metric") == "requests_per_handoff" and not r.get("failed")), None)
    if herd is None:
        rows.append(("S4: requests per hand-off ≤ processes", missing(("rlock-c herd", None))))
    else:
        n = float(herd["extra"]["processes"])
        v = herd["value"]
        rows.append((f"S4: requests per hand-off ≤ processes ({n:.0f})",
                     check(f"{v:.2f} vs {n:.0f}", v <= n)))
        rows.append((f"S4: acquire attempts per hand-off (requests less the release) ≤ "
                     f"processes ({n:.0f}): one retry per process per release",
                     check(f"{v - 1:.2f} vs {n:.0f}", v - 1 <= n)))
    fair = value_of(records, "herd-fair", "rlock-c", "requests_per_handoff")
    rows.append(("S4: fair lock requests per hand-off ≤ 3",
                 check(f"{fair:.2f}", fair <= 3) if fair is not None
                 else missing(("rlock-c herd-fair", fair))))
    scripts = value_of(records, "watchdog", "rlock-c", "scripts_per_period")
    cpu = value_of(records, "watchdog", "rlock-c", "renewal_cpu")
    held = next((r["extra"].get("locks") for r in records if r["scenario"] == "watchdog"
                 and r["contender"] == "rlock-c" and not r.get("failed")), 10000)
    rows.append((f"S5: ≤ 100 renewal scripts per period for {int(held):,} locks",
                 check(f"{scripts:.1f}", scripts <= 100) if scripts is not None
                 else missing(("rlock-c watchdog", scripts))))
    rows.append(("S5: renewal CPU < 2% of a core (at 10x the default renewal rate)",
                 check(f"{cpu:.2f}%", cpu < 2) if cpu is not None
                 else missing(("rlock-c watchdog", cpu))))
    return rows


def run_shape(records):
    """Duration and threads/names as the contenders reported them."""
    extra = next((r["extra"] for r in records
                  if r["scenario"] == "throughput" and "threads" in (r.get("extra") or {})), {})
    seconds = [float((r.get("extra") or {}).get("seconds", 0)) for r in records
               if not r.get("failed") and r["scenario"] in ("uncontended", "throughput")]
    return {"threads": extra.get("threads", "?"), "names": extra.get("names", "?"),
            "seconds": f"{max(seconds):.1f}" if seconds else "?"}


def main(argv):
    if len(argv) != 3:
        sys.exit("usage: report.py RAW.jsonl OUTDIR")
    raw, outdir = argv[1], argv[2]
    records = load(raw)
    if not records:
        sys.exit(f"report.py: {raw} has no results")
    results = os.path.join(outdir, "results")
    os.makedirs(results, exist_ok=True)
    copy = os.path.join(results, "raw.jsonl")
    if os.path.abspath(raw) != os.path.abspath(copy):
        shutil.copyfile(raw, copy)

    shape = run_shape(records)
    now = datetime.datetime.now(datetime.timezone.utc)
    out = ["# rlock benchmark results", "",
           f"Run on {now:%Y-%m-%d %H:%M} UTC with `bench/run.sh`, about {shape['seconds']} s "
           "measured per contender and scenario, every contender alone against one local "
           "redis-server. bench/README.md tells what each scenario and contender "
           "does. Raw numbers: [results/raw.jsonl](results/raw.jsonl).", "",
           "## Machine", ""]
    out += [f"- {line}" for line in machine()]
    out += ["- Everything (Redis, the contender, redis-benchmark) shares these cores, so "
            "figures are noisy when the machine is busy.", ""]
    for scenario in scenario_order(records):
        title, text = SCENARIOS.get(scenario, (scenario, ""))
        out += [f"## {title}", ""]
        if text:
            out += [text.format(**shape), ""]
        out += table(records, scenario) + [""]
        if chart(records, scenario, os.path.join(results, f"{scenario}.png")):
            out += [f"![{scenario}](results/{scenario}.png)", ""]
    out += ["## Targets", "",
            "Evaluated from the figures above; a target whose figures are missing is not "
            "measured.", ""]
    out += targets(records) + [""]
    with open(os.path.join(outdir, "RESULTS.md"), "w", encoding="utf-8") as f:
        f.write("\n".join(out))


if __name__ == "__main__":
    main(sys.argv)
