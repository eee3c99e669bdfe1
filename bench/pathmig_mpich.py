#!/usr/bin/env python3
"""The pause of an MPI job on a rail fault under the path migration agents, for Open MPI
and MPICH, as a distribution over many runs (percentiles and the longest), every byte
checked. MPICH (Debian's 4.0.2, ch4:ucx, UCX's TCP transport) and Open MPI are started
exactly as `testbed run --mpi mpich|openmpi --pathmig` starts them (launch.job_prefix: the
testbed's rsh agent, the job's rail, sockets turned into MPTCP by mptcpize, cubic and the
quickack route metric). UCX binds its listening socket to one address, so the agents' joins
on the other rail need the agents' join listeners (docs/pathmig.md, MPICH). The program
is the data-checked echo ping-pong of mpilab.pathmig.echo (shared with
tests/python/test_pathmig_tail.py) compiled with the MPI's mpicc; rank 0
logs every round trip (iteration, CLOCK_REALTIME end, duration). The fault (rail 0 of the
first node) is applied when rank 0 prints the progress line of round trip --fault-at, and
healed after the run. The pause is the longest round trip that ended within --window
seconds of the fault; `near` the longest ending within 0.3 s of it (the migration's own
round trips, also for a silent drop's 50 ms verdict; less exposed to the machine's noise);
`later` is the longest round trip after the window (the machine's own hiccups, not the
migration: compare with `control`, the longest round trip of the same number of round
trips before the fault). Every run has a time limit.

    MPILAB_BIN=build/bin python3 bench/pathmig_mpich.py --mpi openmpi --reps 20 \\
        --sizes 1024,65536 --modes pathmig+down,pathmig+drop --out F.json   (root)
    ... --resume --out F.json   (another bench slot: runs appended, summary over all)
Modes: tcp; mptcp (the in-kernel path manager, `testbed run --mptcp`); pathmig (agents, no
fault); pathmig+down, pathmig+drop (a fault); pathmig-nojl+down, pathmig-nojl+drop (agents
without join listeners); suffix ~noqa: without the quickack route metric (as before the
fix, for a side-by-side comparison); suffix ~nokeep: MPICH's ranks without the finalize
keeper (src/pathmig/ucx_finalize.c; MPILAB_UCX_FINALIZE=0), as before it; suffixes combine
(pathmig+down~nokeep~noqa). UCX_* variables in the environment reach the ranks
(Hydra passes the environment on). --capture DIR keeps a tcpdump of both nodes and the
kernel's TCP/MPTCP counters (nstat) of every run whose pause is over the target. A run that
hangs leaves, before it is killed, its processes' wait channels and backtraces (gdb) and both
nodes' sockets (`ss -tainpM`) in WORK/hang-* (the run's `hang_evidence`); then the faulted
rail is healed and `ended_after_heal` says whether the job ended within 5 s.
--hogs N runs N busy loops beside the whole series (N = the core count: every core busy);
each run counts the agents' path-dead verdicts and migrations before its fault (in the
whole run without one): `false_dead`, `false_migrations`.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import re
import selectors
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from harness import nstat as node_nstat
from harness import testbed_up_in
from mpilab.fsutil import atomic_write_text
from mpilab.pathmig import agents, congestion, echo
from mpilab.pathmig import pingpong as ppm
from mpilab.testbed import faults, launch, net
from mpilab.testbed.spec import Spec
from mpilab.tools import mpi_env

TARGET = {"down": 0.05, "drop": 0.1}  # the targets for the longest round trip
HEAL_WAIT_S = 5.0  # a hung job: how long to wait for its end after healing the rail
NEAR_S = 0.3  # near_ms: the longest round trip ending this soon after the fault
HOSTS = ["s0n0", "s1n0"]


def nstat(sp: Spec, node: str) -> dict[str, int]:
    return {n: v for n, v in node_nstat(sp, node).items() if n.startswith(("Tcp", "MPTcp"))}


def ss_samples(sp: Spec, seconds: float, out: list[str]) -> None:
    """`ss -tinM` of both nodes every ~10 ms for `seconds` (each block stamped)."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        for n in HOSTS:
            p = subprocess.run(["ip", "netns", "exec", sp.ns(n), "ss", "-tinHM"],
                               capture_output=True, text=True, timeout=30)
            out.append(f"@{time.time():.6f} {n}\n{p.stdout}\n")
        time.sleep(0.01)


def epoll_sets(pid: str) -> str:
    """The fds of a process (with their socket inodes) and, for each of its epoll fds,
    the kernel's view of what it watches (/proc/PID/fdinfo: tfd, events, data)."""
    out = []
    fd_dir = Path(f"/proc/{pid}/fd")
    try:
        fds = sorted(fd_dir.iterdir(), key=lambda f: int(f.name))
    except OSError as e:
        return f"unreadable: {e}"
    for f in fds:
        try:
            target = os.readlink(f)
        except OSError:
            continue
        out.append(f"fd {f.name} -> {target}")
        if "eventpoll" in target:
            try:
                info = Path(f"/proc/{pid}/fdinfo/{f.name}").read_text()
            except OSError:
                continue
            out += [f"  {ln}" for ln in info.splitlines() if ln.startswith("tfd:")]
    return "\n".join(out)


def hang_evidence(sp: Spec, exe: Path, dest: Path) -> None:
    """Where a hung job waits, before it is killed: every process of the program (state,
    kernel wait channel), a backtrace of every thread of each (gdb, if installed), and the
    sockets of both nodes with their processes and TCP/MPTCP state (`ss -tainpM`)."""
    dest.mkdir(parents=True, exist_ok=True)
    pids = subprocess.run(["pgrep", "-f", str(exe)], capture_output=True,
                          text=True).stdout.split()
    ps = subprocess.run(["ps", "-o", "pid,ppid,stat,wchan:32,etime,args", "-p",
                         ",".join(pids) or "0"], capture_output=True, text=True).stdout
    bts = []
    for pid in pids:
        if shutil.which("gdb"):
            try:
                g = subprocess.run(["gdb", "-batch", "-p", pid, "-ex",
                                    "thread apply all bt 20"], capture_output=True,
                                   text=True, timeout=20)
                bts.append(f"== {pid}\n{g.stdout[-6000:]}")
            except subprocess.TimeoutExpired:
                bts.append(f"== {pid}: gdb timed out")
    epolls = []  # each process's epoll sets: which fds, with which events (EPOLLET is
    for pid in pids:  # 0x80000000), to tell a lost edge-triggered wakeup from no data
        epolls.append(f"== {pid}\n{epoll_sets(pid)}")
    socks = []
    for n in HOSTS:
        q = subprocess.run(["ip", "netns", "exec", sp.ns(n), "ss", "-tainpM"],
                           capture_output=True, text=True, timeout=30)
        socks.append(f"== {n}\n{q.stdout}")
    atomic_write_text(dest / "ps.txt", ps)
    atomic_write_text(dest / "backtraces.txt", "\n".join(bts))
    atomic_write_text(dest / "ss.txt", "\n".join(socks))
    atomic_write_text(dest / "epoll.txt", "\n".join(epolls))
    atomic_write_text(dest / "probe.txt", probe_stuck("\n".join(socks)))


def probe_stuck(ss_text: str) -> str:
    """For every MPTCP socket of the program holding unread data (Recv-Q > 0): what the
    kernel tells a reader (bench/pathmig_probe_fd.py: SIOCINQ, poll's level state), then
    the same after a MSG_PEEK recv from a duplicate of the fd, which runs the MPTCP receive
    path without consuming anything."""
    out = []
    probe = Path(__file__).with_name("pathmig_probe_fd.py")
    for ln in ss_text.splitlines():
        f = ln.split()
        if len(f) < 6 or f[0] != "mptcp" or not f[2].isdigit() or int(f[2]) == 0:
            continue
        for u in re.findall(r'"pp-[a-z]+",pid=(\d+),fd=(\d+)', ln):
            for extra in ([], ["peek"]):
                q = subprocess.run([sys.executable, str(probe), *u, *extra],
                                   capture_output=True, text=True, timeout=20)
                out.append(f"{ln.strip()[:90]}\n{q.stdout}{q.stderr}")
    return "\n".join(out)


def end_hung(sp: Spec, exe: Path, p: subprocess.Popen[str], faulted: bool,
             dest: Path) -> dict[str, Any]:
    """A hung job: where it waits is kept (the rail still down), then, after a fault, the
    rail is healed to see whether the job ends by itself within HEAL_WAIT_S; then it is
    killed."""
    hang_evidence(sp, exe, dest)
    out: dict[str, Any] = {"hang_evidence": str(dest), "ended_after_heal": None}
    try:  # the probe's MSG_PEEK may have woken the reader: ended before any heal?
        p.wait(timeout=HEAL_WAIT_S)
        out["ended_after_probe"] = True
        return out
    except subprocess.TimeoutExpired:
        out["ended_after_probe"] = False
    if faulted:
        faults.heal(sp, None)
        try:
            p.wait(timeout=HEAL_WAIT_S)
            out["ended_after_heal"] = True
        except subprocess.TimeoutExpired:
            out["ended_after_heal"] = False
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    return out


def window_stats(rtts: list[tuple[int, float, float]], fault_t: float | None,
                 window: float) -> dict[str, Any]:
    """pause: the longest round trip that ended within `window` s after the fault; later:
    the longest after that; control: the longest among as many round trips just before the
    fault as the pause window held."""
    if not rtts:
        return {}
    med = sorted(r for _, _, r in rtts)[len(rtts) // 2]
    out: dict[str, Any] = {"median_ms": round(med * 1e3, 4), "round_trips": len(rtts)}
    if fault_t is None:
        out["max_ms"] = round(max(r for _, _, r in rtts) * 1e3, 3)
        return out
    inside = [(i, r) for i, t, r in rtts if fault_t <= t <= fault_t + window]
    before = [r for _, t, r in rtts if t < fault_t]
    later = [r for _, t, r in rtts if t > fault_t + window]
    if inside:
        i, r = max(inside, key=lambda x: x[1])
        out |= {"pause_ms": round(r * 1e3, 3), "pause_at": i}
    near = [r for _, t, r in rtts if fault_t <= t <= fault_t + NEAR_S]
    if near:  # the round trips of the migration itself, before the machine's noise
        out["near_ms"] = round(max(near) * 1e3, 3)
    if later:
        out["later_ms"] = round(max(later) * 1e3, 3)
    if before and inside:
        out["control_ms"] = round(max(before[-len(inside):]) * 1e3, 3)
    return out


def prepare_mode(sp: Spec, mpi: str, base: str, variants: list[str]
                 ) -> tuple[list[str], dict[str, str]]:
    """The nodes set up for one mode (agents for pathmig*, no in-kernel path manager left
    over, cubic; ~noqa: no quickack metric) and the job's command prefix and environment
    (~nokeep: MPICH's ranks without the finalize keeper)."""
    agents.stop(sp)
    agents.clear_logs(sp)
    for n in HOSTS:  # no path manager left over from the previous mode
        net.sh(["ip", "netns", "exec", sp.ns(n), "sysctl", "-qw", "net.mptcp.pm_type=0"])
        net.sh(["ip", "-n", sp.ns(n), "mptcp", "endpoint", "flush"])
    if base.startswith("pathmig"):
        agents.start(sp, hosts=HOSTS,
                     extra=["--no-join-listeners"] if base == "pathmig-nojl" else [])
    env = mpi_env()
    keeper = "nokeep" not in variants  # MPICH's ranks with the finalize keeper (default)
    if not keeper:  # the library itself is not preloaded; the variable says so to a reader
        env["MPILAB_UCX_FINALIZE"] = "0"
    # every mode under the congestion control of MPTCP runs (cubic), TCP too
    cmd = launch.job_prefix(sp, 2, ",".join(HOSTS), base != "tcp", None,
                            base.startswith("pathmig"), congestion.MPTCP_DEFAULT, mpi,
                            ucx_keeper=keeper)
    if "noqa" in variants:  # as before the quickack fix
        congestion.apply(sp, HOSTS, congestion.MPTCP_DEFAULT, quickack=False)
    return cmd, env


def run(sp: Spec, exe: Path, mpi: str, mode: str, iters: int, nbytes: int, fault_at: int,
        limit: float, window: float, work: Path, capture: Path | None,
        linger_ms: float = 0.0) -> dict[str, Any]:
    mode_, *variants = mode.split("~")
    base, _, fmode = mode_.partition("+")
    pathmig = base.startswith("pathmig")
    cmd, env = prepare_mode(sp, mpi, base, variants)
    rtt_log = work / "rtt.log"
    rtt_log.unlink(missing_ok=True)
    cmd += [str(exe), str(iters), str(nbytes), str(rtt_log), str(linger_ms)]
    caps: list[subprocess.Popen[bytes]] = []
    if capture:
        capture.mkdir(parents=True, exist_ok=True)
        caps = [subprocess.Popen(["ip", "netns", "exec", sp.ns(n), "tcpdump", "-i", "any",
                                  "-nn", "-s", "200", "-B", "16384", "-w",
                                  str(work / f"{n}.pcap"), "tcp"],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                 start_new_session=True) for n in HOSTS]
        time.sleep(0.3)
    before = {n: nstat(sp, n) for n in HOSTS}
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         start_new_session=True, env=env)
    assert p.stdout is not None
    lines: list[str] = []
    fault_t: float | None = None
    sampler: threading.Thread | None = None
    ss_out: list[str] = []
    sel = selectors.DefaultSelector()
    sel.register(p.stdout, selectors.EVENT_READ)
    hung = False
    while True:
        left = t0 + limit - time.monotonic()
        if left <= 0:
            hung = True
            break
        if not sel.select(timeout=min(1.0, left)):
            if p.poll() is not None:
                break
            continue
        ln = p.stdout.readline()
        if not ln:
            break
        lines.append(ln.strip())
        if fmode and ln.strip() == f"progress {fault_at}" and fault_t is None:
            fault_t = time.time()  # taken before the fault is applied
            faults.fail(sp, "s0n0:0", fmode)
            if capture:  # the subflows' state (ss -tiM) every ~10 ms for 0.3 s
                sampler = threading.Thread(target=ss_samples, args=(sp, 0.3, ss_out))
                sampler.start()
    hang: dict[str, Any] = {}
    if hung:
        hang = end_hung(sp, exe, p, fault_t is not None,
                        work / f"hang-{mpi}-{nbytes}-{mode}-{time.time():.0f}")
    p.wait()
    if sampler:
        sampler.join()
    err = p.stderr.read() if p.stderr else ""
    faults.heal(sp, None)
    after = {n: nstat(sp, n) for n in HOSTS}
    for c in caps:
        os.killpg(c.pid, signal.SIGINT)
        c.wait()
    agents.stop(sp)
    ev = agents.events(sp) if pathmig else []
    rtts = []
    bad_so_far = -1
    if rtt_log.exists():
        for ln in rtt_log.read_text().splitlines():
            f = ln.split()
            if len(f) == 4:
                rtts.append((int(f[0]), float(f[1]), float(f[2])))
                bad_so_far = int(f[3])
    jl = [e for e in ev if e["event"] == "join_listener"]
    out: dict[str, Any] = {
        "mpi": mpi, "mode": mode, "bytes": nbytes, "rc": p.returncode, "linger_ms": linger_ms,
        "seconds": round(time.monotonic() - t0, 2), "time": time.time(),
        "pingpong_ok": f"pingpong ok: {iters}" in lines, "finalized": "finalized" in lines,
        "hung": hung, "fault": {"target": "s0n0:0", "mode": fmode} if fault_t else {},
        "migrations": sum(1 for e in ev if e["event"] == "state" and e["to"] == "MIGRATED"
                          and e.get("from") == "ARMED"),
        "armed": sum(1 for e in ev if e["event"] == "state" and e["to"] == "ARMED"),

        "join_listeners": {r: sum(1 for e in jl if e["result"] == r)
                           for r in sorted({str(e["result"]) for e in jl})},
        "failed_actions": agents.failed_actions(ev)[0] if ev else 0,
        "stderr": err.strip()[-400:]}
    # MPILAB_UCX_FINALIZE_DEBUG=1: each rank's keeper says how many events it progressed
    # after the rank's own close requests completed (answers the peer needed)
    late = [int(m) for m in re.findall(r"mpilab-ucx-finalize: pid \d+: (\d+) event", err)]
    if late:
        out["keeper_late_events"] = late
    # before the fault (the whole run without one): each is a false one
    out["false_dead"], out["false_migrations"] = agents.false_counts(ev, fault_t)
    out |= hang
    out |= window_stats(rtts, fault_t, window)
    # every round trip checked and logged (with the errors so far) before MPI_Finalize, so
    # a job that hangs in MPI_Finalize still shows whether every byte was right
    out["bytes_verified"] = len(rtts) == iters and bad_so_far == 0
    out["nstat"] = {n: {k: after[n].get(k, 0) - before[n].get(k, 0) for k in after[n]
                        if after[n].get(k, 0) != before[n].get(k, 0)} for n in HOSTS}
    out["verdict"] = ("ok" if out["pingpong_ok"] and out["finalized"] and p.returncode == 0
                      else "finalize hang" if out["pingpong_ok"] and hung
                      else "hung" if hung else "failed")
    over = fmode and out.get("pause_ms", math.inf) > TARGET[fmode] * 1e3
    if capture and (over or out["verdict"] != "ok"):  # keep the evidence
        keep = capture / f"{mpi}-{nbytes}-{mode}-{time.time():.0f}"
        keep.mkdir(parents=True, exist_ok=True)
        for f in [work / f"{n}.pcap" for n in HOSTS] + [rtt_log]:
            if f.exists():
                shutil.copy(f, keep / f.name)
        atomic_write_text(keep / "events.jsonl", "".join(json.dumps(e) + "\n" for e in ev))
        atomic_write_text(keep / "ss.txt", "".join(ss_out))
        atomic_write_text(keep / "nstat.json", json.dumps(out["nstat"], indent=1) + "\n")
        out["evidence"] = str(keep)
    return out


def pct(xs: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100) of a non-empty list."""
    s = sorted(xs)
    return s[max(0, math.ceil(q / 100 * len(s)) - 1)]


def summarize(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Per (MPI, size, mode): verdicts, and for fault modes the pauses' distribution
    (nearest-rank percentiles, the longest, how many over the target), the later
    hiccups and the controls."""
    out: dict[str, Any] = {}
    for key in sorted({(r["mpi"], r["bytes"], r["mode"]) for r in runs}):
        rs = [r for r in runs if (r["mpi"], r["bytes"], r["mode"]) == key]
        cell: dict[str, Any] = {"runs": len(rs),
                                "verdicts": {v: sum(1 for r in rs if r["verdict"] == v)
                                             for v in sorted({r["verdict"] for r in rs})},
                                "median_rtt_ms": round(sorted(
                                    r["median_ms"] for r in rs if "median_ms" in r)[
                                    len(rs) // 2], 4) if all("median_ms" in r for r in rs)
                                else None,
                                "false_dead": sum(r.get("false_dead", 0) for r in rs),
                                "false_migrations": sum(r.get("false_migrations", 0)
                                                        for r in rs),
                                "migrations": sum(r["migrations"] for r in rs),
                                "exit_0": sum(1 for r in rs if r["rc"] == 0)}
        kept = [r for r in rs if "keeper_late_events" in r]
        if kept:  # runs in which a rank's keeper answered its peer after its own close
            late = sum(1 for r in kept if any(r["keeper_late_events"]))
            cell["keeper_answered_late"] = f"{late} of {len(kept)}"
        heal = [r["ended_after_heal"] for r in rs if r.get("ended_after_heal") is not None]
        if heal:  # hung runs: how many ended once the faulted rail was healed
            cell["hung_ended_after_heal"] = f"{sum(heal)} of {len(heal)}"
        ps = [r["pause_ms"] for r in rs if "pause_ms" in r]
        fmode = key[2].split("~")[0].partition("+")[2]
        if ps:
            cell["pause_ms"] = {"p50": pct(ps, 50), "p90": pct(ps, 90), "p95": pct(ps, 95),
                                "max": max(ps), "min": min(ps)}
            cell["over_target"] = sum(1 for p in ps if p > TARGET[fmode] * 1e3)
            cell["target_ms"] = TARGET[fmode] * 1e3
            cell["all_verified"] = all(r["verdict"] == "ok" for r in rs)
            cell["bytes_verified"] = sum(1 for r in rs if r.get("bytes_verified"))
            ns = [r["near_ms"] for r in rs if "near_ms" in r]
            if ns:
                cell["near_ms"] = {"p50": pct(ns, 50), "p90": pct(ns, 90), "p95": pct(ns, 95),
                                   "max": max(ns), "min": min(ns)}
                cell["near_over_target"] = sum(1 for p in ns if p > TARGET[fmode] * 1e3)
            lt = [r["later_ms"] for r in rs if "later_ms" in r]
            ct = [r["control_ms"] for r in rs if "control_ms" in r]
            if lt:
                cell["later_max_ms"] = max(lt)
            if ct:
                cell["control_max_ms"] = max(ct)
        out[" ".join(map(str, key))] = cell
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mpi", choices=sorted(echo.MPICC), default="mpich")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--iters", type=int, default=0,
                    help="round trips per run (default: 3000 up to 4 KiB, else 1000)")
    ap.add_argument("--bytes", type=int, default=None, help="one message size (old spelling)")
    ap.add_argument("--sizes", default="65536", help="message sizes, comma-separated")
    ap.add_argument("--fault-at", type=int, default=0,
                    help="round trip of the fault (default: a third of --iters); a multiple "
                         "of 10")
    ap.add_argument("--window", type=float, default=1.0,
                    help="the pause is the longest round trip ending this many s after the "
                         "fault")
    ap.add_argument("--limit", type=float, default=60.0, help="seconds per run")
    ap.add_argument("--modes", default="tcp,pathmig,pathmig+down,pathmig+drop")
    ap.add_argument("--budget", type=float, default=0,
                    help="start no new run after this many seconds (0: no limit)")
    ap.add_argument("--capture", help="keep tcpdump and counters of slow runs here")
    ap.add_argument("--linger", type=float, default=0.0,
                    help="ms rank 0 keeps progressing before MPI_Finalize (> 0: MPICH 4.0's "
                         "finalize race at will, see mpilab.pathmig.echo)")
    ap.add_argument("--resume", action="store_true",
                    help="append to the runs already in --out (another bench slot)")
    ap.add_argument("--hogs", type=int, default=0,
                    help="busy loops (one per core: the core count) beside the whole series")
    ap.add_argument("--prefix", default="pmmpi")
    ap.add_argument("--work", default="/tmp/pathmig-mpich")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    if a.hogs < 0:
        ap.error(f"--hogs {a.hogs}: 0 or more")
    sizes = [a.bytes] if a.bytes else [int(x) for x in a.sizes.split(",")]
    if a.fault_at % 10:
        sys.exit("--fault-at: a multiple of 10 (the program reports every 10 round trips)")
    if a.capture and not shutil.which("tcpdump"):
        sys.exit("--capture: tcpdump not found (apt-get install tcpdump)")
    out = Path(a.out)
    doc: dict[str, Any] = {"runs": [], "slots": []}
    if a.resume and out.exists():
        doc = json.loads(out.read_text())
    with open("/proc/loadavg") as f:
        doc["slots"].append({"start": time.strftime("%Y-%m-%d %H:%M:%S"),
                             "loadavg": f.read().split()[:3], "mpi": a.mpi,
                             "argv": sys.argv[1:], "hogs": a.hogs})
    work = Path(a.work)
    work.mkdir(parents=True, exist_ok=True)
    exe = echo.build(work, a.mpi)
    sp = testbed_up_in(work, a.prefix, ppm.SPEC_2X1)
    t_start = time.monotonic()
    # a TERM (a bench slot's end) still stops the busy loops and brings the testbed down
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    hogs = [subprocess.Popen(["sh", "-c", "while :; do :; done"]) for _ in range(a.hogs)]
    try:
        for rep in range(a.reps):
            if a.budget and time.monotonic() - t_start > a.budget:
                print(f"budget of {a.budget:g} s spent: {rep} repetition(s)", flush=True)
                break
            for nbytes in sizes:
                iters = a.iters or (3000 if nbytes <= 4096 else 1000)
                fault_at = a.fault_at or (iters // 30) * 10
                for mode in a.modes.split(","):
                    rec = run(sp, exe, a.mpi, mode, iters, nbytes, fault_at, a.limit,
                              a.window, work, Path(a.capture) if a.capture else None,
                              a.linger)
                    doc["runs"].append(rec | {"rep": rep})
                    print(json.dumps({k: v for k, v in rec.items() if k != "nstat"}),
                          flush=True)
    finally:
        for h in hogs:
            h.kill()
            h.wait()
        agents.stop(sp)
        net.down(a.prefix)
        doc["summary"] = summarize(doc["runs"])
        atomic_write_text(out, json.dumps(doc) + "\n")
    print(json.dumps(doc["summary"], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
