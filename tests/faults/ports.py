"""Loopback ports for the test servers (shared by tests/faults and tests/python)."""

from __future__ import annotations

import random
import socket


def free_port() -> int:
    """A loopback port that binds now, below the kernel's ephemeral range. Servers here start
    after the port is chosen and restart on it; a port in that range can meanwhile become the
    source port of some client's connection, and the server then fails with "address in use"."""
    low = 32768
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            low = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        pass
    first, last = (20000, low - 1) if low > 21024 else (10000, 11023)
    for _ in range(100):
        port = random.randint(first, last)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free loopback port in {first}-{last}")
