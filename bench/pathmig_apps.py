#!/usr/bin/env python3
"""Application run time with path migration (the paper's Fig. 9-12): the same MPI job
over plain TCP (no agent), under `testbed run --pathmig` without a fault, and with one
fault at a random moment (seeded: a random node's rail 0, down or silent drop, healed
--heal s later), interleaved run by run. The fault is applied a random time after the job
is wired up (the agents report its first ARMED connection), never by the clock before:
between 10% and 60% of the warm-up run's duration. The TCP runs use the same congestion
control as the --pathmig runs (cubic; see docs/pathmig.md), so only MPTCP and the agents
differ. Times: `wall_s` is the whole `testbed run` (job start, agents' start and stop);
`app_s` the wavefront's own "total" (rank 0, first to last iteration).

Resumable (`--resume`): rounds are appended to --out (rewritten after every round), so
the issue's 16 rounds of >= 60 s runs can be collected over several bench slots of
<= 600 s; `--budget` stops before a round that would not fit. In each round the
configurations run back to back, their order rotated round by round (no configuration is
always first); compare them paired by round. Configurations: `tcp`, `mptcp` (MPTCP with
the kernel's path manager, no agent), `agent`, `agent+fault`, and `old`/`old+fault` (the
agent binary given by --old-agent, for a
before/after comparison in one run). Every agent runs under /usr/bin/time: per run the
agents' CPU time (user+sys) and voluntary context switches (wake-ups) are recorded, with
the agents' own counters (probes sent, messages received) where the agent logs them, and
the CPU time the testbed's delay line spent during the run.

Apps: `wavefront` (distributed Livermore loop 23, one band per rank; every run's result
files must be bit-identical to the first run's, which `mpilab-wavefront verify` checks),
`collectives` (mpilab-bench: bcast, allreduce, scatter, gather at fixed repetitions).

    MPILAB_BIN=build/bin python3 bench/pathmig_apps.py --app wavefront --reps 16 --out F.json
    MPILAB_BIN=build/bin python3 bench/pathmig_apps.py --resume --budget 330 --out F.json ...
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import re
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

from harness import find_tool, start_mpilab
from mpilab.launches import os_interval
from mpilab.pathmig import agents
from mpilab.testbed import faults, net
from mpilab.testbed.spec import Spec

SPEC = """\
[cluster]
sites = 2
nodes_per_site = 2
rails = 2

[lan]
rate = "1Gbit"

[wan]
node_rate = "1Gbit"
total_rate = "2Gbit"
delay = "1ms"
"""


def digest(files: list[Path]) -> str:
    h = hashlib.sha256()
    for f in files:
        h.update(f.read_bytes())
    return h.hexdigest()


CONFIGS = ("tcp", "mptcp", "agent", "agent+fault", "old", "old+fault")


def agent_wrapper(d: Path, exe: str) -> Path:
    """A bin dir whose mpilab-pathmigd runs `exe` under /usr/bin/time, which writes the
    agent's CPU time and context switches to $PMAPP_CPU/cpu.<pid> when it exits (the other
    tools are found in the source tree's build/bin, as find_tool does)."""
    d.mkdir(parents=True, exist_ok=True)
    w = d / "mpilab-pathmigd"
    tmp = d / "mpilab-pathmigd.tmp"
    tmp.write_text("#!/bin/sh\n"
                   f'exec /usr/bin/time -q -o "$PMAPP_CPU/cpu.$$" -f "%e %U %S %w %c" '
                   f'{exe} "$@"\n')
    tmp.chmod(0o755)
    os.replace(tmp, w)
    return d


def read_cpu(d: Path, n: int, wait: float = 5.0) -> list[list[float]]:
    """The /usr/bin/time lines of the run's n agents (elapsed, user, sys, voluntary and
    involuntary switches), waiting briefly for the last to be written."""
    end = time.monotonic() + wait
    while True:
        files = sorted(d.glob("cpu.*"))
        rows = []
        for f in files:
            t = f.read_text().split()
            if len(t) == 5:
                rows.append([float(x) for x in t])
        if len(rows) >= n or time.monotonic() > end:
            for f in files:
                f.unlink()
            return rows
        time.sleep(0.1)


def proc_cpu(pid: int | None) -> float | None:
    """utime + stime of a process in seconds, or None."""
    if not pid:
        return None
    try:
        f = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")


def paired(runs: list[dict[str, object]], key: str, cfg: str,
           base: str) -> dict[str, object]:
    """Per round, cfg's time over base's (both correct): median (with its 95% interval),
    mean, min, max, n."""
    by: dict[int, dict[str, float]] = {}
    for r in runs:
        if r["correct"] and r.get(key):
            by.setdefault(int(r["rep"]), {})[str(r["config"])] = float(r[key])  # type: ignore
    q = [v[cfg] / v[base] - 1 for v in by.values() if cfg in v and base in v]
    if not q:
        return {}
    doc: dict[str, object] = {"rounds": len(q), "median": statistics.median(q),
                              "mean": statistics.mean(q), "min": min(q), "max": max(q)}
    # distribution-free 95% interval of the paired median (order statistics; 16 rounds:
    # the 4th and 13th ratios); None below 6 rounds, where no such interval exists
    ci = os_interval(q, 0.95)
    doc["median_ci95"] = list(ci) if ci else None
    return doc


def fault_window(run: dict[str, object]) -> tuple[int, int] | None:
    """The iterations (first, last) that may contain run's fault: the fault's moment after
    the launch, less anything between 0 and the run's start-up and shut-down time (wall -
    app: where the first iteration began is not known more precisely), on the cumulative
    iteration times. None without a fault or iteration times."""
    fault = run.get("fault") or {}
    it = run.get("iter_s") or []
    if not isinstance(fault, dict) or "time" not in fault or not it or not run.get("app_s"):
        return None
    f = float(fault["time"]) - float(run["t_launch"])  # type: ignore[arg-type]
    slack = max(0.0, float(run["wall_s"]) - float(run["app_s"]))  # type: ignore[arg-type]
    lo, hi, end, first, last = f - slack, f, 0.0, None, None
    for i, t in enumerate(it):  # type: ignore[arg-type]
        start, end = end, end + float(t)
        if end >= lo and start <= hi:
            first = i if first is None else first
            last = i
    return (first, last) if first is not None and last is not None else None


def window_excess(runs: list[dict[str, object]], cfg: str, base: str) -> dict[str, object]:
    """A second estimate of the fault's cost, from each faulted run's own iteration times
    (not replacing the paired totals): the time by which the iterations that may contain
    the fault (fault_window) exceed the run's median iteration, over the run's application
    time. As a control, the same iterations of the round's run without a fault, whose
    excess is this estimator's noise. Per round, and medians."""
    by: dict[int, dict[str, dict[str, object]]] = {}
    for r in runs:
        if r["correct"] and r.get("iter_s"):
            by.setdefault(int(r["rep"]), {})[str(r["config"])] = r  # type: ignore[arg-type]
    rows = []
    for rep, v in sorted(by.items()):
        if cfg not in v or base not in v:
            continue
        w = fault_window(v[cfg])
        if w is None:
            continue
        out: dict[str, object] = {"rep": rep, "iterations": [w[0], w[1]]}
        for name, run in (("fault", v[cfg]), ("control", v[base])):
            it = [float(t) for t in run["iter_s"]]  # type: ignore[union-attr]
            if w[1] >= len(it):
                break
            med = statistics.median(it)
            out[name] = sum(t - med for t in it[w[0]:w[1] + 1]) / float(run["app_s"])  # type: ignore
            # not the pause: how much slower the iterations after the window ran than
            # those before it (a lasting cost of the fault shows here, not above)
            if w[0] > 0 and w[1] + 1 < len(it):
                out[name + "_after_vs_before"] = (statistics.mean(it[w[1] + 1:])
                                                  / statistics.mean(it[:w[0]]) - 1)
        if "control" in out:
            rows.append(out)
    if not rows:
        return {}
    f = [float(r["fault"]) for r in rows]  # type: ignore[arg-type]
    c = [float(r["control"]) for r in rows]  # type: ignore[arg-type]
    def ci(v: list[float]) -> list[float] | None:
        iv = os_interval(v, 0.95)
        return list(iv) if iv else None
    doc: dict[str, object] = {
        "rounds": len(rows), "median": statistics.median(f), "min": min(f), "max": max(f),
        "median_ci95": ci(f), "control_median": statistics.median(c), "control_min": min(c),
        "control_max": max(c), "control_median_ci95": ci(c)}
    for name in ("fault", "control"):
        d = [float(r[name + "_after_vs_before"]) for r in rows  # type: ignore[arg-type]
             if name + "_after_vs_before" in r]
        if d:
            doc[name + "_after_vs_before_median"] = statistics.median(d)
            doc[name + "_after_vs_before_ci95"] = ci(d)
    # the lasting part, paired: per round, the faulted run's after/before ratio less its
    # control's (the later iterations of every run tend to be slower)
    lasting = [float(r["fault_after_vs_before"]) - float(r["control_after_vs_before"])  # type: ignore[arg-type]
               for r in rows if "fault_after_vs_before" in r and "control_after_vs_before" in r]
    if lasting:
        doc["after_vs_before_fault_less_control_median"] = statistics.median(lasting)
        doc["after_vs_before_fault_less_control_ci95"] = ci(lasting)
    doc["per_round"] = rows
    return doc


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--app", choices=("wavefront", "collectives"), default="wavefront")
    ap.add_argument("--reps", type=int, default=16)
    ap.add_argument("--np", type=int, default=4)
    ap.add_argument("--prefix", default="pmapp")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--size", type=int, default=4096, help="wavefront rows = cols")
    ap.add_argument("--iterations", type=int, default=10, help="wavefront iterations")
    ap.add_argument("--coll-reps", type=int, default=400, help="collectives repetitions")
    ap.add_argument("--heal", type=float, default=2.0, help="fault duration (s)")
    ap.add_argument("--tcp-congestion", default="cubic",
                    help="congestion control of the TCP runs (--pathmig runs: cubic)")
    ap.add_argument("--work", default="/tmp/pathmig-apps")
    ap.add_argument("--budget", type=float, default=0,
                    help="start no new round (one run of each configuration) after this many "
                         "seconds (0: no limit)")
    ap.add_argument("--configs", default="tcp,agent,agent+fault",
                    help=f"comma-separated, of {', '.join(CONFIGS)}")
    ap.add_argument("--old-agent", help="agent binary of the old/old+fault configurations")
    ap.add_argument("--resume", action="store_true",
                    help="append rounds to --out (its seed, sizes and configurations)")
    ap.add_argument("--no-warmup", action="store_true",
                    help="no untimed warm-up run (fault moments from --out's warm-up)")
    ap.add_argument("--ref-s", type=float, default=0,
                    help="the run's expected length for the fault moment (default: the "
                         "warm-up run's, else --out's, else 10 s)")
    ap.add_argument("--prepare", action="store_true",
                    help="only create the wavefront's input files in --work (before a slot)")
    ap.add_argument("--summarize", action="store_true",
                    help="only recompute --out's summary and paired comparisons (no runs)")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    if a.prepare:
        prepare(a)
        return 0
    if a.summarize:
        return summarize(a)
    configs = tuple(c for c in a.configs.split(",") if c)
    bad = [c for c in configs if c not in CONFIGS]
    if bad or not configs:
        sys.exit(f"--configs {a.configs}: expected some of {', '.join(CONFIGS)}")
    if any(c.startswith("old") for c in configs) and not (
            a.old_agent and os.access(a.old_agent, os.X_OK)):
        sys.exit("--old-agent: an executable agent binary is needed for old/old+fault")
    prev: dict[str, object] = {}
    if a.resume and Path(a.out).exists():
        prev = json.loads(Path(a.out).read_text())
        for k in ("app", "np", "size", "iterations", "coll_reps"):
            if k in prev and prev[k] != getattr(a, k):
                sys.exit(f"--resume {a.out}: it has {k} = {prev[k]}, this run "
                         f"{getattr(a, k)}")
        if tuple(prev.get("configs", configs)) != configs:  # type: ignore[arg-type]
            sys.exit(f"--resume {a.out}: its configurations are {prev.get('configs')}")

    def on_term(sig: int, frame: object) -> None:
        raise KeyboardInterrupt  # the slot's end: bring the testbed down below
    signal.signal(signal.SIGTERM, on_term)
    state = Path(a.work) / "state"
    state.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, MPILAB_TESTBED_STATE_ROOT=str(state), MPILAB_TESTBED_PREFIX=a.prefix)
    os.environ["MPILAB_TESTBED_STATE_ROOT"] = str(state)
    (state / "spec.toml").write_text(SPEC)
    p = start_mpilab("testbed", "up", str(state / "spec.toml"), environ=env)
    out, err = p.communicate()
    if p.returncode:
        sys.exit(err)
    try:
        return rounds(a, env, configs, prev)
    except KeyboardInterrupt:
        print("interrupted: the last round is incomplete and not kept", flush=True)
        return 1
    finally:
        p = start_mpilab("testbed", "down", environ=env)
        p.communicate()


def summarize(a: argparse.Namespace) -> int:
    """Rewrite --out's summary from its runs with this script's statistics."""
    try:
        prev = json.loads(Path(a.out).read_text())
        runs, configs = prev["runs"], tuple(prev["configs"])
        for k in ("app", "np", "size", "iterations", "coll_reps", "seed"):
            setattr(a, k, prev[k])
    except (OSError, ValueError, KeyError, TypeError) as e:
        sys.exit(f"--summarize {a.out}: {e}")
    doc = write(a, configs, runs, prev.get("slots", []), prev.get("reference"),
                float(prev.get("ref_s", 0.0)), float(prev.get("round_s", 0.0)))
    print(json.dumps(doc["paired_vs_tcp"], indent=1))
    return 0


def prepare(a: argparse.Namespace) -> tuple[str, Path, list[Path]]:
    """The wavefront's input files in --work/wf (made once; their size is recorded)."""
    wf = find_tool("mpilab-wavefront")
    data = Path(a.work) / "wf"
    bands = [data / f"d.{i}" for i in range(a.np)]
    if a.app == "wavefront":
        data.mkdir(parents=True, exist_ok=True)
        made = data / "orig" / "size"
        if made.exists() and made.read_text() != f"{a.size} {a.np}":
            sys.exit(f"--work {a.work}: its data is {made.read_text()} (size, ranks), not "
                     f"{a.size} {a.np}")
        if not made.exists():
            subprocess.run([wf, "create", "--rows", str(a.size), "--cols", str(a.size),
                            "--seed", "1", str(data / "d0"), str(data / "c0")], check=True)
            for kind, name in (("optimized", "d"), ("block", "c")):
                subprocess.run([wf, "convert", "--layout", kind, "--mb", "256", "--nb", "256",
                                "--bands", str(a.np), str(data / (name + "0")),
                                str(data / name)], check=True)
            (data / "orig").mkdir(exist_ok=True)
            for b in bands:
                shutil.copy(b, data / "orig" / b.name)
            made.write_text(f"{a.size} {a.np}")
    return wf, data, bands


def inject_fault(a: argparse.Namespace, sp: Spec, proc: subprocess.Popen[str],
                 fault: dict[str, object], delay: float, node: str, mode: str) -> None:
    """Once the run is wired up (the agents armed a connection) and `delay` seconds later,
    fail rail 0 of `node` with `mode`, heal it a.heal seconds after; what was done goes to
    `fault` ("missed" when the run ended first)."""
    while proc.poll() is None:  # wired up: the agents armed a connection
        if any(e["event"] == "state" and e["to"] == "ARMED"
               for e in agents.events(sp)):
            break
        time.sleep(0.1)
    end = time.monotonic() + delay
    while proc.poll() is None and time.monotonic() < end:
        time.sleep(0.05)
    if proc.poll() is not None:
        fault["missed"] = True
        return
    faults.fail(sp, f"{node}:0", mode)
    fault.update({"target": f"{node}:0", "mode": mode,
                  "after_wireup": delay, "time": time.time()})
    time.sleep(a.heal)
    faults.heal(sp, None)


def agent_cost(cpu_dir: Path, np: int, events_file: Path) -> dict[str, object]:
    """What the agents of one run cost: CPU, wake-ups and preemptions from their CPU files,
    and the counters of their logged stop events."""
    rows = read_cpu(cpu_dir, np)
    cost: dict[str, object] = {
        "agents": len(rows), "agent_cpu_s": sum(r[1] + r[2] for r in rows),
        "agent_wakeups": sum(r[3] for r in rows), "agent_preempted": sum(r[4] for r in rows),
        "agent_alive_s": max((r[0] for r in rows), default=0.0)}
    try:
        stops = [json.loads(line) for line in events_file.read_text().splitlines()
                 if '"event": "stop"' in line or '"event":"stop"' in line]
    except OSError:
        stops = []
    for k in ("probes_sent", "replies_sent", "messages_received", "wakeups",
              "passive_proofs", "probes_skipped", "diag_dumps",
              "replies_received", "replies_deferred", "replies_urgent",
              "paths_settled"):
        v = [e[k] for e in stops if k in e]
        if v:
            cost["logged_" + k] = sum(v)
    causes: dict[str, int] = {}
    for e in stops:
        for c, n in (e.get("wakeups_by_cause") or {}).items():
            causes[c] = causes.get(c, 0) + int(n)
    if causes:
        cost["logged_wakeups_by_cause"] = causes
    return cost


def app_program(a: argparse.Namespace, wf: str, data: Path) -> list[str]:
    """The application's command line (COLL_OUT: where a collectives run keeps its results)."""
    if a.app == "wavefront":
        return [wf, "run", "--mpi", "--data", str(data / "d"), "--coef", str(data / "c"),
                "--iterations", str(a.iterations)]
    return [find_tool("mpilab-bench"), "--ops", "bcast,allreduce,scatter,gather",
            "--sizes", "1K:256K:x4", "--min-reps", str(a.coll_reps), "--max-reps",
            str(a.coll_reps), "--no-fit", "--quiet",
            # 4 node namespaces share 2 CPUs: auto placement would turn off Open
            # MPI's yield before MPI_Init and leave the ranks spinning
            "--placement", "keep", "--out", "COLL_OUT"]


def launch(a: argparse.Namespace, cfg: str, env: dict[str, str], cpu_dir: Path,
           bins: dict[str, Path], events_file: Path) -> tuple[list[str], dict[str, str]]:
    """`mpilab testbed run` arguments and environment of configuration cfg: plain TCP with
    --tcp-congestion, MPTCP with the kernel's path manager, or an agent (new or old) that logs
    its events to events_file."""
    args = ["testbed", "run", "--np", str(a.np), "--timeout", "900"]
    run_env = dict(env, PMAPP_CPU=str(cpu_dir))
    if cfg == "tcp":
        args += ["--congestion", a.tcp_congestion]
    elif cfg == "mptcp":  # MPTCP with the kernel's path manager, no agent
        args += ["--mptcp"]
    else:
        args += ["--pathmig", "--pathmig-events", str(events_file)]
        run_env["MPILAB_BIN"] = str(bins["old" if cfg.startswith("old") else "new"])
    return args, run_env


def rounds(a: argparse.Namespace, env: dict[str, str], configs: tuple[str, ...],
           prev: dict[str, object]) -> int:
    sp = net.current_spec(a.prefix)
    runs: list[dict[str, object]] = list(prev.get("runs", []))  # type: ignore[call-overload]
    first = max((int(r["rep"]) for r in runs), default=-1) + 1  # type: ignore[call-overload]
    # the fault plan continues where the last slot stopped: same seed, later draws
    rng = random.Random(a.seed * 1000003 + first)
    slots: list[dict[str, object]] = list(prev.get("slots", []))  # type: ignore
    slots.append({"start": time.strftime("%Y-%m-%d %H:%M:%S"),
                  "load_start": open("/proc/loadavg").read().split()[:3], "first_round": first})
    cpu_dir = Path(a.work) / "cpu"
    shutil.rmtree(cpu_dir, ignore_errors=True)
    cpu_dir.mkdir(parents=True)
    bins = {"new": agent_wrapper(Path(a.work) / "bin-new", find_tool("mpilab-pathmigd"))}
    if a.old_agent:
        bins["old"] = agent_wrapper(Path(a.work) / "bin-old", os.path.abspath(a.old_agent))
    dl_pid = (net.load_state(a.prefix) or {}).get("delayline_pid")
    wf, data, bands = prepare(a)
    program = app_program(a, wf, data)
    reference = prev.get("reference")
    ref_s = a.ref_s or float(prev.get("ref_s", 10.0))  # type: ignore[arg-type]
    t_start = time.monotonic()
    round_s = float(prev.get("round_s", 0.0))  # type: ignore[arg-type]
    # the longest round so far (or the warm-up's estimate): the budget must hold one more
    todo = [-1] if not a.no_warmup else []
    todo += list(range(first, a.reps))
    if a.app == "wavefront":  # the data into the page cache
        for f in data.glob("orig/*"):
            f.read_bytes()
    for rep in todo:  # rep -1: one untimed warm-up run (page cache, ARP)
        elapsed = time.monotonic() - t_start
        if rep >= 0 and a.budget and elapsed + round_s > a.budget:
            print(f"budget: {elapsed:.0f} s spent, a round takes {round_s:.0f} s; stopping "
                  f"before round {rep}", flush=True)
            break
        t_round = time.monotonic()
        order = [configs[(i + max(rep, 0)) % len(configs)] for i in range(len(configs))]
        new_runs = []
        for cfg in order if rep >= 0 else ("tcp",):
            if a.app == "wavefront":
                for b in bands:
                    shutil.copy(data / "orig" / b.name, b)
            events_file = Path(a.work) / f"ev-{rep}-{cfg}"
            args, run_env = launch(a, cfg, env, cpu_dir, bins, events_file)
            for f in cpu_dir.glob("cpu.*"):
                f.unlink()
            agents.clear_logs(sp)  # the wire-up watch below must see this run's events only
            dl0 = proc_cpu(dl_pid)
            t0 = time.monotonic()
            t_launch = time.time()
            # every collectives run keeps its results (per-repetition samples) in --work
            prog = [str(Path(a.work) / f"coll-{rep}-{cfg}.json") if x == "COLL_OUT" else x
                    for x in program]
            proc = start_mpilab(*args, "--", *prog, environ=run_env)
            fault: dict[str, object] = {}
            if cfg.endswith("+fault"):
                delay = rng.uniform(0.1, 0.6) * ref_s
                node = rng.choice(sp.node_names())
                mode = rng.choice(faults.kind_names())

                th = threading.Thread(target=inject_fault,
                                      args=(a, sp, proc, fault, delay, node, mode))
                th.start()
            so, se = proc.communicate()
            wall = time.monotonic() - t0
            dl1 = proc_cpu(dl_pid)
            if cfg.endswith("+fault"):
                th.join()
            cost: dict[str, object] = {}
            if cfg not in ("tcp", "mptcp"):
                cost = agent_cost(cpu_dir, a.np, events_file)
            if dl0 is not None and dl1 is not None:
                cost["delayline_cpu_s"] = dl1 - dl0
            ok = proc.returncode == 0
            if a.app == "wavefront" and ok:
                d = digest(bands)
                if reference is None:
                    v = subprocess.run([wf, "verify", "--initial", str(data / "d0"), "--coef",
                                        str(data / "c0"), "--iterations", str(a.iterations),
                                        str(data / "d")], capture_output=True, text=True)
                    ok = v.returncode == 0
                    reference = d if ok else None
                else:
                    ok = d == reference
            m = re.search(r"total ([0-9.]+) s", so)
            app_s = float(m.group(1)) if m else None
            iters = [float(x) for x in re.findall(r"^iteration \d+: ([0-9.]+) s$", so, re.M)]
            if rep < 0 and not a.ref_s:
                ref_s = app_s or wall
            if rep < 0:
                round_s = max(round_s, wall * len(configs))
            rec = {"rep": rep, "config": cfg, "wall_s": wall, "app_s": app_s,
                   "rc": proc.returncode, "time": time.strftime("%H:%M:%S"),
                   "load": open("/proc/loadavg").read().split()[0],
                   "correct": ok, "fault": fault, "pathmig": se.strip().splitlines()[-1:],
                   "t_launch": t_launch, "iter_s": iters,
                   **cost}
            if rep >= 0:
                new_runs.append(rec)
            print(json.dumps(rec), flush=True)
            faults.heal(sp, None)
        if rep < 0:
            continue
        round_s = max(round_s, time.monotonic() - t_round)
        runs += new_runs  # a round is kept whole or not at all
        slots[-1]["end"] = time.strftime("%Y-%m-%d %H:%M:%S")
        slots[-1]["load_end"] = open("/proc/loadavg").read().split()[:3]
        slots[-1]["rounds"] = rep + 1 - first
        write(a, configs, runs, slots, reference, ref_s, round_s)
    if not runs:
        return 1
    print(json.dumps(write(a, configs, runs, slots, reference, ref_s, round_s)["paired_vs_tcp"],
                     indent=1))
    return 0


def write(a: argparse.Namespace, configs: tuple[str, ...], runs: list[dict[str, object]],
          slots: list[dict[str, object]], reference: object, ref_s: float,
          round_s: float) -> dict[str, object]:
    summary: dict[str, dict[str, float]] = {}
    for cfg in configs:
        for key in ("agent_cpu_s", "agent_wakeups", "delayline_cpu_s", "logged_probes_sent"):
            w = [float(r[key]) for r in runs if r["config"] == cfg  # type: ignore[arg-type]
                 and r.get(key) is not None]
            if w:
                summary[f"{cfg} {key}"] = {"runs": len(w), "median": statistics.median(w),
                                           "min": min(w), "max": max(w)}
    for key in ("wall_s", "app_s"):
        for cfg in configs:
            w = [r[key] for r in runs if r["config"] == cfg and r["correct"] and r[key]]
            if w:
                summary[f"{cfg} {key}"] = {
                    "runs": len(w), "mean": statistics.mean(w),  # type: ignore[arg-type]
                    "stdev": statistics.stdev(w) if len(w) > 1 else 0.0,  # type: ignore
                    "min": min(w), "median": statistics.median(w)}  # type: ignore
        base = summary.get(f"tcp {key}", {}).get("median")
        for cfg in configs:
            s = summary.get(f"{cfg} {key}")
            if base and s:
                s["slowdown_median"] = s["median"] / base - 1
                s["slowdown_mean"] = s["mean"] / summary[f"tcp {key}"]["mean"] - 1
    pairs = {f"{cfg} {key}": paired(runs, key, cfg, "tcp")
             for key in ("app_s", "wall_s") for cfg in configs if cfg != "tcp"}
    for cfg, base in (("agent+fault", "agent"), ("old+fault", "old"), ("agent", "old")):
        if cfg in configs and base in configs:
            for key in ("app_s", "wall_s"):  # collectives: no app time, the whole run only
                pairs[f"{cfg} vs {base} {key}"] = paired(runs, key, cfg, base)
    for cfg, base in (("agent+fault", "agent"), ("old+fault", "old")):
        if cfg in configs and base in configs:
            pairs[f"{cfg} window excess"] = window_excess(runs, cfg, base)
    doc = {"app": a.app, "np": a.np, "size": a.size, "iterations": a.iterations,
           "coll_reps": a.coll_reps, "configs": list(configs),
           "rounds": len({r["rep"] for r in runs}), "seed": a.seed, "ref_s": ref_s,
           "round_s": round_s,
           "reference": reference, "slots": slots, "runs": runs, "summary": summary,
           "paired_vs_tcp": pairs,
           "incorrect_or_failed": sum(1 for r in runs if not r["correct"])}
    out = Path(a.out)
    if out.exists() and not out.is_file():
        sys.exit(f"--out {a.out}: not a regular file")
    tmp = a.out + ".tmp"
    Path(tmp).write_text(json.dumps(doc, indent=1) + "\n")
    os.replace(tmp, a.out)
    return doc


if __name__ == "__main__":
    sys.exit(main())
