"""The aarch64 wheel's check under qemu (scripts/release/arm64.sh, verify_arm64_run): run by an
arm64 Python 3.9 with the installed wheel on PYTHONPATH, `python3 arm_check.py VERSION URL...`.

Per URL: a lock taken and released; then a waiter woken. Client A holds the lock with a 60 s
lease; a waiter on a second client, whose poll cap is 60 s too, blocks with a 30 s wait; A
releases. Neither the lease nor a poll can end the waiter's sleep within its 30 s, so only the
unlock message on pub/sub can: it must hold the lock within 10 s of the release.
Plain Python 3.9, no pytest: the arm64 root has nothing but python3.
"""

import platform
import sys
import threading
import time

import rlock

LEASE = 60.0  # A's lease and the waiter's poll cap: neither can wake the waiter in WAIT
WAIT = 30.0
WAKE_BOUND = 10.0  # the release to the waiter's hold


def fail(message):
    print("arm_check: " + message, file=sys.stderr)
    sys.exit(1)


def check(url, name):
    with rlock.Client(url) as client:
        lock = client.lock(name)
        if not lock.acquire(blocking=False):
            fail("%s was not free" % name)
        if not (lock.held() and lock.locked()):
            fail("acquired but held() %s, locked() %s" % (lock.held(), lock.locked()))
        lock.release()
        if lock.locked():
            fail("still locked after release")

    name = name + ":wake"
    with rlock.Client(url) as a, rlock.Client(url, poll_cap=LEASE) as b:
        holder = a.lock(name)
        if not holder.acquire(blocking=False, lease=LEASE):
            fail("%s was not free" % name)
        waiter = b.lock(name)
        started = threading.Event()
        result = {}

        def wait():
            started.set()
            result["got"] = waiter.acquire(timeout=WAIT)
            result["at"] = time.monotonic()
            if result["got"]:
                waiter.release()

        thread = threading.Thread(target=wait)
        thread.start()
        started.wait()
        time.sleep(3)  # the waiter tries, fails and sleeps on its subscription
        if "got" in result:
            fail("the waiter returned (%s) while A held the lock" % result["got"])
        released = time.monotonic()
        holder.release()
        thread.join(WAIT + 10)
        if thread.is_alive() or not result.get("got"):
            fail("the waiter did not get the lock within %.0f s of its release" % WAIT)
        woken = result["at"] - released
        if woken > WAKE_BOUND:
            fail(
                "the waiter got the lock %.1f s after the release (over %.0f s)"
                % (woken, WAKE_BOUND)
            )
    return woken


def main():
    if len(sys.argv) < 3:
        print("usage: arm_check.py VERSION URL...", file=sys.stderr)
        sys.exit(2)
    if platform.machine() != "aarch64":
        fail("running on %s, not aarch64" % platform.machine())
    if rlock.__version__ != sys.argv[1]:
        fail("the installed rlock is %s, not %s" % (rlock.__version__, sys.argv[1]))
    for i, url in enumerate(sys.argv[2:]):
        woken = check(url, "rlock-release-test:arm64-python:%d" % i)
        print(
            "%s: lock taken and released; waiter woken %.2f s after the release"
            % (url.split("?")[0], woken)
        )
    print(
        "Python %s on %s, glibc %s, rlock %s from %s"
        % (
            platform.python_version(),
            platform.machine(),
            platform.libc_ver()[1],
            rlock.__version__,
            rlock.__file__,
        )
    )


main()
