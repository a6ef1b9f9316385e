#!/usr/bin/env python3
"""Ctrl-C on a terminal: rlock and the command share the foreground process group, so the
terminal's SIGINT reaches both; rlock must not pass on a second one. Ctrl-C while rlock still
waits for the lock stops the wait (exit 130) without running the command.
Usage: tty_test.py path/to/rlock"""

import os
import pty
import select
import subprocess
import sys
import time

RLOCK = sys.argv[1]
with open(os.path.join(os.environ["RLOCK_TEST_REDIS_DIR"], "url")) as f:
    os.environ["RLOCK_URL"] = f.read().strip()
NAME = "rlock-cli-test:tty:%d" % os.getpid()

# Counts SIGINTs for a while after the first one, then prints the count.
COUNTER = r"""
import signal, sys, time
seen = []
signal.signal(signal.SIGINT, lambda *_: seen.append(1))
print("ready", flush=True)
end = time.time() + 10
while not seen and time.time() < end:
    time.sleep(0.01)
time.sleep(0.5)
print("sigints=%d" % len(seen), flush=True)
"""


def fail(msg, output=b""):
    sys.stderr.write("FAIL (tty_test): %s\n%s\n" % (msg, output.decode(errors="replace")))
    sys.exit(1)


def run_on_tty(argv, until, then_send, timeout=15):
    """Runs argv as the session leader of a new terminal; when `until` shows up in the output,
    types `then_send`. Returns (exit status, output)."""
    pid, master = pty.fork()
    if pid == 0:
        try:
            os.execv(argv[0], argv)
        finally:
            os._exit(127)
    out = b""
    sent = False
    deadline = time.time() + timeout
    while time.time() < deadline:
        ready, _, _ = select.select([master], [], [], 0.1)
        if ready:
            try:
                chunk = os.read(master, 4096)
            except OSError:  # EIO: the terminal's last user is gone
                chunk = b""
            if not chunk:
                _, status = os.waitpid(pid, 0)
                os.close(master)
                return os.waitstatus_to_exitcode(status), out
            out += chunk
        if not sent and until in out:
            time.sleep(0.3)
            os.write(master, then_send)
            sent = True
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            os.close(master)
            return os.waitstatus_to_exitcode(status), out
    os.kill(pid, 9)
    os.waitpid(pid, 0)
    fail("timed out on the terminal", out)


def status_field(field):
    out = subprocess.run([RLOCK, "status", NAME], check=True, capture_output=True, text=True).stdout
    for line in out.splitlines():
        if line.startswith(field + ": "):
            return line[len(field) + 2 :]
    return None


print("-- Ctrl-C while the command runs reaches it once")
code, out = run_on_tty(
    [RLOCK, "exec", NAME, "--", sys.executable, "-c", COUNTER], b"ready", b"\x03"
)
if b"sigints=1" not in out:
    fail("the command did not see exactly one SIGINT", out)
if code != 0:
    fail("exit %d, want the command's 0" % code, out)
if status_field("locked") != "no":
    fail("the lock is held after the command ended")

print("-- Ctrl-C while waiting for the lock exits 130 and runs nothing")
holder = subprocess.Popen([RLOCK, "exec", NAME, "--", "sleep", "30"])
try:
    deadline = time.time() + 10
    while status_field("locked") != "yes":
        if time.time() > deadline:
            fail("the holder did not take the lock")
        time.sleep(0.05)
    marker = "/tmp/rlock-tty-test-%d" % os.getpid()
    code, out = run_on_tty(
        [RLOCK, "exec", "--wait", "20", NAME, "--", "/bin/sh", "-c", "touch " + marker],
        b"",
        b"\x03",
    )
    if code != 130:
        fail("exit %d, want 130" % code, out)
    if os.path.exists(marker):
        os.unlink(marker)
        fail("the command ran after Ctrl-C")
finally:
    holder.terminate()
    holder.wait()
if status_field("locked") != "no":
    fail("the lock is held after the holder ended")
print("PASS tty_test")
