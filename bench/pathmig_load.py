#!/usr/bin/env python3
"""Path migration with every core busy (one busy loop per core beside the job): false
verdicts and migrations in runs without a fault, and the longest round trip when a rail
fails. Each run is `mpilab testbed run --pathmig` of mpilab-tb-pingpong (Open MPI, or
MPICH with --mpi mpich: the tool of the MPICH build, build-mpich/bin unless MPILAB_BIN says
otherwise, started by `testbed run --mpi mpich`, the finalize keeper preloaded; --bytes per
message, 1 KiB by default, every byte checked) on a running testbed of 2
sites x 1 node x 2 rails (examples/testbed/pathmig-2x1.toml); a fault (s0n0's rail 0, link
down or silent drop) follows the job's progress line at round trip --fault-at, never the
clock, and is healed after the job.

    python3 bench/pathmig_load.py --spec examples/testbed/pathmig-2x1.toml --prefix pmg \
        --runs 6 --count 8000 --out nofault.json
    python3 bench/pathmig_load.py --spec examples/testbed/pathmig-2x1.toml --prefix pmg \
        --runs 3 --fault drop --out drop.json
    python3 bench/pathmig_load.py --spec examples/testbed/pathmig-2x1.toml --prefix pmg \
        --runs 20 --count 1500 --fault-at 500 --fault down,drop --bytes 1024,65536 --out f.json

(--min-seconds S: each job runs until S seconds after its first progress line, --count
being the most round trips: the no-fault target's runs of at least 60 s.)

(several --fault kinds and --bytes sizes: the cases interleaved run by run; the results file
is rewritten after every run, so a series stopped part-way keeps the runs it finished.)

(--spec brings the testbed up inside the measurement and down at the end; without it the
testbed of --prefix must be up. --network says how the emulated WAN's delay line is
scheduled when --spec brings it up: `rt` (the default) runs it at SCHED_FIFO priority 10
with its memory locked, so that the emulated network, like a real one, keeps forwarding
whatever the nodes' CPUs do; `shared` leaves the delay line's own default (normal
scheduling while it holds lone packets), so that the busy loops starve the network too:
healthy paths then go silent for 50-400 ms at a time.)

Per run: the agents' path-dead verdicts (path events with up false, verdict records) and
migrations (ARMED -> MIGRATED), the agents' late wake-ups (their stop records), the job's
exit status, its duration, median and longest round trip; with a fault, the longest round
trip that ended between the fault's request and 3 s after it was in place. --quiet runs
without the busy loops. --trace (root) traces the kernel's timer interrupts and scheduler
events through each run (harness.SchedTrace) and, for each pause over its target, records
the longest time inside that round trip in which no CPU logged any (machine_silent_ms): beside
busy loops a CPU that runs logs one every tick, so a silence of every CPU is the machine itself
stopped (a virtual machine whose host took its vCPUs away).

--hog-group says where the busy loops run: `own` (the default), each in a session of its
own, so in a CPU autogroup of nice 0 as each rank (whose node's MPI daemon starts it in a
session of its own): the busy loops and the ranks then share the cores equally, as on a
node whose cores another program keeps busy at the job's priority; `script`, in this
script's session: inside `mlock bench` (autogroup nice -15, weight 29154 against a rank's
1024, spread over one busy loop per core: about 14 times a rank on each core), where each
rank gets about 7% of a core and 64 KiB round trips reach 68-110 ms without any fault
(bench/pathmig_baseline.py measures both; docs/pathmig-load.md). --baseline adds, per size
and round, a plain-TCP run (cubic, no agents, no fault) whose windows are taken at the same
progress line: the loaded baseline; the summary then also counts the fault runs whose pause
exceeds that baseline's median by at most the target (docs/pathmig.md, "Targets under
load")."""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from harness import (
    REPO,
    SchedTrace,
    Watch,
    delayline_pids,
    loadavg,
    long_summary,
    mono_offset,
    mpilab_cmd,
    testbed_down,
    testbed_up,
    tool,
    write_json,
)
from mpilab.errors import MpilabError
from mpilab.launch import program_mpi_of
from mpilab.pathmig import agents
from mpilab.testbed import faults, net

#: the delay line's SCHED_FIFO priority under --network rt (above the agents' 5)
RT_NETWORK = 10
#: --watch: the round trips longer than this are attributed (s)
WATCH_OVER_S = 0.050


def _hogs(n: int, own: bool = False) -> list[subprocess.Popen[bytes]]:
    """n busy loops; `own`: each in a session, hence a CPU autogroup, of its own (nice 0),
    weighing what each rank weighs (a node's daemon starts its ranks in a session of their
    own); else in this script's session, whose autogroup inside `mlock bench` has nice -15:
    about 14 times a rank's weight on each core (docs/pathmig.md, "Targets under load")."""
    return [subprocess.Popen(["sh", "-c", "while :; do :; done"], start_new_session=own)
            for _ in range(n)]


def pause_windows(ends: list[float], rtts: list[float], fault_t: float,
                  done: float) -> dict[str, float | None]:
    """The round trips around a fault (pure; times CLOCK_REALTIME s, durations s, results
    ms): `pause_ms` the longest one ending from the fault's request to 3 s after it was in
    place (`done`); `pause_first_ms` the longest ending by 0.5 s after it was in place (the
    round trips the fault itself held: its verdict and migration take well under that);
    `noise_before_ms` the longest ending in the 3 s before the request, the job's first 50
    round trips left out (its wire-up): what the machine did to round trips without a
    fault."""
    def longest(lo: float, hi: float, skip: int = 0) -> float | None:
        w = [r for k, (t, r) in enumerate(zip(ends, rtts, strict=True))
             if k >= skip and lo <= t <= hi]
        return max(w) * 1e3 if w else None
    return {"pause_ms": longest(fault_t, done + 3.0),
            "pause_first_ms": longest(fault_t, done + 0.5),
            "noise_before_ms": longest(fault_t - 3.0, fault_t, skip=50)}




def line_counters(st: dict[str, Any] | None) -> dict[str, Any] | None:
    """The delay line's lateness counters from its statistics (pure): packets released
    1-10 ms and over 10 ms late, descheduled spin turns (counts since it started), the
    longest lateness, read lag and spin gap so far (s). None without statistics."""
    if not st:
        return None
    hist = st.get("late_hist") or [0, 0, 0, 0, 0]
    spin = st.get("spin_last") or {}
    return {"late_1_10ms": int(hist[3]), "late_over_10ms": int(hist[4]),
            "spin_gaps": int(spin.get("spin_gaps", 0)),
            "late_max_s": float(st.get("late_max_s", 0.0)),
            "read_lag_max_s": float((st.get("read_lag") or {}).get("max_s", 0.0)),
            "spin_gap_max_s": float(spin.get("spin_gap_max_s", 0.0))}


def line_delta(a: dict[str, Any] | None, b: dict[str, Any] | None) -> dict[str, Any] | None:
    """What the delay line did during a run (pure): the counts between two line_counters,
    the longest figures as they stood at its end (a maximum over the line's life: a run's
    own stall shows when it raised them)."""
    if a is None or b is None:
        return None
    return {k: (b[k] - a[k] if isinstance(b[k], int) else b[k]) for k in b}


def one(prefix: str, work: Path, k: int, count: int, fault: str | None, fault_at: int,
        hogs: int, size: int = 1024, tcp: bool = False, own: bool = True,
        mpi: str = "openmpi", min_s: float = 0.0, watch_long: bool = False,
        mpich_yield: bool = False, tracer: SchedTrace | None = None) -> dict[str, Any]:
    """One run; `tcp`: the same-load baseline, plain TCP (cubic) without agents or fault, its
    windows taken at the progress line a fault would follow; `mpi`: the launcher
    (`testbed run --mpi`); `min_s` > 0: the job goes on until min_s seconds after its first
    progress line (the ping-pong's --until; `count` is then the most round trips);
    `watch_long`: for each round trip over WATCH_OVER_S, how long each rank and the delay
    line waited for a CPU during it; `mpich_yield`: `testbed run --mpich-yield`."""
    sp = net.current_spec(prefix)
    ev, rtt = work / f"events-{k}.jsonl", work / f"rtt-{k}.log"
    until = work / f"until-{k}"
    until.unlink(missing_ok=True)
    how = (["--congestion", "cubic"] if tcp else ["--pathmig", "--pathmig-events", str(ev)])
    cmd = mpilab_cmd("testbed", "run", "--prefix", prefix, *how, "--mpi", mpi,
                     *(["--mpich-yield"] if mpich_yield else []), "--timeout", "300", "--",
                     tool("mpilab-tb-pingpong"), "--count", str(count), "--bytes", str(size),
                     "--progress", "100", "--rtt-log", str(rtt),
                     *(["--until", str(until)] if min_s > 0 else []))
    line0 = line_counters(net.delayline_stats(prefix))
    watch = None
    if watch_long:  # the ranks' and the delay line's wait for a CPU (harness.Watch)
        watch = Watch([sp.ns("s0n0"), sp.ns("s1n0")], delayline_pids(prefix))
        watch.start()
    running = _hogs(hogs, own)
    if tracer is not None:
        tracer.start()
    fault_t = None
    timer: threading.Timer | None = None
    try:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1",
                                         OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1"))
        assert proc.stdout is not None and proc.stderr is not None
        out = []
        for line in proc.stdout:
            out.append(line)
            if min_s > 0 and timer is None and " iteration " in line:
                timer = threading.Timer(min_s, until.touch)
                timer.start()
            if (fault or tcp) and fault_t is None and f"iteration {fault_at}" in line:
                fault_t = time.time()
                if fault:
                    faults.fail(sp, "s0n0:0", fault)
        rc = proc.wait()
        err = proc.stderr.read()
    finally:
        if tracer is not None:
            tracer.stop()
        if timer is not None:
            timer.cancel()
        if watch is not None:
            watch.stop.set()
            watch.join()
        for h in running:
            h.kill()
            h.wait()
        if fault:
            faults.heal(sp, None)
    evs = [json.loads(x) for x in ev.read_text().splitlines()] if ev.exists() else []
    rows = [ln.split() for ln in rtt.read_text().splitlines()] if rtt.exists() else []
    ends = [float(r[1]) for r in rows]
    rtts = [float(r[2]) for r in rows]
    before = [e for e in evs if fault_t is None or e.get("time", 0) < fault_t]
    dead, migr = agents.false_counts(evs, fault_t)
    stops = [e for e in evs if e["event"] == "stop"]
    rec: dict[str, Any] = {
        "run": k, "mpi": mpi, "bytes": size, "fault": fault, "tcp": tcp, "rc": rc,
        "verified": "verified" in "".join(out),
        "round_trips": len(rtts), "duration_s": (ends[-1] - ends[0]) if ends else None,
        "median_ms": statistics.median(rtts) * 1e3 if rtts else None,
        "max_ms": max(rtts) * 1e3 if rtts else None,
        "false_dead": dead, "false_migrations": migr,
        "late_wakeups": sum(e.get("late_wakeups", 0) for e in stops),
        "late_max_ms": max((e.get("late_max_ms", 0.0) for e in stops), default=0.0),
        "verdicts_rearmed": sum(e.get("verdicts_rearmed", 0) for e in stops),
        # silences of a healthy path that ended with a sign of life (they stretch timeouts)
        "recovered": sum(1 for e in before if e["event"] == "recovered"),
        "recovered_max_ms": max((e.get("silent_ms", 0.0) for e in before
                                 if e["event"] == "recovered"), default=0.0),
        "summary": err.strip().splitlines()[-1:],
        # the delay line during the run: packets released late, descheduled spin turns
        "delayline": line_delta(line0, line_counters(net.delayline_stats(prefix)))}
    if watch is not None:
        rec["watched_ranks"] = len(watch.ranks)
        # /proc/PID/autogroup: the CPU share groups of the ranks
        rec["rank_autogroups"] = sorted(set(watch.groups.values()))
        rec["long"] = long_summary(watch.attribution(ends[50:], rtts[50:], WATCH_OVER_S))
    if fault_t is not None and tcp:
        # the baseline: the same windows, as if a fault had been in place at once
        rec["fault_in_job"] = bool(ends) and fault_t < ends[-1]
        rec |= pause_windows(ends, rtts, fault_t, fault_t)
    elif fault_t is not None:
        # from the moment the fault was asked for to 3 s after it was in place (on a busy
        # machine applying it takes a while)
        done = max((e.get("done", e["time"]) for e in faults.read_log(sp)
                    if e["event"] == "fail" and e["time"] >= fault_t - 1), default=fault_t)
        rec["fault_apply_s"] = done - fault_t
        # a fault in place only after the job's last round trip paused nothing: no pause
        rec["fault_in_job"] = bool(ends) and done < ends[-1]
        rec |= pause_windows(ends, rtts, fault_t, done) if rec["fault_in_job"] else {
            "pause_ms": None, "pause_first_ms": None, "noise_before_ms": None}
        rec["verdict_timeout_ms"] = [e.get("timeout_ms") for e in evs
                                     if e["event"] == "verdict" and e["time"] >= fault_t]
        rec["migrations_after_fault"] = sum(1 for e in evs if e["event"] == "state" and
                                            e["from"] == "ARMED" and e["to"] == "MIGRATED" and
                                            e["time"] >= fault_t)
        over = (rec["pause_ms"] is not None and fault in TARGET_MS
                and rec["pause_ms"] > TARGET_MS[fault])
        if tracer is not None and over:
            # a pause over the target: did the whole machine stop during that round trip?
            end, r = longest_in(ends, rtts, fault_t, done + 3.0)
            off = mono_offset()
            rec["machine_silent_ms"] = tracer.silence(end - r - off, end - off) * 1e3
    return rec


def longest_in(ends: list[float], rtts: list[float], lo: float,
               hi: float) -> tuple[float, float]:
    """The round trip (its end, its length; s) that is the longest of those ending in
    [lo, hi] (pure; the window must hold one)."""
    return max(((t, r) for t, r in zip(ends, rtts, strict=True) if lo <= t <= hi),
               key=lambda x: x[1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--prefix", default="pmg")
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--count", type=int, default=23000, help="round trips per run")
    ap.add_argument("--bytes", default="1024",
                    help="message size(s) of the ping-pong, comma-separated (interleaved)")
    ap.add_argument("--fault", help="down, drop or both (down,drop: interleaved run by run)")
    ap.add_argument("--fault-at", type=int, default=2000)
    ap.add_argument("--min-seconds", type=float, default=0.0,
                    help="each job goes on until this long after its first progress line "
                    "(--count: the most round trips; 0: exactly --count)")
    ap.add_argument("--quiet", action="store_true", help="no busy loops beside the job")
    ap.add_argument("--hog-group", choices=("own", "script"), default="own",
                    help="each busy loop in a CPU autogroup of its own, weighing what a rank "
                    "weighs (the default), or all in this script's (inside mlock bench: "
                    "nice -15)")
    ap.add_argument("--baseline", action="store_true",
                    help="with --fault: also a plain-TCP run (cubic, no agents, no fault) per "
                    "size and round, its windows at the same progress line: the same-load "
                    "baseline a fault's pause is judged against")
    ap.add_argument("--mpi", choices=("openmpi", "mpich"), default="openmpi",
                    help="the MPI of the ping-pong and its launcher (mpich: the MPICH build's "
                    "tool, build-mpich/bin unless MPILAB_BIN is set)")
    ap.add_argument("--mpich-yield", action="store_true",
                    help="with --mpi mpich: the ranks yield when idle (`testbed run "
                    "--mpich-yield`), as Open MPI's do under mpilab's mpirun")
    ap.add_argument("--watch", action="store_true",
                    help="sample the ranks' and the delay line's run-queue wait every 2 ms "
                    "(a SCHED_FIFO thread) and attribute each round trip over 50 ms")
    ap.add_argument("--trace", action="store_true",
                    help="trace the kernel's timer interrupts and scheduler events (root, "
                    "tracefs) through each run; for a pause over the target, the longest time "
                    "in that round trip in which no CPU logged any (machine_silent_ms: the "
                    "machine itself stopped)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--work", default=None)
    ap.add_argument("--budget", type=float, default=0.0,
                    help="start no new run after this many seconds (0: no limit)")
    ap.add_argument("--spec", help="bring this testbed up first (with the prefix --prefix) and "
                    "down at the end: its delay line then runs beside the busy loops as the job "
                    "does")
    ap.add_argument("--network", choices=("rt", "shared"), default="rt",
                    help="with --spec: the WAN delay line at SCHED_FIFO (rt) or at its default "
                    "scheduling, competing with the busy loops (shared)")
    a = ap.parse_args()
    try:
        a.sizes = [int(x) for x in a.bytes.split(",")]
    except ValueError:
        ap.error(f"--bytes {a.bytes}: comma-separated whole numbers of bytes")
    if min(a.sizes) < 1:
        ap.error(f"--bytes {a.bytes}: at least 1")
    a.faults = a.fault.split(",") if a.fault else [None]
    if not a.min_seconds >= 0:
        ap.error(f"--min-seconds {a.min_seconds:g}: 0 or more")
    if a.baseline and not a.fault:
        ap.error("--baseline needs --fault (its windows follow the fault's progress line)")
    if a.fault and any(f not in ("down", "drop") for f in a.faults):
        ap.error(f"--fault {a.fault}: down, drop or down,drop")
    if a.trace and not a.fault:
        ap.error("--trace needs --fault (it looks into the round trips over a fault's target)")
    if a.mpich_yield and a.mpi != "mpich":
        ap.error("--mpich-yield: only with --mpi mpich")
    if a.mpi == "mpich" and not os.environ.get("MPILAB_BIN"):
        os.environ["MPILAB_BIN"] = str(REPO / "build-mpich" / "bin")
    try:  # the ping-pong of the asked MPI, checked before the testbed comes up
        prog = tool("mpilab-tb-pingpong")
    except MpilabError as e:
        ap.error(f"--mpi {a.mpi}: {e}")
    if program_mpi_of([prog]) != a.mpi:
        ap.error(f"--mpi {a.mpi}: {prog} is linked with {program_mpi_of([prog])} (set "
                 "MPILAB_BIN to a build of that MPI)")
    if not a.spec:  # without --spec the testbed of --prefix must be up already
        try:
            net.current_spec(a.prefix)
        except MpilabError as e:
            ap.error(f"--prefix {a.prefix}: {e} (or give --spec to bring one up)")
    # a TERM (a bench slot's end) still brings the testbed down and stops the busy loops
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:  # the trace's events are on from here: the finally below turns them off
        tracer = SchedTrace() if a.trace else None
    except (OSError, subprocess.CalledProcessError) as e:
        ap.error(f"--trace: the kernel's trace cannot be used here: {e}")
    try:
        if a.spec:
            if a.network == "rt":
                os.environ["MPILAB_DELAYLINE_ARGS"] = (
                    os.environ.get("MPILAB_DELAYLINE_ARGS", "")
                    + f" --rt-priority {RT_NETWORK}")
            testbed_up(a.prefix, a.spec)
        return measure(a, tracer)
    finally:
        if tracer is not None:
            tracer.close()
        if a.spec:
            testbed_down(a.prefix)


def measure(a: argparse.Namespace, tracer: SchedTrace | None = None) -> int:
    work = Path(a.work or Path(a.out).with_suffix(".d"))
    work.mkdir(parents=True, exist_ok=True)
    hogs = 0 if a.quiet else os.cpu_count() or 2
    sizes: list[int] = a.sizes
    fault_kinds: list[str | None] = a.faults
    doc: dict[str, Any] = {"load_at_start": loadavg(), "mpi": a.mpi,
                           "mpich_yield": a.mpich_yield, "hogs": hogs,
                           "count": a.count, "min_seconds": a.min_seconds,
                           "bytes": sizes, "network": a.network if a.spec else None,
                           "fault": a.fault, "baseline": a.baseline,
                           "hog_group": a.hog_group, "trace": a.trace, "runs": []}
    # (fault, plain TCP baseline): the baseline runs have no fault
    cases: list[tuple[str | None, bool]] = [(f, False) for f in fault_kinds]
    if a.baseline:
        cases.append((None, True))
    k, t_start = 0, time.monotonic()
    for _ in range(a.runs):
        # the cases interleaved run by run
        for size in sizes:
            for fault, tcp in cases:
                if a.budget and time.monotonic() - t_start > a.budget:
                    print(f"--budget {a.budget:g} s spent: {k} run(s) done", flush=True)
                    return summary(a, doc, sizes, fault_kinds)
                rec = one(a.prefix, work, k, a.count, fault, a.fault_at, hogs, size, tcp,
                          a.hog_group == "own", a.mpi, a.min_seconds, a.watch, a.mpich_yield,
                          tracer)
                k += 1
                doc["runs"].append(rec)
                print(json.dumps({x: rec[x] for x in rec if x != "summary"}), flush=True)
                # after every run: a series stopped part-way keeps the runs it finished
                write_json(a.out, doc)
    return summary(a, doc, sizes, fault_kinds)


def summary(a: argparse.Namespace, doc: dict[str, Any], sizes: list[int],
            fault_kinds: list[str | None]) -> int:
    write_json(a.out, doc)
    runs, hogs = doc["runs"], doc["hogs"]
    print(f"{len(runs)} run(s), {doc['mpi']}, hogs {hogs}: false verdicts "
          f"{sum(r['false_dead'] for r in runs)}, "
          f"false migrations {sum(r['false_migrations'] for r in runs)}, failed jobs "
          f"{sum(1 for r in runs if r['rc'] != 0 or not r['verified'])}"
          + (f", pauses ms {[round(r.get('pause_ms') or -1, 1) for r in runs if not r.get('tcp')]}"
             " (-1: the "
             "fault came after the job)"
             if a.fault else ""))
    lines = [r["delayline"] for r in runs if r.get("delayline")]
    if lines:  # was the emulated network itself ever stalled?
        print(f"delay line: {sum(x['late_over_10ms'] for x in lines)} packet(s) released over "
              f"10 ms late, {sum(x['late_1_10ms'] for x in lines)} 1-10 ms late; longest "
              f"lateness {max(x['late_max_s'] for x in lines) * 1e3:.1f} ms, read lag "
              f"{max(x['read_lag_max_s'] for x in lines) * 1e3:.1f} ms, spin gap "
              f"{max(x['spin_gap_max_s'] for x in lines) * 1e3:.2f} ms")
    longs = [x for r in runs for x in (r.get("long") or {}).get("longest", [])]
    if any(r.get("long") for r in runs):
        share = [sum(x["ranks_wait_ms"]) / x["rtt_ms"] for x in longs
                 if None not in x["ranks_wait_ms"]]
        print(f"--watch: {sum(r['long']['count'] for r in runs if r.get('long'))} round "
              f"trip(s) over {WATCH_OVER_S * 1e3:g} ms; of the (up to 5 per run) longest, "
              f"the ranks waited for a CPU "
              + (f"{min(share):.2f}-{max(share):.2f} (median {statistics.median(share):.2f}) "
                 "of each (2.0: both ranks throughout)" if share else "(not sampled)")
              + ", the delay line at most "
              f"{max((x['delayline_wait_ms'] for x in longs), default=0.0):.2f} ms")
    ds = [r["duration_s"] for r in runs if r.get("duration_s") is not None]
    if ds:  # the no-fault target asks for runs of at least 60 s
        print(f"durations {min(ds):.1f}-{max(ds):.1f} s, {sum(1 for d in ds if d >= 60)} of "
              f"{len(runs)} run(s) at least 60 s")
    for size in sizes:
        base = baseline_ms(runs, size)
        for fault in fault_kinds:
            for key in ("pause_ms", "pause_first_ms", "noise_before_ms"):
                ps = [r[key] for r in runs if r["bytes"] == size and r["fault"] == fault
                      and not r.get("tcp") and r.get(key) is not None]
                if ps:
                    print(f"{size} B, {fault}, {key}: {len(ps)} run(s), "
                          f"{min(ps):.1f}-{max(ps):.1f} ms, median {statistics.median(ps):.1f}")
            j = judge(runs, size, fault, base)
            if j is not None:
                print(f"{size} B, {fault}: longest round trip within {j['target_ms']:g} ms in "
                      f"{j['within']} of {j['runs']}; over the loaded baseline "
                      + ("(none)" if base is None else
                         f"{base:.1f} ms: added pause within {j['target_ms']:g} ms in "
                         f"{j['added_within']} of {j['runs']}"))
                st = stalled(runs, size, fault)
                if st:
                    print(f"{size} B, {fault}: --trace, the round trips over the target: "
                          + "; ".join(f"{p:.1f} ms with the whole machine silent for "
                                      f"{m:.1f} ms of it" for p, m in st))
        if base is not None:
            bs = [r["pause_ms"] for r in runs if r["bytes"] == size and r.get("tcp")
                  and r.get("pause_ms") is not None]
            print(f"{size} B, plain TCP baseline (same windows, no fault): {len(bs)} run(s), "
                  f"{min(bs):.1f}-{max(bs):.1f} ms, median {base:.1f}")
    return 0


#: the issue's targets for the longest round trip after a fault (ms)
TARGET_MS = {"down": 50.0, "drop": 100.0}


def baseline_ms(runs: list[dict[str, Any]], size: int) -> float | None:
    """The loaded baseline of a size (pure): the median, over the plain-TCP runs of the
    series, of the longest round trip in the window a fault's pause is taken from; None
    without such runs."""
    bs = [r["pause_ms"] for r in runs if r["bytes"] == size and r.get("tcp")
          and r.get("pause_ms") is not None]
    return statistics.median(bs) if bs else None


def stalled(runs: list[dict[str, Any]], size: int,
            fault: str | None) -> list[tuple[float, float]]:
    """(pause, the machine's silence in it; ms) of the case's traced runs over the target
    (pure)."""
    return [(r["pause_ms"], r["machine_silent_ms"]) for r in runs
            if r["bytes"] == size and r["fault"] == fault and "machine_silent_ms" in r]


def judge(runs: list[dict[str, Any]], size: int, fault: str | None,
          base: float | None) -> dict[str, Any] | None:
    """The fault runs of a case against the target (pure): how many have a pause within
    it, and how many add at most the target over the loaded baseline (pause - base)."""
    if fault not in TARGET_MS:
        return None
    ps = [r["pause_ms"] for r in runs if r["bytes"] == size and r["fault"] == fault
          and not r.get("tcp") and r.get("pause_ms") is not None]
    t = TARGET_MS[fault]
    return {"target_ms": t, "runs": len(ps), "within": sum(1 for p in ps if p <= t),
            "added_within": None if base is None else sum(1 for p in ps if p - base <= t)}


if __name__ == "__main__":
    sys.exit(main())
