"""What the delay line says about itself, read from outside: its statistics file, fresh,
and how its hold is trimmed (for `testbed up` and `status`). No testbed state here: the
callers (mpilab.testbed.net, its CLI) pass the line's pid, files and recorded trim."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path
from typing import Any


def signal_line(pid: int, sig: int) -> None:
    """Send the delay line `pid` a signal and give it time to act on it: it wakes for the
    signal and acts at its next loop turn."""
    os.kill(pid, sig)
    time.sleep(0.05)


def fresh_stats(path: Path, pid: int, wait_s: float = 2.0) -> dict[str, Any] | None:
    """The statistics of the delay line `pid` (its JSON file `path`), rewritten on SIGUSR1
    and read once changed (or after wait_s); None when unreadable."""
    try:
        before = path.stat().st_mtime_ns if path.exists() else 0
        os.kill(pid, signal.SIGUSR1)
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            if path.exists() and path.stat().st_mtime_ns != before:
                break
            time.sleep(0.01)
        data = json.loads(path.read_text())
        return data if isinstance(data, dict) else None
    except (OSError, ValueError, TypeError):
        return None


# the standard error oneway.calibrate_trim measures the trim to (more turns of the two
# routes while above it); `up` and `status` flag a trim left above it
TRIM_PRECISION_S = 1.5e-6


def trim_text(trim: dict[str, Any] | None, delay: float) -> str:
    """How the delay line's hold is trimmed, for `up` and `status` ('' when it is not)."""
    if trim and trim.get("not_measured"):
        return ("; hold not trimmed: wan.delay_trim = auto is not measured with "
                f"{trim['not_measured']}")
    if not trim or (not trim.get("measured") and not trim.get("trim_s")):
        return ""
    t = float(trim["trim_s"]) * 1e6
    hold = f"hold = delay {'-' if t >= 0 else '+'} {abs(t):.1f} us"
    if not trim.get("measured"):
        return f"; {hold} (wan.delay_trim)"
    e = float(trim["excess_s"]) * 1e6
    saw = f"add {e:.1f} us beyond" if e >= 0 else f"cross {-e:.1f} us faster than"
    se = trim.get("se_s")
    how = "" if se is None else (f"; standard error {float(se) * 1e6:.1f} us after "
                                 f"{int(trim.get('blocks', 2))} turns")
    text = (f"; {hold} (measured at up: lone UDP packets, kernel-stamped, saw the path {saw} "
            f"the undelayed route and the delay{how})")
    if se is not None and float(se) > TRIM_PRECISION_S:
        text += (f"; imprecise trim: its standard error is above {TRIM_PRECISION_S * 1e6:g} us "
                 "(a noisy machine at up; `testbed down` and `up` when it is quiet)")
    if not trim.get("steady", True):
        return (f"; hold not trimmed: the lone packets measured at up were not steady in "
                f"{int(trim.get('attempts', 1))} attempt(s) (spread "
                f"{float(trim['spread_s']) * 1e6:.1f} us; excess "
                f"{float(trim['excess_s']) * 1e6:.1f} us)")
    if trim.get("path_exceeds_delay"):
        text += (f"; the path alone is longer than {delay * 1e6:g} us: a lone packet sees "
                 f"{float(trim['excess_s']) * 1e6 - delay * 1e6:.1f} us more than asked")
    return text
