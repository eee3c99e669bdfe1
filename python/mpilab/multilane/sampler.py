"""Sample interface byte counters at a fixed interval until SIGTERM, then write JSON.

Run inside the testbed's router namespace (`ip netns exec P-wan python3 -m
mpilab.multilane.sampler ...`): the router's interface `sS<rail>` sends into site S, so its
tx_bytes counts the WAN traffic arriving at that site (Ethernet frames, the unit the WAN
shaping counts). Each sample is (time.time(), counter per interface).
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import time
from pathlib import Path
from types import FrameType

from mpilab import argtypes
from mpilab.fsutil import atomic_write_text


def read_counter(iface: str) -> int:
    return int(Path(f"/sys/class/net/{iface}/statistics/tx_bytes").read_text())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="mpilab.multilane.sampler")
    ap.add_argument("--iface", action="append", required=True)
    ap.add_argument("--interval", type=argtypes.duration, default=0.005)
    ap.add_argument("--out", required=True)
    ap.add_argument("--limit", type=argtypes.duration, default=3600.0,
                    help="stop after this many seconds")
    a = ap.parse_args(argv)
    if not 0.0005 <= a.interval <= 1.0:
        sys.stderr.write(f"sampler: --interval {a.interval}: need 0.0005..1 s\n")
        return 2
    try:
        for i in a.iface:
            read_counter(i)
    except (OSError, ValueError) as e:
        sys.stderr.write(f"sampler: {e}\n")
        return 2
    stop = False

    def on_term(signum: int, frame: FrameType | None) -> None:
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, on_term)
    t: list[float] = []
    counts: dict[str, list[int]] = {i: [] for i in a.iface}
    start = time.monotonic()
    nxt = start
    announced = False
    while not stop and time.monotonic() - start < a.limit:
        t.append(time.time())
        for i in a.iface:
            counts[i].append(read_counter(i))
        if not announced:  # the caller waits for this line: the handler is in place
            sys.stdout.write("sampling\n")
            sys.stdout.flush()
            announced = True
        nxt += a.interval
        delay = nxt - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        else:
            nxt = time.monotonic()
    atomic_write_text(a.out, json.dumps({"interval": a.interval, "t": t, "tx_bytes": counts}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
