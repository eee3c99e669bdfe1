"""Which disk regime an out-of-core wavefront run was in, and what layout gain to expect there.

The regime is derived from what the run measured, per iteration, against the disk's limits
(requests/s and bytes/s, read and write apart, as an `mpilab disk` spec states them):

- the request time  t_req = max(device read requests / read_iops, writes / write_iops),
- the byte time     t_bw  = max(device bytes read / read_bw, written / write_bw),
- the I/O bound     t_io  = max(t_req, t_bw), and the I/O share of the measured time per
  iteration: the larger of t_io and the workers' mean wait for reads, over that time (a
  stream of dependent synchronous requests waits for each one's turn at the disk, which
  can take longer than their count at the disk's rate),
- the re-read factor: device bytes read / engine bytes read (above 1: the page cache dropped
  pages between their fetch, by readahead or prefetch, and their use, so they were read
  again).

Regimes, tested in this order:

- ``not-io-bound``: the I/O share under one half (compute or dependencies decide);
- ``memory-limited``: re-read factor above 1.05 (the page cache is smaller than what is in
  flight between a fetch and its use);
- ``requests-bound``: t_req > t_bw (the paper's regime: one disk whose request cost
  dominates);
- ``bandwidth-bound``: otherwise (both layouts move the same bytes).

The gain to expect in each regime is the one measured side by side on the emulated disks
(`bench/wavefront_regimes.py`, docs/wavefront-perf.md, "Layout gain by disk regime").
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from mpilab.errors import MpilabError
from mpilab.strict_json import read_json

#: the I/O bound must be at least this share of the measured time for an I/O regime
IO_BOUND_SHARE = 0.5
#: device bytes read / engine bytes read above this: pages were read again (memory-limited)
REREAD_LIMIT = 1.05
RESULTS_LIMIT = 64 << 20  # a `mpilab-wavefront run --json` document is a few KiB

#: block / optimized time per iteration, same round, measured in each regime on the
#: emulated disks: (low, high, the disk it was measured on). docs/wavefront-perf.md,
#: "Layout gain by disk regime", gives the commands.
MEASURED_GAIN: dict[str, tuple[float, float, str]] = {
    "requests-bound": (1.70, 1.75, "200 requests/s, 150 MB/s"),
    "bandwidth-bound": (0.98, 1.02, "250 requests/s, 50 MB/s"),
    "memory-limited": (1.09, 1.10, "250 requests/s, 50 MB/s, 24 MiB memory limit"),
}

REGIMES = ("not-io-bound", "memory-limited", "requests-bound", "bandwidth-bound")


@dataclass(frozen=True)
class DiskLimits:
    """A disk's caps: requests/s and bytes/s, read and write apart."""

    read_iops: float
    write_iops: float
    read_bw: float
    write_bw: float

    def check(self) -> None:
        for k in ("read_iops", "write_iops", "read_bw", "write_bw"):
            v = getattr(self, k)
            if not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0):
                raise MpilabError(f"disk limit {k} = {v!r}: need a positive finite number")


@dataclass(frozen=True)
class RunCounters:
    """What one run measured, totals over the run (not per iteration). dev_*: what reached
    the device (the throttle's accounting); None where not measured."""

    iterations: int
    total_s: float
    bytes_read: float
    bytes_written: float
    requests_read: float
    requests_written: float
    dev_bytes_read: float | None = None
    dev_bytes_written: float | None = None
    dev_requests_read: float | None = None
    dev_requests_written: float | None = None
    io_wait_s: float | None = None  # the workers' mean time waiting for reads, whole run


@dataclass(frozen=True)
class Regime:
    """The classification of one run, the quantities per iteration it rests on."""

    name: str
    t_iter: float
    t_req: float
    t_bw: float
    io_share: float
    reread: float
    requests_from: str  # "device" or "engine" (buffered engine requests: an upper bound)

    @property
    def t_io(self) -> float:
        return max(self.t_req, self.t_bw)

    def expected_gain(self) -> str:
        """The layout gain (block / optimized time) to expect in this regime, as measured."""
        if self.name == "not-io-bound":
            return ("no layout gain to expect: the layouts differ only in their I/O, which "
                    f"bounds {self.io_share:.0%} of this run's time")
        lo, hi, disk = MEASURED_GAIN[self.name]
        return (f"optimized layout {lo:.2f}-{hi:.2f}x the block layout's speed "
                f"(measured in this regime: {disk})")

    def line(self) -> str:
        src = "" if self.requests_from == "device" else " (engine requests: an upper bound)"
        return (f"regime: {self.name} (per iteration {self.t_iter:.3g} s; requests at the "
                f"disk's rate {self.t_req:.3g} s{src}, bytes at its bandwidth "
                f"{self.t_bw:.3g} s, I/O {self.io_share:.0%} of the time, device/engine "
                f"bytes read {self.reread:.2f}); expect: {self.expected_gain()}")

    def to_dict(self) -> dict[str, Any]:
        return {"regime": self.name, "s_per_iter": self.t_iter, "t_requests": self.t_req,
                "t_bandwidth": self.t_bw, "io_share": self.io_share, "reread": self.reread,
                "requests_from": self.requests_from, "expected_gain": self.expected_gain()}


def _num(v: object, what: str, *, positive: bool = False) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise MpilabError(f"{what}: a {type(v).__name__}: need a finite number >= 0")
    if not math.isfinite(v) or v < 0:
        raise MpilabError(f"{what} = {v!r}: need a finite number >= 0")
    if positive and v <= 0:
        raise MpilabError(f"{what} = {v!r}: need a positive number")
    return float(v)


def classify(c: RunCounters, d: DiskLimits) -> Regime:
    """The regime of run c on disk d (see the module's text). Refuses counters that are not
    finite non-negative numbers, a run of no iterations or no time."""
    d.check()
    it = _num(c.iterations, "iterations", positive=True)
    total = _num(c.total_s, "total_s", positive=True)
    eng_r = _num(c.bytes_read, "bytes_read")
    eng_w = _num(c.bytes_written, "bytes_written")

    def dev(v: float | None, fallback: float, what: str) -> float:
        return fallback if v is None else _num(v, what)

    rb = dev(c.dev_bytes_read, eng_r, "dev_bytes_read")
    wb = dev(c.dev_bytes_written, eng_w, "dev_bytes_written")
    rr = dev(c.dev_requests_read, _num(c.requests_read, "requests_read"), "dev_requests_read")
    wr = dev(c.dev_requests_written, _num(c.requests_written, "requests_written"),
             "dev_requests_written")
    measured_reqs = c.dev_requests_read is not None and c.dev_requests_written is not None
    t_iter = total / it
    t_req = max(rr / d.read_iops, wr / d.write_iops) / it
    t_bw = max(rb / d.read_bw, wb / d.write_bw) / it
    wait = 0.0 if c.io_wait_s is None else _num(c.io_wait_s, "io_wait_s") / it
    share = max(t_req, t_bw, wait) / t_iter
    reread = rb / eng_r if eng_r > 0 else 1.0
    if share < IO_BOUND_SHARE:
        name = "not-io-bound"
    elif reread > REREAD_LIMIT:
        name = "memory-limited"
    elif t_req > t_bw:
        name = "requests-bound"
    else:
        name = "bandwidth-bound"
    return Regime(name, t_iter, t_req, t_bw, share, reread,
                  "device" if measured_reqs else "engine")


def counters_from_results(doc: object, source: str) -> RunCounters:
    """The counters of a `mpilab-wavefront run --json` document (its `wavefront` object);
    device bytes where the run measured them, device requests not (the engine's count)."""
    wf = doc.get("wavefront") if isinstance(doc, dict) else None
    if not isinstance(wf, dict):
        raise MpilabError(f"{source}: not a wavefront results file (no 'wavefront' object)")
    workers = wf.get("per_worker") or []
    if not isinstance(workers, list):
        raise MpilabError(f"{source}: wavefront.per_worker is not a list")
    waits = [w.get("io_wait_s") for w in workers if isinstance(w, dict)]
    ok = bool(waits) and all(not isinstance(x, bool) and isinstance(x, (int, float))
                             and math.isfinite(x) and x >= 0 for x in waits)
    vals: dict[str, Any] = {}
    for k in ("iterations", "total_s"):  # a run of no iterations or no time
        if k in wf:
            _num(wf[k], f"{source}: wavefront.{k}", positive=True)
    for k in ("iterations", "total_s", "bytes_read", "bytes_written", "requests_read",
              "requests_written"):
        if k not in wf:
            raise MpilabError(f"{source}: wavefront.{k} missing")
        vals[k] = _num(wf[k], f"{source}: wavefront.{k}")
    for k in ("dev_read_bytes", "dev_write_bytes"):
        v = wf.get(k)
        if v is not None:
            _num(v, f"{source}: wavefront.{k}")
    if not vals["total_s"] / vals["iterations"] > 0:
        raise MpilabError(f"{source}: wavefront.total_s / iterations is not a positive time "
                          "per iteration")
    return RunCounters(vals["iterations"], vals["total_s"], vals["bytes_read"],
                       vals["bytes_written"], vals["requests_read"], vals["requests_written"],
                       wf.get("dev_read_bytes"), wf.get("dev_write_bytes"),
                       io_wait_s=sum(waits) / len(waits) if ok else None)


def load_results(path: str) -> RunCounters:
    # a regular file only (a FIFO would block), RFC 8259 numbers, bounded nesting
    doc, _ = read_json(path, "wavefront results file", RESULTS_LIMIT)
    return counters_from_results(doc, path)
