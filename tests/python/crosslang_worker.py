"""The Python side of the cross-language test (test_crosslang.py). Same contract as the C, Go
and Java workers:

    crosslang_worker.py URL DIR ITERATIONS NAME [NAME...]

Each iteration takes the lock NAMES[i % len], enters DIR/NAME.inside exclusively (exit 3 if
another owner is inside), adds one to DIR/NAME.count, leaves and releases."""

import os
import sys

import rlock


def main(argv: list) -> int:
    url, directory, iterations, names = argv[1], argv[2], int(argv[3]), argv[4:]
    with rlock.Client(url) as client:
        locks = [client.lock(n) for n in names]
        for i in range(iterations):
            name, lock = names[i % len(names)], locks[i % len(locks)]
            with lock:
                inside = os.path.join(directory, name + ".inside")
                try:
                    os.close(os.open(inside, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
                except FileExistsError:
                    print(f"overlap on {name}", file=sys.stderr)
                    return 3
                count = os.path.join(directory, name + ".count")
                try:
                    with open(count) as f:
                        value = int(f.read().strip() or 0)
                except FileNotFoundError:
                    value = 0
                with open(count, "w") as f:
                    f.write(f"{value + 1}\n")
                os.unlink(inside)
    print(f"ok {iterations}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
