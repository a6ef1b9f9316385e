#!/usr/bin/env python3
"""Checks that every key (and pub/sub channel) a Lua script in core/scripts touches comes from
KEYS, so that servers that check declared keys (Cluster slots, ACL key patterns, proxies) see
every access. A key argument passes when it is KEYS[...], a local bound only to KEYS[...], a loop
variable over KEYS, or a parameter of an included function that every caller passes such a
key. Anything else must be in ALLOWED below, with why it stays in the slot of a declared key.

Usage: scripts/check_script_keys.py [scripts-dir]   (default core/scripts); exit 1 on findings.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

# (command, key expression, as written) -> why it is safe. Each is built from a KEYS entry
# that carries the lock's hash tag ({N}, or the user's own tag when N has one), so the key or
# channel is in the slot of that declared key. Redisson's layout forces them: the names depend
# on what the script reads (a queue head, a hold count), which the caller cannot know.
ALLOWED = {
    ("publish", "KEYS[4] .. ':' .. head"): (
        "fair lock: the queue head's own channel redisson_lock__channel:{N}:<owner>; KEYS[4] is "
        "the channel prefix with {N} (include/fair_wake_head.lua, fair_force_unlock.lua)"
    ),
    ("publish", "KEYS[4] .. ':' .. queue[2]"): (
        "fair lock: the next waiter's channel, under KEYS[4]'s {N} (fair_leave.lua)"
    ),
    ("set", "KEYS[2] .. ':' .. count"): (
        "read lock: hold k's lease key {N}:<owner>:rwlock_timeout:<k>; KEYS[2] is the owner's "
        "prefix with {N} (rw_read_acquire.lua)"
    ),
    ("set", "KEYS[2] .. ':' .. k"): (
        "read lock: a hold's lease key under KEYS[2]'s {N} (extend_by.lua)"
    ),
    ("pttl", "KEYS[2] .. ':' .. k"): (
        "read lock: a hold's lease key under KEYS[2]'s {N} (extend_by.lua)"
    ),
    ("pexpire", "prefix .. ':' .. k"): (
        "read lock: each hold's lease key; prefix is KEYS[2i], with {N} (rw_read_renew.lua)"
    ),
    ("del", "KEYS[3] .. ':' .. (left + 1)"): (
        "read lock: the released hold's lease key under KEYS[3]'s {N} "
        "(include/rw_drop_read_hold.lua)"
    ),
    ("pttl", "KEYS[4] .. ':' .. field .. ':rwlock_timeout:' .. k"): (
        "read lock: other readers' lease keys {N}:<owner>:rwlock_timeout:<k>; KEYS[4] is {N} "
        "(include/rw_drop_read_hold.lua)"
    ),
}

# Commands whose first argument is not a key.
KEYLESS = {"time"}

CALL = re.compile(r"redis\.p?call\(\s*")
INCLUDE = re.compile(r"^-- @include ([A-Za-z0-9_.]+)\n", re.M)
KEYS_ITEM = re.compile(r"^KEYS\[[^\]]+\]$")


def strip_comments(text: str) -> str:
    return re.sub(r"--[^\n]*", "", text)


def expand(path: Path) -> str:
    """The script as the build embeds it: '-- @include NAME' replaced by include/NAME."""
    text = path.read_text()
    return INCLUDE.sub(lambda m: (path.parent / "include" / m.group(1)).read_text(), text)


def arguments(text: str, start: int) -> list:
    """The top-level comma-separated arguments of the call whose '(' ends just before start."""
    args, depth, current, i = [], 0, "", start
    while i < len(text):
        c = text[i]
        if c in "'\"":
            end = text.index(c, i + 1)
            current += text[i : end + 1]
            i = end + 1
            continue
        if c in "([{":
            depth += 1
        elif c in ")]}":
            if depth == 0:
                args.append(current.strip())
                return args
            depth -= 1
        if c == "," and depth == 0:
            args.append(current.strip())
            current = ""
        else:
            current += c
        i += 1
    raise ValueError("unbalanced call")


def key_names(text: str) -> set:
    """Locals bound only to KEYS[...] (single or multiple assignment) and loop variables over
    ipairs(KEYS)."""
    good, bad = set(), set()
    for m in re.finditer(r"(?:local\s+)?([A-Za-z_][\w, ]*?)\s*=\s*([^\n]+)", text):
        names = [n.strip() for n in m.group(1).split(",")]
        values = [v.strip() for v in m.group(2).split(",")]
        for i, name in enumerate(names):
            value = values[i] if i < len(values) and len(values) == len(names) else ""
            (good if KEYS_ITEM.match(value) else bad).add(name)
    for m in re.finditer(r"for\s+\w+\s*,\s*(\w+)\s+in\s+ipairs\(KEYS\)", text):
        good.add(m.group(1))
    return good - bad


def parameters_fed_keys(text: str, names: set) -> set:
    """Parameters of local functions that every call passes a KEYS-derived argument."""
    out = set()
    for m in re.finditer(r"local function (\w+)\(([^)]*)\)", text):
        params = [p.strip() for p in m.group(2).split(",")]
        calls = [
            c for c in re.finditer(r"\b" + m.group(1) + r"\(", text) if c.start() != m.start(1)
        ]
        for index, param in enumerate(params):
            fed = [arguments(text, c.end()) for c in calls]
            if fed and all(index < len(a) and ok_key(a[index], names) for a in fed):
                out.add(param)
    return out


def ok_key(expression: str, names: set) -> bool:
    return bool(KEYS_ITEM.match(expression)) or expression in names


def check(path: Path, used: set) -> list:
    text = strip_comments(expand(path))
    names = key_names(text)
    names |= parameters_fed_keys(text, names)
    findings = []
    for m in CALL.finditer(text):
        args = arguments(text, m.end())
        command = args[0].strip("'\"").lower() if args else ""
        if not args or args[0][0] not in "'\"":
            findings.append(f"{path.name}: a command that is not a literal: {args[:1]}")
            continue
        if command in KEYLESS:
            continue
        key = args[1] if len(args) > 1 else ""
        if ok_key(key, names):
            continue
        if (command, key) in ALLOWED:
            used.add((command, key))
            continue
        findings.append(f"{path.name}: {command} {key!r} is not from KEYS and not in ALLOWED")
    return findings


def main() -> int:
    root = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parents[1]
    directory = (
        root if root.name == "scripts" and (root / "include").is_dir() else root / "core/scripts"
    )
    findings, used = [], set()
    for path in sorted(directory.glob("*.lua")):
        findings += check(path, used)
    # An entry no script needs any more would let a new access through unreviewed.
    findings += [f"ALLOWED entry no script uses: {entry}" for entry in ALLOWED if entry not in used]
    for finding in findings:
        print(finding)
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
