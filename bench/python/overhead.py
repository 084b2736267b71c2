"""Client overhead and tails: each call timed right after a raw-socket PING, less the server's own time.

A call's latency over loopback is the round trip, the server's work and the client's own work. The
round trip is measured by a PING over a bare socket, interleaved with the calls (one PING, one call,
and again), so both see the same machine at the same moment. The server's work is `INFO commandstats`
over the same loop, divided by the calls: the µs of the commands the client sent, not of those a
script ran inside them (commandstats counts both, and a script's µs already holds its commands').
A short MONITOR sample before the loop tells which is which. What is left is the client's:

    overhead(p) = call latency at p − PING latency at p − server µs per call

The same loop gives each path's latency histogram: the percentile ladder and the share of calls in
each latency band. The Node and Rust benches compute the same figures the same way.
"""

from __future__ import annotations

import socket
import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

CALLS = 20_000  # pairs per path, unless the time bound ends the loop first
SECONDS = 4.0
WARMUP_CALLS = 2_000
LADDER = (0.50, 0.90, 0.99, 0.999)
BANDS_US = (50, 100, 200, 400, 800)  # band edges; the last band is "above 800 µs"
NOT_SERVER_WORK = ("ping", "config|resetstat", "config", "info")
MONITOR_CALLS = 200  # calls sampled by MONITOR to tell the client's commands from a script's


@dataclass
class Tails:
    """One path's call latencies, the PING latencies interleaved with them, and its server µs per call."""

    name: str
    calls_ns: List[int]
    pings_ns: List[int]
    server_us: float

    def call_us(self, fraction: float) -> float:
        return percentile_us(self.calls_ns, fraction)

    def ping_us(self, fraction: float) -> float:
        return percentile_us(self.pings_ns, fraction)

    def overhead_us(self, fraction: float) -> float:
        """The client's own µs at `fraction`: the call less the round trip and the server's work."""
        return self.call_us(fraction) - self.ping_us(fraction) - self.server_us

    def band_shares(self) -> List[float]:
        """The share of calls in each band of BANDS_US (and one more above the last edge)."""
        counts = [0] * (len(BANDS_US) + 1)
        for latency in self.calls_ns:
            microseconds = latency / 1000.0
            counts[next((i for i, edge in enumerate(BANDS_US) if microseconds <= edge), len(BANDS_US))] += 1
        return [count / len(self.calls_ns) for count in counts]


def percentile_us(samples_ns: Sequence[int], fraction: float) -> float:
    ordered = sorted(samples_ns)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))] / 1000.0


class RawConnection:
    """A bare RESP socket: the PING floor, and the stats commands, with no client library around them."""

    def __init__(self, port: int) -> None:
        self.socket = socket.create_connection(("127.0.0.1", port))
        self.socket.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def ping(self) -> None:
        self.socket.sendall(b"PING\r\n")
        reply = self.socket.recv(64)
        if reply != b"+PONG\r\n":
            raise RuntimeError(f"PING answered {reply!r}")

    def command(self, *words: str) -> bytes:
        """Sends one command and returns its whole reply (a status line or one bulk string)."""
        encoded = [word.encode() for word in words]
        request = b"*%d\r\n" % len(encoded) + b"".join(b"$%d\r\n%s\r\n" % (len(word), word) for word in encoded)
        self.socket.sendall(request)
        reply = self.socket.recv(65536)
        if reply.startswith(b"$"):
            header, _, rest = reply.partition(b"\r\n")
            length = int(header[1:])
            while len(rest) < length + 2:
                rest += self.socket.recv(65536)
            return rest[:length]
        if reply.startswith(b"-"):
            raise RuntimeError(f"{' '.join(words)} answered {reply!r}")
        return reply

    def server_usec(self) -> Dict[str, Tuple[int, int]]:
        """Each command's (calls, usec) since the last reset, from `INFO commandstats`."""
        stats: Dict[str, Tuple[int, int]] = {}
        for line in self.command("INFO", "commandstats").decode().splitlines():
            if not line.startswith("cmdstat_"):
                continue
            name, _, fields = line[len("cmdstat_"):].partition(":")
            values = dict(item.split("=", 1) for item in fields.split(","))
            stats[name] = (int(values["calls"]), int(values["usec"]))
        return stats

    def close(self) -> None:
        self.socket.close()


def sent_shares(call: Callable[[], Any], port: int) -> Dict[str, float]:
    """For each command MONITOR saw during MONITOR_CALLS calls, the share of its runs the client sent
    (the rest ran inside a script: MONITOR marks those `[0 lua]`)."""
    monitor, marker = RawConnection(port), RawConnection(port)
    try:
        if monitor.command("MONITOR") != b"+OK\r\n":
            raise RuntimeError("MONITOR did not answer +OK")
        for _ in range(MONITOR_CALLS):
            call()
        marker.command("ECHO", "end of sample")  # seen last: all the calls' lines came before it
        text = b""
        while b'"ECHO" "end of sample"' not in text:
            text += monitor.socket.recv(65536)
    finally:
        monitor.close()
        marker.close()
    sent: Dict[str, int] = {}
    seen: Dict[str, int] = {}
    for line in text.decode(errors="replace").splitlines():
        origin, _, command = line.partition("] ")
        if not command.startswith('"'):
            continue
        name = command[1:].split('"', 1)[0].lower()
        seen[name] = seen.get(name, 0) + 1
        if not origin.endswith(" lua"):
            sent[name] = sent.get(name, 0) + 1
    return {name: sent.get(name, 0) / count for name, count in seen.items()}


def measure(name: str, call: Callable[[], Any], port: int) -> Tails:
    """Times CALLS calls of `call`, each right after a raw PING, and reads the server's µs for them."""
    floor = RawConnection(port)
    stats = RawConnection(port)
    try:
        for _ in range(WARMUP_CALLS):
            floor.ping()
            call()
        shares = sent_shares(call, port)
        stats.command("CONFIG", "RESETSTAT")
        calls: List[int] = []
        pings: List[int] = []
        deadline = time.perf_counter_ns() + int(SECONDS * 1e9)
        while len(calls) < CALLS:
            before = time.perf_counter_ns()
            floor.ping()
            middle = time.perf_counter_ns()
            call()
            after = time.perf_counter_ns()
            pings.append(middle - before)
            calls.append(after - middle)
            if after > deadline:
                break
        # A command the sample never saw is rare enough to count whole, as the client's.
        usec = sum(spent * shares.get(command.split("|")[0], 1.0)
                   for command, (_, spent) in stats.server_usec().items() if command not in NOT_SERVER_WORK)
        return Tails(name, calls, pings, usec / len(calls))
    finally:
        floor.close()
        stats.close()


def ladder_header() -> List[str]:
    bands = [f"≤{edge}" for edge in BANDS_US] + [f">{BANDS_US[-1]}"]
    return (["path"] + [f"p{fraction * 100:g}" for fraction in LADDER] + ["max", "PING p50", "PING p99", "server",
            "overhead p50", "overhead p99"] + [f"{band} µs" for band in bands])


def ladder_row(tails: Tails) -> List[str]:
    """One markdown row: the call's ladder, the PING's p50/p99, the server µs, the overhead and the bands."""
    ladder = [f"{tails.call_us(fraction):.1f}" for fraction in LADDER]
    ladder.append(f"{max(tails.calls_ns) / 1000.0:.0f}")
    floor = [f"{tails.ping_us(0.50):.1f}", f"{tails.ping_us(0.99):.1f}", f"{tails.server_us:.1f}"]
    overhead = [f"{tails.overhead_us(0.50):.1f}", f"{tails.overhead_us(0.99):.1f}"]
    bands = [f"{share:.1%}" for share in tails.band_shares()]
    return [tails.name] + ladder + floor + overhead + bands


def best_peer(peers: Sequence[Tails], fraction: float) -> Optional[Tails]:
    """The peer with the smallest overhead at `fraction`."""
    return min(peers, key=lambda tails: tails.overhead_us(fraction), default=None)
