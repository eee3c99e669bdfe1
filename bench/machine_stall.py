"""Whole-machine stalls, seen from inside through the kernel's trace (tracefs).

A virtual machine can stop as a whole: the host takes every vCPU away at once. Inside, nothing
runs then, not even the timer interrupt, so no program of the guest can tell it from the
outside of a long round trip; the kernel's trace can. With the local timer interrupt and
the scheduler's switches and wake-ups traced, a CPU that runs anything (a busy loop, a
rank) logs an event at least every tick (4 ms at HZ=250); an interval in which no CPU logged
any event, beside busy loops, is an interval in which the machine did not run.

`SchedTrace` turns those events on (root; tracefs at /sys/kernel/tracing, mounted if it is
not), with CLOCK_MONOTONIC stamps (`time.monotonic()`), into a ring buffer of `mb` MiB per
CPU; `machine_silence` is the pure part: the longest interval of a span with no event on
any CPU."""

from __future__ import annotations

import os
import re
import subprocess
import time
from pathlib import Path

TRACEFS = Path("/sys/kernel/tracing")
#: the events that prove a CPU ran: its timer interrupt, the scheduler's switches, wake-ups
EVENTS = ("irq_vectors:local_timer_entry", "sched:sched_switch", "sched:sched_waking")

_LINE = re.compile(rb"\[(\d+)\]\s+\S+\s+(\d+\.\d+):")


def parse_stamps(lines: list[bytes], lo: float, hi: float) -> list[float]:
    """The stamps (s) of the trace lines (tracefs's `trace` text: `comm-pid [cpu] flags
    stamp: event: ...`) that fall in [lo, hi], any CPU, sorted (pure). Lines of another
    form (the header) are skipped."""
    out = []
    for ln in lines:
        m = _LINE.search(ln)
        if m:
            t = float(m.group(2))
            if lo <= t <= hi:
                out.append(t)
    out.sort()
    return out


def machine_silence(stamps: list[float], lo: float, hi: float) -> float:
    """The longest interval of [lo, hi] (s) with no stamp in it (pure): the span's ends count
    as its bounds, so a span without any event is silent throughout."""
    if hi <= lo:
        return 0.0
    edges = [lo, *(t for t in sorted(stamps) if lo <= t <= hi), hi]
    return max(b - a for a, b in zip(edges, edges[1:], strict=False))


class SchedTrace:
    """The kernel's trace of EVENTS for one run at a time: start() clears the buffer and turns
    tracing on, stop() off; silence(lo, hi) is machine_silence over the buffer's events in
    [lo, hi] (monotonic seconds); close() turns the events off and gives the memory back."""

    def __init__(self, mb: int = 512) -> None:
        if os.geteuid() != 0:
            raise PermissionError("tracing the kernel needs root")
        if not (TRACEFS / "trace").exists():
            subprocess.run(["mount", "-t", "tracefs", "none", str(TRACEFS)], check=True,
                           capture_output=True)
        self._w("tracing_on", "0")
        self._w("trace_clock", "mono")
        self._w("buffer_size_kb", str(mb * 1024))
        self._w("set_event", "\n".join(EVENTS) + "\n")

    @staticmethod
    def _w(name: str, text: str) -> None:
        (TRACEFS / name).write_text(text)

    def start(self) -> None:
        self._w("trace", "")
        self._w("tracing_on", "1")

    def stop(self) -> None:
        self._w("tracing_on", "0")

    def silence(self, lo: float, hi: float) -> float:
        lines = (TRACEFS / "trace").read_bytes().splitlines()
        return machine_silence(parse_stamps(lines, lo, hi), lo, hi)

    def close(self) -> None:
        self.stop()
        self._w("set_event", "")
        self._w("trace", "")
        self._w("buffer_size_kb", "1408")


def mono_offset() -> float:
    """CLOCK_REALTIME - CLOCK_MONOTONIC now (s): a realtime stamp less this is the trace's."""
    return time.time() - time.monotonic()
