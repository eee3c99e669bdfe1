#!/usr/bin/env python3
"""Unmodified OSU and IMB programs under `testbed run --pathmig` (Open MPI, or MPICH with
--mpi mpich; 2 ranks on s0n0 and s1n0 of a 2 x 1 x 2 testbed, 1 Gbit/s, 1 ms WAN), with
one busy loop per core beside every job (--quiet: none), each busy loop in an autogroup of
its own (--hog-group own: the CPU share of a rank) or in this script's (script).

  --mode fault     osu_latency, osu_bw and IMB-MPI1 PingPong, each under `--pathmig`, with
                   a fault (--fault down or drop, s0n0's rail 0) applied when the program
                   prints the result line of --trigger bytes (never by the clock), healed
                   after the job. A run passes when the job exits 0 within its limit and
                   printed the result line of every size it was asked for.
  --mode compare   no fault: osu_latency at --lat-size (--lat-iters iterations) and osu_bw at
                   --bw-size (--bw-iters; --programs picks either or both), plain TCP and
                   `testbed run --pathmig` side by side, the order alternating run by run;
                   prints pathmig against the TCP run beside it, per pair, then per program
                   the median of the pairs, its 95% interval and two verdicts against
                   --tolerance (3%): "not slower by more than 3%" (the interval's upper
                   bound below +3%) and "within +-3%" (both bounds inside). The TCP run is
                   like for like (--tcp like-mptcp, the default: `testbed run --congestion
                   cubic --like-mptcp`, the socket settings a --pathmig job gets: cubic,
                   the routes' quickack metric, the 1 MiB default send buffer; same rail,
                   same testbed and delay line, Nagle off in both MPIs); --tcp plain is
                   `--congestion cubic` alone (delayed ACKs, the kernel's 16 KiB default
                   send buffer).

    python3 bench/pathmig_osu.py --spec examples/testbed/pathmig-2x1.toml --prefix pmo \\
        --mode fault --fault down,drop --rounds 2 --out osu-fault.json
    python3 bench/pathmig_osu.py --spec examples/testbed/pathmig-2x1.toml --prefix pmo \\
        --mode compare --rounds 5 --out osu-compare.json

The results file is rewritten after every run (a series stopped part-way keeps its runs);
--budget S starts no new run after S seconds."""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from harness import loadavg, mpilab_cmd, testbed_down, testbed_up, write_json
from mpilab.launches import os_interval
from mpilab.testbed import faults, net

OSU = "/work/peers/osu74/c/mpi/pt2pt/standard"
IMB = "/work/peers/imb/IMB-MPI1"
#: IMB built with MPICH's mpicc (--mpi mpich; OSU's programs for MPICH: --osu, built as
#: docs/pathmig-measured.md says)
IMB_MPICH = "/work/peers/imb-mpich/IMB-MPI1"
#: the delay line's SCHED_FIFO priority (above the agents'), as bench/pathmig_load.py
RT_NETWORK = 10


def programs(a: argparse.Namespace) -> dict[str, tuple[list[str], list[int]]]:
    """Each program's command line and the sizes whose result lines it must print."""
    lat = [1 << k for k in range(0, 17)]  # 1 B .. 64 KiB
    bw = [1 << k for k in range(0, 21)]  # 1 B .. 1 MiB
    imb = [0] + [1 << k for k in range(0, 17)]
    return {
        "osu_latency": ([f"{a.osu}/osu_latency", "-m", "1:65536", "-i", "200", "-x", "20"],
                        lat),
        "osu_bw": ([f"{a.osu}/osu_bw", "-m", "1:1048576", "-i", "10", "-x", "2"], bw),
        "imb_pingpong": ([a.imb, "PingPong", "-msglog", "0:16", "-iter", "200",
                          "-iter_policy", "off"], imb)}


def _hogs(n: int, own: bool = False) -> list[subprocess.Popen[bytes]]:
    """n busy loops; `own`: each in a session (so an autogroup) of its own, weighing what
    a rank weighs, else in this script's (bench/pathmig_load.py, --hog-group)."""
    return [subprocess.Popen(["sh", "-c", "while :; do :; done"], start_new_session=own)
            for _ in range(n)]


def _size_of(line: str) -> int | None:
    """The size of a result line (`SIZE VALUE...`), None for any other line."""
    f = line.split()
    if len(f) >= 2 and f[0].isdigit():
        try:
            float(f[1])
        except ValueError:
            return None
        return int(f[0])
    return None


def run_job(a: argparse.Namespace, sp: Any, pathmig: bool, prog: list[str],
            fault: str | None, trigger: int, hogs: int, k: int) -> dict[str, Any]:
    ev = Path(a.work) / f"events-{k}.jsonl"
    mode = (["--pathmig", "--pathmig-events", str(ev)] if pathmig else
            ["--congestion", "cubic", *(["--like-mptcp"] if a.tcp == "like-mptcp" else [])])
    cmd = mpilab_cmd("testbed", "run", "--prefix", a.prefix, *mode, "--mpi", a.mpi,
                     *(["--mpich-yield"] if a.mpich_yield else []),
                     "--timeout", str(a.limit), "--", *prog)
    running = _hogs(hogs, a.hog_group == "own")
    fault_t, lines = None, []
    t0 = time.monotonic()
    try:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1",
                                         OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1"))
        assert proc.stdout is not None and proc.stderr is not None
        for line in proc.stdout:
            lines.append(line)
            if fault and fault_t is None and _size_of(line) == trigger:
                fault_t = time.time()
                faults.fail(sp, "s0n0:0", fault)
        rc = proc.wait()
        err = proc.stderr.read()
    finally:
        for h in running:
            h.kill()
            h.wait()
        if fault:
            faults.heal(sp, None)
    rows = {s: ln.split()[1:] for ln in lines if (s := _size_of(ln)) is not None}
    migr = 0
    if ev.exists():
        evs = [json.loads(x) for x in ev.read_text().splitlines()]
        migr = sum(1 for e in evs if e["event"] == "state" and e["from"] == "ARMED"
                   and e["to"] == "MIGRATED")
    return {"rc": rc, "seconds": round(time.monotonic() - t0, 2), "fault_applied": fault_t
            is not None, "rows": {str(s): v for s, v in rows.items()}, "migrations": migr,
            "stderr_tail": err.strip().splitlines()[-3:]}


def fault_mode(a: argparse.Namespace, sp: Any, doc: dict[str, Any], hogs: int) -> None:
    progs = programs(a)
    k, t_start = 0, time.monotonic()
    for rnd in range(a.rounds):
        for name in a.programs:
            for fault in a.faults:
                if a.budget and time.monotonic() - t_start > a.budget:
                    doc["stopped_by_budget"] = True
                    return
                prog, sizes = progs[name]
                rec = run_job(a, sp, True, prog, fault, a.trigger, hogs, k)
                k += 1
                missing = [s for s in sizes if str(s) not in rec["rows"]]
                rec |= {"round": rnd, "program": name, "fault": fault,
                        "missing_sizes": missing,
                        "ok": rec["rc"] == 0 and not missing and rec["fault_applied"]}
                rec.pop("rows")
                doc["runs"].append(rec)
                print(f"{name} {fault}: rc {rec['rc']}, {rec['seconds']} s, fault applied "
                      f"{rec['fault_applied']}, {rec['migrations']} migration(s), missing "
                      f"sizes {missing or 'none'}", flush=True)
                write_json(a.out, doc)


def compare_mode(a: argparse.Namespace, sp: Any, doc: dict[str, Any], hogs: int) -> None:
    cases = {"osu_latency": [f"{a.osu}/osu_latency", "-m", f"{a.lat_size}:{a.lat_size}",
                             "-i", str(a.lat_iters), "-x", "100"],
             "osu_bw": [f"{a.osu}/osu_bw", "-m", f"{a.bw_size}:{a.bw_size}", "-i",
                        str(a.bw_iters), "-x", "2"]}
    cases = {name: prog for name, prog in cases.items() if name in a.programs}
    k, t_start = 0, time.monotonic()
    for rnd in range(a.rounds):
        for name, prog in cases.items():
            size = a.lat_size if name == "osu_latency" else a.bw_size
            pair: dict[str, float | None] = {}
            order = ("tcp", "pathmig") if (rnd % 2 == 0) else ("pathmig", "tcp")
            for cfg in order:
                if a.budget and time.monotonic() - t_start > a.budget:
                    doc["stopped_by_budget"] = True
                    return
                rec = run_job(a, sp, cfg == "pathmig", prog, None, 0, hogs, k)
                k += 1
                row = rec.pop("rows").get(str(size))
                value = float(row[0]) if row else None
                pair[cfg] = value
                rec |= {"round": rnd, "program": name, "config": cfg, "value": value}
                doc["runs"].append(rec)
                write_json(a.out, doc)
            if pair.get("tcp") and pair.get("pathmig"):
                # slower is positive: latency up, bandwidth down
                r = pair["pathmig"] / pair["tcp"] - 1  # type: ignore[operator]
                slower = r if name == "osu_latency" else -r
                doc["pairs"].append({"round": rnd, "program": name, "tcp": pair["tcp"],
                                     "pathmig": pair["pathmig"], "pathmig_slower": slower})
                print(f"{name} round {rnd}: tcp {pair['tcp']}, pathmig {pair['pathmig']}: "
                      f"pathmig {100 * slower:+.2f}% slower", flush=True)
                write_json(a.out, doc)


def verdicts(ci: tuple[float, float] | None, tol: float) -> dict[str, bool | None]:
    """The verdicts on the 95% interval of the median pair (pure; fractions, slower
    positive): `not_slower`, its upper bound below +tol; `within`, both bounds inside
    (-tol, +tol); None for both without an interval (too few pairs)."""
    if ci is None:
        return {"not_slower": None, "within": None}
    return {"not_slower": ci[1] < tol, "within": -tol < ci[0] and ci[1] < tol}


def _yes(v: bool | None) -> str:
    return "undecided (too few pairs)" if v is None else "yes" if v else "NO"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mode", choices=("fault", "compare"), required=True)
    ap.add_argument("--prefix", default="pmo")
    ap.add_argument("--spec", help="bring this testbed up first and down at the end")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--fault", default="down,drop", help="down, drop or down,drop")
    ap.add_argument("--programs", default="osu_latency,osu_bw,imb_pingpong")
    ap.add_argument("--trigger", type=int, default=64,
                    help="apply the fault when the result line of this size is printed")
    ap.add_argument("--lat-size", type=int, default=1024)
    ap.add_argument("--lat-iters", type=int, default=3000)
    ap.add_argument("--bw-size", type=int, default=1 << 20)
    ap.add_argument("--bw-iters", type=int, default=20, help="osu_bw's -i in --mode compare")
    ap.add_argument("--limit", type=int, default=150, help="each job's time limit (s)")
    ap.add_argument("--tcp", choices=("like-mptcp", "plain"), default="like-mptcp",
                    help="--mode compare: the TCP run with a --pathmig job's socket settings "
                    "(testbed run --like-mptcp; the default) or without (plain)")
    ap.add_argument("--tolerance", type=float, default=3.0,
                    help="--mode compare: the verdicts' bound, percent (default 3)")
    ap.add_argument("--osu", help=f"the folder of osu_latency and osu_bw (default {OSU}; "
                    "needed with --mpi mpich)")
    ap.add_argument("--imb", help=f"the IMB-MPI1 program (default {IMB}, with --mpi mpich "
                    f"{IMB_MPICH})")
    ap.add_argument("--quiet", action="store_true", help="no busy loops beside the jobs")
    ap.add_argument("--hog-group", choices=("own", "script"), default="own",
                    help="each busy loop in an autogroup of its own (the ranks' weight; the "
                    "default) or in this script's (bench/pathmig_load.py --hog-group)")
    ap.add_argument("--mpi", choices=("openmpi", "mpich"), default="openmpi",
                    help="the MPI of the programs (mpich: --osu and --imb default to the "
                    "MPICH builds) and of their launcher")
    ap.add_argument("--mpich-yield", action="store_true",
                    help="with --mpi mpich: the ranks of both sides yield when idle "
                    "(`testbed run --mpich-yield`), as Open MPI's do under mpilab's mpirun")
    ap.add_argument("--budget", type=float, default=0.0,
                    help="start no new run after this many seconds (0: no limit)")
    ap.add_argument("--work", default=None)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    a.faults = a.fault.split(",")
    if a.mpich_yield and a.mpi != "mpich":
        ap.error("--mpich-yield: only with --mpi mpich")
    if a.mpi == "mpich" and not a.osu:
        ap.error("--mpi mpich needs --osu DIR: osu_latency and osu_bw built with mpicc.mpich")
    a.osu = a.osu or OSU
    a.imb = a.imb or (IMB_MPICH if a.mpi == "mpich" else IMB)
    if any(f not in ("down", "drop") for f in a.faults):
        ap.error(f"--fault {a.fault}: down, drop or down,drop")
    a.programs = a.programs.split(",")
    bad = [p for p in a.programs if p not in ("osu_latency", "osu_bw", "imb_pingpong")]
    if bad:
        ap.error(f"--programs: unknown {', '.join(bad)} (osu_latency, osu_bw, imb_pingpong)")
    paths = {"osu_latency": f"{a.osu}/osu_latency", "osu_bw": f"{a.osu}/osu_bw",
             "imb_pingpong": a.imb}
    for p in (paths[x] for x in a.programs):  # only the programs this run starts
        if not os.access(p, os.X_OK):
            ap.error(f"{p}: no such program")
    a.work = a.work or str(Path(a.out).with_suffix(".d"))
    Path(a.work).mkdir(parents=True, exist_ok=True)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    if a.spec:
        os.environ["MPILAB_DELAYLINE_ARGS"] = (
            os.environ.get("MPILAB_DELAYLINE_ARGS", "") + f" --rt-priority {RT_NETWORK}")
        testbed_up(a.prefix, a.spec)
    hogs = 0 if a.quiet else os.cpu_count() or 2
    doc: dict[str, Any] = {"load_at_start": loadavg(), "hogs": hogs, "mode": a.mode,
                           "mpi": a.mpi, "mpich_yield": a.mpich_yield,
                           "hog_group": a.hog_group, "tcp": a.tcp,
                           "tolerance_pct": a.tolerance, "runs": [], "pairs": []}
    try:
        sp = net.current_spec(a.prefix)
        (fault_mode if a.mode == "fault" else compare_mode)(a, sp, doc, hogs)
    finally:
        write_json(a.out, doc)
        if a.spec:
            testbed_down(a.prefix)
    if a.mode == "fault":
        runs = doc["runs"]
        print(f"{len(runs)} run(s), {a.mpi}, hogs {hogs}: {sum(r['ok'] for r in runs)} ok "
              "(exit 0, every size printed, fault applied)")
        for name in a.programs:
            for fault in a.faults:
                rs = [r for r in runs if r["program"] == name and r["fault"] == fault]
                if rs:
                    print(f"  {name}, {fault}: exit status {[r['rc'] for r in rs]}, sizes "
                          f"missing {sum(len(r['missing_sizes']) for r in rs)}, seconds "
                          f"{[r['seconds'] for r in rs]}, migrations "
                          f"{[r['migrations'] for r in rs]}")
    else:
        doc["medians"] = {}
        for name in ("osu_latency", "osu_bw"):
            s = [p["pathmig_slower"] for p in doc["pairs"] if p["program"] == name]
            if s:
                # distribution-free 95% interval of the median pair (order statistics)
                ci = os_interval(s, 0.95)
                v = verdicts(ci, a.tolerance / 100)
                doc["medians"][name] = {"pairs": len(s), "median": statistics.median(s),
                                        "ci95": list(ci) if ci else None, **v}
                print(f"{name}: pathmig slower than TCP ({a.tcp}) by "
                      f"{100 * statistics.median(s):+.2f}% "
                      f"(median of {len(s)} pairs; range {100 * min(s):+.2f} to "
                      f"{100 * max(s):+.2f}%; 95% interval of the median "
                      + (f"{100 * ci[0]:+.2f} to {100 * ci[1]:+.2f}%)" if ci else
                         "none: too few pairs)"))
                print(f"{name}: not slower by more than {a.tolerance:g}%: "
                      f"{_yes(v['not_slower'])}; within +-{a.tolerance:g}%: "
                      f"{_yes(v['within'])}")
        write_json(a.out, doc)
    return 0


if __name__ == "__main__":
    sys.exit(main())
