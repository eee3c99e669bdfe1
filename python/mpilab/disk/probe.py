"""Measure one emulated disk from inside its cgroup (run as a child process):

    python3 -m mpilab.disk.probe DIR MODEL READ_IOPS WRITE_IOPS READ_BW WRITE_BW SECONDS

O_DIRECT transfers (page-aligned buffers from mmap) on a probe file in DIR, several
requests in flight (threads), so the emulated device, not this process, sets the pace.
Per measurement the completion times after a warm-up (the first 40%: a throttle may let
an initial burst through) are split into 3 windows; the rates of the windows are
reported (the median is the figure; min/max show the spread). Prints one JSON object.
"""

from __future__ import annotations

import json
import mmap
import os
import random
import statistics
import sys
import threading
import time

PROBE_MB = 64
SEQ = 512 * 1024  # one bio on a loop device (128 segments of 4 KiB pages)
SMALL = 4096


def _timed(fd: int, offsets: list[int], size: int, write: bool, threads: int) -> list[float]:
    """Issue the requests (offsets in order, `threads` in flight); completion times."""
    done: list[float] = []
    lock = threading.Lock()
    nxt = [0]

    def work() -> None:
        buf = mmap.mmap(-1, size)
        buf.write(b"\x5a" * size)
        while True:
            with lock:
                i = nxt[0]
                nxt[0] += 1
            if i >= len(offsets):
                break
            if write:
                os.pwritev(fd, [buf], offsets[i])
            else:
                os.preadv(fd, [buf], offsets[i])
            t = time.monotonic()
            with lock:
                done.append(t)
        buf.close()

    ts = [threading.Thread(target=work) for _ in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return sorted(done)


def _windows(done: list[float]) -> list[float]:
    """Rates (completions per second) of 3 windows after the first 40% (a throttle lets
    the budget of its current slice, and any carried over, through at once)."""
    k = 2 * len(done) // 5
    rest = done[k:]
    w = (len(rest) - 1) // 3
    out = []
    for j in range(3):
        a, b = rest[j * w], rest[(j + 1) * w]
        if b > a:
            out.append(w / (b - a))
    return out


def _summary(rates: list[float], scale: float = 1.0) -> dict[str, float]:
    r = [x * scale for x in rates]
    return {"median": statistics.median(r), "min": min(r), "max": max(r)} if r else {}


def main(argv: list[str]) -> int:
    d, model = argv[0], argv[1]
    riops, wiops, rbw, wbw, secs = (float(x) for x in argv[2:7])
    path = os.path.join(d, f".mpilab-probe.{os.getpid()}")
    size = PROBE_MB * 1024 * 1024
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_DIRECT, 0o600)
    res: dict[str, object] = {}
    rng = random.Random(1)
    try:
        nseq = size // SEQ
        # write bandwidth: the probe file, sequentially, repeated as needed (one stream on
        # a seek disk: requests of several threads would arrive out of order and seek)
        par = 4 if model == "throttle" else 1
        want = max(20, int(wbw * secs / SEQ)) if model == "throttle" else nseq
        offs = [(i % nseq) * SEQ for i in range(want)]
        res["write_bw"] = _summary(_windows(_timed(fd, offs, SEQ, True, par)), SEQ)
        os.fsync(fd)
        want = max(20, int(rbw * secs / SEQ)) if model == "throttle" else nseq
        offs = [(i % nseq) * SEQ for i in range(want)]
        res["read_bw"] = _summary(_windows(_timed(fd, offs, SEQ, False, par)), SEQ)
        nsmall = size // SMALL
        want = max(50, int(riops * secs)) if model == "throttle" else 200
        offs = [rng.randrange(nsmall) * SMALL for _ in range(want)]
        res["read_iops"] = _summary(_windows(_timed(fd, offs, SMALL, False, 8)))
        want = max(50, int(wiops * secs)) if model == "throttle" else 200
        offs = [rng.randrange(nsmall) * SMALL for _ in range(want)]
        res["write_iops"] = _summary(_windows(_timed(fd, offs, SMALL, True, 8)))
        if model == "seek":
            res["range"] = size
            # one request at a time: sequential 4 KiB reads (no seek) against random ones
            seq = [i * SMALL for i in range(200)]
            rnd = [rng.randrange(nsmall) * SMALL for _ in range(200)]
            ts = _timed(fd, seq, SMALL, False, 1)
            tr = _timed(fd, rnd, SMALL, False, 1)
            lat_s = statistics.median([b - a for a, b in zip(ts, ts[1:], strict=False)])
            lat_r = statistics.median([b - a for a, b in zip(tr, tr[1:], strict=False)])
            res["seek"] = {"sequential_s": lat_s, "random_s": lat_r, "seek_s": lat_r - lat_s}
    finally:
        os.close(fd)
        os.unlink(path)
    print(json.dumps(res))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
