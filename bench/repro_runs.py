"""One run of a 2-rank ping-pong (mpilab-bench, or `mpilab bench --launches N`) read back
per size: median, interval, repetitions, flags, pinning. A library for
bench/reproducibility.py and bench/min_time_coverage.py (no main of its own)."""

from __future__ import annotations

import json
import math
import subprocess
from pathlib import Path
from typing import Any

from harness import mpi_env, mpilab_cmd, mpirun
from mpilab.launches import os_interval
from mpilab.pair_matrix import expand_all


def median_ci(samples: list[float], cl: float) -> tuple[float, float]:
    """Order-statistic interval of the median (as mpilab_median_ci), for files that lack it."""
    return os_interval(samples, cl) or (math.nan, math.nan)


def one_run(bench: str, btl: str, sizes: str, out: Path, extra: list[str],
            op: str = "p2p", wrap: list[str] | None = None) -> dict[int, Any]:
    cmd = ((wrap or []) + mpirun(2, ["--mca", "btl", btl])
           + [bench, "--ops", op, "--sizes", sizes, "--quiet", "--out", str(out)] + extra)
    p = subprocess.run(cmd, env=mpi_env(), capture_output=True, text=True, timeout=900)
    if p.returncode != 0:
        raise SystemExit(f"failed ({p.returncode}): {' '.join(cmd)}\n{p.stderr}")
    doc = json.loads(out.read_text())
    placed = (doc["provenance"].get("placement") or {}).get("pinned")
    res = {}
    for m in expand_all(doc["measurements"]):  # a p2p pair matrix pair by pair
        if m["op"] != op:
            continue
        st = m["stats"]
        cl = m.get("precision", {}).get("cl", 0.95)
        if st.get("med_lo") is not None and st.get("med_hi") is not None:
            lo, hi = st["med_lo"], st["med_hi"]
        else:
            valid = m.get("valid", [True] * len(m["samples"]))
            ok = [s for s, v in zip(m["samples"], valid, strict=True) if v]
            lo, hi = median_ci(ok, cl)
        res[m["bytes"]] = {"median": st["median"], "lo": lo, "hi": hi, "reps": st["reps"],
                           "converged": st.get("converged"), "flags": m.get("flags", []),
                           "pinned": placed}
    return res


def launches_run(btl: str, sizes: str, out: Path, extra: list[str], op: str,
                 launches: int, wrap: list[str]) -> dict[int, Any]:
    """One run of `mpilab bench --launches N` (the Python launcher; the transport through
    the launcher's --mca btl), read back from its merged file."""
    cmd = wrap + mpilab_cmd("bench", "--np", "2", "--launches", str(launches),
                            "--quiet-launches", "--launcher-arg=--mca", "--launcher-arg=btl",
                            f"--launcher-arg={btl}", "--out", str(out), "--", "--ops", op,
                            "--sizes", sizes, "--quiet", *extra)
    p = subprocess.run(cmd, env=mpi_env(), capture_output=True, text=True, timeout=900)
    if p.returncode != 0:
        raise SystemExit(f"failed ({p.returncode}): {' '.join(cmd)}\n{p.stderr}")
    doc = json.loads(out.read_text())
    res = {}
    for m in expand_all(doc["measurements"]):  # a p2p pair matrix pair by pair
        if m["op"] != op:
            continue
        st, la = m["stats"], m["launches"]
        res[m["bytes"]] = {"median": st["median"], "lo": st["med_lo"], "hi": st["med_hi"],
                           "reps": st["reps"], "converged": st.get("converged"),
                           "flags": m.get("flags", []), "pinned": None,
                           "launch_medians": la["medians"]}
        ci = la.get("ci_half_s")  # the confidence interval of the level, beside the
        if ci is not None and st["median"] > 0:  # prediction interval (launches.py)
            h = ci / st["median"]
            res[m["bytes"]].update(ci_lo=st["median"] * math.exp(-h),
                                   ci_hi=st["median"] * math.exp(h))
    pinned = 0
    for f in doc["launches"]["files"]:
        d = json.loads(Path(f).read_text())
        pinned += bool((d["provenance"].get("placement") or {}).get("pinned"))
    for r in res.values():
        r["pinned"] = pinned == launches
    return res
