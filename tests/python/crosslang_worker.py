"""The Python side of the cross-language test (test_crosslang.py). Same contract as the C, Go
and Java workers:

    crosslang_worker.py URL DIR ITERATIONS NAME [NAME...]

Each iteration takes the lock NAMES[i % len], enters DIR/NAME.inside exclusively (exit 3 if
another owner is inside), adds one to DIR/NAME.count, leaves and releases.

RLOCK_WORKER_KIND picks the lock kind: reentrant (the default), fenced, fair, write (the write
half of a read-write lock), non-reentrant or non-reentrant-fair. With fenced, each section also
appends its fencing token as a line to DIR/NAME.tokens, so the file lists the tokens in the
order the lock was held. With leader, each iteration is one leadership of the election NAME
(client.leader), and its section appends "TERM python" to DIR/NAME.terms: a store that must
only ever see terms grow."""

import os
import sys

import rlock


def main(argv: list) -> int:
    url, directory, iterations, names = argv[1], argv[2], int(argv[3]), argv[4:]
    kind = os.environ.get("RLOCK_WORKER_KIND") or "reentrant"
    with rlock.Client(url) as client:
        makers = {
            "reentrant": client.lock,
            "fenced": client.fenced_lock,
            "fair": client.fair_lock,
            "write": lambda n: client.read_write_lock(n).write_lock(),
            "non-reentrant": client.non_reentrant_lock,
            "non-reentrant-fair": client.non_reentrant_fair_lock,
        }
        if kind == "leader":
            return lead(client, directory, iterations, names)
        locks = [makers[kind](n) for n in names]
        for i in range(iterations):
            name, lock = names[i % len(names)], locks[i % len(locks)]
            with lock:
                if not enter(directory, name):
                    print(f"overlap on {name}", file=sys.stderr)
                    return 3
                if kind == "fenced":
                    with open(os.path.join(directory, name + ".tokens"), "a") as f:
                        f.write(f"{lock.token}\n")
                os.unlink(os.path.join(directory, name + ".inside"))
    print(f"ok {iterations}")
    return 0


def enter(directory: str, name: str) -> bool:
    """The section's work: False when another owner is inside."""
    inside = os.path.join(directory, name + ".inside")
    try:
        os.close(os.open(inside, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        return False
    count = os.path.join(directory, name + ".count")
    try:
        with open(count) as f:
            value = int(f.read().strip() or 0)
    except FileNotFoundError:
        value = 0
    with open(count, "w") as f:
        f.write(f"{value + 1}\n")
    return True


def lead(client: rlock.Client, directory: str, iterations: int, names: list) -> int:
    for i in range(iterations):
        name = names[i % len(names)]
        with client.leader(name) as lead:
            if not enter(directory, name):
                print(f"overlap on {name}", file=sys.stderr)
                return 3
            lead.check()
            with open(os.path.join(directory, name + ".terms"), "a") as f:
                f.write(f"{lead.term} python\n")
            os.unlink(os.path.join(directory, name + ".inside"))
    print(f"ok {iterations}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
