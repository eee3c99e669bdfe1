"""A TCP ping-pong with no MPI and no mpilab measuring code on the path: one small message
each way, the next sent as soon as the reply is in (as a ping-pong benchmark sends), over
one connection with TCP_NODELAY, both ends polling for the reply (as MPI's ranks do).
`mpilab selftest --testbed`'s second truth for L and alpha (beside ICMP echoes): what the
emulated link adds to a TCP message, ACKs and the delay line's handling of a TCP flow
included, which an ICMP echo (one packet each way, answered by the kernel) does not meet.

    python -m mpilab.testbed.tcpping [--raise] serve PORT COUNT      (answers COUNT messages)
    python -m mpilab.testbed.tcpping [--raise] ping ADDR PORT COUNT  (prints the round trips, s)

--raise: run at nice -20, and set this session's autogroup to nice -20 (for a process started
in a session of its own, as `mpilab selftest` starts it: beside busy loops the two ends get
their CPU when a message arrives, as `mpilab-selftest link --nice` gives the MPI ranks).

The round trips are user-level times (time.perf_counter_ns around send and receive), so
each includes both ends' system calls; the truth uses the difference between the delayed and
the undelayed link, in which they cancel.
"""

from __future__ import annotations

import socket
import sys
import time

MSG = 64  # bytes per message: the size of a default ICMP echo's payload


def _recv_exact(s: socket.socket, n: int, deadline_s: float = 60.0) -> bytes:
    """n bytes, polling without blocking (MSG_DONTWAIT) as MPI's ranks poll: a process that
    sleeps in recv for the 4 ms of a delayed round trip pays a wake-up the undelayed link's
    short waits do not (a blocking version of this ping-pong read 38 us more than ICMP on the
    delayed WAN)."""
    buf = b""
    end = time.monotonic() + deadline_s
    while len(buf) < n:
        try:
            chunk = s.recv(n - len(buf), socket.MSG_DONTWAIT)
        except BlockingIOError:
            if time.monotonic() > end:
                raise TimeoutError("no reply") from None
            continue
        if not chunk:
            raise ConnectionError("peer closed the connection")
        buf += chunk
    return buf


def serve(port: int, count: int, timeout: float = 60.0, host: str = "") -> None:
    """Accepts one connection and echoes `count` messages of MSG bytes."""
    with socket.create_server((host, port), reuse_port=False) as ls:
        ls.settimeout(timeout)
        conn, _ = ls.accept()
        with conn:
            conn.settimeout(None)  # a socket with a timeout polls (sleeps) before every recv
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            for _ in range(count):
                conn.sendall(_recv_exact(conn, MSG, timeout))


def ping(addr: str, port: int, count: int, timeout: float = 60.0,
         connect_for: float = 10.0) -> list[float]:
    """`count` round trips (s) of MSG bytes to a `serve` at addr:port, retrying the connection
    for up to `connect_for` seconds (the server may still be starting)."""
    end = time.monotonic() + connect_for
    while True:
        try:
            s = socket.create_connection((addr, port), timeout=timeout)
            break
        except OSError:
            if time.monotonic() > end:
                raise
            time.sleep(0.05)
    out = []
    with s:
        s.settimeout(None)  # a socket with a timeout polls (sleeps) before every recv
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        msg = b"x" * MSG
        for _ in range(count):
            t0 = time.perf_counter_ns()
            s.sendall(msg)
            _recv_exact(s, MSG, timeout)
            out.append((time.perf_counter_ns() - t0) * 1e-9)
    return out


def raise_priority() -> None:
    """nice -20 for this process and its session's autogroup, where permitted (else as is)."""
    import os

    try:
        os.setpriority(os.PRIO_PROCESS, 0, -20)
        with open("/proc/self/autogroup", "w") as f:
            f.write("-20\n")
    except OSError:
        pass


def main(argv: list[str]) -> int:
    if argv[:1] == ["--raise"]:
        raise_priority()
        argv = argv[1:]
    try:
        if len(argv) == 3 and argv[0] == "serve":
            serve(int(argv[1]), int(argv[2]))
            return 0
        if len(argv) == 4 and argv[0] == "ping":
            for rtt in ping(argv[1], int(argv[2]), int(argv[3])):
                print(f"{rtt:.9f}")
            return 0
    except (OSError, ValueError, ConnectionError) as e:
        print(f"tcpping: {e}", file=sys.stderr)
        return 1
    print("usage: python -m mpilab.testbed.tcpping [--raise] serve PORT COUNT | "
          "[--raise] ping ADDR PORT COUNT", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
