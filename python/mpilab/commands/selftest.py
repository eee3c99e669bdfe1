"""`mpilab selftest [--np N] [--syncs N] [--inject SPEC] [--trials N] [--json FILE]`

mpilab checks itself against known truth and prints recovered against true:

* clock: a real MPI run (mpilab-selftest clock under mpirun, all ranks on this node) whose
  ranks' clocks carry injected offsets and drifts (the library's timer, mpilab/wtime.h);
  both synchronisation methods, with and without injection. Target: every error within
  5 us and inside the reported uncertainty in >= 95% of the checks.
* fit: the robust Hockney and LogGP fits on synthetic samples of links with known latency
  and rate (a 2 ms / 100 Mbit/s shaped WAN and shared memory), on a busy-machine noise
  model, with and without 1000x outliers. Target: L and alpha within 5%, G and beta within
  3%, the interval containing the truth in >= 90% of the runs.

Exit status 0 when every target is met, 1 when one is missed (the table says which), 2 on
bad input.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from mpilab.errors import MpilabError
from mpilab.fsutil import atomic_write_text
from mpilab.tools import find_tool, mpi_env, mpirun_prefix

TOOL = "mpilab-selftest"
CLOCK_ERR_TARGET_S = 5e-6
CLOCK_INSIDE_TARGET = 0.95
FIT_TOL = {"alpha": 0.05, "L": 0.05, "beta": 0.03, "G": 0.03}
FIT_COVER_TARGET = 0.90


def _tool_run(cmd: list[str], timeout: float) -> None:
    try:
        p = subprocess.run(cmd, env=mpi_env(), capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        raise MpilabError(f"{TOOL} did not finish within {timeout:.0f} s") from e
    if p.returncode != 0:
        lines = [ln for ln in (p.stderr + p.stdout).splitlines() if ln.startswith(TOOL + ":")]
        msg = lines[0] if lines else f"{TOOL} failed with exit status {p.returncode}"
        raise MpilabError(msg.removeprefix(TOOL + ": ") if lines else msg)


def _load(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise MpilabError(f"{path}: unreadable self-test output ({e})") from e
    if not isinstance(data, dict):
        raise MpilabError(f"{path}: self-test output is not a JSON object")
    return data


def clock_rows(data: dict[str, Any], label: str) -> dict[str, Any]:
    """One summary row of a clock self-test output."""
    checks = data.get("checks") or []
    errs = [abs(float(c["error_s"])) for c in checks]
    inside = sum(1 for c in checks if abs(float(c["error_s"])) <= float(c["uncertainty_s"]))
    n = len(checks)
    row = {"method": data.get("method", "?"), "inject": label, "n": n,
           "inside": inside, "median_err_s": statistics.median(errs) if errs else float("nan"),
           "max_err_s": max(errs) if errs else float("nan"),
           "median_unc_s": (statistics.median(float(c["uncertainty_s"]) for c in checks)
                            if checks else float("nan"))}
    row["met"] = (bool(n) and row["max_err_s"] <= CLOCK_ERR_TARGET_S
                  and inside >= CLOCK_INSIDE_TARGET * n)
    return row


def fit_rows(data: dict[str, Any]) -> list[dict[str, Any]]:
    """Per link, parameter and outlier setting: truth, recovered values, worst error, coverage."""
    rows = []
    for link in data.get("links", []):
        truth = link["truth"]
        for outl in (False, True):
            runs = [r for r in link["runs"] if bool(r["outliers"]) == outl]
            for name in ("alpha", "beta", "L", "G"):
                t = float(truth[name])
                vals = [float(r[name]["value"]) for r in runs]
                cover = sum(1 for r in runs if r[name]["lo"] <= t <= r[name]["hi"])
                worst = max(abs(v / t - 1) for v in vals) if vals and t else float("nan")
                old = [float(r["median_lsq"][name]) for r in runs
                       if name in r.get("median_lsq", {})]
                rows.append({"link": link["name"], "outliers": outl, "param": name, "truth": t,
                             "median": statistics.median(vals) if vals else float("nan"),
                             "worst_rel": worst, "cover": cover, "n": len(runs),
                             "old_worst_rel": (max(abs(v / t - 1) for v in old)
                                               if old and t else None),
                             "met": (worst <= FIT_TOL[name]
                                     and cover >= FIT_COVER_TARGET * len(runs))})
    return rows


def _fmt_t(s: float) -> str:
    if s != s:  # NaN
        return "-"
    if abs(s) >= 1e-3:
        return f"{s * 1e3:.3f} ms"
    if abs(s) >= 1e-6:
        return f"{s * 1e6:.3f} us"
    return f"{s * 1e9:.3f} ns"


def _param_fmt(name: str, v: float) -> str:
    return f"{v * 1e9:.4f} ns/B" if name in ("beta", "G") else _fmt_t(v)


def _run(args: argparse.Namespace) -> int:
    if args.np < 2:
        raise MpilabError(f"--np {args.np}: the clock self-test needs at least 2 ranks")
    if args.syncs < 1 or args.syncs > 10000:
        raise MpilabError(f"--syncs {args.syncs}: expected 1..10000")
    if args.trials < 1 or args.trials > 1000:
        raise MpilabError(f"--trials {args.trials}: expected 1..1000")
    tool = find_tool(TOOL)
    report: dict[str, Any] = {"clock": [], "fit": []}
    ok = True
    with tempfile.TemporaryDirectory(prefix="mpilab-selftest-") as tmp:
        out = Path(tmp) / "out.json"
        print(f"clock synchronisation, {args.np} ranks on this node, {args.syncs} syncs each "
              f"(target: |error| <= 5 us and inside the reported uncertainty in >= 95%)")
        print(f"{'method':<11} {'injected':<34} {'inside':>9} {'median|err|':>12} {'max|err|':>11} "
              f"{'median unc':>11}  target")
        for method in ("skampi", "regression"):
            for inject in (args.inject, "none"):
                cmd = [tool, "clock", "--inject", inject, "--syncs", str(args.syncs),
                       "--sync", method, "--out", str(out)]
                _tool_run(mpirun_prefix(args.np) + cmd, timeout=600)
                data = _load(out)
                row = clock_rows(data, inject)
                report["clock"].append({**row, "checks": data.get("checks", [])})
                ok &= row["met"]
                print(f"{row['method']:<11} {inject:<34} {row['inside']:>4}/{row['n']:<4} "
                      f"{_fmt_t(row['median_err_s']):>12} {_fmt_t(row['max_err_s']):>11} "
                      f"{_fmt_t(row['median_unc_s']):>11}  {'met' if row['met'] else 'MISSED'}")
        _tool_run(mpirun_prefix(1) + [tool, "fit", "--trials", str(args.trials), "--out", str(out)],
                  timeout=600)
        fit = _load(out)
    rows = fit_rows(fit)
    report["fit"] = rows
    print(f"\nmodel fits on synthetic samples of known links ({args.trials} data sets each, "
          "half the samples delayed as on a busy machine)")
    print(f"{'link':<16} {'1000x':<6} {'param':<6} {'true':>13} {'recovered':>13} {'worst':>8} "
          f"{'CI covers':>9}  {'median-LSQ':>10}  target")
    for r in rows:
        ok &= r["met"]
        old = "-" if r["old_worst_rel"] is None else f"{r['old_worst_rel'] * 100:+.1f}%"
        print(f"{r['link']:<16} {'yes' if r['outliers'] else 'no':<6} {r['param']:<6} "
              f"{_param_fmt(r['param'], r['truth']):>13} {_param_fmt(r['param'], r['median']):>13} "
              f"{r['worst_rel'] * 100:7.2f}% {r['cover']:>4}/{r['n']:<4}  {old:>10}  "
              f"{'met' if r['met'] else 'MISSED'}")
    print("\n(median-LSQ: the worst error of the former estimator, least squares on per-size "
          "medians, on the same data)")
    if args.json:
        atomic_write_text(args.json, json.dumps(report, indent=1) + "\n")
    print("self-test: all targets met" if ok else "self-test: some targets MISSED (see above)")
    return 0 if ok else 1


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("selftest",
                       help="check clock synchronisation and model fits against known truth",
                       description=__doc__,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--np", type=int, default=4, help="ranks of the clock run (default 4)")
    p.add_argument("--syncs", type=int, default=20, help="synchronisations per method (default 20)")
    p.add_argument("--inject", default="offset=10ms,drift=100ppm,seed=1",
                   help="injected clock errors (default offset=10ms,drift=100ppm,seed=1)")
    p.add_argument("--trials", type=int, default=10,
                   help="synthetic data sets per link (default 10)")
    p.add_argument("--json", help="also write everything measured to this JSON file")
    p.set_defaults(func=_run)
