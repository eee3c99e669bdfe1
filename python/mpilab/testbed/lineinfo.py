"""What the delay line says about itself, read from outside: its statistics file, fresh,
and how its hold is trimmed (for `testbed up` and `status`). No testbed state here: the
callers (mpilab.testbed.net, its CLI) pass the line's pid, files and recorded trim."""

from __future__ import annotations

import json
import os
import signal
import statistics
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


#: how far from the configured delay a lone packet's one-way time across the delayed WAN
#: (beyond the undelayed route's) may be before the line is said not to hold the delay:
#: 10 us or 1% of the delay, the larger. `up` flags a line beyond it (delay_truth in the
#: state, `status`, results of `mpilab bench --testbed`); `selftest --testbed` fails on it.
DELAY_TOLERANCE_S, DELAY_TOLERANCE_REL = 10e-6, 0.01


def delay_tolerance(delay: float) -> float:
    """The tolerance of a configured one-way delay `delay` (s): DELAY_TOLERANCE_S or
    DELAY_TOLERANCE_REL of the delay, the larger."""
    return max(DELAY_TOLERANCE_S, DELAY_TOLERANCE_REL * delay)


def delay_verdict(trim: dict[str, Any] | None, delay: float) -> dict[str, Any]:
    """Whether the delay line holds `delay` for a lone packet, judged from the calibration
    `up` measured (its recorded `trim`, oneway.calibrate_trim's result). `held`: True
    within the tolerance, False beyond it, None when up measured nothing (a configured
    wan.delay_trim or per-node delays: `selftest --testbed` measures it). `off_s`: what a
    lone packet sees beyond the delay once the trim is taken off the hold (the measured
    excess minus the trim). Not steady samples (an interquartile range above the
    tolerance) are a line that does not hold the delay either: its packets vary more."""
    tol = delay_tolerance(delay)
    out: dict[str, Any] = {"delay_s": delay, "tolerance_s": tol, "held": None, "off_s": None,
                           "reason": "not measured at up"}
    if not trim or not trim.get("measured"):
        if trim and trim.get("not_measured"):
            out["reason"] = f"not measured at up ({trim['not_measured']})"
        elif trim:
            out["reason"] = "not measured at up (wan.delay_trim configured)"
        return out
    off = float(trim["excess_s"]) - float(trim.get("trim_s") or 0.0)
    spread, se = float(trim.get("spread_s") or 0.0), trim.get("se_s")
    out["off_s"] = off
    late = f"{abs(off) * 1e6:.1f} us {'late' if off >= 0 else 'early'}"
    if not trim.get("steady", True) or spread > tol:
        out.update(held=False, reason=(
            f"lone packets were not steady at up (spread {spread * 1e6:.1f} us in "
            f"{int(trim.get('attempts', 1))} attempt(s)) and arrived {late}"))
    elif abs(off) > tol:
        out.update(held=False, reason=f"lone packets arrive {late} after the trim")
    elif se is not None and float(se) > tol:
        out.update(held=False, reason=(f"the trim's standard error {float(se) * 1e6:.1f} us "
                                       "is above the tolerance"))
    else:
        out.update(held=True, reason=f"lone packets arrive {late} after the trim")
    return out


def verdict_warning(v: dict[str, Any] | None) -> str:
    """One line for a delay line that does not hold its delay ('' when it does or when it
    was not measured)."""
    if not v or v.get("held") is not False:
        return ""
    return (f"the delay line does not hold the configured {float(v['delay_s']) * 1e6:g} us "
            f"within {float(v['tolerance_s']) * 1e6:g} us: {v['reason']} (delay_off)")


def verdict_text(v: dict[str, Any] | None) -> str:
    """The verdict for `status`: held, NOT held (with the reason) or not measured."""
    if not v:
        return "not judged (a testbed made before the check)"
    tol = f"tolerance {float(v['tolerance_s']) * 1e6:g} us"
    if v.get("held") is None:
        return f"{v['reason']} ({tol}; `mpilab selftest --testbed` measures it)"
    if v["held"]:
        return f"held at up ({v['reason']}; {tol})"
    return f"NOT HELD at up: {v['reason']} ({tol}; flag delay_off)"


def lone_check(delay: float, base: tuple[list[float], list[float]],
               delayed: tuple[list[float], list[float]]) -> dict[str, Any]:
    """The link against its configured delay from lone packets (oneway.udp_oneway, both
    directions) across the undelayed and the delayed WAN: per direction, the median
    delayed one-way time minus the undelayed one's minus `delay`; `held` when both are
    within delay_tolerance(delay)."""
    med = statistics.median
    off = [med(delayed[i]) - med(base[i]) - delay for i in (0, 1)]
    tol = delay_tolerance(delay)
    return {"delay_s": delay, "tolerance_s": tol, "off_fwd_s": off[0], "off_back_s": off[1],
            "count": min(len(v) for v in (*base, *delayed)),
            "held": all(abs(o) <= tol for o in off)}
