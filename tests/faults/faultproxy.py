#!/usr/bin/env python3
"""A TCP fault proxy for one Redis endpoint (this machine has no tc netem; see FAULTS.md).

usage: faultproxy.py --upstream HOST:PORT --control PATH [--port N]

Listens on 127.0.0.1 (port N, or a free one) and forwards every connection to the upstream.
Prints "port N" on stdout once it listens. A connection counts as "pubsub" once its client
sends a SUBSCRIBE, PSUBSCRIBE or SSUBSCRIBE, else as "command", so faults can hit one kind.

The control socket (a unix socket at PATH) takes one JSON object per line and answers one:
  {"op": "set", "kind": "command"|"pubsub"|"all", "dir": "up"|"down"|"both", "mode": MODE}
      MODE: {"name": "pass"} | {"name": "delay", "ms": D, "jitter": J}
          | {"name": "blackhole"}  (bytes in that direction are dropped; sockets stay open.
            A command connection that lost bytes passes nothing more that way, even after a
            "pass": TCP drops nothing from a live stream, and after a gap a later reply would
            answer an earlier request, or Redis would read half a command. Its client times
            out and opens another. Pub/sub connections go on after a blackhole.)
      New and existing connections of that kind take the mode. "up" is client to Redis.
  {"op": "reset", "kind": K}       closes those connections with an RST (SO_LINGER 0)
  {"op": "half_close", "kind": K}  shuts down the write side towards those clients
  {"op": "stats"}                  {"ok": true, "connections": {"command": n, "pubsub": n}}
Answers are {"ok": true, ...} or {"ok": false, "error": "..."}.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import re
import socket
import struct
import sys
import time
from typing import Dict, List, Optional

KINDS = ("command", "pubsub")
SUBSCRIBE = re.compile(rb"^\*\d+\r\n\$\d+\r\n[PS]?SUBSCRIBE\r\n", re.IGNORECASE)
MAX_QUEUED = 64 * 1024 * 1024  # bytes held back by a delay, per direction


class Direction:
    """One direction of one connection: applies its mode to each chunk, in order."""

    def __init__(self, writer: asyncio.StreamWriter, mode: dict, link: "Link") -> None:
        self.writer = writer
        self.mode = mode
        self.link = link
        self.dead = False  # a command stream that lost bytes (see the module's doc)
        self.queue: asyncio.Queue = asyncio.Queue()
        self.queued = 0
        self.last_due = 0.0
        self.task = asyncio.ensure_future(self._send())

    def push(self, data: bytes) -> None:
        name = self.mode["name"]
        if self.dead:
            return
        if name == "blackhole":
            self.dead = self.link.kind == "command"
            return
        due = time.monotonic()
        if name == "delay":
            spread = float(self.mode.get("jitter", 0))
            due += max(0.0, float(self.mode["ms"]) + random.uniform(-spread, spread)) / 1000
        due = max(due, self.last_due)  # jitter never reorders the stream
        self.last_due = due
        if self.queued + len(data) > MAX_QUEUED:
            return  # bounded: a stream held back this long is as good as blackholed
        self.queued += len(data)
        self.queue.put_nowait((due, data))

    async def _send(self) -> None:
        while True:
            due, data = await self.queue.get()
            wait = due - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            self.queued -= len(data)
            try:
                self.writer.write(data)
                await self.writer.drain()
            except (ConnectionError, OSError):
                return

    def close(self) -> None:
        self.task.cancel()


class Link:
    """A client connection and its upstream connection."""

    def __init__(self, proxy: "Proxy", client_r, client_w, up_r, up_w) -> None:
        self.proxy = proxy
        self.kind = "command"
        self.client_w = client_w
        self.up_w = up_w
        self.up = Direction(up_w, proxy.mode("command", "up"), self)
        self.down = Direction(client_w, proxy.mode("command", "down"), self)
        self.tasks = [
            asyncio.ensure_future(self._pump(client_r, True)),
            asyncio.ensure_future(self._pump(up_r, False)),
        ]

    def apply_modes(self) -> None:
        self.up.mode = self.proxy.mode(self.kind, "up")
        self.down.mode = self.proxy.mode(self.kind, "down")

    async def _pump(self, reader: asyncio.StreamReader, from_client: bool) -> None:
        try:
            while True:
                data = await reader.read(65536)
                if not data:
                    break
                if from_client and self.kind == "command" and SUBSCRIBE.match(data):
                    self.kind = "pubsub"
                    self.apply_modes()
                (self.up if from_client else self.down).push(data)
        except (ConnectionError, OSError):
            pass
        self.close()

    def reset(self) -> None:
        for w in (self.client_w, self.up_w):
            sock = w.get_extra_info("socket")
            if sock is not None:
                try:
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                except OSError:
                    pass
        self.close()

    def half_close(self) -> None:
        try:
            self.client_w.write_eof()
        except (OSError, RuntimeError):
            pass

    def close(self) -> None:
        if self in self.proxy.links:
            self.proxy.links.remove(self)
        self.up.close()
        self.down.close()
        for t in self.tasks:
            t.cancel()
        for w in (self.client_w, self.up_w):
            try:
                w.close()
            except (OSError, RuntimeError):
                pass


class Proxy:
    def __init__(self, upstream_host: str, upstream_port: int) -> None:
        self.upstream = (upstream_host, upstream_port)
        self.modes: Dict[str, Dict[str, dict]] = {
            k: {"up": {"name": "pass"}, "down": {"name": "pass"}} for k in KINDS
        }
        self.links: List[Link] = []

    def mode(self, kind: str, direction: str) -> dict:
        return self.modes[kind][direction]

    async def accept(self, client_r, client_w) -> None:
        try:
            up_r, up_w = await asyncio.open_connection(*self.upstream)
        except OSError:
            client_w.close()
            return
        self.links.append(Link(self, client_r, client_w, up_r, up_w))

    def matching(self, kind: str) -> List[Link]:
        return [link for link in list(self.links) if kind == "all" or link.kind == kind]

    def control(self, request: dict) -> dict:
        op = request.get("op")
        kind = request.get("kind", "all")
        if kind not in KINDS + ("all",):
            raise ValueError(f"unknown kind {kind!r}")
        if op == "set":
            mode = request.get("mode") or {}
            if mode.get("name") not in ("pass", "delay", "blackhole"):
                raise ValueError(f"unknown mode {mode!r}")
            if mode["name"] == "delay" and not float(mode.get("ms", -1)) >= 0:
                raise ValueError("delay needs ms >= 0")
            direction = request.get("dir", "both")
            dirs = ("up", "down") if direction == "both" else (direction,)
            for k in KINDS if kind == "all" else (kind,):
                for d in dirs:
                    if d not in ("up", "down"):
                        raise ValueError(f"unknown dir {direction!r}")
                    self.modes[k][d] = dict(mode)
            for link in self.links:
                link.apply_modes()
            return {"ok": True}
        if op == "reset":
            links = self.matching(kind)
            for link in links:
                link.reset()
            return {"ok": True, "closed": len(links)}
        if op == "half_close":
            links = self.matching(kind)
            for link in links:
                link.half_close()
            return {"ok": True, "closed": len(links)}
        if op == "stats":
            return {"ok": True, "connections": {k: len(self.matching(k)) for k in KINDS}}
        raise ValueError(f"unknown op {op!r}")

    async def serve_control(self, reader, writer) -> None:
        try:
            while True:
                line = await reader.readline()
                if not line:
                    break
                try:
                    answer = self.control(json.loads(line))
                except (ValueError, KeyError, TypeError) as e:
                    answer = {"ok": False, "error": str(e)}
                writer.write((json.dumps(answer) + "\n").encode())
                await writer.drain()
        except (ConnectionError, OSError):
            pass
        writer.close()


async def main(argv: Optional[List[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--upstream", required=True, help="HOST:PORT of the Redis server")
    parser.add_argument("--control", required=True, help="path of the control unix socket")
    parser.add_argument("--port", type=int, default=0, help="port to listen on (0: a free one)")
    args = parser.parse_args(argv)
    host, _, port = args.upstream.rpartition(":")
    if not host or not port.isdigit():
        parser.error(f"--upstream must be HOST:PORT, got {args.upstream!r}")
    proxy = Proxy(host, int(port))
    server = await asyncio.start_server(proxy.accept, "127.0.0.1", args.port)
    await asyncio.start_unix_server(proxy.serve_control, path=args.control)
    print(f"port {server.sockets[0].getsockname()[1]}", flush=True)
    await server.serve_forever()


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        sys.exit(0)
